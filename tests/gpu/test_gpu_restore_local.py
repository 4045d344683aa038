"""Restore anywhere with ``--local``, on a GPU: a crash restarts the trial from its
checkpoint, Ctrl-C of the driver checkpoints and pauses, ``det e resume`` goes on, and
the random streams and weights match a straight local run's. See test_gpu_restore.py;
CPU variant ``cpu_twin``."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from det_cli_testing import run_det  # noqa: E402
from master_testing import wait_until  # noqa: E402
from restore_testing import (  # noqa: E402,F401 (fixtures)
    config,
    deterministic_cublas,
    device,
    model_dir,
    streams,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def _local_rows(tmp_path, local_dir):
    """The trial of local experiment 1 and its streams."""
    (exp,) = json.loads(run_det(["e", "describe", "1", "--metrics", "--local-dir", local_dir,
                                 "--json"]).stdout)
    (trial,) = exp["trials"]
    return trial, streams([(m["kind"], m["total_batches"], m["metrics"]) for m in trial["metrics"]])


def test_local_crash_and_interrupted_driver_continue_exactly(device, tiny_dir, tmp_path):
    """``--local``: a crash restarts the trial from its checkpoint; Ctrl-C of the driver
    checkpoints and pauses, ``det e resume`` goes on; the streams match a straight run."""
    model = model_dir(tiny_dir, tmp_path)
    straight_config = tmp_path / "straight.yaml"
    straight_config.write_text(yaml.safe_dump(config(tmp_path, "straight", device, crash=False)))
    out = run_det(["e", "create", straight_config, model, "--local-dir", tmp_path / "straight",
                   "--json", "--no-progress"], timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    _, straight_rows = _local_rows(tmp_path, tmp_path / "straight")

    faults_config = tmp_path / "faults.yaml"
    # 0.2 s a batch: the restarted trial has 12 s to go, so the Ctrl-C below lands
    # mid-run even on a loaded machine.
    faults_config.write_text(yaml.safe_dump(config(tmp_path, "faults", device, sleep=0.2)))
    local = tmp_path / "faults"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(faults_config), str(model),
         "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    startup = tmp_path / "faults.startup"
    # The second start is the restart after the crash at batch 25.
    wait_until(lambda: startup.exists() and len(startup.read_text().splitlines()) >= 2
               or proc.poll() is not None, timeout=300, what="the restart after the crash")
    time.sleep(1.5)  # some batches past the checkpoint at 20 (0.2 s each)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the trial checkpoints, the driver stops
    proc.wait(timeout=180)
    (state,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json"]).stdout)
    assert state["state"] == "PAUSED", state
    out = run_det(["e", "resume", "1", "--local-dir", local, "--json", "--no-progress"],
                  timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    _, rows = _local_rows(tmp_path, local)
    assert (tmp_path / "faults.crashed").exists()
    starts = startup.read_text().splitlines()
    assert len(starts) >= 3, starts  # the first start, the restart, the resume
    assert rows == straight_rows
