"""Per-batch overhead of the Core API and of the Lightning callback, side by side.

Runs ``worker.py`` (every variant interleaved in one fresh process) and prints medians
and ratios: the Core API loops against the bare loop, Lightning with
``DeterminedCallback`` against plain Lightning. By hand (the default) the worker runs in
core's directory mode: each report is an appended JSON line under a temporary
``DET_CORE_DIR``. With ``--platform`` it is the entrypoint of a one-trial experiment run
by ``det experiment create --local``: each report goes through the script link to the
trial process and the local driver, as on a cluster (the Lightning variants are left
out there: a callback on the platform follows the searcher's lengths).

    python benchmarks/core_api/run.py [--reps 5] [--batches 2000] [--platform]
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
    parser.add_argument("--platform", action="store_true",
                        help="run the worker as a --local experiment's script")
    args = parser.parse_args()
    variants = args.variants or ("bare,core_1,core_100" if args.platform else None)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        options = ["--out", out, "--reps", str(args.reps)]
        if args.batches:
            options += ["--batches", str(args.batches)]
        if variants:
            options += ["--variants", variants]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        env.pop("DET_CLUSTER_INFO", None)
        if args.platform:
            run_as_experiment(tmp, options, env, args, variants)
        else:
            env["DET_CORE_DIR"] = os.path.join(tmp, "core")
            subprocess.run([sys.executable, os.path.join(HERE, "worker.py"), *options],
                           env=env, check=True, cwd=tmp, stdout=subprocess.DEVNULL)
        with open(out) as f:
            result = json.load(f)
    import torch

    where = "a --local experiment (script link)" if args.platform else "by hand (directory mode)"
    print(f"torch {torch.__version__}, 1 thread, {args.reps} interleaved reps (medians), "
          f"{result['batches']} batches, {where}")
    print(table(result))


def run_as_experiment(tmp: str, options: list, env: dict, args: argparse.Namespace,
                      variants: str) -> None:
    """The worker as the script of a one-trial ``--local`` experiment."""
    import shutil

    import yaml

    model_dir = os.path.join(tmp, "model")
    os.makedirs(model_dir)
    shutil.copy(os.path.join(HERE, "worker.py"), model_dir)
    shutil.copy(os.path.join(HERE, "..", "overhead", "_workloads.py"), model_dir)
    loops = [v for v in variants.split(",") if v in ("bare", "core_1", "core_100")]
    total = args.reps * len(loops) * (args.batches or 2000)  # the steps the worker reports
    config = {"name": "core-api-overhead", "entrypoint": ["python3", "worker.py", *options],
              "hyperparameters": {}, "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": total}}}
    path = os.path.join(tmp, "config.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    subprocess.run([sys.executable, "-m", "determined.cli", "experiment", "create", path,
                    model_dir, "--local", "--local-dir", os.path.join(tmp, "local"),
                    "--no-progress"], env=env, check=True, cwd=tmp, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
