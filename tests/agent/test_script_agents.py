"""Script entrypoints on remote agents (a master without slots, real ``det-agent``
processes): the script runs in the agent's trial process and its output reaches the
trial's log; a SIGKILLed script restarts from its checkpoint; a trial spanning two
agents runs the script on each machine (only the chief's has the link)."""

import os
import pathlib
import signal
import sys

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, trial_logs  # noqa: E402
from master_testing import create_experiment, wait_for_state, wait_until  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "script_trial"


@pytest.fixture
def cluster(tmp_path):
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 0, "agent_timeout": 10.0}}) as c:
        c.api = c.master.client()
        yield c
        c.api.close()


def _config(max_length=6, **hparams):
    config = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    config["hyperparameters"].update(hparams)
    config["searcher"]["max_length"] = {"batches": max_length}
    return config


def test_script_on_a_remote_agent_completes_and_survives_a_sigkill(cluster, tmp_path):
    cluster.agent("a1")
    markers = tmp_path / "markers"
    markers.mkdir()
    # 1 s a step: at step 3 the script has 7 s to go, so the SIGKILL below lands
    # mid-run even on a loaded machine.
    exp_id = create_experiment(cluster.api, _config(10, step_seconds=1.0, ckpt_every=2,
                                                    marker_dir=str(markers)), SCRIPT_DIR)
    steps = markers / "1.steps"
    wait_until(lambda: steps.exists() and steps.read_text() and int(steps.read_text()) >= 3,
               timeout=180, what="the script at step 3")
    os.kill(int((markers / "1.pid").read_text()), signal.SIGKILL)
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
    assert exp["state"] == "COMPLETED", exp
    (trial,) = exp["trials"]
    assert trial["restarts"] == 1 and trial["total_batches"] == 10
    logs = trial_logs(cluster.api, trial["id"])
    assert "killed by signal 9" in logs and "resumed from checkpoint" in logs
    assert "closed at step 10" in logs  # the script's own output, shipped by the agent


def test_script_trial_spanning_two_agents_runs_on_each_and_fails_with_either(cluster,
                                                                             tmp_path):
    """Each machine runs the command; this one finds no link on machine 1 (it is no
    distributed script) and exits 2 there, which fails the trial (the chief's script is
    killed)."""
    cluster.ensure_agents("a1", "a2")
    # The chief's steps take long enough that machine 1 fails first; machine 1 waits
    # for the chief's script to start (its pid marker), so both have run theirs.
    markers = tmp_path / "markers"
    markers.mkdir()
    config = _config(6, step_seconds=5.0, marker_dir=str(markers))
    config["resources"] = {"slots_per_trial": 2}
    config["max_restarts"] = 0
    exp_id = create_experiment(cluster.api, config, SCRIPT_DIR)
    try:
        exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"],
                             timeout=300)
    except AssertionError as e:
        trials = cluster.api.get(f"/experiments/{exp_id}/trials").json()["trials"]
        raise AssertionError(f"{e}\n{trial_logs(cluster.api, trials[0]['id'])}") from None
    logs = trial_logs(cluster.api, exp["trials"][0]["id"])
    assert exp["state"] == "ERROR", (exp, logs)
    assert logs.count("runs its script") == 2 and "runs its script on machine 1" in logs, logs
    assert "[machine 1] not run as a trial" in logs, logs
    assert "a part of the trial on agent" in logs and "exited with code 2" in logs, logs
