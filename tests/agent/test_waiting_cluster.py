"""Why tasks and trials wait, with real masters and agents: the REST API's ``waiting``
field, ``det task list`` / ``det e list`` / ``det e describe`` / ``det trial describe``,
the master log (once per task), and the up-front 400 on a cluster that cannot grow."""

import json
import os
import pathlib
import sys
import time

import base64

import httpx
import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from determined.common.api import pack_context  # noqa: E402

from agent_testing import AgentCluster  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from master_testing import MasterProcess, create_experiment, wait_until  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TINY = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pytorch"


def det(url, *args, code=0, columns=None):
    env = {"COLUMNS": str(columns)} if columns else None
    out = run_det(["-m", url, *map(str, args)], env=env, timeout=180)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def login(url):
    token = httpx.post(url + "/api/v1/auth/login",
                       json={"username": "determined", "password": ""}).json()["token"]
    return httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {token}"},
                        timeout=60)


def poll(api, path, check, what):
    """GET ``path`` until ``check(answer)`` holds; the answer."""
    def answer():
        got = api.get(path).json()
        return got if check(got) else None
    return wait_until(answer, 60, what)


def waiting(api, path, reason):
    """Poll ``path`` until its ``waiting.reason`` is ``reason``; the JSON."""
    return poll(api, path, lambda r: (r.get("waiting") or {}).get("reason") == reason,
                f"{path} waiting: {reason}")


@pytest.fixture
def embedded(tmp_path):
    m = MasterProcess(str(tmp_path / "master"), slots=1)
    os.makedirs(m.data_dir)
    m.start()
    yield m
    m.stop()


def test_embedded_master_refuses_a_task_no_agent_of_it_can_hold(embedded):
    api = login(embedded.url)
    r = api.post("/tasks", json={"kind": "command",
                                 "config": {"entrypoint": "true", "resources": {"slots": 8}}})
    assert r.status_code == 400, r.text
    assert "resources.slots" in r.text and "has 1 slot" in r.text and "=8" in r.text
    out = det(embedded.url, "notebook", "start", "--no-browser", "--config",
              "resources.slots=8", code=1)
    assert "resources.slots" in out.stderr and "has 1 slot" in out.stderr
    assert api.get("/tasks", params={"all": "true"}).json()["tasks"] == []  # nothing stored


def test_a_task_behind_another_says_which_holds_its_slot(embedded):
    api = login(embedded.url)
    busy = api.post("/tasks", json={"kind": "command",
                                    "config": {"entrypoint": "sleep 300"}}).json()
    wait_until(lambda: api.get(f"/tasks/{busy['id']}").json()["state"] == "RUNNING", 60,
               "the first command running")
    second = api.post("/tasks", json={"kind": "command", "config": {"entrypoint": "true"}})
    assert second.status_code == 201, second.text
    task = waiting(api, f"/tasks/{second.json()['id']}", "waiting for 1 slot in use")
    assert task["state"] == "PENDING" and task["waiting"]["impossible"] is False
    assert f"task {busy['id']} (1 slot" in task["waiting"]["detail"]
    assert api.get(f"/tasks/{busy['id']}").json()["waiting"] is None
    listed = det(embedded.url, "task", "list", columns=80).stdout
    assert max(len(line) for line in listed.splitlines()) <= 80, listed
    header = listed.splitlines()[0]
    assert "waiting" in header, listed
    row = next(line for line in listed.splitlines() if line.startswith(task["id"]))
    assert "waiting for 1" in row, listed
    api.post(f"/tasks/{busy['id']}/kill")
    done = poll(api, f"/tasks/{task['id']}", lambda t: t["state"] == "TERMINATED",
                "the second command ran")
    assert done["exit_code"] == 0 and done["waiting"] is None


def test_embedded_master_refuses_an_experiment_whose_trials_cannot_fit(embedded):
    api = login(embedded.url)
    config = yaml.safe_load((TINY / "const.yaml").read_text())
    config["resources"] = {"slots_per_trial": 2}
    body = {"config": config, "model_def": base64.b64encode(pack_context(str(TINY))).decode()}
    r = api.post("/experiments", json=body)
    assert r.status_code == 400, r.text
    assert "resources.slots_per_trial" in r.text and "has 1 slot" in r.text
    assert api.get("/experiments").json()["experiments"] == []


@pytest.fixture
def remote(tmp_path):
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 0}}) as cluster:
        yield cluster


def test_remote_agents_may_join_so_a_large_task_waits_and_says_why(remote):
    url = remote.master.url
    api = login(url)
    # No agent yet: the task is accepted (one may join) and says there is none.
    r = api.post("/tasks", json={"kind": "command",
                                 "config": {"entrypoint": "true", "resources": {"slots": 2}}})
    assert r.status_code == 201, r.text
    task_path = f"/tasks/{r.json()['id']}"
    waiting(api, task_path, "no agent connected")
    remote.ensure_agents("w1", "w2", slots=1)
    # Two 1-slot agents: 2 slots in all, but a task runs on one agent.
    task = waiting(api, task_path, "needs 2 slots, largest agent has 1")
    assert task["waiting"]["impossible"] is True
    # A trial may span agents: 2 slots fit, so it is not told it is too large.
    config = yaml.safe_load((TINY / "const.yaml").read_text())
    config["resources"] = {"slots_per_trial": 3}
    exp_id = create_experiment(api, config, TINY)
    exp = waiting(api, f"/experiments/{exp_id}", "needs 3 slots, cluster has 2")
    _trial_says_so_everywhere(remote.master, api, exp, "needs 3 slots, cluster has 2")
    det(url, "-u", "admin", "agent", "disable", "--all")
    waiting(api, task_path, "all agents disabled")
    waiting(api, f"/experiments/{exp_id}", "all agents disabled")
    listed = det(url, "task", "list", columns=80).stdout
    assert "all agents disabled" in listed, listed
    log = remote.master.log()
    task_id = r.json()["id"]
    assert log.count(f"task {task_id} cannot be scheduled") == 1, log  # once, not per reason
    det(url, "e", "kill", exp_id)


def _trial_says_so_everywhere(master, api, exp, reason):
    """The experiment's waiting trial: its reason on every JSON and in every det view, and
    one line in the master log however many scheduling passes run."""
    url, exp_id = master.url, exp["id"]
    assert exp["waiting"]["impossible"] is True
    (trial,) = exp["trials"]
    assert trial["waiting"]["reason"] == reason
    assert api.get(f"/trials/{trial['id']}").json()["waiting"] == trial["waiting"]
    listed = api.get("/experiments").json()["experiments"]
    assert next(e for e in listed if e["id"] == exp_id)["waiting"] == exp["waiting"]
    assert api.get("/waiting").json()["trials"][str(trial["id"])] == trial["waiting"]

    e_list = det(url, "e", "list", columns=80).stdout
    assert reason in e_list and max(map(len, e_list.splitlines())) <= 80, e_list
    trials_listed = det(url, "e", "list-trials", exp_id, columns=80).stdout
    assert reason in trials_listed, trials_listed
    described = det(url, "e", "describe", exp_id).stdout
    assert f"Trial {trial['id']} waits: {trial['waiting']['detail']}" in described, described
    assert f"Experiment {exp_id} waits: " in described
    # In an 80-column terminal the details wrap (one line of over 90 columns before).
    narrow = det(url, "e", "describe", exp_id, columns=80).stdout
    assert max(map(len, narrow.splitlines())) <= 80, narrow
    assert f"Trial {trial['id']} waits: The trial needs" in narrow, narrow
    t_described = det(url, "trial", "describe", trial["id"]).stdout
    assert f"Trial {trial['id']} waits: The trial needs" in t_described, t_described
    as_json = json.loads(det(url, "trial", "describe", trial["id"], "--json").stdout)
    assert as_json["waiting"] == trial["waiting"]

    time.sleep(3)  # several scheduling passes: still one line in the master log
    said = [line for line in master.log().splitlines()
            if f"trial {trial['id']} cannot be scheduled" in line]
    assert len(said) == 1, master.log()
    assert reason.split(",")[0] in said[0]


def test_with_a_remote_agent_the_embedded_master_queues_instead_of_refusing(tmp_path):
    """The master's own slot and a remote agent's: a larger task or trial is accepted (more
    agents may join) and says why it waits; the embedded slot joins no spanning trial."""
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 1}}) as cluster:
        cluster.ensure_agents("r1", slots=1)
        api = login(cluster.master.url)
        r = api.post("/tasks", json={"kind": "command", "config": {
            "entrypoint": "true", "resources": {"slots": 2}}})
        assert r.status_code == 201, r.text
        waiting(api, f"/tasks/{r.json()['id']}", "needs 2 slots, largest agent has 1")
        config = yaml.safe_load((TINY / "const.yaml").read_text())
        config["resources"] = {"slots_per_trial": 2}
        exp_id = create_experiment(api, config, TINY)
        waiting(api, f"/experiments/{exp_id}", "needs 2 slots, cluster has 1")
        det(cluster.master.url, "e", "kill", exp_id)
