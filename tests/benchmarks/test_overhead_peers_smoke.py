"""Smoke test: the overhead benchmark's orchestrator times the bare loop and our
PyTorchTrial in fresh worker processes and prints ratios (the Lightning and Determined
0.38 variants need their own environments from PyPI, so the smoke run leaves them out)."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "overhead", "peers.py")


def test_peers_benchmark_bare_and_ours(tmp_path):
    env = dict(os.environ)
    env["DET_BENCH_VENVS"] = str(tmp_path / "venvs")  # nothing may be installed
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--variants", "bare,ours", "--reps", "1",
         "--workloads", "W1", "--batches", "30"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    row = re.search(r"^\| W1: .* \| ([\d.]+) s \(1\.00x\) \| ([\d.]+) s \(([\d.]+)x\) \|$",
                    proc.stdout, re.M)
    assert row, proc.stdout
    assert float(row.group(1)) > 0 and float(row.group(2)) > 0
    assert not (tmp_path / "venvs").exists()
