"""Smoke test: the Core API overhead benchmark times every variant (by hand, and the
plain loops as a --local experiment's script) and prints a row with a ratio for each."""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(900)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "core_api", "run.py")
ROW = r"^\| {label} \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$"


def _run(*extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, SCRIPT, "--reps", "1", "--batches", "30", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def _ratio(out, label):
    row = re.search(ROW.format(label=re.escape(label)), out, re.M)
    assert row, out
    assert float(row.group(1)) > 0
    return float(row.group(3))


def test_core_api_benchmark_by_hand_times_every_variant():
    out = _run()
    assert _ratio(out, "bare PyTorch loop (W1)") == 1.0
    assert _ratio(out, "plain Lightning (W1)") == 1.0
    for label in ("+ report_training_metrics every batch",
                  "+ report_training_metrics every 100 batches",
                  "Lightning + DeterminedCallback"):
        assert _ratio(out, label) > 0


def test_core_api_benchmark_through_a_local_experiment():
    out = _run("--platform")
    assert "a --local experiment" in out
    assert _ratio(out, "+ report_training_metrics every batch") > 0
    assert "Lightning" not in out.split("\n", 1)[1]
