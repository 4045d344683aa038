"""Ctrl-C lands wherever the driver happens to be: between reading a trial's request
and answering it too. Whenever it lands, the experiment pauses (its trial checkpoints)
and can be resumed; it used to be killed (CANCELED, "cannot be resumed") when the
interrupt fell inside the handling of a request, after a 120-second wait."""

import os
import random
import signal
import subprocess
import sys
import time

import yaml

from det_cli_testing import run_det


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
        deadline = time.monotonic() + 120
        while not (log.exists() and "runs in" in log.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the trial never started"
            time.sleep(0.05)
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
