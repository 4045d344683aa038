"""Where a local experiment keeps its records: plain files a person can read.

Layout under the local directory (default ``~/.determined/local``, or
``$DET_LOCAL_DIR``)::

    ids.json                      next experiment and trial ids
    checkpoints/<uuid>/           checkpoints (unless the config names storage)
    experiments/<id>/
        experiment.json           config, state, trials, checkpoints (rewritten atomically)
        metrics.jsonl             one line per training or validation workload
        searcher.json             the searcher's latest snapshot
        trials/<trial id>.log     each trial process's output
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from typing import Any, Dict, Iterator, List, Optional

__all__ = ["LocalStore", "default_local_dir", "allocate_ids"]


def default_local_dir() -> str:
    return os.environ.get("DET_LOCAL_DIR") or os.path.join(
        os.path.expanduser("~"), ".determined", "local"
    )


def _write_json_atomic(path: str, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    with open(path + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def allocate_ids(local_dir: str, experiments: int = 0, trials: int = 0) -> Dict[str, int]:
    """Reserve ids; returns the first of each (ids are unique within ``local_dir``)."""
    os.makedirs(local_dir, exist_ok=True)
    path = os.path.join(local_dir, "ids.json")
    with _locked(path):
        ids = {"experiment": 1, "trial": 1}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                ids.update(json.load(f))
        first = dict(ids)
        ids["experiment"] += experiments
        ids["trial"] += trials
        _write_json_atomic(path, ids)
    return first


class LocalStore:
    """Records of one local experiment."""

    def __init__(self, local_dir: str, experiment_id: int):
        self.local_dir = local_dir
        self.experiment_id = experiment_id
        self.dir = os.path.join(local_dir, "experiments", str(experiment_id))
        os.makedirs(os.path.join(self.dir, "trials"), exist_ok=True)
        self.state: Dict[str, Any] = {}
        self._metrics = open(os.path.join(self.dir, "metrics.jsonl"), "a", encoding="utf-8")

    def trial_log_path(self, trial_id: int) -> str:
        return os.path.join(self.dir, "trials", f"{trial_id}.log")

    def save_state(self, state: Dict[str, Any]) -> None:
        self.state = state
        _write_json_atomic(os.path.join(self.dir, "experiment.json"), state)

    def save_searcher(self, snapshot: Dict[str, Any]) -> None:
        _write_json_atomic(os.path.join(self.dir, "searcher.json"), snapshot)

    def append_metrics(self, trial_id: int, kind: str, batches: int, metrics: Dict[str, Any]) -> None:
        row = {"trial_id": trial_id, "kind": kind, "batches": batches, "time": time.time(),
               "metrics": metrics}
        self._metrics.write(json.dumps(row, default=str) + "\n")
        self._metrics.flush()

    def rollback(self, trial_id: int, batches: int) -> None:
        """Discard ``trial_id``'s rows past ``batches`` (a restart from a checkpoint)."""
        self.append_metrics(trial_id, "rollback", batches, {})

    def close(self) -> None:
        self._metrics.close()

    @staticmethod
    def read_metrics(exp_dir: str, trial_id: Optional[int] = None) -> List[Dict[str, Any]]:
        """Metric rows with rolled-back rows removed."""
        rows: List[Dict[str, Any]] = []
        path = os.path.join(exp_dir, "metrics.jsonl")
        if not os.path.exists(path):
            return rows
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                if row["kind"] == "rollback":
                    rows = [
                        r for r in rows
                        if not (r["trial_id"] == row["trial_id"] and r["batches"] > row["batches"])
                    ]
                else:
                    rows.append(row)
        if trial_id is not None:
            rows = [r for r in rows if r["trial_id"] == trial_id]
        return rows
