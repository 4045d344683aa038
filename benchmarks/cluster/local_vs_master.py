"""A local search against the same search on a master.

    python benchmarks/cluster/local_vs_master.py                 # 40 trials x 1 s, 4 slots
    python benchmarks/cluster/local_vs_master.py --trials 16 --slots 2
    python benchmarks/cluster/local_vs_master.py --trials 16 --slots 2 --before /tmp/base/src

One random search of ``--trials`` no-op trials (10 batches sleeping ``--seconds``/10
each, ``benchmarks/cluster/noop``) runs twice, interleaved ``--reps`` times:

- ``--local``: ``det experiment create ... --local --slots S`` (the whole command: the
  CLI, the driver, its trial processes and the records in ``local.db``);
- master: ``det experiment create`` on a master with ``--slots S`` already running
  (and warmed up by one experiment, as a user's master is), until the experiment is
  COMPLETED.

Both walls count from the command's start; the ideal is trials x seconds / slots.
``--before SRC`` also times the ``--local`` command of another checkout's sources (e.g.
``git archive COMMIT src | tar -x -C /tmp/base``), interleaved with the others, for a
before/after comparison in the same conditions.
Target: local at most 1.0x the master's wall (a local search is as fast as the same
search on a master).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _master import NOOP_DIR, BenchMaster  # noqa: E402


def _config(tmp: str, trials: int, seconds: float, name: str) -> str:
    config = yaml.safe_load(open(os.path.join(NOOP_DIR, "const.yaml")))
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": os.path.join(tmp, name)}
    config["hyperparameters"]["batch_seconds"] = seconds / 10
    config["searcher"] = {"name": "random", "metric": "validation_loss",
                          "max_trials": trials, "max_length": {"batches": 10}}
    path = os.path.join(tmp, f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


def run_local(tmp: str, config: str, slots: int, rep: str, src: Optional[str] = None) -> float:
    """The wall time of the whole ``--local`` command (``src``: with those sources)."""
    local_dir = os.path.join(tmp, f"local-{rep}")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src)) if src else None
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "determined.cli", "experiment", "create",
                          config, NOOP_DIR, "--local", "--local-dir", local_dir,
                          "--slots", str(slots), "--no-progress"],
                         capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"local search failed:\n{out.stdout}{out.stderr}")
    return wall


def run_master(master: BenchMaster, config: str) -> float:
    start = time.perf_counter()
    out = master.det("experiment", "create", config, NOOP_DIR)
    exp = master.wait_done(int(out.stdout.split("Created experiment")[1].split()[0]))
    wall = time.perf_counter() - start
    if exp["state"] != "COMPLETED":
        raise RuntimeError(f"master search ended {exp['state']}")
    return wall


def run(trials: int, slots: int, seconds: float, reps: int,
        before: Optional[str] = None) -> Dict[str, Any]:
    local: List[float] = []
    cluster: List[float] = []
    local_before: List[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(tmp, trials, seconds, "search")
        warm = _config(tmp, 1, 0.1, "warm")
        data_dir = os.path.join(tmp, "master")
        os.makedirs(data_dir)
        with BenchMaster(data_dir, slots) as master:
            master.warm_up(warm)
            for rep in range(reps):  # interleaved: load changes hit all alike
                if before:
                    local_before.append(run_local(tmp, config, slots, f"before-{rep}", before))
                local.append(run_local(tmp, config, slots, str(rep)))
                cluster.append(run_master(master, config))
    ideal = trials * seconds / slots
    lm, cm = statistics.median(local), statistics.median(cluster)
    return {"trials": trials, "slots": slots, "seconds": seconds, "reps": reps,
            "local": local, "master": cluster, "local_median": lm, "master_median": cm,
            "ideal": ideal, "ratio": lm / cm, "local_before": local_before,
            "load": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=1.0, help="training time per trial")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--before", metavar="SRC",
                        help="also time --local with these sources (a 'src' directory)")
    args = parser.parse_args()
    r = run(args.trials, args.slots, args.seconds, args.reps, args.before)
    print(f"{r['trials']} trials x {r['seconds']:g} s on {r['slots']} slots, ideal "
          f"{r['ideal']:.1f} s, {r['reps']} interleaved reps (medians):")
    print(f"  --local: {r['local_median']:.1f} s  ({', '.join(f'{w:.1f}' for w in r['local'])})")
    print(f"  master:  {r['master_median']:.1f} s  ({', '.join(f'{w:.1f}' for w in r['master'])})")
    print(f"  local / master: {r['ratio']:.2f}")
    if r["local_before"]:
        lb = statistics.median(r["local_before"])
        print(f"  --local, {args.before}: {lb:.1f} s  "
              f"({', '.join(f'{w:.1f}' for w in r['local_before'])}); "
              f"/ master: {lb / r['master_median']:.2f}")
    print(f"  load average at the end: {', '.join(f'{x:.1f}' for x in r['load'])}")


if __name__ == "__main__":
    main()
