"""Several trials per GPU: an ``adaptive_asha`` search of a small model on one GPU with
the embedded agent offering k slots per GPU (``resource_manager.slots_per_gpu: k``), for
each k. Prints trials finished per hour, the best validation error reached and the GPU's
mean utilization (from the GPU metrics the agent sampled) as a Markdown table.

    python benchmarks/gpu/packing.py                 # k = 1, 2, 4, 8 on GPU 0
    python benchmarks/gpu/packing.py --tiny          # a smoke test (CPU is fine)
    python benchmarks/gpu/packing.py --budget 150    # at most ~150 s of searching

Every k runs the same search (same seed, so the same hyperparameter samples) on a fresh
master. With ``--budget``, the searches run from the largest k down (the quickest
first), each given an equal share of the budget still left, so time a quick search
does not use passes on to the slower ones; a search still running when its share is
spent is canceled, and its row counts what finished by then (trials per hour over its
wall time, the best validation error reached), marked "cut". Rows print by k.
Without a GPU, k CPU slots stand in for the k GPU slots (said above the table): the
numbers then measure nothing about GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))

from _master import BenchMaster  # noqa: E402

MODEL_DIR = os.path.join(HERE, "packing_model")


def search_config(max_trials: int, batches: int, k: int) -> Dict[str, Any]:
    return {
        "description": f"packing benchmark, {k} slot(s) per GPU",
        "entrypoint": "model_def:PackTrial",
        "reproducibility": {"experiment_seed": 7},
        "scheduling_unit": max(1, batches // 16),
        "min_validation_period": {"batches": max(1, batches // 4)},
        "hyperparameters": {
            "global_batch_size": 256,
            "lr": {"type": "log", "minval": -3, "maxval": -0.5, "base": 10},
            "momentum": {"type": "double", "minval": 0.0, "maxval": 0.95},
            "hidden": {"type": "categorical", "vals": [64, 256, 1024]},
        },
        "searcher": {"name": "adaptive_asha", "metric": "validation_error",
                     "smaller_is_better": True, "max_trials": max_trials,
                     "max_length": {"batches": batches}, "max_concurrent_trials": k,
                     "mode": "standard", "max_rungs": 3, "divisor": 4},
        "max_restarts": 0,
    }


def run_one(k: int, gpus: int, args: argparse.Namespace, work: str, share: float
            ) -> Dict[str, Any]:
    """One search at k slots per GPU; canceled after ``share`` seconds."""
    data_dir = os.path.join(work, f"k{k}")
    os.makedirs(data_dir)
    master_yaml = os.path.join(data_dir, "master.yaml")
    with open(master_yaml, "w") as f:
        yaml.safe_dump({"resource_manager": {"slots_per_gpu": k,
                                             "gpu_metrics_interval": args.gpu_interval}}, f)
    config_path = os.path.join(data_dir, "search.yaml")
    with open(config_path, "w") as f:
        yaml.safe_dump(search_config(args.max_trials, args.batches, k), f)
    # k slots: all on GPU 0 when there is one (slot i is on GPU i // k).
    with BenchMaster(data_dir, slots=k, extra_args=["--config", master_yaml]) as m:
        t0 = time.monotonic()
        out = m.det("experiment", "create", config_path, MODEL_DIR)
        exp_id = int(out.stdout.split("Created experiment")[1].split()[0])
        cut = False
        try:
            exp = m.wait_done(exp_id, poll=0.5, timeout=share)
        except RuntimeError:  # its share of the budget is spent
            cut = True
            m.api.post(f"/experiments/{exp_id}/cancel").raise_for_status()
            wall = time.monotonic() - t0
            exp = m.wait_done(exp_id, poll=0.5, timeout=30)
        else:
            wall = time.monotonic() - t0
        trials = m.api.get(f"/experiments/{exp_id}/trials").json()["trials"]
        finished = [t for t in trials if t["state"] == "COMPLETED"]
        errors = [t for t in trials if t["state"] == "ERROR"]
        best = [t["best_validation"] for t in trials if t.get("best_validation") is not None]
        util: List[float] = []
        for t in trials:
            samples = m.api.get(f"/trials/{t['id']}/gpu-metrics").json()["gpu_metrics"]
            util.extend(s["utilization"] for s in samples)
    return {"k": k, "slots": k, "state": exp["state"], "cut": cut, "trials": len(trials),
            "finished": len(finished), "errors": len(errors), "wall_s": round(wall, 1),
            "trials_per_hour": round(len(finished) / wall * 3600, 1),
            "best_validation_error": min(best) if best else None,
            "mean_gpu_util": round(statistics.mean(util), 1) if util else None,
            "gpus": gpus}


def table(rows: List[Dict[str, Any]]) -> str:
    lines = ["| k (slots per GPU) | trials finished | errors | wall s | trials per hour | "
             "best validation error | mean GPU util % |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        best = "-" if r["best_validation_error"] is None else f"{r['best_validation_error']:.4f}"
        util = "-" if r["mean_gpu_util"] is None else f"{r['mean_gpu_util']:.1f}"
        k = f"{r['k']} (cut)" if r.get("cut") else r["k"]
        lines.append(f"| {k} | {r['finished']} | {r['errors']} | {r['wall_s']} | "
                     f"{r['trials_per_hour']} | {best} | {util} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", default=None, help="comma-separated slots per GPU (default 1,2,4,8)")
    p.add_argument("--max-trials", type=int, default=None, help="trials per search (default 24)")
    p.add_argument("--batches", type=int, default=None,
                   help="max_length of a trial in batches (default 800)")
    p.add_argument("--gpu-interval", type=float, default=1.0,
                   help="seconds between GPU readings (default 1)")
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds per search when there is no --budget")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds for all searches together (largest k first, each an equal "
                        "share of what is left)")
    p.add_argument("--tiny", action="store_true",
                   help="a smoke test: k = 1, 2; 4 trials of 32 batches")
    p.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = p.parse_args()
    ks = [int(k) for k in (args.k or ("1,2" if args.tiny else "1,2,4,8")).split(",")]
    args.max_trials = args.max_trials or (4 if args.tiny else 24)
    args.batches = args.batches or (32 if args.tiny else 800)
    from determined._procs._gpus import gpu_inventory

    gpus = gpu_inventory()
    if gpus:
        print(f"GPU 0: {gpus[0].name}, {gpus[0].memory_total / 2**30:.1f} GiB "
              f"({len(gpus)} GPU(s) here; the benchmark uses GPU 0 only)", flush=True)
    else:
        print("No NVIDIA GPU here: k CPU slots stand in for k slots of one GPU", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="det-packing-") as work:
        start = time.monotonic()
        order = sorted(ks, reverse=True) if args.budget else ks
        for n, k in enumerate(order):
            if args.budget:
                left = args.budget - (time.monotonic() - start)
                share = max(left, 0.0) / (len(order) - n)
            else:
                share = args.timeout
            row = run_one(k, len(gpus), args, work, share)
            print(f"k={k}: {json.dumps(row)}", flush=True)
            rows.append(row)
    rows.sort(key=lambda r: ks.index(r["k"]))
    print(f"\nadaptive_asha, {args.max_trials} trials of up to {args.batches} batches "
          f"(batch 256), on {'GPU 0: ' + gpus[0].name if gpus else 'CPU slots'}:\n")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    done = all((r["state"] == "COMPLETED" or r["cut"]) and not r["errors"] for r in rows)
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
