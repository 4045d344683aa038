"""Script trials whose ranks span machines: a master without slots and two real agent
processes on this machine (loopback); each agent runs the entrypoint
(``determined.launch.torch_distributed`` over a Core API script with gloo) once, and
torchrun starts that machine's ranks."""

import json
import os
import pathlib
import signal
import sys
import time

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, trial_logs  # noqa: E402
from master_testing import create_experiment, metric_rows, wait_for_state, wait_until  # noqa: E402
from span_testing import (  # noqa: E402
    DIST_DIR,
    OUTLIVED_LINE,
    check_script_two_and_one,
    check_trial_two_and_one,
    linger_config,
    place_trial_config,
    places,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CORE_DIR = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "core_api"
ENDED = ["COMPLETED", "ERROR", "CANCELED"]


@pytest.fixture
def cluster(tmp_path):
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 0, "agent_timeout": 10.0}}) as c:
        c.api = c.master.client()
        yield c
        c.api.close()


def _config(markers: pathlib.Path, slots: int, batches: int, **hparams) -> dict:
    hparams.setdefault("ckpt_every", 3)
    return {
        "name": "script-across-machines",
        "entrypoint": "python3 -m determined.launch.torch_distributed python3 span_core.py",
        "hyperparameters": {"marker_dir": str(markers), **hparams},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": batches}},
        "resources": {"slots_per_trial": slots},
        "max_restarts": 2,
    }


def _ranks(markers: pathlib.Path, size: int) -> list:
    return [json.loads((markers / f"rank{r}.json").read_text()) for r in range(size)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _pids(markers: pathlib.Path, size: int) -> list:
    return [int((markers / f"rank{r}.pid").read_text()) for r in range(size)]


def _free_slots(cluster) -> bool:
    return all(a["used_slots"] == 0 for a in cluster.api.get("/agents").json()["agents"])


def test_four_ranks_on_two_two_slot_agents(cluster, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cluster.ensure_agents("a1", "a2", slots=2)
    exp_id = create_experiment(cluster.api, _config(markers, 4, 6), CORE_DIR)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED", (exp, logs)
    assert trial["total_batches"] == 6 and trial["restarts"] == 0, trial
    # Each machine ran the command once; the chief's trial process alone has the link.
    assert logs.count("runs its script") == 2, logs
    assert "runs its script on machine 1" in logs, logs
    ranks = _ranks(markers, 4)
    chief_agent = ranks[0]["agent_id"]
    for info in ranks:
        machine = info["rank"] // 2
        assert info["container_rank"] == info["cross_rank"] == machine, info
        assert info["local_rank"] == info["rank"] % 2 and info["local_size"] == 2, info
        assert info["size"] == info["torch_size"] == 4 and info["torch_rank"] == info["rank"]
        assert info["cross_size"] == 2 and len(info["container_addrs"]) == 2, info
        assert info["container_slot_counts"] == [2, 2] and len(info["slot_ids"]) == 2, info
        assert (info["agent_id"] == chief_agent) == (machine == 0), ranks
        assert info["trial_id"] == trial["id"]
        assert info["dist_key"] and info["dist_key"] == ranks[0]["dist_key"], ranks
    # The chief's reports: every step's loss, a validation, checkpoints every 3 steps.
    rows = metric_rows(cluster.api, trial["id"])
    assert [b for k, b, _ in rows if k == "training"] == list(range(1, 7)), rows
    assert [b for k, b, _ in rows if k == "validation"] == [6], rows
    ckpts = cluster.api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    assert sorted(c["total_batches"] for c in ckpts) == [3, 6], ckpts
    wait_until(lambda: _free_slots(cluster), timeout=60, what="the slots to be free")


def test_a_killed_rank_on_the_other_machine_restarts_the_trial(cluster, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cluster.ensure_agents("a1", "a2")
    exp_id = create_experiment(cluster.api, _config(markers, 2, 12, step_seconds=1.0),
                               CORE_DIR)
    steps = markers / "steps"
    wait_until(lambda: steps.exists() and int(steps.read_text() or 0) >= 4, timeout=300,
               what="the script past its first checkpoint")
    (follower,) = [i for i in _ranks(markers, 2) if i["container_rank"] == 1]
    os.kill(_pids(markers, 2)[follower["rank"]], signal.SIGKILL)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED", (exp, logs)
    assert trial["restarts"] == 1 and trial["total_batches"] == 12, trial
    assert "a part of the trial on agent" in logs and "stopping its other parts" in logs, logs
    assert "rank 1 resumed at step" in logs and "rank 0 resumed at step" in logs, logs
    rows = metric_rows(cluster.api, trial["id"])
    assert [b for k, b, _ in rows if k == "training"] == list(range(1, 13)), rows


def test_pause_and_kill_stop_every_machine(cluster, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cluster.ensure_agents("a1", "a2")
    exp_id = create_experiment(cluster.api, _config(markers, 2, 500, step_seconds=0.5),
                               CORE_DIR)
    steps = markers / "steps"

    def trial():
        return cluster.api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]

    wait_until(lambda: steps.exists() and int(steps.read_text() or 0) >= 2, timeout=300,
               what="training")
    pids = _pids(markers, 2)
    assert cluster.api.post(f"/experiments/{exp_id}/pause").status_code < 300
    wait_until(lambda: not any(_alive(p) for p in pids), timeout=120,
               what="every rank to exit after the pause")
    wait_until(lambda: _free_slots(cluster), timeout=60, what="the slots to be free")
    paused_at = int(steps.read_text())
    assert trial()["restarts"] == 0
    logs = trial_logs(cluster.api, trial()["id"])
    assert "rank 1 preempted at step" in logs and "rank 0 preempted at step" in logs, logs
    assert cluster.api.post(f"/experiments/{exp_id}/activate").status_code < 300
    wait_until(lambda: int(steps.read_text() or 0) >= paused_at + 2, timeout=300,
               what="training after the pause")
    pids = _pids(markers, 2)
    assert all(_alive(p) for p in pids)
    assert cluster.api.post(f"/experiments/{exp_id}/kill").status_code < 300
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=120)
    assert exp["state"] == "CANCELED" and exp["trials"][0]["restarts"] == 0, exp
    wait_until(lambda: not any(_alive(p) for p in pids), timeout=60,
               what="every rank to be gone after the kill")
    time.sleep(0.5)
    wait_until(lambda: _free_slots(cluster), timeout=60, what="the slots to be free")


def test_a_trial_class_under_the_launcher_across_two_agents(cluster):
    """``torch_distributed --trial``: each machine's ranks run the Trial class; the
    chief's rank 0 reports through the link."""
    model = CORE_DIR.parent / "dist_pytorch"
    config = yaml.safe_load((model / "const.yaml").read_text())
    config["entrypoint"] = ("python3 -m determined.launch.torch_distributed --trial "
                            + config["entrypoint"])
    config["max_restarts"] = 0
    cluster.ensure_agents("a1", "a2")
    exp_id = create_experiment(cluster.api, config, model)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 40, (exp, logs)
    assert "runs its script on machine 1" in logs, logs
    assert f"[machine 1] [rank=1] rank 1 of trial {trial['id']} exited: completed" in logs, logs
    assert [b for k, b, _ in metric_rows(cluster.api, trial["id"]) if k == "validation"] == [
        20, 40]



def test_three_ranks_on_two_two_slot_agents_split_two_and_one(cluster, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cluster.ensure_agents("a1", "a2", slots=2)
    exp_id = create_experiment(cluster.api, _config(markers, 3, 4), CORE_DIR)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 4, (exp, logs)
    check_script_two_and_one(_ranks(markers, 3))
    wait_until(lambda: _free_slots(cluster), timeout=60, what="the slots to be free")


def test_a_one_process_script_on_two_machines_is_told_to_pass_a_context(cluster):
    """``core.init()`` alone (tests/fixtures/core_api/train.py) on three slots of two
    agents: the other machine's process failed with "DET_CLUSTER_INFO is set ... but the
    trial's link is not (DET_SCRIPT_LINK)"."""
    cluster.ensure_agents("a1", "a2", slots=2)
    # step_delay: the chief's 4 steps outlast the other machine's failing start (a chief
    # that ends cleanly first makes the trial succeed, README "chief_grace").
    config = {"name": "one-process-script", "entrypoint": "python3 train.py",
              "hyperparameters": {"lr": 0.05, "step_delay": 15},
              "searcher": {"name": "single", "metric": "validation_loss",
                           "max_length": {"batches": 4}},
              "resources": {"slots_per_trial": 3}, "max_restarts": 0}
    exp_id = create_experiment(cluster.api, config, CORE_DIR)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "ERROR", (exp, logs)
    assert ("[machine 1] ValueError: core.init() runs on machine 1 of the trial's 2 but got "
            "no DistributedContext: only the chief machine's process talks to the platform; "
            "start the ranks with determined.launch.torch_distributed and pass "
            "distributed=det.core.DistributedContext.from_torch_distributed()") in logs, logs
    assert "DET_SCRIPT_LINK" not in logs, logs


def test_a_trial_class_on_three_slots_of_two_agents(cluster, tmp_path):
    """A Trial class split 2+1: each agent starts one process per slot of its part."""
    log_dir = tmp_path / "places"
    log_dir.mkdir()
    cluster.ensure_agents("a1", "a2", slots=2)
    exp_id = create_experiment(cluster.api, place_trial_config(log_dir, 3), DIST_DIR)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 10, (exp, logs)
    check_trial_two_and_one(places(log_dir, 3))


def test_a_trial_class_under_the_launcher_on_three_slots_of_two_agents(cluster, tmp_path):
    """``torch_distributed --trial`` split 2+1: torchrun starts two ranks on one
    machine and one on the other, each knowing its machine."""
    log_dir = tmp_path / "places"
    log_dir.mkdir()
    config = place_trial_config(log_dir, 3)
    config["entrypoint"] = "python3 -m determined.launch.torch_distributed --trial " \
        "model_def:PlaceTrial"
    cluster.ensure_agents("a1", "a2", slots=2)
    exp_id = create_experiment(cluster.api, config, DIST_DIR)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 10, (exp, logs)
    check_trial_two_and_one(places(log_dir, 3))


def test_machines_outliving_a_clean_chief_are_killed_after_the_grace(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    with AgentCluster(tmp_path, {"resource_manager": {
            "slots": 0, "agent_timeout": 10.0, "chief_grace": 3}}) as c, \
            c.master.client() as api:
        c.ensure_agents("a1", "a2")
        exp_id = create_experiment(api, linger_config(markers), CORE_DIR)
        exp = wait_for_state(api, exp_id, ENDED, timeout=300)
        (trial,) = exp["trials"]
        logs = trial_logs(api, trial["id"])
        assert exp["state"] == "COMPLETED" and trial["restarts"] == 0, (exp, logs)
        assert "the chief is done" in logs and "machine 1 lingers" in logs, logs
        assert OUTLIVED_LINE in logs, logs
        pid = int((markers / "linger-1.pid").read_text())
        wait_until(lambda: not _alive(pid), timeout=60, what="the lingering script killed")
        assert all(a["used_slots"] == 0 for a in api.get("/agents").json()["agents"])
