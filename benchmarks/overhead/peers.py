"""Harness overhead against the peers, in one run: a bare PyTorch loop, our PyTorchTrial,
PyTorch Lightning and Determined 0.38's PyTorchTrial, on W1 and W2, one torch thread.

    python benchmarks/overhead/peers.py [--reps 5] [--workloads W1,W2]

Each peer is installed, pinned, into its own virtual environment by this script (never
into the project's): ``torch==2.13.0`` first (pinned, so pip does not pull a CUDA
build), then the peer. Environments live under ``$DET_BENCH_VENVS`` (default
``<tmp>/det-bench-venvs``) and are reused. Every timed run is a fresh process of the
variant's interpreter (``worker.py``); variants alternate within each repetition, in a
rotating order, so machine noise hits all alike. Times are medians of the repetitions,
from the start of the first batch's step to the end of the last (``StepClock``); ratios
are to the bare loop's median.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _workloads import WORKLOADS  # noqa: E402

TORCH = "torch==2.13.0"
#: variant -> pinned packages of its own environment (None: the project's interpreter)
PEERS = {
    "bare": None,
    "ours": None,
    "lightning": ["lightning==2.5.5"],
    "det038": ["determined==0.38.1", "tensorboard==2.20.0"],  # its trials write TensorBoard
}
LABELS = {
    "bare": "bare PyTorch loop",
    "ours": "our PyTorchTrial",
    "lightning": "Lightning 2.5.5",
    "det038": "Determined 0.38.1 PyTorchTrial",
}


def venv_root() -> str:
    return os.environ.get("DET_BENCH_VENVS", os.path.join(tempfile.gettempdir(), "det-bench-venvs"))


def interpreter(variant: str) -> str:
    """The variant's Python, creating and filling its environment on first use."""
    pins = PEERS[variant]
    if pins is None:
        return sys.executable
    path = os.path.join(venv_root(), variant)
    python = os.path.join(path, "bin", "python")
    done = os.path.join(path, ".installed")
    if os.path.exists(done) and open(done).read() == " ".join(pins):
        return python
    print(f"installing {' '.join(pins)} into {path} ...", file=sys.stderr, flush=True)
    if not os.path.exists(python):
        venv.EnvBuilder(with_pip=True).create(path)
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + [TORCH], check=True)  # first, pinned: never a CUDA build
    subprocess.run(pip + [TORCH] + pins, check=True)
    with open(done, "w") as f:
        f.write(" ".join(pins))
    return python


def timed_run(variant: str, workload: str, seed: int, batches: int) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "src") if PEERS[variant] is None else ""
    env["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        # Peers write caches and local checkpoints under HOME; Determined 0.38 also
        # copies the working directory into each checkpoint, so the two must differ.
        env["HOME"], cwd = os.path.join(tmp, "home"), os.path.join(tmp, "work")
        os.makedirs(env["HOME"])
        os.makedirs(cwd)
        out = subprocess.run(
            [interpreter(variant), os.path.join(HERE, "worker.py"), variant, workload, str(seed),
             str(batches), "warm"],
            env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{variant} {workload} failed:\n{out.stderr[-3000:]}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--workloads", default="W1,W2")
    p.add_argument("--variants", default=",".join(PEERS))
    p.add_argument("--batches", type=int, default=0, help="override the batch count (smoke)")
    args = p.parse_args()
    variants = args.variants.split(",")
    for v in variants:
        interpreter(v)  # install first, outside the timed loop
    rows = []
    for workload in args.workloads.split(","):
        sizes, bs, n, desc = WORKLOADS[workload]
        n = args.batches or n
        times = {v: [] for v in variants}
        for rep in range(args.reps):
            shift = rep % len(variants)
            for v in variants[shift:] + variants[:shift]:
                times[v].append(timed_run(v, workload, rep, n))
                print(f"  {workload} rep {rep} {v}: {times[v][-1]:.3f} s", file=sys.stderr,
                      flush=True)
        med = {v: statistics.median(ts) for v, ts in times.items()}
        rows.append((workload, desc, med))
    base = "bare" if "bare" in variants else variants[0]
    print(f"one torch thread, {args.reps} interleaved repetitions (medians); "
          f"ratio = variant / {LABELS[base]}\n")
    print("| workload | " + " | ".join(LABELS[v] for v in variants) + " |")
    print("|---|" + "---:|" * len(variants))
    for workload, desc, med in rows:
        cells = [f"{med[v]:.3f} s ({med[v] / med[base]:.2f}x)" for v in variants]
        print(f"| {workload}: {desc} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
