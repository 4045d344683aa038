"""Scheduling overhead: many short no-op trials on a few slots, against the ideal.

    python benchmarks/cluster/schedule.py                  # 500 trials x 1 s on 8 slots
    python benchmarks/cluster/schedule.py --trials 80      # a quicker run

A master with ``--slots`` slots runs one random-search experiment of ``--trials``
trials; each trains 10 batches that sleep ``--seconds``/10 each. The ideal wall
time is trials x seconds / slots; the ratio is measured wall time (from
``det experiment create`` returning until the experiment is COMPLETED) over it.
Target: at most 1.05 for 500 trials x 1 s on 8 slots.
"""

import argparse
import datetime
import os
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _master import NOOP_DIR, BenchMaster  # noqa: E402


def run(trials: int, slots: int, seconds: float, keep: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        config = yaml.safe_load(open(os.path.join(NOOP_DIR, "const.yaml")))
        config["checkpoint_storage"] = {"type": "shared_fs", "host_path": os.path.join(tmp, "ckpt")}
        warm_path = os.path.join(tmp, "warm.yaml")
        with open(warm_path, "w") as f:
            yaml.safe_dump(config, f)
        config["hyperparameters"]["batch_seconds"] = seconds / 10
        config["searcher"] = {"name": "random", "metric": "validation_loss",
                              "max_trials": trials, "max_length": {"batches": 10}}
        cfg_path = os.path.join(tmp, "schedule.yaml")
        with open(cfg_path, "w") as f:
            yaml.safe_dump(config, f)
        data_dir = os.path.join(tmp, "master")
        os.makedirs(data_dir)
        with BenchMaster(data_dir, slots) as master:
            master.warm_up(warm_path)
            cpu_before = _cpu(master.proc.pid)
            out = master.det("experiment", "create", cfg_path, NOOP_DIR)
            start = time.time()
            # Polled slowly (the experiment's JSON lists every trial: polling it 20 times
            # a second took a third of a core by the end of 500 trials); the wall time
            # ends at the experiment's stored end time, not at the poll that saw it.
            exp = master.wait_done(int(out.stdout.split("Created experiment")[1].split()[0]),
                                   poll=0.5)
            wall = datetime.datetime.fromisoformat(exp["end_time"]).timestamp() - start
            cpu = {k: v - cpu_before.get(k, 0.0) for k, v in _cpu(master.proc.pid).items()}
            if exp["state"] != "COMPLETED":
                raise RuntimeError(f"experiment ended {exp['state']}")
            done = sum(t["state"] == "COMPLETED" for t in exp["trials"])
            if done != trials:
                raise RuntimeError(f"{done} of {trials} trials completed")
            if keep:
                input(f"data in {data_dir}; press enter to delete")
    ideal = trials * seconds / slots
    return {"trials": trials, "slots": slots, "seconds": seconds, "wall": wall,
            "ideal": ideal, "ratio": wall / ideal, "cpu": cpu}


def _cpu(master_pid: int) -> dict:
    """CPU seconds of the master and of the trial processes that ended (the zygote's
    reaped children), where psutil is installed."""
    try:
        import psutil
    except ImportError:
        return {}
    master = psutil.Process(master_pid)
    out = {"master": sum(master.cpu_times()[:2])}
    for child in master.children():
        if "_zygote" in " ".join(child.cmdline()):
            times = child.cpu_times()
            out["trials"] = times.children_user + times.children_system
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=1.0, help="training time per trial")
    parser.add_argument("--keep", action="store_true", help="pause before deleting the data dir")
    args = parser.parse_args()
    r = run(args.trials, args.slots, args.seconds, args.keep)
    lost = (r["wall"] - r["ideal"]) * r["slots"] / r["trials"]
    print(f"{r['trials']} trials x {r['seconds']:g} s on {r['slots']} slots: "
          f"wall {r['wall']:.1f} s, ideal {r['ideal']:.1f} s, ratio {r['ratio']:.3f} "
          f"({lost:.3f} s of slot time lost per trial; load average {os.getloadavg()[0]:.1f})")
    if r["cpu"]:
        print("CPU seconds per trial: " + ", ".join(
            f"{k} {v / r['trials']:.3f}" for k, v in sorted(r["cpu"].items())))


if __name__ == "__main__":
    main()
