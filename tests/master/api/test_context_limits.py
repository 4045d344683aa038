"""Context archives: a decompression-ratio limit and quotas on stored contexts (per user
and per master), each refusal a 4xx naming its limit with nothing stored."""

import base64
import gzip
import io
import os
import tarfile

import httpx
import yaml

from determined.common.api import check_context_archive, pack_context
from master_testing import ConfiguredMasterProcess


def _packed_with(tiny_dir, name, data):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(str(tiny_dir / "model_def.py"), arcname="model_def.py")
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(out.getvalue())


def _post(c, config, packed, headers=None):
    return c.post("/experiments", headers=headers, json={
        "config": config, "activate": False, "model_def": base64.b64encode(packed).decode()})


def _stored(master):
    with httpx.Client(base_url=master.url + "/api/v1", timeout=60) as c:
        count = len(c.get("/experiments").json()["experiments"])
    root = os.path.join(master.data_dir, "experiments")
    return count, sorted(os.listdir(root)) if os.path.isdir(root) else []


def test_ratio_limit_and_context_quotas(tmp_path, tiny_dir):
    packed = pack_context(str(tiny_dir))
    unit = check_context_archive(packed).unpacked_bytes
    limits = {"max_context_ratio": 20, "min_context_ratio_bytes": 0,
              "max_context_bytes_per_user": int(3.5 * unit),
              "max_context_bytes_total": int(4.5 * unit)}
    data_dir = tmp_path / "master"
    data_dir.mkdir()
    master = ConfiguredMasterProcess(str(data_dir), {
        "resource_manager": {"slots": 0}, "limits": limits}).start(timeout=120)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    try:
        with httpx.Client(base_url=master.url + "/api/v1", timeout=120) as c:
            # 5 MB of zeros packs to a few KB: far over 20 times.
            bomb = _packed_with(tiny_dir, "zeros.bin", bytes(5_000_000))
            r = _post(c, config, bomb)
            assert r.status_code == 400, r.text
            assert "limits.max_context_ratio" in r.json()["error"] and "zeros.bin" in r.text
            assert _stored(master) == (0, [])
            # The same for a task's context.
            r = c.post("/tasks", json={
                "kind": "command", "config": {"entrypoint": ["true"]},
                "context": base64.b64encode(bomb).decode()})
            assert r.status_code == 400 and "limits.max_context_ratio" in r.text, r.text
            assert c.get("/tasks").json()["tasks"] == []

            for _ in range(3):
                assert _post(c, config, packed).status_code == 201
            before = _stored(master)
            r = _post(c, config, packed)
            assert r.status_code == 413, r.text
            assert "limits.max_context_bytes_per_user" in r.json()["error"]
            assert "'determined'" in r.json()["error"]
            assert _stored(master) == before

            admin = {"Authorization": "Bearer " + c.post(
                "/auth/login", json={"username": "admin", "password": ""}).json()["token"]}
            assert _post(c, config, packed, admin).status_code == 201
            before = _stored(master)
            r = _post(c, config, packed, admin)
            assert r.status_code == 413, r.text
            assert "limits.max_context_bytes_total" in r.json()["error"]
            assert _stored(master) == before
    finally:
        master.stop()
    assert "Traceback" not in open(data_dir / "master-test.log").read()
