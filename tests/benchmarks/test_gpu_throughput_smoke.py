"""Smoke test: the GPU throughput benchmark (benchmarks/gpu/throughput.py) runs its
variants at tiny sizes on the CPU (``--cpu``) and prints its table; on a GPU machine
scripts/gpu-check.sh runs it for real."""

import json
import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu", "throughput.py")


@pytest.mark.timeout(600)
def test_throughput_benchmark_runs_on_the_cpu(tmp_path):
    out = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, SCRIPT, "--cpu", "--reps", "1", "--json", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    assert [(r["workload"], r["precision"]) for r in result["rows"]] == [
        ("mlp", "fp32"), ("mlp", "mixed"), ("resnet", "fp32"), ("resnet", "mixed")]
    for row in result["rows"]:
        assert row["ms_per_batch"]["bare"] > 0 and row["ms_per_batch"]["ours"] > 0
    lines = [l for l in proc.stdout.splitlines() if l.startswith("| ")]
    assert len(lines) == 5 and "bare" in lines[0] and "ours" in lines[0]  # header + 4 rows


def test_throughput_benchmark_without_a_gpu_says_so():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 2 and "no CUDA GPU here (use --cpu" in proc.stderr


@pytest.mark.timeout(600)
def test_throughput_benchmark_stopped_by_sigterm_prints_the_rows_so_far(tmp_path):
    # The GPU check caps the benchmark's time with `timeout` (SIGTERM first).
    out = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.Popen([sys.executable, SCRIPT, "--cpu", "--reps", "1", "--json", str(out)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("# mlp fp32:"):
            break
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 124, stderr[-3000:]
    assert "# stopped (SIGTERM) after 1 of 4 rows" in stderr
    rows = [l for l in stdout.splitlines() if l.startswith("| ")]
    assert len(rows) == 2 and rows[1].startswith("| mlp (tiny CPU sizes) | fp32 |"), stdout
    assert len(json.loads(out.read_text())["rows"]) == 1
