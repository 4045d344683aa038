"""Security of the master's API against a real master process (issue 14 part 6): trial
tokens are no logins, agents need credentials when anonymous access is off, the data
directory and database are private, and out-of-range integers, duplicate checkpoint
reports and reports that do not fit the trial's state are 4xx, not 500."""

import os
import pathlib
import stat
import uuid

import httpx
import pytest

from determined.master.db import Store
from master_testing import (
    LONG_CONFIG,
    MasterProcess,
    create_experiment,
    set_password,
    slow_model_dir,
    wait_until,
)

BIG = 2**70


@pytest.fixture(scope="module")
def running_trial(tmp_path_factory):
    """A master (module-scoped) with one slow trial training, and a runner token of it."""
    tmp = tmp_path_factory.mktemp("sec")
    data_dir = str(tmp / "master")
    os.makedirs(data_dir, mode=0o755)
    master = MasterProcess(data_dir, slots=1).start(timeout=120)
    tiny = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"
    model = slow_model_dir(tiny, tmp)
    config = dict(LONG_CONFIG, entrypoint="slow_def:SlowTrial")
    config["hyperparameters"] = dict(config["hyperparameters"], sleep=0.05)
    api = master.client()
    exp_id = create_experiment(api, config, model)
    other = create_experiment(api, config, model, activate=False)
    trial = wait_until(lambda: [t for t in api.get(f"/experiments/{exp_id}").json()["trials"]
                                if t["state"] == "ACTIVE" and t["total_batches"] > 0],
                       120, "a training trial")[0]
    store = Store("sqlite:///" + os.path.join(data_dir, "master.db"))
    token = store.create_trial_token(trial["id"])
    store.close()
    yield master, api, exp_id, other, trial["id"], token
    api.close()
    master.stop()


def _fresh(master):
    return httpx.Client(base_url=master.url + "/api/v1", timeout=30)


def test_trial_token_authorizes_only_its_runner_routes(running_trial):
    master, api, exp_id, other, trial_id, token = running_trial
    auth = {"Authorization": f"Bearer {token}"}
    with _fresh(master) as c:
        r = c.post("/users/determined/password", json={"password": "stolen"}, headers=auth)
        assert r.status_code == 403, r.text
        assert "runner routes" in r.json()["error"]
        for method, path in [("GET", "/me"), ("GET", "/experiments"),
                             ("POST", f"/experiments/{exp_id}/pause"),
                             ("PATCH", "/users/determined"),
                             ("GET", f"/experiments/{other}/model_def")]:
            assert c.request(method, path, headers=auth).status_code == 403, path
        assert c.get(f"/experiments/{exp_id}/model_def", headers=auth).status_code == 200
        assert c.get("/trial-runner/is-best", params={"value": 1.0},
                     headers=auth).status_code == 200
        # The owner's password is unchanged: the blank one still logs in.
        assert c.post("/auth/login", json={"username": "determined",
                                           "password": ""}).status_code == 200
        assert api.get(f"/experiments/{exp_id}").json()["state"] == "ACTIVE"


def test_out_of_range_integers_and_state_conflicts_are_4xx(running_trial):
    master, api, exp_id, _, trial_id, token = running_trial
    auth = {"Authorization": f"Bearer {token}"}
    twice = str(uuid.uuid4())
    checkpoint = {"batches": 20, "uuid": twice, "metadata": {}}
    cases = [
        ("GET", f"/experiments/{BIG}", {}, 400, "id"),
        ("POST", f"/experiments/{BIG}/kill", {}, 400, "id"),
        ("GET", f"/trials/{BIG}", {}, 400, "id"),
        ("GET", f"/trials/{-BIG}/logs", {}, 400, "id"),
        ("GET", f"/trials/{trial_id}/logs", {"params": {"after_id": BIG}}, 400, "after_id"),
        ("GET", f"/trials/{trial_id}/logs", {"params": {"tail": BIG}}, 400, "tail"),
        ("PATCH", f"/experiments/{exp_id}", {"json": {"max_slots": BIG}}, 400, "max_slots"),
        ("PATCH", f"/experiments/{exp_id}", {"content": b'{"weight": Infinity}',
                                             "headers": {"Content-Type": "application/json"}},
         400, "weight"),
        ("POST", "/trial-runner/training", {"json": {"batches": BIG, "metrics": {}}},
         400, "batches"),
        # The training routes parse their bodies themselves: errors as FastAPI's own.
        ("POST", "/trial-runner/training", {"content": b""}, 400, "Invalid request"),
        ("POST", "/trial-runner/training-batch",
         {"content": b'{"reports": [', "headers": {"Content-Type": "application/json"}},
         400, "Invalid request"),
        ("POST", "/trial-runner/training-batch", {"json": {"reports": []}}, 400, "reports"),
        ("POST", "/trial-runner/training-batch",
         {"json": {"reports": [{"batches": 10**9, "metrics": {}, "extra": 1}]}},
         400, "reports.0.extra"),
        ("POST", "/trial-runner/training-batch",
         {"json": {"reports": [{"batches": -1, "metrics": {}}]}}, 400, "reports.0.batches"),
        ("POST", "/trial-runner/checkpoint", {"json": checkpoint}, 200, None),
        # The same report again (a retried request) is accepted; other content under
        # the same uuid is a conflict.
        ("POST", "/trial-runner/checkpoint", {"json": checkpoint}, 200, None),
        ("POST", "/trial-runner/checkpoint", {"json": dict(checkpoint, batches=30)}, 409, twice),
        ("POST", "/trial-runner/checkpoint",
         {"json": dict(checkpoint, metadata={"framework": "other"})}, 409, "other content"),
        ("POST", "/trial-runner/validate-op-completed", {"json": {"batches": 0, "metrics": {}}},
         409, "Validate"),
        ("POST", "/agents/a1/register", {"json": {"slots": BIG}}, 400, "slots"),
        ("POST", "/agents/a1/rendezvous",
         {"json": {"session": "s", "launch_id": "l", "port": 70000}}, 400, "port"),
        ("POST", "/agents/a1/rendezvous",
         {"json": {"session": "s", "launch_id": "l", "port": 29500}}, 410, "register again"),
    ]
    for method, path, kwargs, status, text in cases:
        kwargs = dict(kwargs)
        if path.startswith("/trial-runner/"):
            kwargs["headers"] = dict(kwargs.get("headers", {}), **auth)
        with _fresh(master) as c:  # a 500 would close the connection
            r = c.request(method, path, **kwargs)
        assert r.status_code == status, (method, path, r.status_code, r.text)
        if text is not None:
            assert text in r.text, (path, r.text)
    assert api.get("/master").status_code == 200


def test_data_directory_and_database_are_private(running_trial):
    master = running_trial[0]
    assert stat.S_IMODE(os.stat(master.data_dir).st_mode) == 0o700
    for name in ("master.db", "master.db-wal", "master.db-shm"):
        path = os.path.join(master.data_dir, name)
        if name == "master.db" or os.path.exists(path):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, name


def test_agents_need_credentials_without_anonymous_access(config_master_factory):
    master = config_master_factory({"security": {"allow_anonymous": False},
                                    "resource_manager": {"slots": 0}})
    body = {"slots": 1, "label": "", "running": [], "version": "0.13.0", "protocol": 1}
    with master.client() as c:
        r = c.post("/agents/box-1/register", json=body)
        assert r.status_code == 401 and "allow_anonymous" in r.json()["error"], r.text
        r = c.post("/agents/box-1/register", json=body,
                   headers={"Authorization": "Bearer not-a-session"})
        assert r.status_code == 401, r.text
        password = set_password(master)  # a blank admin password cannot log in here
        admin = c.post("/auth/login", json={"username": "admin", "password": password}).json()
        admin_auth = {"Authorization": f"Bearer {admin['token']}"}
        assert c.post("/users", json={"username": "bob", "password": "pw"},
                      headers=admin_auth).status_code == 201
        bob = c.post("/auth/login", json={"username": "bob", "password": "pw"}).json()
        r = c.post("/agents/box-1/register", json=body,
                   headers={"Authorization": f"Bearer {bob['token']}"})
        assert r.status_code == 403 and "admin" in r.json()["error"], r.text
        assert c.get("/agents", headers=admin_auth).json()["agents"] == []
        r = c.post("/agents/box-1/register", json=body, headers=admin_auth)
        assert r.status_code == 200 and r.json()["session"], r.text
        assert [a["id"] for a in c.get("/agents", headers=admin_auth).json()["agents"]] == \
            ["box-1"]


def test_malformed_checkpoint_id_is_400_and_refusals_log_one_line(running_trial):
    master, api, exp_id, _, trial_id, token = running_trial
    auth = {"Authorization": f"Bearer {token}"}
    with _fresh(master) as c:
        for bad in ("../etc", "not-a-uuid", f"urn:uuid:{uuid.uuid4()}"):
            r = c.post("/trial-runner/checkpoint", headers=auth,
                       json={"batches": 10, "uuid": bad, "metadata": {}})
            assert r.status_code == 400, (bad, r.text)
            assert r.json()["details"][0]["field"] == "uuid" and "UUID form" in r.text
        # A report that does not fit the trial's state: a 409, logged as one line.
        r = c.post("/trial-runner/validate-op-completed", headers=auth,
                   json={"batches": 0, "metrics": {}})
        assert r.status_code == 409, r.text
    with open(os.path.join(master.data_dir, "master-test.log"), errors="replace") as f:
        log = f.read()
    refusals = [line for line in log.splitlines() if "validate-op-completed refused" in line]
    assert refusals, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
