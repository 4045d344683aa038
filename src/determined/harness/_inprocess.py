"""A host that runs a fixed list of operations in the calling process.

Used by ``--test`` runs, the Native API's local mode and tests: no searcher, no
driver, results kept in lists.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from determined.config import Length
from determined.harness._host import OpKind, TrialHost, TrialOp

__all__ = ["InProcessHost", "train_validate_plan"]


def train_validate_plan(lengths: Iterable[Length]) -> List[TrialOp]:
    """Train to each cumulative length and validate after each; then close."""
    ops: List[TrialOp] = []
    for length in lengths:
        ops += [TrialOp(OpKind.TRAIN, length), TrialOp(OpKind.VALIDATE)]
    return ops + [TrialOp(OpKind.CLOSE)]


class InProcessHost(TrialHost):
    """Feeds ``ops`` in order and records everything reported.

    Args:
        ops: the operations; a CLOSE is appended if missing.
        smaller_is_better: how ``is_best_validation`` compares.
        stop_after_workloads: make ``should_stop`` true after this many reports
            (simulates a pause).
    """

    def __init__(
        self,
        ops: List[TrialOp],
        smaller_is_better: bool = True,
        stop_after_workloads: Optional[int] = None,
    ):
        self.ops = list(ops)
        if not self.ops or self.ops[-1].kind is not OpKind.CLOSE:
            self.ops.append(TrialOp(OpKind.CLOSE))
        self.smaller_is_better = smaller_is_better
        self.stop_after_workloads = stop_after_workloads
        self.training: List[Tuple[int, Dict[str, Any]]] = []
        self.validations: List[Tuple[int, Dict[str, Any]]] = []
        self.checkpoints: List[Tuple[int, str, Dict[str, Any]]] = []
        self.early_exit: Optional[str] = None
        self.searcher_validations: List[Tuple[int, Dict[str, Any]]] = []
        self.progress: List[float] = []
        self.script_exit_code: Optional[int] = None
        self._best = math.inf

    def next_operation(self) -> TrialOp:
        return self.ops.pop(0)

    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.training.append((batches_trained, metrics))

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.validations.append((batches_trained, metrics))

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        self.checkpoints.append((batches_trained, uuid, metadata))

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.searcher_validations.append((batches_trained, metrics))

    def is_best_validation(self, value: float) -> bool:
        signed = value if self.smaller_is_better else -value
        if signed <= self._best:
            self._best = signed
            return True
        return False

    def should_stop(self) -> bool:
        if self.stop_after_workloads is None:
            return False
        done = len(self.training) + len(self.validations) + len(self.checkpoints)
        return done >= self.stop_after_workloads

    def report_early_exit(self, reason: str) -> None:
        self.early_exit = reason

    def report_progress(self, units: float) -> None:
        self.progress.append(units)

    def script_exited(self, code: int) -> None:
        self.script_exit_code = code
