"""Per-batch overhead of the Core API and of the Lightning callback, side by side.

Runs ``worker.py`` (every variant interleaved in one fresh process, by hand: core's
directory mode, each report an appended and fsynced JSON line under a temporary
``DET_CORE_DIR``) and prints medians and ratios: the Core API loops against the bare
loop, Lightning with ``DeterminedCallback`` against plain Lightning.

    python benchmarks/core_api/run.py [--reps 5] [--batches 2000]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = [
    ("bare", "bare PyTorch loop (W1)", "bare"),
    ("core_1", "+ report_training_metrics every batch", "bare"),
    ("core_100", "+ report_training_metrics every 100 batches", "bare"),
    ("lightning", "plain Lightning (W1)", "lightning"),
    ("lightning_det", "Lightning + DeterminedCallback", "lightning"),
]


def table(result: dict) -> str:
    times = result["times"]
    med = {v: statistics.median(t) for v, t in times.items()}
    lines = ["| variant | median (s) | per batch (µs) | ratio |", "|---|---:|---:|---:|"]
    for variant, label, base in ROWS:
        if variant not in med:
            continue
        ratio = med[variant] / med[base] if base in med else float("nan")
        per_batch = med[variant] / result["batches"] * 1e6
        lines.append(f"| {label} | {med[variant]:.3f} | {per_batch:.1f} | {ratio:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--variants", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        env = dict(os.environ, DET_CORE_DIR=os.path.join(tmp, "core"), OMP_NUM_THREADS="1")
        env.pop("DET_CLUSTER_INFO", None)
        command = [sys.executable, os.path.join(HERE, "worker.py"), "--out", out,
                   "--reps", str(args.reps)]
        if args.batches:
            command += ["--batches", str(args.batches)]
        if args.variants:
            command += ["--variants", args.variants]
        subprocess.run(command, env=env, check=True, cwd=tmp, stdout=subprocess.DEVNULL)
        with open(out) as f:
            result = json.load(f)
    import torch

    print(f"torch {torch.__version__}, 1 thread, {args.reps} interleaved reps (medians), "
          f"{result['batches']} batches")
    print(table(result))


if __name__ == "__main__":
    main()
