"""Metric ingestion rate of the master's store: N concurrent reporters (threads).

Each reporter owns one trial and reports training workloads (with per-batch
metrics) and a validation every 10th, as the master does on behalf of trial runners.

    python benchmarks/cluster/ingest.py                       # SQLite in a temp dir
    python benchmarks/cluster/ingest.py --rows 400 --bulk 20  # add_metrics_bulk, 20 rows/call
    python benchmarks/cluster/ingest.py --postgres postgresql+psycopg://user@host:5432/db

Prints rows/s per backend and the CPU time per row. Target: >= 5,000 rows/s with 50 reporters
on SQLite.
"""

import argparse
import os
import tempfile
import threading
import time
from typing import Dict, List

from determined.master.db import Store


def run(url: str, reporters: int, rows: int, bulk: int, batch_metrics: int) -> Dict[str, float]:
    """Report ``rows`` workloads from each of ``reporters`` threads; returns the rates."""
    store = Store(url)
    try:
        store.upgrade()
        exp = store.create_experiment({"description": "ingest benchmark"}, b"", "determined")
        trials = [store.create_trial(exp, f"r{i}", {"lr": 0.1}, i) for i in range(reporters)]
        barrier = threading.Barrier(reporters + 1)
        errors: List[BaseException] = []

        def report(trial_id: int) -> None:
            per_batch = [{"loss": 0.5, "accuracy": 0.9}] * batch_metrics or None
            barrier.wait()
            try:
                if bulk <= 1:
                    for i in range(rows):
                        if i % 10 == 9:
                            store.add_validation_metrics(trial_id, i * 100, {"error": 0.1})
                        else:
                            store.add_training_metrics(
                                trial_id, i * 100, {"loss": 0.5, "accuracy": 0.9}, per_batch
                            )
                else:
                    for start in range(0, rows, bulk):
                        store.add_metrics_bulk(
                            (trial_id, "training", i * 100, {"loss": 0.5}, per_batch)
                            for i in range(start, min(rows, start + bulk))
                        )
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=report, args=(t,)) for t in trials]
        for thread in threads:
            thread.start()
        barrier.wait()
        start, cpu0 = time.perf_counter(), time.process_time()
        for thread in threads:
            thread.join()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
        if errors:
            raise errors[0]
        stored = sum(len(store.list_metrics(t)) for t in trials)
        expected = reporters * rows
        if stored != expected:
            raise AssertionError(f"stored {stored} rows, expected {expected}")
        return {"rows": stored, "seconds": elapsed, "rows_per_s": stored / elapsed,
                "cpu_us_per_row": 1e6 * cpu / stored}
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reporters", type=int, default=50)
    parser.add_argument("--rows", type=int, default=200, help="workloads per reporter")
    parser.add_argument(
        "--bulk", type=int, default=1, help="rows per add_metrics_bulk call (1: a call per row)"
    )
    parser.add_argument(
        "--batch-metrics", type=int, default=10, help="per-batch dicts in each training row"
    )
    parser.add_argument(
        "--postgres", metavar="URL", help="also run against this PostgreSQL database"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        urls = {"sqlite": f"sqlite:///{tmp}/master.db"}
        if args.postgres:
            urls["postgresql"] = args.postgres
        for name, url in urls.items():
            r = run(url, args.reporters, args.rows, args.bulk, args.batch_metrics)
            print(
                f"{name}: {args.reporters} reporters, {r['rows']:.0f} rows in {r['seconds']:.2f} s "
                f"= {r['rows_per_s']:.0f} rows/s; CPU {r['cpu_us_per_row']:.1f} us/row (this "
                f"process, reporters included; load average {os.getloadavg()[0]:.1f})"
            )


if __name__ == "__main__":
    main()
