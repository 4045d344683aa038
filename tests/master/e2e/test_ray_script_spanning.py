"""Script trials spanning Ray nodes (a real Ray cluster started by the test: a head
without CPUs and two worker nodes of two CPUs each, raylets of their own): each node
runs the entrypoint (``determined.launch.torch_distributed`` over a Core API script
with gloo) once, the chief's with the link, the other as ``_script_part``, as remote
agents do (tests/agent/test_script_spanning.py)."""

import contextlib
import json
import os
import pathlib
import signal

import pytest

from master_testing import (
    ConfiguredMasterProcess,
    create_experiment,
    free_ray_agent_ports,
    metric_rows,
    wait_for_state,
    wait_until,
)
from span_testing import (
    DIST_DIR,
    OUTLIVED_LINE,
    check_script_two_and_one,
    check_trial_two_and_one,
    linger_config,
    place_trial_config,
    places,
)
from test_ray_cluster import MB, _ray_agents, _started

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CORE_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "core_api"
ENDED = ["COMPLETED", "ERROR", "CANCELED"]


@pytest.fixture(scope="module")
def two_cpu_cluster():
    from ray.cluster_utils import Cluster

    small = dict(object_store_memory=80 * MB)
    cluster = _started(lambda: Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=0, include_dashboard=False, **small, **free_ray_agent_ports())))
    try:
        for _ in range(2):
            _started(lambda: cluster.add_node(num_cpus=2, **small, **free_ray_agent_ports()))
        cluster.wait_for_nodes(timeout=180)
        yield cluster
    finally:
        cluster.shutdown()


@contextlib.contextmanager
def _master(cluster, tmp_path, **resource_manager):
    """A master on ``cluster`` (``resource_manager``: more of its config section); its client."""
    data = tmp_path / "master"
    data.mkdir()
    master = ConfiguredMasterProcess(str(data), {"resource_manager": {
        "type": "ray", "address": cluster.address, "slots": 0, **resource_manager}}
    ).start(timeout=120)
    try:
        with master.client() as client:
            wait_until(lambda: [a["slots"] for a in _ray_agents(client)] == [2, 2],
                       timeout=120, what="two Ray nodes of two slots")
            yield client
    finally:
        master.stop()


@pytest.fixture
def api(two_cpu_cluster, tmp_path):
    with _master(two_cpu_cluster, tmp_path) as client:
        yield client


def _config(markers: pathlib.Path, batches: int, **hparams) -> dict:
    hparams.setdefault("ckpt_every", 3)
    return {
        "name": "script-across-ray-nodes",
        "entrypoint": "python3 -m determined.launch.torch_distributed python3 span_core.py",
        "hyperparameters": {"marker_dir": str(markers), **hparams},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": batches}},
        "resources": {"slots_per_trial": 4},
        "max_restarts": 2,
    }


def _logs(api, trial_id: int) -> str:
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def _ranks(markers: pathlib.Path) -> list:
    return [json.loads((markers / f"rank{r}.json").read_text()) for r in range(4)]


def _pids(markers: pathlib.Path) -> list:
    return [int((markers / f"rank{r}.pid").read_text()) for r in range(4)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _steps(markers: pathlib.Path) -> int:
    steps = markers / "steps"
    return int(steps.read_text() or 0) if steps.exists() else 0


def _free_slots(api) -> bool:
    return all(a["used_slots"] == 0 for a in _ray_agents(api))


def test_four_ranks_on_two_ray_nodes(api, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    exp_id = create_experiment(api, _config(markers, 6), CORE_DIR)
    exp = wait_for_state(api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    assert exp["state"] == "COMPLETED", (exp, _logs(api, trial["id"]))
    assert trial["total_batches"] == 6 and trial["restarts"] == 0, trial
    # Each node ran the command once; the chief's trial process alone has the link.
    wait_until(lambda: "rank 2 done at step 6" in _logs(api, trial["id"]), timeout=60,
               what="the other node's output in the trial's log")
    logs = _logs(api, trial["id"])
    assert logs.count("runs its script") == 2 and "runs its script on machine 1" in logs, logs
    assert "[machine 1] " in logs, logs
    ranks = _ranks(markers)
    nodes = sorted(a["id"] for a in _ray_agents(api))
    assert sorted({i["agent_id"] for i in ranks}) == nodes, ranks
    for info in ranks:
        machine = info["rank"] // 2
        assert info["container_rank"] == info["cross_rank"] == machine, info
        assert info["local_rank"] == info["rank"] % 2 and info["local_size"] == 2, info
        assert info["size"] == info["torch_size"] == 4 and info["torch_rank"] == info["rank"]
        assert info["cross_size"] == 2 and len(info["container_addrs"]) == 2, info
        assert info["container_slot_counts"] == [2, 2] and len(info["slot_ids"]) == 2, info
        assert (info["agent_id"] == ranks[0]["agent_id"]) == (machine == 0), ranks
        assert info["trial_id"] == trial["id"]
        assert info["dist_key"] and info["dist_key"] == ranks[0]["dist_key"], ranks
    rows = metric_rows(api, trial["id"])
    assert [b for k, b, _ in rows if k == "training"] == list(range(1, 7)), rows
    assert [b for k, b, _ in rows if k == "validation"] == [6], rows
    ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    assert sorted(c["total_batches"] for c in ckpts) == [3, 6], ckpts
    wait_until(lambda: _free_slots(api), timeout=60, what="the slots to be free")


def test_a_killed_rank_on_the_other_node_restarts_the_trial(api, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    exp_id = create_experiment(api, _config(markers, 12, step_seconds=1.0), CORE_DIR)
    wait_until(lambda: _steps(markers) >= 4, timeout=300,
               what="the script past its first checkpoint")
    (follower, _) = [i for i in _ranks(markers) if i["container_rank"] == 1]
    os.kill(_pids(markers)[follower["rank"]], signal.SIGKILL)
    exp = wait_for_state(api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = _logs(api, trial["id"])
    assert exp["state"] == "COMPLETED", (exp, logs)
    assert trial["restarts"] == 1 and trial["total_batches"] == 12, trial
    assert "of the trial on Ray node" in logs and "stopping the others" in logs, logs
    wait_until(lambda: "rank 2 resumed at step" in _logs(api, trial["id"]), timeout=60,
               what="the other node's ranks resumed from the checkpoint")
    assert "rank 0 resumed at step" in _logs(api, trial["id"])
    rows = metric_rows(api, trial["id"])
    assert [b for k, b, _ in rows if k == "training"] == list(range(1, 13)), rows


def test_pause_and_kill_stop_both_nodes(api, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    exp_id = create_experiment(api, _config(markers, 500, step_seconds=0.5), CORE_DIR)

    def trial():
        return api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]

    wait_until(lambda: _steps(markers) >= 2, timeout=300, what="training")
    pids = _pids(markers)
    assert api.post(f"/experiments/{exp_id}/pause").status_code < 300
    wait_until(lambda: not any(_alive(p) for p in pids), timeout=120,
               what="every rank to exit after the pause")
    wait_until(lambda: _free_slots(api), timeout=60, what="the slots to be free")
    paused_at = _steps(markers)
    assert trial()["restarts"] == 0
    logs = _logs(api, trial()["id"])
    assert "rank 2 preempted at step" in logs and "rank 0 preempted at step" in logs, logs
    assert api.post(f"/experiments/{exp_id}/activate").status_code < 300
    wait_until(lambda: _steps(markers) >= paused_at + 2, timeout=300,
               what="training after the pause")
    pids = _pids(markers)
    assert all(_alive(p) for p in pids)
    assert api.post(f"/experiments/{exp_id}/kill").status_code < 300
    exp = wait_for_state(api, exp_id, ENDED, timeout=120)
    assert exp["state"] == "CANCELED" and exp["trials"][0]["restarts"] == 0, exp
    wait_until(lambda: not any(_alive(p) for p in pids), timeout=60,
               what="every rank to be gone after the kill")
    wait_until(lambda: _free_slots(api), timeout=60, what="the slots to be free")


def test_three_ranks_split_two_and_one_on_ray_nodes(api, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    config = dict(_config(markers, 4), resources={"slots_per_trial": 3})
    exp_id = create_experiment(api, config, CORE_DIR)
    exp = wait_for_state(api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 4, (exp, _logs(
        api, trial["id"]))
    ranks = [json.loads((markers / f"rank{r}.json").read_text()) for r in range(3)]
    check_script_two_and_one(ranks)
    wait_until(lambda: _free_slots(api), timeout=60, what="the slots to be free")


def test_a_trial_class_split_two_and_one_on_ray_nodes(api, tmp_path):
    log_dir = tmp_path / "places"
    log_dir.mkdir()
    exp_id = create_experiment(api, place_trial_config(log_dir, 3), DIST_DIR)
    exp = wait_for_state(api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 10, (exp, _logs(
        api, trial["id"]))
    check_trial_two_and_one(places(log_dir, 3))


def test_a_node_outliving_a_clean_chief_is_killed_after_the_grace(two_cpu_cluster, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    with _master(two_cpu_cluster, tmp_path, chief_grace=3) as api:
        config = dict(linger_config(markers), resources={"slots_per_trial": 4})
        exp_id = create_experiment(api, config, CORE_DIR)
        exp = wait_for_state(api, exp_id, ENDED, timeout=300)
        (trial,) = exp["trials"]
        logs = _logs(api, trial["id"])
        assert exp["state"] == "COMPLETED" and trial["restarts"] == 0, (exp, logs)
        assert "the chief is done" in logs and "machine 1 lingers" in logs, logs
        assert OUTLIVED_LINE in logs, logs
        pid = int((markers / "linger-1.pid").read_text())
        wait_until(lambda: not _alive(pid), timeout=60, what="the lingering script killed")
        wait_until(lambda: _free_slots(api), timeout=60, what="the slots to be free")
