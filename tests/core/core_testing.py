"""Helpers of the Core API tests: running a script as its own process."""

import os
import pathlib
import subprocess
import sys
from typing import Dict, List, Optional

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "fixtures" / "core_api" / "train.py"


def script_env(directory: pathlib.Path, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of a script run by hand in directory mode under ``directory``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env["DET_CORE_DIR"] = str(directory)
    env["OMP_NUM_THREADS"] = "1"
    for name in ("DET_CLUSTER_INFO", "DET_SCRIPT_LINK", "DET_SCRIPT_AUTHKEY"):
        env.pop(name, None)
    env.update(extra or {})
    return env


def run_script(directory: pathlib.Path, args: List[str], timeout: float = 240,
               script: pathlib.Path = SCRIPT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], env=script_env(directory),
                          cwd=directory.parent, capture_output=True, text=True,
                          timeout=timeout)


def final_state(directory: pathlib.Path) -> dict:
    """The ``state.pt`` of the directory's latest checkpoint."""
    from determined.core import latest_local_checkpoint

    storage_id = latest_local_checkpoint(str(directory))
    assert storage_id is not None, f"no checkpoint recorded under {directory}"
    return torch.load(directory / "checkpoints" / storage_id / "state.pt", weights_only=False)


def assert_same_weights(a: dict, b: dict) -> None:
    assert a["steps"] == b["steps"]
    assert a["model"].keys() == b["model"].keys()
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    assert torch.equal(a["rng"], b["rng"])


def report_rows(steps, validate_every):
    """The stored ``(kind, total_batches)`` rows of tests/fixtures/core_reports/report.py
    run for ``steps`` with a validation every ``validate_every``, in report order."""
    rows = []
    for step in range(1, steps + 1):
        rows.append(("training", step))
        if step % validate_every == 0:
            rows.append(("validation", step))
    return rows


def local_rows(local: pathlib.Path, sql: str) -> list:
    """Rows of ``sql`` in a ``--local-dir``'s database ([] while it is not there yet)."""
    import sqlite3

    try:
        with sqlite3.connect(local / "local.db") as db:
            return db.execute(sql).fetchall()
    except sqlite3.Error:  # not created yet, or busy
        return []


def interrupt_after_first_checkpoint(args: List, local: pathlib.Path,
                                     timeout: float = 180) -> str:
    """Run ``det ARGS`` (a ``--local`` run into ``local``), Ctrl-C it (SIGINT to its
    process group) once a checkpoint is stored, and return its output."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "determined.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not local_rows(local, "SELECT uuid FROM checkpoints"):
            assert proc.poll() is None, proc.communicate()[0].decode()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint was stored"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # running trials checkpoint and stop
        return proc.communicate(timeout=timeout)[0].decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
