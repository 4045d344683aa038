"""Smoke test: the multi-fidelity test-function benchmark runs every method on both
functions and reports regrets that are finite and non-negative."""

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("optuna")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "search", "functions.py")


def test_functions_benchmark_one_seed(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "src")
    curves = tmp_path / "fn.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--seeds", "1", "--json", str(curves)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for fname in ("branin", "hartmann6"):
        assert f"**{fname}**" in proc.stdout
    for method in ("adaptive_asha", "adaptive_asha, tpe", "random", "optuna"):
        rows = re.findall(rf"^\| {re.escape(method)} \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$",
                          proc.stdout, re.M)
        assert len(rows) == 2, proc.stdout
        assert all(float(v) >= 0 for row in rows for v in row), rows
    data = json.loads(curves.read_text())
    assert set(data["curves"]) == {"branin", "hartmann6"}
