"""Directory mode: ``core.init()`` outside the platform (``python train.py``).

Everything goes under one directory: ``DET_CORE_DIR`` when set, else
``./determined-core``. Checkpoints are ``<dir>/checkpoints/<storage_id>/`` (unless
``core.init(checkpoint_storage=...)`` names other storage) and every report is a line
of ``<dir>/metrics.jsonl``::

    {"kind": "training", "steps_completed": 100, "metrics": {...}, "time": ...}
    {"kind": "validation", ...}  {"kind": "checkpoint", "storage_id": ..., ...}

The searcher gives one operation of length 1, as upstream's off-cluster searcher.
:func:`latest_local_checkpoint` finds the checkpoint a restarted script resumes from.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

from determined._metric_order import MetricOrder
from determined.config import Length, Unit
from determined.harness._host import OpKind, TrialHost, TrialOp
from determined.util import json_encode

__all__ = ["DirectoryHost", "default_directory", "latest_local_checkpoint", "read_records"]

DIR_ENV = "DET_CORE_DIR"
METRICS_FILE = "metrics.jsonl"


def default_directory() -> str:
    return os.path.abspath(os.environ.get(DIR_ENV) or os.path.join(os.getcwd(), "determined-core"))


def read_records(directory: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every record of ``directory``'s metrics log, oldest first (a torn last line,
    from a process killed while writing it, is skipped)."""
    path = os.path.join(directory or default_directory(), METRICS_FILE)
    out: List[Dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    except FileNotFoundError:
        pass
    return out


def latest_local_checkpoint(directory: Optional[str] = None) -> Optional[str]:
    """The storage id of the newest checkpoint recorded in ``directory`` (default: the
    directory-mode directory) whose files still exist; None when there is none."""
    directory = directory or default_directory()
    for record in reversed(read_records(directory)):
        if record.get("kind") != "checkpoint":
            continue
        path = record.get("path")
        if not path or os.path.isdir(path):
            return str(record["storage_id"])
    return None


class DirectoryHost(TrialHost):
    """A trial host that appends every report to ``<directory>/metrics.jsonl``."""

    def __init__(self, directory: str, smaller_is_better: bool = True,
                 describe: Any = None):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self._path = os.path.join(directory, METRICS_FILE)
        self._ops: Iterator[TrialOp] = iter([
            TrialOp(OpKind.TRAIN, Length(Unit.BATCHES, 1)), TrialOp(OpKind.VALIDATE),
            TrialOp(OpKind.CLOSE)])
        self._order = MetricOrder(smaller_is_better)
        self._best = math.inf
        self._describe = describe  # storage_id -> where it lives
        self._lock = threading.Lock()

    #: records synced to disk at once; training and progress lines, written every batch
    #: by some scripts, reach the OS on each write (a killed script loses none) but are
    #: not fsynced one by one
    _SYNCED = frozenset({"validation", "searcher_validation", "checkpoint", "early_exit"})

    def _append(self, record: Dict[str, Any]) -> None:
        record["time"] = time.time()
        line = json_encode(record) + "\n"
        with self._lock, open(self._path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            if record["kind"] in self._SYNCED:
                os.fsync(f.fileno())

    def next_operation(self) -> TrialOp:
        return next(self._ops, TrialOp(OpKind.CLOSE))

    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self._append({"kind": "training", "steps_completed": batches_trained,
                      "metrics": metrics.get("avg_metrics", {}),
                      "batch_metrics": metrics.get("batch_metrics")})

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self._append({"kind": "validation", "steps_completed": batches_trained,
                      "metrics": metrics.get("validation_metrics", {})})

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self._append({"kind": "searcher_validation", "steps_completed": batches_trained,
                      "metrics": metrics.get("validation_metrics", {})})

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        path = self._describe(uuid) if self._describe is not None else None
        self._append({"kind": "checkpoint", "steps_completed": batches_trained,
                      "storage_id": uuid, "path": path, "metadata": metadata})

    def report_progress(self, units: float) -> None:
        self._append({"kind": "progress", "units": units})

    def report_early_exit(self, reason: str) -> None:
        self._append({"kind": "early_exit", "reason": reason})

    def is_best_validation(self, value: float) -> bool:
        if not self._order.comparable(value):
            return False  # NaN is never the best
        signed = self._order.signed(value)
        if signed <= self._best:
            self._best = signed
            return True
        return False
