"""Smoke test: ``benchmarks/gpu/packing.py --tiny`` runs its searches to the end on this
machine (k CPU slots where there is no GPU) and prints one table row per k."""

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu", "packing.py")


def test_packing_benchmark_tiny_prints_a_row_per_k(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    rows_path = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--tiny", "--json", str(rows_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert re.search(r"^\| k \(slots per GPU\) \| trials finished \|", out, re.M), out
    for k in (1, 2):
        row = re.search(rf"^\| {k} \| (\d+) \| 0 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", out,
                        re.M)
        assert row, f"no row for k={k}:\n{out}"
        assert int(row.group(1)) == 4 and float(row.group(3)) > 0
        assert 0 <= float(row.group(4)) <= 1  # a validation error
    rows = json.loads(rows_path.read_text())
    assert [r["k"] for r in rows] == [1, 2] and all(r["state"] == "COMPLETED" for r in rows)


def test_packing_benchmark_budget_cancels_the_searches_still_running(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    rows_path = tmp_path / "rows.json"
    # Trials of 4000 batches cannot finish in a 6 s budget (3 s per k).
    proc = subprocess.run([sys.executable, SCRIPT, "--tiny", "--batches", "4000", "--budget", "6",
                           "--json", str(rows_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for k in (1, 2):
        assert re.search(rf"^\| {k} \(cut\) \| 0 \| 0 \| ", proc.stdout, re.M), proc.stdout
    # The largest k runs first (what it leaves of the budget passes on); rows print by k.
    assert proc.stdout.index("k=2: ") < proc.stdout.index("k=1: "), proc.stdout
    rows = json.loads(rows_path.read_text())
    assert [(r["k"], r["cut"], r["state"]) for r in rows] == [(1, True, "CANCELED"),
                                                              (2, True, "CANCELED")]
    assert all(r["wall_s"] < 60 for r in rows), rows
