"""What one ``core.train.report_training_metrics`` costs on the platform, in wall time
and in CPU time of each process it passes through (the script, the trial process that
wraps it, and the local driver or the master). CPU time hardly depends on what else
runs on the machine, so it compares versions even on a busy one.

Runs itself as the script of a one-trial experiment, for each of ``--modes``: ``local``
(``det experiment create --local``) and ``master`` (a master with its embedded agent,
started for the run and warmed up by a no-op experiment; its CPU time includes the
agent's and whatever else the master does meanwhile): ``--reports`` reports with
``--pace-us`` of busy work before each (a training step's stand-in; 0: back to back),
then prints the medians of ``--reps`` repetitions.

    python benchmarks/core_api/report_cost.py [--reports 5000] [--pace-us 300] [--reps 3]
        [--modes local,master]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def find_driver(local_dir: str) -> int:
    """The ``det experiment create --local`` process (the driver) using ``local_dir``."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "python" in os.path.basename(argv[0]) and "determined.cli" in argv \
                and local_dir in argv:
            return int(name)
    raise RuntimeError(f"no driver process found for {local_dir}")


def script(args: argparse.Namespace) -> None:
    import determined as det

    pids = {"script": os.getpid(), "trial process": os.getppid(),
            "driver": args.driver_pid or find_driver(args.local_dir)}
    results = {k: [] for k in ["wall", *pids]}
    step = 0
    with det.core.init() as core_context:
        for _ in range(args.reps):
            time.sleep(1.0)  # what earlier reports left is handled
            before = {k: cpu_seconds(p) for k, p in pids.items()}
            start = time.perf_counter()
            for _ in range(args.reports):
                end = time.perf_counter() + args.pace_us / 1e6
                while time.perf_counter() < end:
                    pass
                step += 1
                core_context.train.report_training_metrics(step, {"loss": 1.0 / step})
            wall = time.perf_counter() - start - args.reports * args.pace_us / 1e6
            time.sleep(1.0)  # the trial process and the driver catch up
            results["wall"].append(wall / args.reports * 1e6)
            for k, p in pids.items():
                spent = cpu_seconds(p) - before[k]
                if k == "script":
                    spent -= args.reports * args.pace_us / 1e6  # the busy work
                results[k].append(spent / args.reports * 1e6)
    with open(args.out, "w") as f:
        json.dump(results, f)


def launch(args: argparse.Namespace, mode: str) -> None:
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        model_dir, local, out = (os.path.join(tmp, d) for d in ("model", "local", "out.json"))
        os.makedirs(model_dir)
        with open(os.path.abspath(__file__)) as src, \
                open(os.path.join(model_dir, "report_cost.py"), "w") as dst:
            dst.write(src.read())
        master = _start_master(tmp) if mode == "master" else None
        try:
            driver = ["--driver-pid", str(master.proc.pid)] if master else ["--local-dir", local]
            config = {"name": "core-report-cost", "max_restarts": 0, "hyperparameters": {},
                      "entrypoint": ["python3", "report_cost.py", "--script", "--out", out,
                                     *driver, "--reports", str(args.reports),
                                     "--pace-us", str(args.pace_us), "--reps", str(args.reps)],
                      "searcher": {"name": "single", "metric": "loss",
                                   "max_length": {"batches": args.reports * args.reps}}}
            path = os.path.join(tmp, "config.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(config, f)
            if master is None:
                subprocess.run([sys.executable, "-m", "determined.cli", "experiment", "create",
                                path, model_dir, "--local", "--local-dir", local,
                                "--no-progress"], check=True, cwd=tmp, stdout=subprocess.DEVNULL)
            else:
                created = master.det("experiment", "create", path, model_dir)
                exp_id = int(created.stdout.split("Created experiment")[1].split()[0])
                state = master.wait_done(exp_id, poll=0.5)["state"]
                if state != "COMPLETED":
                    raise RuntimeError(f"experiment {exp_id} ended {state}")
        finally:
            if master is not None:
                master.__exit__(None, None, None)
        with open(out) as f:
            results = json.load(f)
    where = "local driver" if master is None else "master"
    print(f"{mode}: {args.reports} reports x {args.reps} reps, {args.pace_us} µs of busy work "
          f"before each, load average {os.getloadavg()[0]:.1f} (medians, µs per report)")
    print(f"| wall (script) | CPU script | CPU trial process | CPU {where} | CPU total |")
    print("|---:|---:|---:|---:|---:|")
    med = {k: statistics.median(v) for k, v in results.items()}
    total = med["script"] + med["trial process"] + med["driver"]
    print(f"| {med['wall']:.0f} | {med['script']:.0f} | {med['trial process']:.0f} | "
          f"{med['driver']:.0f} | {total:.0f} |")


def _start_master(tmp: str) -> Any:
    """A master with its embedded agent (1 slot), warmed up (benchmarks/cluster)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
    from _master import warm_master

    return warm_master(tmp, slots=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reports", type=int, default=5000)
    parser.add_argument("--pace-us", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--script", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--local-dir", help=argparse.SUPPRESS)
    parser.add_argument("--driver-pid", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--modes", default="local", help="comma-separated: local, master")
    args = parser.parse_args()
    if args.script:
        script(args)
        return
    for mode in args.modes.split(","):
        if mode not in ("local", "master"):
            parser.error(f"unknown mode {mode!r} in --modes; expected local or master")
        launch(args, mode)


if __name__ == "__main__":
    main()
