"""The typed master client (over httpx.MockTransport) and context packing."""

import io
import json
import tarfile

import httpx
import pytest

from determined.common.api import APIError, MasterClient, pack_context, unpack_context
from determined.master._config import load_master_config


def test_client_maps_errors_and_bodies():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers.get("authorization")))
        if request.url.path.endswith("/experiments/7"):
            return httpx.Response(404, json={"error": "experiment 7 not found"})
        if request.url.path.endswith("/experiments"):
            body = json.loads(request.content)
            assert body["activate"] is False and body["config"] == "a: 1"
            return httpx.Response(400, json={"error": "Invalid config", "details": [
                {"field": "searcher", "message": "missing"}]})
        return httpx.Response(200, json={"version": "0.13.0"})

    c = MasterClient("example:8080", token="tok", transport=httpx.MockTransport(handler))
    assert c.url == "http://example:8080" and c.get_master()["version"] == "0.13.0"
    with pytest.raises(APIError) as e:
        c.get_experiment(7)
    assert e.value.status == 404 and "experiment 7 not found" in str(e.value)
    with pytest.raises(APIError) as e:
        c.create_experiment("a: 1", b"", activate=False)
    assert e.value.status == 400 and "searcher: missing" in str(e.value)
    assert seen[0] == ("GET", "/api/v1/master", "Bearer tok")


def test_unreachable_master_names_the_address():
    with pytest.raises(APIError) as e:
        MasterClient("127.0.0.1:1", timeout=2).get_master()
    assert e.value.status is None and "127.0.0.1:1" in str(e.value)


def test_pack_context_honours_detignore(tmp_path):
    src = tmp_path / "ctx"
    (src / "data").mkdir(parents=True)
    (src / "__pycache__").mkdir()
    (src / "model_def.py").write_text("x = 1\n")
    (src / "big.bin").write_bytes(b"0" * 10)
    (src / "keep.bin").write_bytes(b"1")
    (src / "data" / "train.csv").write_text("a\n")
    (src / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"")
    (src / ".detignore").write_text("# comment\n*.bin\n!keep.bin\ndata/\n")
    packed = pack_context(str(src))
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        names = sorted(tar.getnames())
    assert names == ["keep.bin", "model_def.py"]
    unpack_context(packed, str(tmp_path / "out"))
    assert (tmp_path / "out" / "model_def.py").read_text() == "x = 1\n"
    with pytest.raises(ValueError, match="not a directory"):
        pack_context(str(src / "model_def.py"))


def test_master_config_defaults_yaml_and_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_MASTER_DATA_DIR", str(tmp_path / "d"))
    cfg = load_master_config()
    assert cfg.host == "127.0.0.1" and cfg.port == 8080
    assert cfg.db == "sqlite:///" + str(tmp_path / "d" / "master.db")
    assert cfg.checkpoint_storage == {"type": "shared_fs",
                                      "host_path": str(tmp_path / "d" / "checkpoints")}
    assert cfg.resource_manager.scheduler.type == "fair_share"
    path = tmp_path / "master.yaml"
    path.write_text("port: 9000\nresource_manager: {slots: 3, scheduler: {fit: worst}}\n")
    cfg = load_master_config(str(path), slots=5)
    assert cfg.port == 9000 and cfg.resource_manager.slots == 5
    assert cfg.resource_manager.scheduler.fit == "worst"
    path.write_text("port: -1\nbogus: 1\n")
    with pytest.raises(ValueError) as e:
        load_master_config(str(path))
    assert "port" in str(e.value) and "bogus" in str(e.value)
