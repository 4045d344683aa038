"""Smoke test: ``benchmarks/search/run.py --quick`` runs every row and prints the tables."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("optuna")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "search", "run.py")


def test_search_benchmark_quick_prints_tables(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p
    )
    curves = tmp_path / "curves.json"
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--quick", "--json", str(curves)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert re.search(r"^\| method \| batches to 97% .* \| batches to 98% ", out, re.M), out
    for method in ("adaptive_asha", "adaptive_asha, tpe", "random", "optuna",
                   "adaptive_asha, capacity not told"):
        row = re.search(rf"^\| {re.escape(method)} \| ([\d,]+).*\| ([\d.]+)% \| ([\d,]+) \|$",
                        out, re.M)
        assert row, f"no table row for {method}:\n{out}"
        assert int(row.group(3).replace(",", "")) > 0  # total batches
    assert "Targets: tpe reaches 98%" in out
    assert curves.stat().st_size > 0
