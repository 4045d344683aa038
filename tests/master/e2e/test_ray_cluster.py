"""The master scheduling onto a real multi-node Ray cluster started by the test (a head
without CPUs and two one-CPU worker nodes, each a raylet of its own): an adaptive
search completes, a trial whose node is killed restarts on the other node from its
checkpoint, a two-slot trial spanning both nodes trains as on one machine, and tasks
run on the nodes."""

import os
import time

import pytest
import yaml

from master_testing import (
    assert_trial_log_format,
    free_ray_agent_ports,
    ConfiguredMasterProcess,
    create_experiment,
    slow_model_dir,
    trial_logs,
    wait_for_state,
    wait_until,
)

pytestmark = pytest.mark.e2e
MB = 1024 * 1024


def _started(start, attempts=5):
    """``start()`` (a Ray node), retried when the node misses Ray's fixed 30 s start-up
    wait (a loaded machine): the processes the failed try left are killed first (they
    are children of this process that did not exist before it)."""
    import psutil

    me = psutil.Process()
    for attempt in range(attempts):
        before = {p.pid for p in me.children(recursive=True)}
        try:
            return start()
        except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception here
            if "timed out during startup" not in str(e) or attempt == attempts - 1:
                raise
            for p in me.children(recursive=True):
                if p.pid not in before:
                    try:
                        p.kill()
                    except psutil.NoSuchProcess:
                        pass


@pytest.fixture
def ray_cluster():
    from ray.cluster_utils import Cluster

    small = dict(object_store_memory=80 * MB, **{})
    cluster = _started(lambda: Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=0, include_dashboard=False, **small, **free_ray_agent_ports())))
    try:
        workers = [_started(lambda: cluster.add_node(num_cpus=1, **small, **free_ray_agent_ports()))
                   for _ in range(2)]
        cluster.wait_for_nodes(timeout=180)
        yield cluster, workers
    finally:
        cluster.shutdown()


@pytest.fixture
def ray_master(ray_cluster, tmp_path):
    cluster, workers = ray_cluster
    data = tmp_path / "master"
    data.mkdir()
    master = ConfiguredMasterProcess(str(data), {"resource_manager": {
        "type": "ray", "address": cluster.address, "slots": 0}}).start(timeout=120)
    try:
        yield master, cluster, workers
    finally:
        master.stop()


def _ray_agents(api):
    return [a for a in api.get("/agents").json()["agents"] if a["type"] == "ray"]


def test_adaptive_search_on_ray(ray_master, tiny_dir):
    master, _, _ = ray_master
    with master.client() as api:
        agents = wait_until(lambda: len(_ray_agents(api)) == 2 and _ray_agents(api),
                            what="two Ray nodes with a slot each")
        assert [a["slots"] for a in agents] == [1, 1]
        config = {
            "entrypoint": "model_def:TinyTrial", "scheduling_unit": 10,
            "hyperparameters": {"global_batch_size": 16, "dropout": 0.2,
                                "lr": {"type": "log", "base": 10, "minval": -2, "maxval": -0.5}},
            "searcher": {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 3,
                         "max_length": {"batches": 40}, "divisor": 2, "max_rungs": 2},
            "max_restarts": 0,
        }
        exp_id = create_experiment(api, config, tiny_dir)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
        assert exp["state"] == "COMPLETED", exp
        assert len(exp["trials"]) == 3 and all(t["state"] == "COMPLETED" for t in exp["trials"])
        # The trial's own output, shipped by its actor (the last lines may land after
        # the experiment completed). Known gap: on a loaded machine the process's very
        # last line ("trial N exited: completed") was seen missing, so this checks for
        # the trial's own lines, not the master's "[determined]" lifecycle lines.
        def trial_output():
            lines = [l["line"] for l in api.get(f"/trials/{exp['trials'][0]['id']}/logs",
                                                params={"limit": 10000}).json()["logs"]]
            return [l for l in lines if not l.startswith("[determined]")]

        wait_until(trial_output, timeout=60, what="the trial's output in its log")


def test_lost_ray_node_restarts_trial_from_checkpoint(ray_master, tiny_dir, tmp_path):
    master, cluster, workers = ray_master
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 10, "max_restarts": 1,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.05},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 100}},
        "min_checkpoint_period": {"batches": 20},
    }
    with master.client() as api:
        wait_until(lambda: len(_ray_agents(api)) == 2, what="two Ray nodes")
        exp_id = create_experiment(api, config, slow_model_dir(tiny_dir, tmp_path))
        wait_until(lambda: api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"],
                   timeout=180, what="a first checkpoint")
        (busy,) = [a for a in _ray_agents(api) if a["slot_tasks"][0]["task"]]
        node = next(w for w in workers if w.node_id.startswith(busy["id"][len("ray-"):]))
        cluster.remove_node(node)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
        assert exp["state"] == "COMPLETED", exp
        trial = exp["trials"][0]
        assert trial["restarts"] == 1 and trial["total_batches"] == 100
        lines = [l["line"] for l in api.get(f"/trials/{trial['id']}/logs",
                                           params={"limit": 10000}).json()["logs"]]
        assert any("Ray node of the trial was lost" in l for l in lines)
        assert any("restored from checkpoint" in l for l in lines)
        assert [a["id"] for a in _ray_agents(api)] != [busy["id"]]


DIST_MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "dist_pytorch")


def _dist_config(seed):
    with open(os.path.join(DIST_MODEL, "const.yaml")) as f:
        config = yaml.safe_load(f)
    config["reproducibility"] = {"experiment_seed": seed}
    config["max_restarts"] = 0
    return config


def _final_weights(api, exp_id, data_dir):
    import torch

    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
    assert exp["state"] == "COMPLETED", exp
    uuid = exp["trials"][0]["latest_checkpoint"]
    path = os.path.join(data_dir, "checkpoints", uuid, "state_dict.pth")
    return torch.load(path, weights_only=False)["models_state_dict"]


def test_two_node_distributed_trial_matches_one_node(ray_master, master_factory):
    """slots_per_trial 2 on two one-slot Ray nodes (gloo across nodes, rendezvous at
    rank 0's node) trains the same weights as both ranks on one machine."""
    master, _, _ = ray_master
    with master.client() as api:
        wait_until(lambda: len(_ray_agents(api)) == 2, what="two Ray nodes")
        exp_id = create_experiment(api, _dist_config(7), DIST_MODEL)
        # One rank on each node: both nodes' slots hold the trial.
        wait_until(lambda: all(a["slot_tasks"][0]["task"] for a in _ray_agents(api)),
                   timeout=120, what="the trial on both nodes")
        spanned = _final_weights(api, exp_id, master.data_dir)
        # Both ranks (each started by a Ray actor) log as a local run's do.
        trial_id = api.get(f"/experiments/{exp_id}").json()["trials"][0]["id"]
        assert_trial_log_format(trial_logs(api, trial_id))
    one_machine = master_factory(slots=2)
    with one_machine.client() as api:
        exp_id = create_experiment(api, _dist_config(7), DIST_MODEL)
        local = _final_weights(api, exp_id, one_machine.data_dir)
    assert spanned[0].keys() == local[0].keys()
    for name, value in spanned[0].items():
        assert torch_equal(value, local[0][name]), name


def torch_equal(a, b):
    import torch

    return torch.equal(a, b)


def _task(api, task_id):
    return api.get(f"/tasks/{task_id}").json()


def _task_in(api, task_id, state, timeout=120):
    return wait_until(lambda: (lambda t: t if t["state"] == state else None)(
        _task(api, task_id)), timeout, f"task {task_id} {state}")


def _task_lines(api, task_id):
    return [r["line"] for r in api.get(f"/tasks/{task_id}/logs",
                                       params={"limit": 10000}).json()["logs"]]


def _new_task(api, kind, **body):
    r = api.post("/tasks", json={"kind": kind, **body})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_tasks_on_ray_nodes(ray_master, tmp_path):
    """Commands and a shell run in actors on the Ray nodes: output and exit codes reach
    the master, slotted tasks hold a node's slot, kill stops one, the proxy reaches a
    service on a node, and a task whose node is removed ends as lost."""
    import base64
    import json

    from websockets.sync.client import connect

    from determined.common.api import pack_context
    from det_cli_testing import run_det
    from master_testing import PtyReader

    master, cluster, workers = ray_master
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "data.txt").write_text("hello from the context\n")
    with master.client() as api:
        wait_until(lambda: len(_ray_agents(api)) == 2, what="two Ray nodes")
        done = _new_task(api, "command",
                         context=base64.b64encode(pack_context(str(ctx))).decode(),
                         config={"entrypoint": "cat data.txt; echo node=$DET_AGENT_ID; exit 3"})
        ended = _task_in(api, done, "TERMINATED")
        assert ended["exit_code"] == 3 and ended["agent_id"].startswith("ray-"), (
            ended, _task_lines(api, done))
        lines = _task_lines(api, done)
        assert "hello from the context" in lines and f"node={ended['agent_id']}" in lines, lines

        # Each node has one slot: two sleeping one-slot commands take both, a third waits.
        sleepers = [_new_task(api, "command", config={"entrypoint": "exec sleep 600",
                                                      "resources": {"slots": 1}})
                    for _ in range(2)]
        running = [_task_in(api, t, "RUNNING") for t in sleepers]
        assert sorted(t["agent_id"] for t in running) == sorted(a["id"] for a in _ray_agents(api))
        slots = json.loads(run_det(["-m", master.url, "slot", "list", "--json"]).stdout)
        assert sorted(s["task"] for s in slots) == sorted(f"task-{t}" for t in sleepers), slots
        waiting = _new_task(api, "command", config={"entrypoint": "echo third",
                                                    "resources": {"slots": 1}})
        time.sleep(2)
        assert _task(api, waiting)["state"] == "PENDING"
        # Why it waits, from the Ray nodes' slots: both in use, naming their holders.
        why = wait_until(lambda: _task(api, waiting)["waiting"], what="a waiting reason")
        assert why["reason"] == "waiting for 1 slot in use" and not why["impossible"], why
        assert all(f"task {t}" in why["detail"] for t in sleepers), why
        # More slots than any node has: it says so (the cluster may grow, so no 400).
        wide = _new_task(api, "command", config={"entrypoint": "echo wide",
                                                 "resources": {"slots": 3}})
        why = wait_until(lambda: _task(api, wide)["waiting"], what="a waiting reason")
        assert why["reason"].startswith("needs 3 slots, ") and why["impossible"], why
        assert api.post(f"/tasks/{wide}/kill").status_code == 200
        assert api.post(f"/tasks/{sleepers[0]}/kill").status_code == 200
        killed = _task_in(api, sleepers[0], "TERMINATED")
        assert killed["end_reason"] == "killed" and killed["exit_code"] == -15, killed
        assert _task_in(api, waiting, "TERMINATED")["exit_code"] == 0
        assert "third" in _task_lines(api, waiting)

        # A shell (no slots) on a node, through the master's proxy.
        sh = _new_task(api, "shell")
        assert _task_in(api, sh, "RUNNING")["agent_id"].startswith("ray-")
        url = master.url.replace("http://", "ws://") + f"/proxy/{sh}/"

        token = api.post("/auth/login", json={"username": "determined",
                                               "password": ""}).json()["token"]

        def connected():
            try:
                return connect(url, open_timeout=10,
                               additional_headers={"Authorization": f"Bearer {token}"})
            except Exception:
                return None

        ws = wait_until(connected, 60, "the shell server on the Ray node")
        reader = PtyReader(ws)
        ws.send(b"echo on=$DET_AGENT_ID; echo MARK$((6*7))\n")
        reader.until(b"MARK42")
        assert f"on={_task(api, sh)['agent_id']}".encode() in reader.output
        ws.close()
        assert api.post(f"/tasks/{sh}/kill").status_code == 200
        _task_in(api, sh, "TERMINATED")

        # The node of the other sleeper is removed: its task ends as lost.
        node_agent = _task(api, sleepers[1])["agent_id"]
        node = next(w for w in workers if w.node_id.startswith(node_agent[len("ray-"):]))
        cluster.remove_node(node)
        lost = _task_in(api, sleepers[1], "TERMINATED", timeout=180)
        assert lost["end_reason"] == f"Ray node {node_agent} lost", lost
        assert lost["exit_code"] is None
