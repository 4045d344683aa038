"""Per-batch overhead of the Core API and of the Lightning callback, side by side.

Runs ``worker.py`` (every variant interleaved in one fresh process) and prints medians
and ratios: the Core API loops against the bare loop, Lightning with
``DeterminedCallback`` against plain Lightning. ``--modes`` says where the worker runs:

- ``hand`` (the default): core's directory mode, each report an appended JSON line under
  a temporary ``DET_CORE_DIR``;
- ``local`` (``--platform`` too): the entrypoint of a one-trial experiment run by ``det
  experiment create --local``: each report goes through the script link to the trial
  process and the local driver;
- ``master``: the same experiment on a master with its embedded agent (one slot, started
  once and warmed up by a no-op experiment): the trial process sends the reports to the
  master over HTTP.

On the platform the Lightning variants are left out (a callback there follows the
searcher's lengths). With several modes every rep runs each mode once (one worker, one
run of each loop), in an order rotating from rep to rep.

    python benchmarks/core_api/run.py [--reps 5] [--batches 2000] [--modes hand,local,master]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
from _master import BenchMaster, warm_master  # noqa: E402
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


MODES = {"hand": "by hand (directory mode)", "local": "a --local experiment (script link)",
         "master": "an experiment on a master (embedded agent, 1 slot)"}
PLATFORM_LOOPS = "bare,core_1,core_100"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--variants", default=None)
    parser.add_argument("--modes", default="hand",
                        help="comma-separated: hand, local, master (interleaved)")
    parser.add_argument("--platform", action="store_true", help="the same as --modes local")
    args = parser.parse_args()
    modes = ["local"] if args.platform else args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown --modes {unknown}; expected some of {sorted(MODES)}")
    on_platform = any(m != "hand" for m in modes)
    variants = args.variants or (PLATFORM_LOOPS if on_platform else None)
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(tmp, args.batches, variants)
        if "master" in modes:
            runner.start_master()
        try:
            if len(modes) == 1:  # one worker, every rep inside it
                results = {modes[0]: runner.run(modes[0], args.reps, "all")}
            else:
                results = {m: {"batches": 0, "times": {}} for m in modes}
                for rep in range(args.reps):
                    for k in range(len(modes)):
                        mode = modes[(rep + k) % len(modes)]
                        got = runner.run(mode, 1, str(rep))
                        results[mode]["batches"] = got["batches"]
                        for variant, times in got["times"].items():
                            results[mode]["times"].setdefault(variant, []).extend(times)
        finally:
            runner.stop_master()
    import torch

    for mode, result in results.items():
        print(f"torch {torch.__version__}, 1 thread, {args.reps} reps (medians), "
              f"{result['batches']} batches, {MODES[mode]}")
        print(table(result))


class Runner:
    """Runs the worker in each mode; results are its JSON (batches, times per variant)."""

    def __init__(self, tmp: str, batches: int, variants: str) -> None:
        self.tmp = tmp
        self.batches = batches
        self.variants = variants
        self.env = dict(os.environ, OMP_NUM_THREADS="1")
        self.env.pop("DET_CLUSTER_INFO", None)
        self.master: BenchMaster = None  # type: ignore[assignment]

    def start_master(self) -> None:
        self.master = warm_master(self.tmp, slots=1)

    def stop_master(self) -> None:
        if self.master is not None:
            self.master.__exit__(None, None, None)

    def run(self, mode: str, reps: int, tag: str) -> dict:
        out = os.path.join(self.tmp, f"result-{mode}-{tag}.json")
        options = ["--out", out, "--reps", str(reps)]
        if self.batches:
            options += ["--batches", str(self.batches)]
        if self.variants:
            options += ["--variants", self.variants]
        if mode == "hand":
            env = dict(self.env, DET_CORE_DIR=os.path.join(self.tmp, f"core-{tag}"))
            subprocess.run([sys.executable, os.path.join(HERE, "worker.py"), *options],
                           env=env, check=True, cwd=self.tmp, stdout=subprocess.DEVNULL)
        else:
            config, model_dir = self._experiment(options, reps, tag)
            if mode == "local":
                subprocess.run([sys.executable, "-m", "determined.cli", "experiment", "create",
                                config, model_dir, "--local", "--local-dir",
                                os.path.join(self.tmp, f"local-{tag}"), "--no-progress"],
                               env=self.env, check=True, cwd=self.tmp, stdout=subprocess.DEVNULL)
            else:
                created = self.master.det("experiment", "create", config, model_dir)
                exp_id = int(created.stdout.split("Created experiment")[1].split()[0])
                state = self.master.wait_done(exp_id, poll=0.2)["state"]
                if state != "COMPLETED":
                    raise RuntimeError(f"experiment {exp_id} on the master ended {state}; see "
                                       f"{self.master.data_dir}/master.log")
        with open(out) as f:
            return json.load(f)

    def _experiment(self, options: List[str], reps: int, tag: str) -> tuple:
        """The worker as the script of a one-trial experiment: (config path, model dir)."""
        model_dir = os.path.join(self.tmp, f"model-{tag}")
        if not os.path.isdir(model_dir):
            os.makedirs(model_dir)
            shutil.copy(os.path.join(HERE, "worker.py"), model_dir)
            shutil.copy(os.path.join(HERE, "..", "overhead", "_workloads.py"), model_dir)
        loops = [v for v in (self.variants or PLATFORM_LOOPS).split(",")
                 if v in PLATFORM_LOOPS.split(",")]
        total = reps * len(loops) * (self.batches or 2000)  # the steps the worker reports
        config: Dict[str, object] = {
            "name": "core-api-overhead", "entrypoint": ["python3", "worker.py", *options],
            "hyperparameters": {}, "max_restarts": 0,
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": total}}}
        path = os.path.join(self.tmp, f"config-{tag}-{len(os.listdir(self.tmp))}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        return path, model_dir


if __name__ == "__main__":
    main()
