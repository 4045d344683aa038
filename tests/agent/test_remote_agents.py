"""Remote agents: a master without an embedded agent (``slots: 0``) and two real agent
processes (``python -m determined.agent``) on this machine."""

import json
import pathlib
import sys
import time
from typing import List, Optional

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, AgentProcess, trial_logs  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from master_testing import (  # noqa: E402
    create_experiment,
    metric_rows,
    slow_model_dir,
    trial_processes,
    wait_for_state,
    wait_until,
)

TOKEN = "s3cret-agent-token"
AGENT_TIMEOUT = 3.0


class Cluster(AgentCluster):
    def __init__(self, root: pathlib.Path):
        super().__init__(root, {
            "resource_manager": {"slots": 0, "agent_timeout": AGENT_TIMEOUT},
            "security": {"agent_token": TOKEN},
        })
        self.api = self.master.client()

    def agent_of(self, trial_id: int) -> Optional[str]:
        for a in self.api.get("/agents").json()["agents"]:
            if any(s["task"] == f"trial-{trial_id}" for s in a["slot_tasks"]):
                return a["id"]
        return None

    def close(self) -> None:
        super().close()
        self.api.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(tmp_path_factory.mktemp("remote-agents")) as c:
        yield c


def _trials(api, exp_id):
    return api.get(f"/experiments/{exp_id}/trials").json()["trials"]


def test_agent_with_wrong_or_missing_token_is_rejected(cluster, tmp_path):
    for token, expected in (("wrong", "Agent token rejected"),
                            (None, "requires an agent token")):
        agent = AgentProcess(cluster.master.url, "intruder", tmp_path, token=token).start()
        assert agent.proc is not None
        assert agent.proc.wait(60) == 2, agent.log()
        assert expected in agent.log() and "(HTTP 401)" in agent.log(), agent.log()
    assert "intruder" not in cluster.agent_ids()
    assert cluster.api.get("/master/config").json()["security"]["agent_token"] == "***"


def test_experiment_runs_on_both_remote_agents(cluster, tiny_dir):
    cluster.ensure_agents("a1", "a2")
    config = {
        "entrypoint": "model_def:TinyTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 0.2}},
        "searcher": {"name": "random", "metric": "validation_loss", "max_trials": 4,
                     "max_length": {"batches": 60}},
        "min_validation_period": {"batches": 20}, "max_restarts": 0,
    }
    exp_id = create_experiment(cluster.api, config, tiny_dir)
    # While it runs, `det slot list` shows trials on the remote agents' slots.
    busy = wait_until(lambda: [row for row in json.loads(run_det(
        ["-m", cluster.master.url, "slot", "list", "--json"]).stdout)
        if row["task"].startswith("trial-")], timeout=60, what="a trial on a slot")
    assert {row["agent_id"] for row in busy} <= {"a1", "a2"}
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=120)
    assert exp["state"] == "COMPLETED", exp
    ran_on = set()
    for t in exp["trials"]:
        assert t["state"] == "COMPLETED" and t["total_batches"] == 60, t
        logs = trial_logs(cluster.api, t["id"])
        agents = {a for a in ("a1", "a2") if f"det-agent {a}: starting trial {t['id']}" in logs}
        assert len(agents) == 1, logs
        ran_on |= agents
        assert f"trial {t['id']} exited" in logs  # the runner's own output was shipped
    assert ran_on == {"a1", "a2"}

    out = run_det(["-m", cluster.master.url, "agent", "list"])
    assert out.returncode == 0, out.stderr
    rows = [[cell.strip() for cell in line.split("|")] for line in out.stdout.splitlines()]
    assert rows[0][:4] == ["id", "type", "address", "slots"], out.stdout
    assert sorted(r[:4] for r in rows[2:] if r[0]) == [["a1", "remote", "127.0.0.1", "1"],
                                                       ["a2", "remote", "127.0.0.1", "1"]]


def test_det_trial_kill_reaches_a_remote_trial(cluster, tiny_dir, tmp_path):
    cluster.ensure_agents("a1", "a2")
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.05},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 5000}},
        "max_restarts": 2,
    }
    exp_id = create_experiment(cluster.api, config, slow_model_dir(tiny_dir, tmp_path))
    trial_id = wait_until(lambda: [t["id"] for t in _trials(cluster.api, exp_id)
                                   if t["total_batches"] >= 20], what="training")[0]
    agent_id = cluster.agent_of(trial_id)
    agent_pid = cluster.agents[agent_id].proc.pid
    assert len(trial_processes(agent_pid)) == 1
    out = run_det(["-m", cluster.master.url, "trial", "kill", str(trial_id)])
    assert out.returncode == 0, out.stderr
    wait_until(lambda: cluster.api.get(f"/trials/{trial_id}").json()["state"] == "CANCELED",
               timeout=20, what="the trial to be CANCELED")
    wait_until(lambda: not trial_processes(agent_pid), timeout=10, what="the runner to die")
    assert cluster.agent_of(trial_id) is None
    trial = cluster.api.get(f"/trials/{trial_id}").json()
    assert trial["restarts"] == 0, trial  # killed, not crashed: never restarted
    wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=30)


def test_agents_reconnect_after_a_master_restart(cluster, tiny_dir, tmp_path):
    cluster.ensure_agents("a1", "a2")
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 20,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.02},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 300}},
        "min_validation_period": {"batches": 100}, "max_restarts": 2,
    }
    exp_id = create_experiment(cluster.api, config, slow_model_dir(tiny_dir, tmp_path))
    wait_until(lambda: _trials(cluster.api, exp_id)[0]["total_batches"] >= 140, timeout=60,
               what="training past the first checkpoint")
    trial_id = _trials(cluster.api, exp_id)[0]["id"]
    cluster.restart_master()
    wait_until(lambda: {"a1", "a2"} <= set(cluster.agent_ids()), timeout=30,
               what="the agents to register again")
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=90)
    assert exp["state"] == "COMPLETED", exp
    rows = metric_rows(cluster.api, trial_id)
    assert [b for k, b, _ in rows if k == "training"] == list(range(20, 301, 20))
    assert [b for k, b, _ in rows if k == "validation"] == [100, 200, 300]
    for agent in cluster.agents.values():  # the runner the old master started is gone
        wait_until(lambda: not trial_processes(agent.proc.pid), timeout=10,
                   what=f"no trial left on {agent.id}")


def test_lost_agent_trial_restarts_on_the_other_agent(cluster, tiny_dir, tmp_path):
    cluster.ensure_agents("a1", "a2")
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 20,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.02},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 600}},
        "min_validation_period": {"batches": 100}, "max_restarts": 2,
    }
    exp_id = create_experiment(cluster.api, config, slow_model_dir(tiny_dir, tmp_path))

    def past_checkpoint():
        ckpts = cluster.api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        trials = _trials(cluster.api, exp_id)
        return ckpts and trials and trials[0]["total_batches"] >= ckpts[0]["total_batches"] + 40

    wait_until(past_checkpoint, timeout=60, what="training past the first checkpoint")
    trial_id = _trials(cluster.api, exp_id)[0]["id"]
    victim = cluster.agent_of(trial_id)
    other = "a2" if victim == "a1" else "a1"
    killed = cluster.agents[victim]
    victim_pid = killed.proc.pid
    lost_at = time.monotonic()
    killed.proc.kill()  # SIGKILL the agent alone: its zygote takes the trial down with it
    killed.proc.wait()
    wait_until(lambda: victim not in cluster.agent_ids(), timeout=AGENT_TIMEOUT + 10,
               what="the agent to be declared lost")
    assert time.monotonic() - lost_at >= AGENT_TIMEOUT - 0.5
    assert not trial_processes(victim_pid)
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=90)
    assert exp["state"] == "COMPLETED", exp
    (trial,) = exp["trials"]
    assert trial["restarts"] == 1 and trial["total_batches"] == 600, trial
    rows = metric_rows(cluster.api, trial_id)
    assert [b for k, b, _ in rows if k == "training"] == list(range(20, 601, 20))
    assert [b for k, b, _ in rows if k == "validation"] == [100, 200, 300, 400, 500, 600]
    logs = trial_logs(cluster.api, trial_id)
    assert f"det-agent {victim}: starting trial {trial_id}" in logs
    assert f"agent {victim} lost" in logs
    assert f"det-agent {other}: starting trial {trial_id}" in logs


def test_sigterm_kills_trials_and_deregisters(cluster, tiny_dir, tmp_path):
    cluster.ensure_agents("a1", "a2")
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.02},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 200}},
        "min_validation_period": {"batches": 50}, "max_restarts": 1,
    }
    exp_id = create_experiment(cluster.api, config, slow_model_dir(tiny_dir, tmp_path))
    trial_id = wait_until(lambda: [t["id"] for t in _trials(cluster.api, exp_id)
                                   if t["total_batches"] >= 60], what="training")[0]
    victim = cluster.agent_of(trial_id)
    agent = cluster.agents[victim]
    agent_pid = agent.proc.pid
    started = time.monotonic()
    assert agent.stop() == 0, agent.log()
    assert f"{victim} deregistered" in agent.log()
    assert not trial_processes(agent_pid)
    assert victim not in cluster.agent_ids()
    assert time.monotonic() - started < AGENT_TIMEOUT + 5
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=60)
    assert exp["state"] == "COMPLETED", exp
    assert exp["trials"][0]["restarts"] == 1  # its exit was reported: a crash, restarted
    other = "a2" if victim == "a1" else "a1"
    assert f"det-agent {other}: starting trial {trial_id}" in trial_logs(cluster.api, trial_id)


# -- the master's registry alone (real objects, no processes) ---------------------------

#: Seconds without a request before a registry's agent is lost, in the tests that see one
#: get lost (the default, 30, would make them wait that long).
LIVENESS_TIMEOUT = 5.0


class Recorder:
    def __init__(self):
        self.exits: List = []
        self.logs: List = []
        self.lost: List = []

    def registry(self, timeout: float = 30.0):
        from determined.master.resource_managers import RemoteResourceManager

        return RemoteResourceManager(lambda t, c: self.exits.append((t, c)),
                                     lambda t, lines: self.logs.append((t, lines)),
                                     timeout=timeout, on_lost=self.lost.append)


def _launch(registry, agent_id: str, trial_id: int) -> str:
    return registry.send_launch(agent_id, trial_id, [0], {"DET_TRIAL_TOKEN": "t"},
                                {"env": {}}, experiment_id=1)


def test_registry_reconciles_a_reregistering_agent():
    rec = Recorder()
    reg = rec.registry()
    session = reg.register("a", 2)["session"]
    first, second = _launch(reg, "a", 1), _launch(reg, "a", 2)
    assert [c["launch_id"] for c in reg.poll("a", session, 0)] == [first, second]
    third = _launch(reg, "a", 3)  # queued, not yet delivered
    # It comes back running only the second one, plus one the master never sent.
    session = reg.register("a", 2, running=[second, "stray"])["session"]
    assert rec.exits == [(1, -9)] and rec.lost == [1]
    assert "registered again without it" in rec.logs[0][1][0]
    commands = reg.poll("a", session, 0)
    assert [(c["type"], c["launch_id"]) for c in commands] == [("kill", "stray"),
                                                               ("launch", third)]
    reg.report("a", session, {second: ["bye"]}, {second: 0, first: 1})  # first: stale
    assert rec.exits[1:] == [(2, 0)] and rec.logs[-1] == (2, ["bye"])
    from determined.master.resource_managers import UnknownSessionError

    with pytest.raises(UnknownSessionError, match="register again"):
        reg.poll("a", "old-session", 0)
    reg.close()


def test_registry_kill_drain_and_liveness():
    rec = Recorder()
    # Long enough that the steps below, which keep the agent alive, never take that long
    # even on a loaded machine; short enough to wait out at the end.
    reg = rec.registry(timeout=LIVENESS_TIMEOUT)
    session = reg.register("a", 1, label="gpu")["session"]
    assert [(a.id, a.slots, a.label) for a in reg.agents()] == [("a", 1, "gpu")]
    _launch(reg, "a", 7)
    reg.kill(7)  # never delivered: dropped, reported as ended
    wait_until(lambda: rec.exits == [(7, -9)], timeout=30, what="the exit")
    assert reg.poll("a", session, 0) == []
    launch_id = _launch(reg, "a", 8)
    reg.poll("a", session, 0)
    reg.kill(8)
    assert reg.poll("a", session, 0) == [{"type": "kill", "launch_id": launch_id}]
    reg.poll("a", session, 0, draining=True)
    assert reg.agents() == [] and reg.slots == 0  # draining: no new trials
    wait_until(lambda: not reg.has_agent("a"), timeout=LIVENESS_TIMEOUT + 30,
               what="the agent to be lost")
    # Its trial's exit is reported by the same sweep, possibly a moment later.
    wait_until(lambda: rec.exits[-1:] == [(8, -9)], timeout=30, what="the lost trial's exit")
    assert rec.lost == [8]
    assert "agent a lost" in rec.logs[-1][1][0]
    reg.close()


def test_automatic_concurrency_follows_an_agent_that_joins(cluster, tiny_dir, tmp_path):
    """``max_concurrent_trials: 0`` started on one agent's slot runs one trial at a time;
    when a second agent joins, the master re-sends the capacity and the searcher opens a
    second trial at once, while the first is still training."""
    cluster.ensure_agents("a1")
    if "a2" in cluster.agents:
        cluster.agents["a2"].stop()
    wait_until(lambda: cluster.agent_ids() == ["a1"], timeout=30, what="a2 to leave")
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "sleep": 0.05,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 0.2}},
        "searcher": {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 6,
                     "max_rungs": 1, "max_concurrent_trials": 0,
                     "max_length": {"batches": 2000}},
        "max_restarts": 0,
    }
    exp_id = create_experiment(cluster.api, config, slow_model_dir(tiny_dir, tmp_path))
    try:
        first = wait_until(lambda: [t for t in _trials(cluster.api, exp_id)
                                    if t["total_batches"] >= 20], what="training")[0]
        time.sleep(2.0)  # scheduling passes with one agent: still one trial
        assert len(_trials(cluster.api, exp_id)) == 1
        cluster.ensure_agents("a1", "a2")
        trials = wait_until(lambda: (lambda ts: ts if len(ts) >= 2 else None)(
            _trials(cluster.api, exp_id)), timeout=30, what="a second trial")
        assert len(trials) == 2, trials
        now = cluster.api.get(f"/trials/{first['id']}").json()
        assert now["state"] == "ACTIVE" and now["total_batches"] < 2000, now
        wait_until(lambda: cluster.agent_of(trials[1]["id"]) is not None, timeout=30,
                   what="the second trial on a slot")
    finally:
        cluster.api.post(f"/experiments/{exp_id}/kill")
        wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=60)


def test_a_missing_host_path_fails_the_remote_trial_and_the_master_creates_none(
        cluster, tiny_dir, tmp_path):
    """The master makes no directory for the agents' checkpoint storage (at create, or
    when it builds the experiment's storage): a shared_fs host_path missing where the
    trial runs fails the trial, naming the field, and nothing creates it."""
    import yaml

    cluster.ensure_agents("a1")
    missing = tmp_path / "not-mounted"
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(missing),
                                    "storage_path": "runs"}
    config["max_restarts"] = 0
    exp_id = create_experiment(cluster.api, config, tiny_dir)
    assert not missing.exists()  # not at create
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"])
    [trial] = _trials(cluster.api, exp_id)
    assert (exp["state"], trial["state"]) == ("ERROR", "ERROR"), (exp, trial)
    assert (f"checkpoint_storage.host_path {missing} does not exist on "
            in trial_logs(cluster.api, trial["id"]))
    assert not missing.exists()
