"""A rejected experiment leaves nothing behind: 4xx naming the field, no row, no files,
and the master still starts (a real master process; issue 14 part 2)."""

import base64
import gzip
import io
import os
import tarfile

import pytest
import yaml

from determined.common.api import pack_context


def _config(tiny_dir, **changes):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update(changes)
    return config


def _post(api, config, packed):
    return api.post("/experiments", json={
        "config": config, "activate": True, "model_def": base64.b64encode(packed).decode()})


def _archive(tiny_dir, *extra):
    """The tiny model's files plus ``extra`` (TarInfo, data) members, as tar.gz."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("model_def.py", "const.yaml"):
            tar.add(str(tiny_dir / name), arcname=name)
        for info, data in extra:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _link(name, target):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def _nothing_stored(api, master):
    assert api.get("/experiments").json()["experiments"] == []
    exp_dir = os.path.join(master.data_dir, "experiments")
    assert not os.path.exists(exp_dir) or os.listdir(exp_dir) == []


def test_rejected_experiments_leave_nothing_and_the_master_restarts(
        master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=0)
    big = tarfile.TarInfo("huge.bin")
    big.size = 2 * 1024**3
    bomb = gzip.compress(tarfile.TarInfo("model_def.py").tobuf() + big.tobuf())
    cases = [
        # (config, archive, expected status, field, text in the message)
        (_config(tiny_dir, searcher={"name": "single", "metric": "validation_loss",
                                     "max_length": {"batches": 0}}),
         None, 400, "searcher.max_length", ">= 1"),
        (_config(tiny_dir, searcher={"name": "adaptive_asha", "metric": "validation_loss",
                                     "max_length": {"batches": 10}, "max_trials": 4,
                                     "divisor": 1}),
         None, 400, "searcher.divisor", "divisor"),
        # (A shared_fs path this master cannot create is the agents' business here:
        # test_shared_fs_host_path.py.)
        (_config(tiny_dir, max_restarts=2**70), None, 400, "max_restarts", "between"),
        (_config(tiny_dir), _archive(tiny_dir, (tarfile.TarInfo("../escape.py"), b"x")),
         400, "model_def", "'..'"),
        (_config(tiny_dir), _archive(tiny_dir, _link("passwd", "/etc/passwd")),
         400, "model_def", "outside"),
        (_config(tiny_dir), _archive(tiny_dir, _link("up", "../../x")),
         400, "model_def", "outside"),
        (_config(tiny_dir), bomb, 400, "model_def", "MiB unpacked"),
        (_config(tiny_dir, entrypoint="missing_module:Trial"), None, 400, "entrypoint",
         "missing_module"),
    ]
    with master.client() as api:
        for config, packed, status, field, text in cases:
            r = _post(api, config, packed if packed is not None else pack_context(str(tiny_dir)))
            assert r.status_code == status, (field, r.text)
            body = r.json()
            assert field in {d["field"] for d in body["details"]}, body
            assert text in body["error"], body
            _nothing_stored(api, master)
        assert not (tmp_path / "escape.py").exists()
    master.stop()
    # A creation cut off by a crash leaves a staging directory: the next start removes it.
    experiments = os.path.join(master.data_dir, "experiments")
    os.makedirs(os.path.join(experiments, ".incoming-crashed", "model_def"))
    master.start(timeout=120)  # a rejected request cannot keep the master from starting
    with master.client() as api:
        _nothing_stored(api, master)
        r = api.post("/experiments", json={
            "config": _config(tiny_dir), "activate": False,
            "model_def": base64.b64encode(pack_context(str(tiny_dir))).decode(),
        })
        assert r.status_code == 201
    # The context was unpacked (outside the master's lock) and moved into place.
    assert sorted(os.listdir(experiments)) == [str(r.json()["id"])]
    assert os.path.isfile(os.path.join(experiments, str(r.json()["id"]), "model_def",
                                       "model_def.py"))


def test_local_run_validates_before_writing(tiny_dir, tmp_path):
    from determined.errors import InvalidConfigError
    from determined.local import run_local_experiment

    local_dir = tmp_path / "local"
    config = _config(tiny_dir, searcher={"name": "single", "metric": "validation_loss",
                                         "max_length": {"batches": 0}})
    with pytest.raises(InvalidConfigError) as e:
        run_local_experiment(config, str(tiny_dir), local_dir=str(local_dir),
                             show_progress=False)
    assert "searcher.max_length" in [field for field, _ in e.value.errors]
    assert not (local_dir / "experiments").exists() or not any(
        (local_dir / "experiments").iterdir())
