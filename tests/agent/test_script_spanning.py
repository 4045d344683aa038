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


def check_two_and_one(places: list, agent_of=lambda p: p["agent_id"]) -> None:
    """Three ranks on a two-slot machine and a one-slot one: contiguous global ranks,
    each machine's local ranks and size, the same machine for ranks 0 and 1."""
    assert sorted(p["rank"] for p in places) == [0, 1, 2], places
    for p in places:
        machine = 0 if p["rank"] < 2 else 1
        assert p["container_rank"] == machine, places
        assert p["local_rank"] == p["rank"] - 2 * machine, places
        assert p["torch_rank"] == p["rank"] and p["torch_size"] == 3, places
        assert (agent_of(p) == agent_of(places[0])) == (machine == 0), places


def test_three_ranks_on_two_two_slot_agents_split_two_and_one(cluster, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cluster.ensure_agents("a1", "a2", slots=2)
    exp_id = create_experiment(cluster.api, _config(markers, 3, 4), CORE_DIR)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 4, (exp, logs)
    ranks = _ranks(markers, 3)
    check_two_and_one(ranks)
    for info in ranks:
        local_size = 2 if info["rank"] < 2 else 1
        assert info["local_size"] == local_size and len(info["slot_ids"]) == local_size, ranks
        assert info["cross_rank"] == info["container_rank"] and info["cross_size"] == 2, ranks
        assert info["size"] == 3 and info["container_slot_counts"] == [2, 1], ranks
    wait_until(lambda: _free_slots(cluster), timeout=60, what="the slots to be free")


def test_a_trial_class_on_three_slots_of_two_agents(cluster, tmp_path):
    """A Trial class split 2+1: each agent starts one process per slot of its part."""
    log_dir = tmp_path / "places"
    log_dir.mkdir()
    model = CORE_DIR.parent / "dist_pytorch"
    config = yaml.safe_load((model / "const.yaml").read_text())
    config.update(entrypoint="model_def:PlaceTrial", max_restarts=0,
                  data={"log_dir": str(log_dir)}, resources={"slots_per_trial": 3},
                  searcher=dict(config["searcher"], max_length={"batches": 10}),
                  min_validation_period={"batches": 10})
    cluster.ensure_agents("a1", "a2", slots=2)
    exp_id = create_experiment(cluster.api, config, model)
    exp = wait_for_state(cluster.api, exp_id, ENDED, timeout=600)
    (trial,) = exp["trials"]
    logs = trial_logs(cluster.api, trial["id"])
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 10, (exp, logs)
    places = [json.loads((log_dir / f"place-{r}.json").read_text()) for r in range(3)]
    check_two_and_one(places, agent_of=lambda p: p["det_agent_id"])
    for p in places:
        local_size = 2 if p["rank"] < 2 else 1
        assert p["size"] == 3 and p["num_agents"] == 2, places
        assert p["det_local_size"] == str(local_size), places
        assert len(p["det_slot_ids"].split(",")) == local_size, places
        assert p["det_node_rank"] == str(p["container_rank"]), places


def test_machines_outliving_a_clean_chief_are_killed_after_the_grace(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    config = {"name": "lingering-machine", "entrypoint": "python3 linger.py",
              "hyperparameters": {"marker_dir": str(markers)},
              "searcher": {"name": "single", "metric": "validation_loss",
                           "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 2}, "max_restarts": 0}
    with AgentCluster(tmp_path, {"resource_manager": {
            "slots": 0, "agent_timeout": 10.0, "chief_grace": 3}}) as c, \
            c.master.client() as api:
        c.ensure_agents("a1", "a2")
        exp_id = create_experiment(api, config, CORE_DIR)
        exp = wait_for_state(api, exp_id, ENDED, timeout=300)
        (trial,) = exp["trials"]
        logs = trial_logs(api, trial["id"])
        assert exp["state"] == "COMPLETED" and trial["restarts"] == 0, (exp, logs)
        assert "the chief is done" in logs and "machine 1 lingers" in logs, logs
        assert ("det-master: parts of the trial still run after its chief ended 3 s ago; "
                "killing them") in logs, logs
        pid = int((markers / "linger-1.pid").read_text())
        wait_until(lambda: not _alive(pid), timeout=60, what="the lingering script killed")
        assert all(a["used_slots"] == 0 for a in api.get("/agents").json()["agents"])
