"""Smoke test: ``benchmarks/search/run.py --quick`` runs and prints the comparison table."""

import os
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("optuna")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "search", "run.py")


def test_search_benchmark_quick_prints_table():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p
    )
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=85,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert elapsed < 90
    out = proc.stdout
    assert re.search(r"^\| method \| batches to reach .* \| ratio vs ASHA \|", out, re.M), out
    for method in ("adaptive_asha", "random", "optuna"):
        row = re.search(
            rf"^\| {method} \| ([\d,]+).*\| ([\d.]+)x \| ([\d.]+)% \| ([\d,]+) \|$", out, re.M
        )
        assert row, f"no table row for {method}:\n{out}"
        assert int(row.group(4).replace(",", "")) > 0  # total batches
    asha_row = re.search(r"^\| adaptive_asha \|.*\| 1\.00x \|", out, re.M)
    assert asha_row, out
