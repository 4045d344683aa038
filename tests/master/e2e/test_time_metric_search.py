"""An adaptive_asha search with ``searcher.time_metric`` over a real Core API script
(tests/fixtures/time_metric/train.py) on a master with its embedded agent: scripts
train their own length, the searcher stops the weaker ones through
``should_preempt()`` (they checkpoint, exit 0 and end COMPLETED, never resumed), and
the experiment shows sensible progress throughout."""

import os
import pathlib
import subprocess
import sys
import time

import pytest
import yaml

from master_testing import create_experiment, metric_rows, slot_tasks, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "time_metric"


def trial_log(api, trial_id):
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def test_time_metric_asha_over_a_core_api_script(master_factory):
    master = master_factory(slots=2)
    config = yaml.safe_load((SCRIPT_DIR / "asha.yaml").read_text())
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        seen = []  # the progress the API shows while the search runs
        deadline = time.monotonic() + 400
        while True:
            exp = api.get(f"/experiments/{exp_id}").json()
            seen.append(exp.get("progress"))
            if exp["state"] in ("COMPLETED", "ERROR", "CANCELED"):
                break
            assert time.monotonic() < deadline, exp
            time.sleep(0.3)
        assert all(isinstance(p, (int, float)) and 0.0 <= p <= 1.0 for p in seen), seen
        assert any(0.0 < p < 1.0 for p in seen), seen
        assert exp["state"] == "COMPLETED", exp
        trials = exp["trials"]
        assert len(trials) == 6
        assert all(t["state"] == "COMPLETED" for t in trials), trials
        batches = sorted(t["total_batches"] for t in trials)
        assert batches[-1] == 32 and batches[0] < 32, batches
        assert exp["progress"] == pytest.approx(1.0)
        stopped = next(t for t in trials if t["total_batches"] < 32)
        log = trial_log(api, stopped["id"])
        assert "stopped by the platform at step" in log
        assert "resumed from" not in log  # stopped by the searcher: never resumed
        metrics = api.get(f"/trials/{stopped['id']}").json()["metrics"]
        validations = [m for m in metrics if m["kind"] == "validation"]
        assert validations and all(m["total_batches"] % 4 == 0 for m in validations)
    listed = subprocess.run([sys.executable, "-m", "determined.cli", "experiment", "list"],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, DET_MASTER=master.url))
    assert listed.returncode == 0, listed.stderr
    assert "100%" in listed.stdout


def test_pause_and_activate_resume_time_metric_scripts(master_factory):
    # A script that exits 0 because the experiment paused is not COMPLETED: it resumes
    # from its checkpoint on activate, and the search still ends with every trial done.
    master = master_factory(slots=2)
    config = yaml.safe_load((SCRIPT_DIR / "asha.yaml").read_text())
    config["searcher"]["max_trials"] = 4
    # 0.5 s a step, not 0.1: trials still run when the pause below lands, even when a
    # loaded machine makes the test slow to see step 4.
    assert "--step-delay 0.1" in config["entrypoint"]
    config["entrypoint"] = config["entrypoint"].replace("--step-delay 0.1", "--step-delay 0.5")
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)

        def some_trial_at_step_4():
            trials = api.get(f"/experiments/{exp_id}").json()["trials"]
            return any(batches >= 4 for t in trials
                       for _, batches, _ in metric_rows(api, t["id"]))

        wait_until(some_trial_at_step_4, timeout=200, what="a script at step 4")
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        wait_until(lambda: not any(slot_tasks(api)), timeout=200,
                   what="the paused scripts to give their slots back")
        paused = api.get(f"/experiments/{exp_id}").json()
        assert paused["state"] == "PAUSED"
        stopped = [t for t in paused["trials"]
                   if "Trial stopped after a checkpoint" in trial_log(api, t["id"])]
        assert stopped and all(t["state"] != "COMPLETED" for t in stopped), paused["trials"]
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        deadline = time.monotonic() + 400
        while True:
            exp = api.get(f"/experiments/{exp_id}").json()
            if exp["state"] in ("COMPLETED", "ERROR", "CANCELED"):
                break
            assert time.monotonic() < deadline, exp
            time.sleep(0.3)
        assert exp["state"] == "COMPLETED", exp
        assert all(t["state"] == "COMPLETED" for t in exp["trials"]), exp["trials"]
        assert any("resumed from" in trial_log(api, t["id"]) for t in stopped)
