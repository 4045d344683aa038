"""Ctrl-C lands wherever the driver happens to be: between reading a trial's request
and answering it too. Whenever it lands, the experiment pauses (its trial checkpoints)
and can be resumed; it used to be killed (CANCELED, "cannot be resumed") when the
interrupt fell inside the handling of a request, after a 120-second wait."""

import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import yaml

from det_cli_testing import run_det, trial_started, wait_while_running


def _busy_config(tmp_path, tiny_dir):
    """One trial that asks its driver for an operation after every batch."""
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg.update(scheduling_unit=1, min_validation_period={"batches": 1000},
               searcher={"name": "single", "metric": "validation_loss",
                         "max_length": {"batches": 100000}})
    path = tmp_path / "busy.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_ctrl_c_at_any_moment_pauses_the_experiment(tmp_path, tiny_dir):
    config = _busy_config(tmp_path, tiny_dir)
    rng = random.Random(7)
    # Right as the trial starts (it asks which checkpoints are recorded, and its first
    # operation), then somewhere among its hundreds of later requests.
    delays = [rng.uniform(0, 0.2) for _ in range(3)] + [rng.uniform(0.3, 2.0)
                                                        for _ in range(2)]
    for attempt, delay in enumerate(delays):
        local = tmp_path / f"local{attempt}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "determined.cli", "e", "create", str(config),
             str(tiny_dir), "--local-dir", str(local), "--no-progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        log = local / "experiments" / "1" / "trials" / "1.log"
        wait_while_running(proc, lambda: trial_started(log), "the trial never started",
                           every=0.05)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        started = time.monotonic()
        stdout, stderr = proc.communicate(timeout=180)
        said = f"attempt {attempt}, {delay:.2f} s after the start:\n{stdout}{stderr}"
        assert proc.returncode == 130, said
        assert "Interrupted: experiment 1 is PAUSED" in stdout, said
        assert time.monotonic() - started < 60, said  # a pause, not the 120 s timeout
        described = run_det(["e", "describe", "1", "--local-dir", local]).stdout
        assert "PAUSED" in described, described


def test_a_second_ctrl_c_kills_a_trial_that_is_slow_to_pause(tmp_path, tiny_dir):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "master"))
    from master_testing import slow_model_dir

    model_dir = slow_model_dir(tiny_dir, tmp_path)
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    # The trial holds after 2 batches of its first workload: a pause never gets to
    # checkpoint, so only a second Ctrl-C ends the run.
    cfg.update(entrypoint="slow_def:SlowTrial", scheduling_unit=50,
               hyperparameters={**cfg["hyperparameters"], "hold_after": 2,
                                "hold_file": str(tmp_path / "never")})
    config = tmp_path / "held.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), model_dir,
         "--local-dir", str(local), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    log = local / "experiments" / "1" / "trials" / "1.log"
    wait_while_running(proc, lambda: trial_started(log), "the trial never started",
                       every=0.05)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(1.0)
    assert proc.poll() is None  # the first one waits for the trial to pause
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)  # not the pause's 120 s
    said = stdout + stderr
    assert proc.returncode == 130, said
    assert "Interrupted: experiment 1 is CANCELED" in stdout, said
    described = run_det(["e", "describe", "1", "--local-dir", local]).stdout
    assert "CANCELED" in described, described
