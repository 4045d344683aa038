"""Pause/activate, SIGKILL of a trial's process group, SIGKILL of the master: no metric
lost or counted twice."""

import base64
import os
import signal

from determined.common.api import pack_context
from master_testing import (LONG_CONFIG, slow_model_dir, trial_processes, wait_for_state,
                            wait_until)

EXPECTED_TRAINING = list(range(20, 2001, 20))
EXPECTED_VALIDATION = [1000, 2000]


def _create(api, tiny_dir, tmp_path):
    """The long trial, slowed to about 10 s (TinyTrial alone does its 2,000 batches in
    about 3 s): the pause, kill or SIGKILL a test sends after some batches lands while
    it trains even when the test's process is slow to act on a loaded machine."""
    config = dict(LONG_CONFIG, entrypoint="slow_def:SlowTrial",
                  hyperparameters=dict(LONG_CONFIG["hyperparameters"], sleep=0.005))
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    body = {"config": config, "activate": True,
            "model_def": base64.b64encode(pack_context(model_dir)).decode()}
    r = api.post("/experiments", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _batches(api, exp_id):
    trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    return trials[0]["total_batches"] if trials else 0


def _check_metrics(api, trial_id):
    metrics = api.get(f"/trials/{trial_id}").json()["metrics"]
    assert [m["total_batches"] for m in metrics if m["kind"] == "training"] == EXPECTED_TRAINING
    assert [m["total_batches"] for m in metrics if m["kind"] == "validation"] == EXPECTED_VALIDATION


def test_pause_activate_and_trial_sigkill(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = _create(api, tiny_dir, tmp_path)
        wait_until(lambda: _batches(api, exp_id) >= 100, what="training to start")
        assert api.post(f"/experiments/{exp_id}/pause").json()["state"] == "PAUSED"
        wait_until(lambda: not trial_processes(master.proc.pid), what="the runner to stop")
        paused_at = _batches(api, exp_id)
        ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        assert ckpts[-1]["total_batches"] == paused_at  # stopped with a checkpoint
        # A paused experiment's trials show PAUSED, and ACTIVE again with it.
        assert api.get(f"/experiments/{exp_id}").json()["trials"][0]["state"] == "PAUSED"
        assert api.post(f"/experiments/{exp_id}/activate").json()["state"] == "ACTIVE"
        assert api.get(f"/experiments/{exp_id}").json()["trials"][0]["state"] == "ACTIVE"
        wait_until(lambda: _batches(api, exp_id) >= paused_at + 200, what="training to resume")
        (pid,) = trial_processes(master.proc.pid)
        os.killpg(pid, signal.SIGKILL)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED", exp
        trial = exp["trials"][0]
        assert trial["restarts"] == 1 and trial["total_batches"] == 2000
        _check_metrics(api, trial["id"])
        # Every lifecycle event is a line of the trial's log.
        logs = [l["line"] for l in api.get(f"/trials/{trial['id']}/logs").json()["logs"]]
        ours = [l for l in logs if l.startswith("[determined] ")]
        assert ours[0] == "[determined] Trial starts", ours
        assert any("Trial stopped after a checkpoint at" in l for l in ours), ours
        assert any("Trial resumes, restoring checkpoint" in l for l in ours), ours
        assert any("Trial failed (killed by signal 9); restart 1 of 2" in l for l in ours), ours
        assert any(l.startswith("[determined] Trial restarts (restart 1 of 2), restoring "
                                "checkpoint") for l in ours), ours
        assert ours[-1] == "[determined] Trial completed", ours


def test_master_sigkill_mid_training_resumes(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = _create(api, tiny_dir, tmp_path)
        wait_until(lambda: _batches(api, exp_id) >= 300, what="training to start")
    orphans = trial_processes(master.proc.pid)
    master.sigkill()
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    for pid in orphans:  # the new master killed the runner the old one left behind
        wait_until(lambda: not os.path.exists(f"/proc/{pid}") or
                   open(f"/proc/{pid}/stat").read().split()[2] == "Z", what="orphan to die")
    with again.client() as api:
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED", exp
        _check_metrics(api, exp["trials"][0]["id"])


def test_kill_experiment_stops_runner_at_once(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = _create(api, tiny_dir, tmp_path)
        wait_until(lambda: _batches(api, exp_id) >= 100, what="training to start")
        api.post(f"/experiments/{exp_id}/kill")
        exp = wait_for_state(api, exp_id, ["CANCELED"], timeout=60)
        assert exp["trials"][0]["state"] == "CANCELED"
        assert exp["trials"][0]["total_batches"] < 2000
        wait_until(lambda: not trial_processes(master.proc.pid), what="the runner to die")


def test_trial_kill_cancels_the_trial(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = _create(api, tiny_dir, tmp_path)
        wait_until(lambda: _batches(api, exp_id) >= 100, what="training to start")
        trial_id = api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["id"]
        assert api.post(f"/trials/{trial_id}/kill").status_code == 200
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=60)
        # The single searcher counts a user-stopped trial as done: the experiment completes.
        assert exp["trials"][0]["state"] == "CANCELED" and exp["trials"][0]["restarts"] == 0
        assert exp["state"] == "COMPLETED", exp
