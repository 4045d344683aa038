"""Start latency: from ``det experiment create`` returning to the first training batch.

    python benchmarks/cluster/latency.py            # 5 repetitions on a warm master

A master with one slot runs a warm-up experiment first (its agent's zygote has
then imported the platform and PyTorch once, as on any master that has been up
for a few seconds). Each repetition submits the no-op experiment with
``det experiment create`` and records when the command returned and when the
trial's first ``train_batch`` began (the trial writes the time to a file); the
first batch usually starts before the command has even exited (negative latency),
so the time from starting the command is shown too.
For reference it also measures a cold ``python -c "import torch"``: the
framework import a trial process would pay without the zygote.
Target: under 2 s beyond the framework import.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _master import NOOP_DIR, BenchMaster  # noqa: E402


def cold_torch_import() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - start


def run(reps: int) -> dict:
    latencies, creates, totals = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        config = yaml.safe_load(open(os.path.join(NOOP_DIR, "const.yaml")))
        config["checkpoint_storage"] = {"type": "shared_fs", "host_path": os.path.join(tmp, "ckpt")}
        warm = os.path.join(tmp, "warm.yaml")
        with open(warm, "w") as f:
            yaml.safe_dump(config, f)
        data_dir = os.path.join(tmp, "master")
        os.makedirs(data_dir)
        with BenchMaster(data_dir, slots=1) as master:
            master.warm_up(warm)
            for rep in range(reps):
                marker = os.path.join(tmp, f"first-{rep}")
                config["hyperparameters"]["first_batch_file"] = marker
                path = os.path.join(tmp, f"rep-{rep}.yaml")
                with open(path, "w") as f:
                    yaml.safe_dump(config, f)
                before = time.time()
                out = master.det("experiment", "create", path, NOOP_DIR)
                returned = time.time()
                exp_id = int(out.stdout.split("Created experiment")[1].split()[0])
                deadline = time.monotonic() + 120
                while not os.path.exists(marker) or not open(marker).read().strip():
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"no training batch within 120 s (experiment {exp_id})")
                    time.sleep(0.005)
                first = float(open(marker).read().split()[0])
                latencies.append(first - returned)
                creates.append(returned - before)
                totals.append(first - before)
                master.wait_done(exp_id)
    return {"latencies": latencies, "creates": creates, "totals": totals,
            "torch_import": cold_torch_import()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    r = run(args.reps)
    lat = r["latencies"]
    print(f"create returned -> first batch: median {statistics.median(lat):.3f} s "
          f"(min {min(lat):.3f}, max {max(lat):.3f}, {len(lat)} reps); "
          f"det experiment create itself: median {statistics.median(r['creates']):.3f} s; "
          f"command start -> first batch: median {statistics.median(r['totals']):.3f} s; "
          f"cold 'import torch' for reference: {r['torch_import']:.2f} s")


if __name__ == "__main__":
    main()
