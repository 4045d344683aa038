"""Metric ingestion through the master: N trials reporting training metrics at once.

    python benchmarks/cluster/ingest_master.py               # 50 trials x 1,000 workloads
    python benchmarks/cluster/ingest_master.py --unit 10     # 10 batches per report
    python benchmarks/cluster/ingest_master.py --reporters   # the master alone (below)

Default (end to end): a master with ``--trials`` slots runs that many no-op trials at
once; each trains ``--workloads`` x ``--unit`` batches that take no time, so every
trial reports a training workload (one metrics row, with ``--unit`` per-batch values)
as fast as it can, through the same REST API and group-committed writes as any trial.
On a small machine the trial processes' own per-workload work competes with the
master for the cores.

``--reporters``: the master's side alone. ``--trials`` no-op trials run but sleep in
their first batch; as many reporter processes post training reports for them with
each trial's own runner token (``POST /trial-runner/training-batch``, ``--rows``
reports per request, as a trial's background sender does when the master is busy).

Both print metric rows stored per second (over the time from the first stored row
to the last, from the database) and the master process's CPU time per row.
Target: at least 20,000 rows/s with 50 trials on the embedded SQLite.
"""

import argparse
import datetime
import multiprocessing as mp
import os
import sqlite3
import sys
import tempfile
import time
from typing import Any, Dict, List

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _master import NOOP_DIR, BenchMaster, thread_cpu  # noqa: E402

_FIRST_BATCH = 10**6  # reporters' batch numbers: far past what the sleeping trials train


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s child processes (the agent's zygote), with what their
    reaped children (trial processes) used."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def _config(tmp: str, trials: int, workloads: int, unit: int, batch_seconds: float) -> str:
    config = yaml.safe_load(open(os.path.join(NOOP_DIR, "const.yaml")))
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": os.path.join(tmp, "ckpt")}
    config["hyperparameters"]["batch_seconds"] = batch_seconds
    config["scheduling_unit"] = unit
    config["searcher"] = {"name": "grid", "metric": "validation_loss",
                          "max_length": {"batches": workloads * unit}}
    config["hyperparameters"]["replica"] = {"type": "int", "minval": 1, "maxval": trials,
                                            "count": trials}
    path = os.path.join(tmp, f"ingest-{batch_seconds}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


def _warm_config(tmp: str) -> str:
    config = yaml.safe_load(open(os.path.join(NOOP_DIR, "const.yaml")))
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": os.path.join(tmp, "ckpt")}
    path = os.path.join(tmp, "warm.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


def _create(master: BenchMaster, path: str) -> int:
    out = master.det("experiment", "create", path, NOOP_DIR)
    return int(out.stdout.split("Created experiment")[1].split()[0])


def _stored_rate(data_dir: str, exp_id: int, expected: int) -> Dict[str, float]:
    db = sqlite3.connect(os.path.join(data_dir, "master.db"))
    rows = db.execute(
        "select m.end_time from metrics m join trials t on m.trial_id = t.id "
        "where t.experiment_id = ? and m.kind = 'training'", (exp_id,)).fetchall()
    db.close()
    times = sorted(datetime.datetime.fromisoformat(r[0]).timestamp() for r in rows)
    if len(times) < expected:
        raise RuntimeError(f"stored {len(times)} training rows, expected {expected}")
    seconds = times[-1] - times[0]
    return {"rows": len(times), "seconds": seconds, "rows_per_s": len(times) / seconds}


def run_trials(trials: int, workloads: int, unit: int) -> Dict[str, Any]:
    """End to end: ``trials`` no-op trials, each reporting ``workloads`` workloads."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _config(tmp, trials, workloads, unit, 0.0)
        data_dir = os.path.join(tmp, "master")
        os.makedirs(data_dir)
        with BenchMaster(data_dir, slots=trials) as master:
            _create_and_wait(master, _warm_config(tmp))
            master.profile_from_here()
            cpu0, trials_cpu0 = _cpu_seconds(master.proc.pid), _descendants_cpu(master.proc.pid)
            threads0 = thread_cpu(master.proc.pid)
            exp_id = _create_and_wait(master, path)
            cpu = _cpu_seconds(master.proc.pid) - cpu0
            trials_cpu = _descendants_cpu(master.proc.pid) - trials_cpu0
            threads = thread_cpu(master.proc.pid)
        result = _stored_rate(data_dir, exp_id, trials * workloads)
    result["master_cpu_us_per_row"] = 1e6 * cpu / result["rows"]
    result["trials_cpu_us_per_row"] = 1e6 * trials_cpu / result["rows"]
    _add_threads(result, threads0, threads)
    return result


def _create_and_wait(master: BenchMaster, path: str) -> int:
    exp_id = _create(master, path)
    exp = master.wait_done(exp_id, poll=0.5)
    if exp["state"] != "COMPLETED":
        raise RuntimeError(f"experiment {exp_id} ended {exp['state']}")
    return exp_id


def _reporter(url: str, token: str, requests: int, rows: int, done: Any) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    batches = _FIRST_BATCH
    with httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=120) as client:
        for _ in range(requests):
            reports = [{"batches": batches + k,
                        "metrics": {"avg_metrics": {"loss": 0.5},
                                    "batch_metrics": [{"loss": 0.5}]}}
                       for k in range(1, rows + 1)]
            batches += rows
            r = client.post("/trial-runner/training-batch", json={"reports": reports})
            if r.status_code != 200:
                done.put(f"{r.status_code} {r.text[:200]}")
                return
    done.put("")


def run_reporters(trials: int, workloads: int, rows: int) -> Dict[str, Any]:
    """The master alone: one reporter process per (sleeping) trial, with its token."""
    from determined.master.db import Store

    with tempfile.TemporaryDirectory() as tmp:
        path = _config(tmp, trials, 10, 1, 3600.0)  # trials sleep in their first batch
        data_dir = os.path.join(tmp, "master")
        os.makedirs(data_dir)
        with BenchMaster(data_dir, slots=trials) as master:
            exp_id = _create(master, path)
            deadline = time.monotonic() + 600
            while True:
                listed = master.api.get(f"/experiments/{exp_id}/trials").json()["trials"]
                # A launch replaces the trial's token: wait until every one was launched
                # (its pid file is written then).
                pids = [os.path.join(data_dir, "experiments", str(exp_id), "trials",
                                     str(t["id"]), "pid") for t in listed]
                if len(listed) == trials and all(os.path.exists(p) for p in pids):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the trials did not all start")
                time.sleep(1)
            store = Store("sqlite:///" + os.path.join(data_dir, "master.db"))
            tokens = [store.create_trial_token(t["id"]) for t in listed]
            store.close()
            done: Any = mp.Queue()
            procs = [mp.Process(target=_reporter,
                                args=(master.url, tok, workloads // rows, rows, done))
                     for tok in tokens]
            master.profile_from_here()
            cpu0, threads0 = _cpu_seconds(master.proc.pid), thread_cpu(master.proc.pid)
            for p in procs:
                p.start()
            errors = [e for e in (done.get() for _ in procs) if e]
            for p in procs:
                p.join()
            cpu = _cpu_seconds(master.proc.pid) - cpu0
            threads = thread_cpu(master.proc.pid)
            master.api.post(f"/experiments/{exp_id}/kill")
            if errors:
                with open(os.path.join(data_dir, "master.log"), errors="replace") as f:
                    log = f.read()[-3000:]
                raise RuntimeError(f"reporters failed: {errors[:3]}\nmaster log:\n{log}")
        result = _stored_rate(data_dir, exp_id, trials * (workloads // rows) * rows)
    result["master_cpu_us_per_row"] = 1e6 * cpu / result["rows"]
    _add_threads(result, threads0, threads)
    return result


def _add_threads(result: Dict[str, Any], before: Dict[str, float],
                 after: Dict[str, float]) -> None:
    if os.environ.get("DET_BENCH_PROFILE") == "threads":  # named threads (_profile.py)
        result["threads_us_per_row"] = {
            name: round(1e6 * (s - before.get(name, 0.0)) / result["rows"], 1)
            for name, s in sorted(after.items()) if s - before.get(name, 0.0) > 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=1000, help="training reports per trial")
    parser.add_argument("--unit", type=int, default=1, help="batches per report")
    parser.add_argument("--reporters", action="store_true",
                        help="measure the master alone, with reporter processes")
    parser.add_argument("--rows", type=int, default=20,
                        help="with --reporters: training reports per request")
    args = parser.parse_args()
    if args.reporters:
        r = run_reporters(args.trials, args.workloads, args.rows)
        what = f"{args.trials} reporters ({args.rows} reports per request) for trials"
    else:
        r = run_trials(args.trials, args.workloads, args.unit)
        what = f"{args.trials} trials reporting"
    print(f"{what} through the master: {r['rows']} rows in {r['seconds']:.2f} s = "
          f"{r['rows_per_s']:.0f} rows/s; master CPU {r['master_cpu_us_per_row']:.0f} us/row "
          f"(on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end)")
    if "trials_cpu_us_per_row" in r:
        print(f"trial processes' CPU (from start to exit): {r['trials_cpu_us_per_row']:.0f} us/row")
    if "threads_us_per_row" in r:
        print(f"master CPU by thread, us/row: {r['threads_us_per_row']}")


if __name__ == "__main__":
    main()
