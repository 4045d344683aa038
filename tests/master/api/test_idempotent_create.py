"""``POST /experiments`` with an ``Idempotency-Key`` (a real master process): a retried
create whose answer was lost returns the experiment the first one stored (also after a
master restart: the key is stored with it), never a second one; the same key with
another body is refused naming the key; a key is per user; no key: as before. A retry
after its experiment was deleted is refused (410) naming the deleted experiment, also
after a restart: the key outlives the experiment for a day (``deleted_create_keys``)."""

import base64
import uuid

import yaml
from master_testing import wait_for_state

from determined.common.api import IDEMPOTENCY_HEADER, pack_context


def _body(tiny_dir, **changes):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update(changes)
    return {"config": config, "activate": False,
            "model_def": base64.b64encode(pack_context(str(tiny_dir))).decode()}


def _ids(api):
    return [e["id"] for e in api.get("/experiments").json()["experiments"]]


def test_same_key_creates_one_experiment_across_restarts(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=0)
    key = {IDEMPOTENCY_HEADER: uuid.uuid4().hex}
    body = _body(tiny_dir, description="once", resources={"shm_size": 1024})
    with master.client() as api:
        first = api.post("/experiments", json=body, headers=key)
        assert first.status_code == 201, first.text
        exp_id = first.json()["id"]
        assert first.json()["warnings"] and "shm_size" in first.json()["warnings"][0]
        again = api.post("/experiments", json=body, headers=key)
        assert again.status_code == 201, again.text
        assert again.json() == first.json()
        assert _ids(api) == [exp_id]

        other = api.post("/experiments", json=_body(tiny_dir, description="other"), headers=key)
        assert other.status_code == 422, other.text
        message = other.json()["error"]
        assert key[IDEMPOTENCY_HEADER] in message and IDEMPOTENCY_HEADER in message
        assert f"experiment {exp_id}" in message
        assert _ids(api) == [exp_id]

        # Another user's key of the same value is another key.
        token = api.post("/auth/login", json={"username": "admin", "password": ""}).json()
        admin = {"Authorization": f"Bearer {token['token']}", **key}
        mine = api.post("/experiments", json=body, headers=admin)
        assert mine.status_code == 201, mine.text
        assert mine.json()["id"] != exp_id

        # Without a key every create is a new experiment (0.13 clients).
        plain = [api.post("/experiments", json=body).json()["id"] for _ in range(2)]
        assert len(set(plain + [exp_id, mine.json()["id"]])) == 4

        bad = api.post("/experiments", json=body, headers={IDEMPOTENCY_HEADER: "k" * 256})
        assert bad.status_code == 400 and IDEMPOTENCY_HEADER in bad.json()["error"], bad.text
        before = _ids(api)

    master.stop()
    restarted = master_factory(slots=0, data_dir=master.data_dir)
    with restarted.client() as api:
        after = api.post("/experiments", json=body, headers=key)
        assert after.status_code == 201, after.text
        assert after.json() == first.json()
        assert _ids(api) == before
        assert api.post("/experiments", json=_body(tiny_dir, description="x"),
                        headers=key).status_code == 422


def test_a_late_retry_after_delete_makes_no_new_experiment(master_factory, tiny_dir):
    master = master_factory(slots=0)
    key = {IDEMPOTENCY_HEADER: uuid.uuid4().hex}
    body = _body(tiny_dir, description="deleted later")
    with master.client() as api:
        first = api.post("/experiments", json=body, headers=key)
        assert first.status_code == 201, first.text
        exp_id = first.json()["id"]
        assert api.post(f"/experiments/{exp_id}/kill").status_code == 200
        wait_for_state(api, exp_id, ["CANCELED"])
        deleted = api.delete(f"/experiments/{exp_id}")
        assert deleted.status_code == 200, deleted.text
        assert _ids(api) == []

        late = api.post("/experiments", json=body, headers=key)
        assert late.status_code == 410, late.text
        assert late.json()["error"] == (
            f"{IDEMPOTENCY_HEADER} {key[IDEMPOTENCY_HEADER]!r} already created experiment "
            f"{exp_id}, which was deleted; this create is not made again. Send a new key "
            "(det e create does) to create another experiment")
        other = api.post("/experiments", json=_body(tiny_dir, description="x"), headers=key)
        assert other.status_code == 422, other.text
        assert f"experiment {exp_id} (since deleted)" in other.json()["error"]
        assert _ids(api) == []
        # A new key creates as before.
        fresh = api.post("/experiments", json=body,
                         headers={IDEMPOTENCY_HEADER: uuid.uuid4().hex})
        assert fresh.status_code == 201, fresh.text
        assert _ids(api) == [fresh.json()["id"]]

    master.stop()
    restarted = master_factory(slots=0, data_dir=master.data_dir)
    with restarted.client() as api:
        again = api.post("/experiments", json=body, headers=key)
        assert again.status_code == 410 and f"experiment {exp_id}" in again.json()["error"]
        assert _ids(api) == [fresh.json()["id"]]


def test_openapi_names_the_header(shared_master):
    with shared_master.client() as api:
        spec = api.get("/../../openapi.json").json()
    params = spec["paths"]["/api/v1/experiments"]["post"]["parameters"]
    assert (IDEMPOTENCY_HEADER, "header") in [(p["name"], p["in"]) for p in params]
    assert "requestBody" in spec["paths"]["/api/v1/experiments"]["post"]
