"""A trial spanning two remote agents: a master without slots and two real one-slot agent
processes on this machine; each agent starts its rank (gloo over loopback, rank 0's
address from its agent's rendezvous)."""

import os
import pathlib
import shutil
import sys
import time

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, trial_logs  # noqa: E402
from master_testing import (  # noqa: E402
    assert_trial_log_format,
    create_experiment,
    metric_rows,
    trial_processes,
    wait_for_state,
    wait_until,
)
from test_remote_agents import LIVENESS_TIMEOUT, Recorder  # noqa: E402

AGENT_TIMEOUT = 3.0
DIST_MODEL = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "dist_pytorch"
SLOW_DIST = '''import time

from model_def import DistTrial


class SlowDist(DistTrial):
    def train_batch(self, batch, epoch_idx, batch_idx):
        time.sleep(self.context.get_hparams().get("sleep", 0.0))
        return super().train_batch(batch, epoch_idx, batch_idx)
'''


class Cluster(AgentCluster):
    def __init__(self, root: pathlib.Path):
        super().__init__(root, {
            "resource_manager": {"slots": 0, "agent_timeout": AGENT_TIMEOUT}})
        self.api = self.master.client()

    def logs(self, trial_id: int) -> str:
        return trial_logs(self.api, trial_id)

    def weights(self, exp_id: int):
        import torch

        exp = wait_for_state(self.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
        assert exp["state"] == "COMPLETED", (exp, self.logs(exp["trials"][0]["id"]))
        uuid = exp["trials"][0]["latest_checkpoint"]
        path = os.path.join(self.master.data_dir, "checkpoints", uuid, "state_dict.pth")
        return exp, torch.load(path, weights_only=False)["models_state_dict"]

    def close(self):
        super().close()
        self.api.close()


@pytest.fixture
def cluster(tmp_path):
    with Cluster(tmp_path) as c:
        yield c


def _dist_config(**changes):
    config = yaml.safe_load((DIST_MODEL / "const.yaml").read_text())
    config["reproducibility"] = {"experiment_seed": 7}
    config["max_restarts"] = 0
    config.update(changes)
    return config


@pytest.mark.e2e
def test_trial_across_two_agents_trains_as_on_one(cluster):
    cluster.agent("a1")
    cluster.agent("a2")
    exp_id = create_experiment(cluster.api, _dist_config(), DIST_MODEL)
    spanned_exp, spanned = cluster.weights(exp_id)
    trial_id = spanned_exp["trials"][0]["id"]
    logs = cluster.logs(trial_id)
    # One part per agent, rank 0's first.
    starts = {a: r for a in ("a1", "a2") for r in ("0", "1")
              if f"det-agent {a}: starting rank {r} of 2 of trial {trial_id}" in logs}
    assert sorted(starts.values()) == ["0", "1"], logs
    assert f"trial {trial_id} exited: completed" in logs, logs
    # Rank 1 got a working directory of its own, as rank 0 (its line came from a2 or a1).
    assert f"[rank 1] " in logs and "runs in" in logs.split("[rank 1] ", 1)[1], logs
    # Rank 0 (the trial process a1 started) and rank 1 (started by a2, with no chief's
    # format to copy) log in the one short format.
    assert_trial_log_format(logs)
    for agent in list(cluster.agents.values()):
        assert agent.stop() == 0, agent.log()

    cluster.agent("both", slots=2)  # the same trial on one two-slot agent
    exp_id = create_experiment(cluster.api, _dist_config(), DIST_MODEL)
    one_exp, one = cluster.weights(exp_id)
    one_logs = cluster.logs(one_exp["trials"][0]["id"])
    assert "det-agent both: starting trial" in one_logs
    assert_trial_log_format(one_logs, ranks=(0,))  # the trial process an agent started
    assert spanned[0].keys() == one[0].keys()
    import torch

    for name, value in spanned[0].items():
        assert torch.equal(value, one[0][name]), name
    assert [r for r in metric_rows(cluster.api, trial_id) if r[0] == "validation"] == [
        r for r in metric_rows(cluster.api, one_exp["trials"][0]["id"]) if r[0] == "validation"]


@pytest.mark.e2e
def test_sigkill_of_the_non_chief_agent_restarts_the_trial(cluster, tmp_path):
    model = tmp_path / "slow_dist"
    shutil.copytree(DIST_MODEL, model, ignore=shutil.ignore_patterns("__pycache__"))
    (model / "slow_def.py").write_text(SLOW_DIST)
    cluster.agent("a1")
    cluster.agent("a2")
    config = _dist_config(entrypoint="slow_def:SlowDist", max_restarts=2,
                          min_checkpoint_period={"batches": 20},
                          min_validation_period={"batches": 100},
                          searcher={"name": "single", "metric": "validation_loss",
                                    "max_length": {"batches": 200}})
    config["hyperparameters"]["sleep"] = 0.05
    exp_id = create_experiment(cluster.api, config, model)

    def trial():
        trials = cluster.api.get(f"/experiments/{exp_id}/trials").json()["trials"]
        return trials[0] if trials else None

    def past_checkpoint():
        ckpts = cluster.api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        t = trial()
        return ckpts and t and t["total_batches"] >= ckpts[0]["total_batches"] + 20

    wait_until(past_checkpoint, timeout=180, what="training past the first checkpoint")
    trial_id = trial()["id"]
    logs = cluster.logs(trial_id)
    (follower,) = [a for a in ("a1", "a2")
                   if f"det-agent {a}: starting rank 1 of 2 of trial {trial_id}" in logs]
    chief = "a2" if follower == "a1" else "a1"
    chief_pid = cluster.agents[chief].proc.pid
    assert len(trial_processes(chief_pid)) == 1
    cluster.agents[follower].proc.kill()  # SIGKILL: its zygote takes rank 1 down with it
    cluster.agents[follower].proc.wait()
    # The chief's rank fails (its peer is gone) or is killed; the trial waits for two slots.
    wait_until(lambda: trial()["restarts"] == 1, timeout=60, what="the trial to fail")
    wait_until(lambda: not trial_processes(chief_pid), timeout=30,
               what="rank 0 to end on the chief's agent")
    time.sleep(1.0)
    assert trial()["state"] != "COMPLETED"
    cluster.agent(follower)  # back: the trial restarts from its checkpoint
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
    assert exp["state"] == "COMPLETED", (exp, cluster.logs(trial_id))
    (t,) = exp["trials"]
    assert t["restarts"] == 1 and t["total_batches"] == 200, t
    rows = metric_rows(cluster.api, trial_id)
    assert [b for k, b, _ in rows if k == "training"] == list(range(10, 201, 10))
    logs = cluster.logs(trial_id)
    assert "restored from checkpoint" in logs, logs
    assert "of the trial on agent" in logs and "stopping its other parts" in logs, logs


@pytest.mark.e2e
def test_pause_and_kill_reach_every_part(cluster, tmp_path):
    model = tmp_path / "slow_dist"
    shutil.copytree(DIST_MODEL, model, ignore=shutil.ignore_patterns("__pycache__"))
    (model / "slow_def.py").write_text(SLOW_DIST)
    a1, a2 = cluster.agent("a1"), cluster.agent("a2")
    config = _dist_config(entrypoint="slow_def:SlowDist", max_restarts=2,
                          searcher={"name": "single", "metric": "validation_loss",
                                    "max_length": {"batches": 5000}})
    config["hyperparameters"]["sleep"] = 0.05

    def trial():
        return cluster.api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]

    exp_id = create_experiment(cluster.api, config, model)
    wait_until(lambda: trial()["total_batches"] >= 20, timeout=180, what="training")
    assert all(len(trial_processes(a.proc.pid)) == 1 for a in (a1, a2))
    # Pause: the chief checkpoints, every rank exits cleanly, the slots are free.
    assert cluster.api.post(f"/experiments/{exp_id}/pause").status_code < 300
    for agent in (a1, a2):
        wait_until(lambda: not trial_processes(agent.proc.pid), timeout=60,
                   what=f"no rank left on {agent.id} after the pause")
    wait_until(lambda: all(a["used_slots"] == 0
                           for a in cluster.api.get("/agents").json()["agents"]),
               timeout=30, what="the slots to be free")
    paused_at = trial()["total_batches"]
    assert trial()["restarts"] == 0 and paused_at >= 20
    assert cluster.api.post(f"/experiments/{exp_id}/activate").status_code < 300
    wait_until(lambda: trial()["total_batches"] >= paused_at + 20, timeout=180,
               what="training after the pause")
    assert "restored from checkpoint" in cluster.logs(trial()["id"])
    # Kill: every part dies at once, no restart.
    assert cluster.api.post(f"/experiments/{exp_id}/kill").status_code < 300
    exp = wait_for_state(cluster.api, exp_id, ["CANCELED", "ERROR", "COMPLETED"], timeout=60)
    assert exp["state"] == "CANCELED" and exp["trials"][0]["restarts"] == 0, exp
    for agent in (a1, a2):
        wait_until(lambda: not trial_processes(agent.proc.pid), timeout=60,
                   what=f"no rank left on {agent.id}")
    # The master frees the slots once both agents reported their parts' exits.
    wait_until(lambda: all(a["used_slots"] == 0
                           for a in cluster.api.get("/agents").json()["agents"]),
               timeout=60, what="the slots to be free after the kill")


# -- the master's registry alone (real objects, no processes) ---------------------------

def _two_agents(reg):
    return (reg.register("a1", 1, address="10.0.0.1")["session"],
            reg.register("a2", 1, address="10.0.0.2")["session"])


def _parts(reg, trial_id):
    return reg.launch_parts(trial_id, [("a1", (0,)), ("a2", (0,))], {"DET_TRIAL_TOKEN": "t"},
                            {"env": {}}, experiment_id=1)


def test_registry_sends_other_parts_after_the_rendezvous_and_waits_for_every_part():
    rec = Recorder()
    reg = rec.registry()
    s1, s2 = _two_agents(reg)
    chief, other = _parts(reg, 5)
    assert reg.holds_parts(5) and reg.holds(5)  # parts count as held
    (command,) = reg.poll("a1", s1, 0)
    assert command["type"] == "launch_part" and command["launch_id"] == chief
    assert command["ranks"] == {"first": 0, "size": 2, "num_agents": 2, "chief": True,
                                "node_rank": 0, "addrs": ["10.0.0.1", "10.0.0.2"],
                                "slot_counts": [1, 1]}
    assert reg.poll("a2", s2, 0) == []  # waits for rank 0's address
    assert reg.rendezvous("a1", s1, chief, "", 29500)  # "": the address the master saw
    (command,) = reg.poll("a2", s2, 0)
    assert command["launch_id"] == other and command["ranks"] == {
        "first": 1, "size": 2, "num_agents": 2, "chief": False, "node_rank": 1,
        "addrs": ["10.0.0.1", "10.0.0.2"], "slot_counts": [1, 1],
        "master_addr": "10.0.0.1", "master_port": 29500}
    assert [d["trials"] for d in reg.describe()] == [[5], [5]]
    reg.report("a2", s2, {other: ["boom"]}, {other: 3})  # rank 1 failed
    assert rec.exits == []  # not before every part ended ...
    assert reg.poll("a1", s1, 0) == [{"type": "kill", "launch_id": chief}]  # ... and killed
    reg.report("a1", s1, {}, {chief: -9})
    assert rec.exits == [(5, 3)] and rec.lost == [] and not reg.holds_parts(5)
    assert any("a part of the trial on agent a2: exited with code 3" in line
               for _, lines in rec.logs for line in lines), rec.logs
    assert not reg.rendezvous("a1", s1, chief, "", 29500)  # over: nothing more is sent

    chief, other = _parts(reg, 6)  # a user error anywhere wins over the chief's crash
    reg.poll("a1", s1, 0)
    reg.rendezvous("a1", s1, chief, "10.9.9.9", 1234)
    (command,) = reg.poll("a2", s2, 0)  # the chief's address: where its ranks listen
    assert command["ranks"]["addrs"] == ["10.9.9.9", "10.0.0.2"], command
    reg.report("a1", s1, {}, {chief: 1})
    reg.report("a2", s2, {}, {other: 65})
    assert rec.exits[-1] == (6, 65)

    chief, other = _parts(reg, 7)  # a clean chief: the trial's code is 0
    reg.poll("a1", s1, 0)
    reg.rendezvous("a1", s1, chief, "", 1234)
    reg.poll("a2", s2, 0)
    reg.report("a1", s1, {}, {chief: 0})
    reg.report("a2", s2, {}, {other: 0})
    assert rec.exits[-1] == (7, 0)
    reg.close()


def test_registry_kill_and_lost_agents_of_a_spanning_trial():
    rec = Recorder()
    reg = rec.registry(timeout=LIVENESS_TIMEOUT)
    s1, s2 = _two_agents(reg)
    chief, _ = _parts(reg, 8)
    reg.kill_parts(8)  # nothing delivered yet: every part is dropped at once
    wait_until(lambda: rec.exits == [(8, -9)], timeout=30, what="the exit")
    assert reg.poll("a1", s1, 0) == [] and reg.poll("a2", s2, 0) == []

    chief, other = _parts(reg, 9)
    reg.poll("a1", s1, 0)
    reg.kill_parts(9)  # the chief runs; its rank 1 was never sent
    assert reg.poll("a1", s1, 0) == [{"type": "kill", "launch_id": chief}]
    assert reg.poll("a2", s2, 0) == []
    reg.report("a1", s1, {}, {chief: -9})
    assert rec.exits[-1] == (9, -9)

    chief, other = _parts(reg, 10)
    reg.poll("a1", s1, 0)
    reg.rendezvous("a1", s1, chief, "", 1234)
    reg.poll("a2", s2, 0)
    # a2 goes silent and is lost: the chief's part is killed, the trial ends after it.
    seen = []
    deadline = time.monotonic() + LIVENESS_TIMEOUT + 30
    while {"type": "kill", "launch_id": chief} not in seen:
        assert time.monotonic() < deadline, "no kill of the chief's part after a2 was lost"
        seen += reg.poll("a1", s1, 0.1)
    assert not reg.has_agent("a2") and rec.exits[-1] == (9, -9)
    reg.report("a1", s1, {}, {chief: 1})
    assert rec.exits[-1] == (10, -9) and rec.lost == []
    assert any("agent a2 lost" in line for _, lines in rec.logs for line in lines)
    reg.close()


def test_registry_a_part_failing_after_a_clean_chief_ends_the_trial_once():
    rec = Recorder()
    reg = rec.registry()
    s1, s2 = _two_agents(reg)
    chief, other = _parts(reg, 12)
    reg.poll("a1", s1, 0)
    reg.rendezvous("a1", s1, chief, "", 1234)
    reg.poll("a2", s2, 0)
    reg.report("a1", s1, {}, {chief: 0})
    reg.report("a2", s2, {}, {other: 2})  # the last part: nothing left to stop
    assert rec.exits == [(12, 0)] and not reg.holds_parts(12)
    reg.close()


def test_registry_kills_parts_that_outlive_a_clean_chief():
    rec = Recorder()
    reg = rec.registry()
    reg.chief_grace = 0.3
    s1, s2 = _two_agents(reg)
    chief, other = _parts(reg, 11)
    reg.poll("a1", s1, 0)
    reg.rendezvous("a1", s1, chief, "", 1234)
    reg.poll("a2", s2, 0)
    reg.report("a1", s1, {}, {chief: 0})  # done; rank 1 hangs
    assert rec.exits == []
    assert reg.poll("a2", s2, 10) == [{"type": "kill", "launch_id": other}]
    reg.report("a2", s2, {}, {other: -9})
    assert rec.exits == [(11, 0)]  # the chief's clean end decides
    assert any("still run after its chief ended" in line
               for _, lines in rec.logs for line in lines), rec.logs
    reg.close()
