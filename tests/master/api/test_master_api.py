"""The REST API against a real master: status codes and JSON error bodies."""

import base64
import io
import json
import tarfile

import pytest
import yaml

from determined.common.api import MAX_CONTEXT_BYTES, pack_context


@pytest.fixture
def api(shared_master):
    with shared_master.client() as c:
        yield c


def _body(tiny_dir, config=None, activate=False, model_def=None):
    cfg = config if config is not None else (tiny_dir / "const.yaml").read_text()
    packed = model_def if model_def is not None else pack_context(str(tiny_dir))
    return {"config": cfg, "model_def": base64.b64encode(packed).decode(), "activate": activate}


def test_health_config_and_openapi(api, shared_master):
    info = api.get("/master").json()
    assert info["version"] == "0.13.0" and info["cluster_id"]
    cfg = api.get("/master/config").json()
    assert cfg["port"] == shared_master.port and cfg["resource_manager"]["slots"] == 2
    assert cfg["checkpoint_storage"]["type"] == "shared_fs"
    spec = api.get("/../../openapi.json").json()
    assert "/api/v1/experiments" in spec["paths"]
    # Every operation id is unique (the proxy's seven methods shared one, and building the
    # schema for /docs logged FastAPI's "Duplicate Operation ID" warning as an ERROR).
    ids = [op["operationId"] for item in spec["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert "Duplicate Operation ID" not in shared_master.log()
    assert set(spec["paths"]["/proxy/{task_id}/{path}"]) == {
        "get", "post", "put", "patch", "delete", "head", "options"}
    # The training routes parse their bodies themselves; their schemas are still documented,
    # nested models inlined (no reference that the document cannot resolve).
    body = spec["paths"]["/api/v1/trial-runner/training-batch"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert set(schema["properties"]["reports"]["items"]["properties"]) == {"batches", "metrics"}
    assert "$defs" not in json.dumps(schema)
    training = spec["paths"]["/api/v1/trial-runner/training"]["post"]["requestBody"]
    assert set(training["content"]["application/json"]["schema"]["required"]) == {"batches",
                                                                                  "metrics"}


def test_invalid_config_lists_every_error(api, tiny_dir):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["searcher"]["name"] = "no-such-searcher"
    config["max_restarts"] = "many"
    r = api.post("/experiments", json=_body(tiny_dir, config=config))
    assert r.status_code == 400
    body = r.json()
    fields = {d["field"] for d in body["details"]}
    assert any("searcher" in f for f in fields) and "max_restarts" in fields, body
    assert "error" in body and "max_restarts" in body["error"]


def test_malformed_requests_are_400_with_details(api, tiny_dir):
    r = api.post("/experiments", json={"config": "x: 1"})
    assert r.status_code == 400 and r.json()["details"][0]["field"] == "model_def"
    r = api.post("/experiments", json=dict(_body(tiny_dir), model_def="%%%not base64"))
    assert r.status_code == 400 and "base64" in r.json()["error"]
    r = api.post("/experiments", json=_body(tiny_dir, config="searcher: [unclosed"))
    assert r.status_code == 400 and "YAML" in r.json()["error"]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz"):
        pass
    r = api.post("/experiments", json=_body(tiny_dir, model_def=buf.getvalue()))
    assert r.status_code == 400 and "model_def" in r.json()["error"]


def test_oversized_context_is_413(api, tiny_dir):
    r = api.post("/experiments", json=_body(tiny_dir, model_def=b"\0" * (MAX_CONTEXT_BYTES + 1)))
    assert r.status_code == 413
    assert ".detignore" in r.json()["error"]


def test_unknown_ids_are_404(api):
    for method, path in [("GET", "/experiments/9999"), ("POST", "/experiments/9999/pause"),
                         ("GET", "/experiments/9999/trials"), ("GET", "/trials/9999"),
                         ("GET", "/trials/9999/logs"), ("GET", f"/checkpoints/{ABSENT}")]:
        r = api.request(method, path)
        assert r.status_code == 404, (path, r.text)
        assert "9999" in r.json()["error"] or ABSENT in r.json()["error"]


ABSENT = "5b9f0e2a-3c4d-4e5f-a6b7-c8d9e0f1a2b3"  # a well-formed checkpoint id nobody made


def test_a_malformed_checkpoint_uuid_is_400_an_unknown_one_404(api):
    """`det checkpoint download not-a-uuid` (GET /checkpoints/not-a-uuid) was a 404 as if
    the id were merely unknown; every route taking a checkpoint id now answers a
    malformed one with a 400 naming it and the expected form."""
    expected = ("uuid: Expected a checkpoint id in UUID form "
                "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). Received: 'not-a-uuid'")
    for method, path, body in [
            ("GET", "/checkpoints/not-a-uuid", None),
            ("GET", "/checkpoints/not-a-uuid/download", None),
            ("POST", "/checkpoints/not-a-uuid/metadata", {"metadata": {"a": 1}}),
            ("DELETE", "/checkpoints/not-a-uuid/metadata?keys=a", None)]:
        r = api.request(method, path, json=body)
        assert (r.status_code, r.json()["error"]) == (400, expected), (path, r.text)
        r = api.request(method, path.replace("not-a-uuid", ABSENT), json=body)
        assert r.status_code == 404 and ABSENT in r.json()["error"], (path, r.text)


def test_paused_experiment_lifecycle_and_409s(api, tiny_dir):
    r = api.post("/experiments", json=_body(tiny_dir, activate=False))
    assert r.status_code == 201, r.text
    exp_id = r.json()["id"]
    exp = api.get(f"/experiments/{exp_id}").json()
    assert exp["state"] == "PAUSED" and len(exp["trials"]) == 1
    assert exp["trials"][0]["state"] == "PAUSED" and exp["trials"][0]["total_batches"] == 0
    assert api.post(f"/experiments/{exp_id}/archive").status_code == 409
    assert api.post(f"/experiments/{exp_id}/cancel").json()["state"] == "CANCELED"
    r = api.post(f"/experiments/{exp_id}/activate")
    assert r.status_code == 409 and "CANCELED -> ACTIVE" in r.json()["error"]
    assert api.post(f"/experiments/{exp_id}/cancel").status_code == 200  # no-op when terminal
    assert api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["state"] == "CANCELED"
    assert api.post(f"/experiments/{exp_id}/archive").json()["archived"] is True
    listed = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert exp_id not in listed
    listed = [e["id"] for e in api.get("/experiments", params={"archived": True}).json()["experiments"]]
    assert exp_id in listed


def test_trial_runner_endpoints_need_a_token(api):
    for method, path, body in [("GET", "/trial-runner/next-op", None),
                               ("POST", "/trial-runner/training", {"batches": 1, "metrics": {}}),
                               ("GET", "/trial-runner/is-best?value=1", None)]:
        r = api.request(method, path, json=body)
        assert r.status_code == 401 and "token" in r.json()["error"]
        r = api.request(method, path, json=body, headers={"Authorization": "Bearer forged"})
        assert r.status_code == 401


def test_null_checkpoint_storage_means_the_masters_default(api, tiny_dir):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = None
    r = api.post("/experiments", json=_body(tiny_dir, config=config))
    assert r.status_code == 201, r.text
    exp = api.get(f"/experiments/{r.json()['id']}").json()
    assert exp["config"]["checkpoint_storage"]["type"] == "shared_fs"


def test_det_checkpoint_commands_name_a_malformed_uuid(shared_master, tmp_path):
    """``det`` refuses a malformed id itself, as a usage error naming the argument, in
    the master's words (the test above: the master's own check)."""
    from det_cli_testing import run_det

    for verb in ("download", "describe"):
        out = run_det(["-m", shared_master.url, "checkpoint", verb, "not-a-uuid"],
                      cwd=tmp_path, timeout=120)
        assert out.returncode == 2, out.stdout
        assert (f"det checkpoint {verb}: error: argument uuid: Expected a checkpoint id in "
                "UUID form") in out.stderr, out.stderr
        assert "'not-a-uuid'" in out.stderr and "Traceback" not in out.stderr
        out = run_det(["-m", shared_master.url, "checkpoint", verb, ABSENT], cwd=tmp_path)
        assert out.returncode == 1 and "(HTTP 404)" in out.stderr, out.stderr
    assert run_det(["-m", shared_master.url, "model", "create", "uuids"]).returncode == 0
    out = run_det(["-m", shared_master.url, "model", "register-version", "uuids",
                   "not-a-uuid"])
    assert out.returncode == 2 and "argument uuid: " in out.stderr, out.stderr
    assert "UUID form" in out.stderr, out.stderr
