"""Metric ingestion through the master: N trial processes reporting at once.

    python benchmarks/cluster/ingest_master.py               # 50 trials x 1,000 workloads
    python benchmarks/cluster/ingest_master.py --unit 10     # 10 batches per report

A master with ``--trials`` slots runs that many no-op trials at once; each trains
``--workloads`` x ``--unit`` batches that take no time, so every trial reports a
training workload (one metrics row, with ``--unit`` per-batch values) as fast as
the master answers, through the same REST API and group-committed writes as any
trial. The rate is metric rows stored over the time from the first row to the
last (both from the database), on the master's embedded SQLite.
Target: at least 5,000 rows/s with 50 trials.
"""

import argparse
import datetime
import os
import sqlite3
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _master import NOOP_DIR, BenchMaster  # noqa: E402


def run(trials: int, workloads: int, unit: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        config = yaml.safe_load(open(os.path.join(NOOP_DIR, "const.yaml")))
        config["checkpoint_storage"] = {"type": "shared_fs", "host_path": os.path.join(tmp, "ckpt")}
        warm = os.path.join(tmp, "warm.yaml")
        with open(warm, "w") as f:
            yaml.safe_dump(config, f)
        config["hyperparameters"]["batch_seconds"] = 0.0
        config["scheduling_unit"] = unit
        config["searcher"] = {"name": "grid", "metric": "validation_loss",
                              "max_length": {"batches": workloads * unit}}
        config["hyperparameters"]["replica"] = {"type": "int", "minval": 1, "maxval": trials,
                                                "count": trials}
        path = os.path.join(tmp, "ingest.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        data_dir = os.path.join(tmp, "master")
        os.makedirs(data_dir)
        with BenchMaster(data_dir, slots=trials) as master:
            master.warm_up(warm)
            out = master.det("experiment", "create", path, NOOP_DIR)
            exp_id = int(out.stdout.split("Created experiment")[1].split()[0])
            exp = master.wait_done(exp_id, poll=0.5)
            if exp["state"] != "COMPLETED":
                raise RuntimeError(f"experiment ended {exp['state']}")
        db = sqlite3.connect(os.path.join(data_dir, "master.db"))
        rows = db.execute(
            "select m.end_time from metrics m join trials t on m.trial_id = t.id "
            "where t.experiment_id = ? and m.kind = 'training'", (exp_id,)).fetchall()
        times = sorted(datetime.datetime.fromisoformat(r[0]).timestamp() for r in rows)
        expected = trials * workloads
        if len(times) != expected:
            raise RuntimeError(f"stored {len(times)} training rows, expected {expected}")
        seconds = times[-1] - times[0]
        return {"rows": len(times), "seconds": seconds, "rows_per_s": len(times) / seconds,
                "batch_values_per_s": len(times) * unit / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=1000, help="training reports per trial")
    parser.add_argument("--unit", type=int, default=1, help="batches per report")
    args = parser.parse_args()
    r = run(args.trials, args.workloads, args.unit)
    print(f"{args.trials} trials reporting through the master: {r['rows']} rows in "
          f"{r['seconds']:.2f} s = {r['rows_per_s']:.0f} rows/s "
          f"({r['batch_values_per_s']:.0f} per-batch metric records/s)")


if __name__ == "__main__":
    main()
