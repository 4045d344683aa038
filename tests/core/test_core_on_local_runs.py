"""A Core API script (tests/fixtures/core_api/train.py) as the entrypoint of
``det experiment create --local``: the real CLI, trial processes and script."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
import yaml

from det_cli_testing import run_det
from tests.core.core_testing import ROOT, assert_same_weights

pytestmark = pytest.mark.timeout(600)

SCRIPT_DIR = ROOT / "tests" / "fixtures" / "core_api"


def _config(tmp_path, **changes):
    cfg = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    cfg["hyperparameters"].update(changes.pop("hparams", {}))
    cfg.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _state(local, uuid):
    return torch.load(local / "checkpoints" / uuid / "state.pt", weights_only=False)


def test_core_script_completes_with_its_reports_recorded(tmp_path):
    local = tmp_path / "local"
    out = run_det(["e", "create", SCRIPT_DIR / "const.yaml", SCRIPT_DIR, "--local",
                   "--local-dir", local, "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout[:out.stdout.rindex("}") + 1])
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 12
    assert trial["latest_validation"].keys() == {"validation_loss"}
    assert trial["best_metric"] == pytest.approx(trial["latest_validation"]["validation_loss"])
    meta = json.loads((local / "checkpoints" / trial["latest_checkpoint"] / "metadata.json")
                      .read_text())
    assert (meta["steps_completed"], meta["trial_id"], meta["hparams"]) == (
        12, trial["trial_id"], {"lr": 0.05, "seed": 7})
    assert _state(local, trial["latest_checkpoint"])["steps"] == 12
    logs = run_det(["t", "logs", str(trial["trial_id"]), "--local-dir", local]).stdout
    assert "done at step 12" in logs


def test_sigkilled_core_script_resumes_to_the_same_weights(tmp_path):
    """Two trials that differ only in speed: the slow one is SIGKILLed mid-training and
    restarted from its latest checkpoint by the platform; both end with identical
    weights, optimizer and RNG state."""
    markers = tmp_path / "markers"
    markers.mkdir()
    local = tmp_path / "local"
    config = _config(tmp_path, searcher={
        "name": "grid", "metric": "validation_loss", "max_length": {"batches": 24}},
        hparams={"marker_dir": str(markers),
                 # The slow one: seen after step 6, it has over 6 s to go when killed.
                 "step_delay": {"type": "categorical", "vals": [0.5, 0.0]}},
        resources={"slots_per_trial": 1}, max_restarts=2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(SCRIPT_DIR),
         "--local", "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        slow, seen = None, {}
        deadline = time.monotonic() + 240
        while slow is None:
            for trial_id in (1, 2):
                steps = markers / f"{trial_id}.steps"
                text = steps.read_text().strip() if steps.exists() else ""
                if text and 6 <= int(text) < 20:
                    # Still short of step 20 a second after step 6: the slow trial.
                    first = seen.setdefault(trial_id, time.monotonic())
                    if time.monotonic() - first > 1.0:
                        slow = trial_id
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no trial reached step 6"
            time.sleep(0.05)
        os.kill(int((markers / f"{slow}.pid").read_text()), signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stdout + stderr
    trials = {t["trial_id"]: t for t in json.loads(stdout[:stdout.rindex("}") + 1])["trials"]}
    assert {t["state"] for t in trials.values()} == {"COMPLETED"}
    assert trials[slow]["restarts"] == 1
    assert trials[3 - slow]["restarts"] == 0
    logs = run_det(["t", "logs", str(slow), "--local-dir", local]).stdout
    assert "killed by signal 9" in logs and "resumed from" in logs
    a, b = (_state(local, trials[t]["latest_checkpoint"]) for t in (1, 2))
    assert a["steps"] == 24
    assert_same_weights(a, b)


def test_core_script_in_test_mode(tmp_path):
    out = run_det(["e", "create", SCRIPT_DIR / "const.yaml", SCRIPT_DIR, "--local", "--test",
                   "--local-dir", tmp_path / "local", "--json"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "done at step" in out.stdout


def test_adaptive_search_over_the_core_script(tmp_path):
    """adaptive_asha drives the script's operations loop: every trial trains to the
    first rung, one promoted trial on to the full length."""
    local = tmp_path / "local"
    out = run_det(["e", "create", SCRIPT_DIR / "adaptive.yaml", SCRIPT_DIR, "--local",
                   "--local-dir", local, "--json", "--no-progress"], timeout=500)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout[:out.stdout.rindex("}") + 1])
    assert result["state"] == "COMPLETED"
    trials = result["trials"]
    assert len(trials) == 4 and {t["state"] for t in trials} == {"COMPLETED"}
    assert sorted(t["batches"] for t in trials) == [4, 4, 4, 16]
    assert all(t["latest_validation"].keys() == {"validation_loss"} for t in trials)
