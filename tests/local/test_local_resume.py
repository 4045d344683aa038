"""``det experiment resume --local ID`` after the driver was SIGKILLed: the search ends
as the uninterrupted one did."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.e2e


def _config(tmp_path, tiny_dir):
    with open(tiny_dir / "const.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg["hyperparameters"]["lr"] = {"type": "double", "minval": 0.01, "maxval": 0.3}
    cfg["searcher"] = {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 3,
                       "max_length": {"batches": 80}, "divisor": 2, "max_rungs": 2}
    cfg["min_validation_period"] = {"batches": 20}
    cfg["reproducibility"] = {"experiment_seed": 11}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _validations(directory):
    rows = {}
    with open(os.path.join(directory, "metrics.jsonl")) as f:
        for line in f:
            row = json.loads(line)
            if row["kind"] == "rollback":
                rows = {k: v for k, v in rows.items()
                        if not (k[0] == row["trial_id"] and k[1] > row["batches"])}
            elif row["kind"] == "validation":
                key = (row["trial_id"], row["batches"])
                assert key not in rows, f"validation stored twice: {key}"
                rows[key] = row["metrics"]["validation_loss"]
    return rows


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_resume_after_interrupt_matches_uninterrupted_run(tmp_path, tiny_dir, sig):
    """kill -9 of the driver and its trials, or Ctrl-C (trials checkpoint first)."""
    config = _config(tmp_path, tiny_dir)
    whole = run_det(["e", "create", config, tiny_dir, "--local-dir", tmp_path / "a",
                     "--json", "--no-progress"], timeout=400)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout)

    local = tmp_path / "b"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(tiny_dir),
         "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    ckpts = local / "checkpoints"
    deadline = time.monotonic() + 300
    while not (ckpts.exists() and len([p for p in ckpts.iterdir()
                                       if not p.name.startswith(".")]) >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint to resume from"
        time.sleep(0.2)
    os.killpg(proc.pid, sig)
    proc.wait(timeout=180)
    state = json.loads((local / "experiments" / "1" / "experiment.json").read_text())
    assert state["state"] == ("PAUSED" if sig == signal.SIGINT else "ACTIVE"), state["state"]

    out = run_det(["e", "resume", "1", "--local-dir", local, "--json", "--no-progress"],
                  timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    resumed = json.loads(out.stdout)
    assert resumed["state"] == "COMPLETED"
    strip = lambda r: [(t["hparams"], t["batches"], t["state"], t["best_metric"])  # noqa: E731
                       for t in r["trials"]]
    assert strip(resumed) == strip(expected)
    assert sorted(_validations(resumed["directory"]).values()) == \
        sorted(_validations(expected["directory"]).values())
    again = run_det(["e", "resume", "1", "--local-dir", local])
    assert again.returncode != 0 and "already COMPLETED" in again.stdout + again.stderr
