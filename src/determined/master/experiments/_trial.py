"""A trial as the master's experiment sees it between database writes."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Deque, Dict, Optional

from determined.config import Length
from determined.harness._host import OpKind, TrialOp

__all__ = ["TrialState"]

#: In-memory trial states. Database state is ACTIVE for the first three.
PENDING, RUNNING, IDLE = "PENDING", "RUNNING", "IDLE"
COMPLETED, ERROR, CANCELED = "COMPLETED", "ERROR", "CANCELED"


@dataclasses.dataclass
class TrialState:
    trial_id: int
    request_id: int
    hparams: Dict[str, Any]
    seed: int
    checkpoint_of: Optional[int] = None  # request id of the warm-start parent
    warm_start: Optional[str] = None
    state: str = PENDING
    ops: Deque[TrialOp] = dataclasses.field(default_factory=collections.deque)
    current_op: Optional[TrialOp] = None
    last_train: Optional[Length] = None
    waiting: bool = False  # the runner waits for an op the searcher has not sent
    stop: bool = False  # asked to stop (pause, preemption, cancel, suspension)
    suspending: bool = False  # sent CLOSE to free the slot; it comes back later
    exit_reported: bool = False
    killed: bool = False  # det trial kill: CANCELED, never restarted
    retryable: bool = True
    restarts: int = 0
    batches: int = 0
    checkpoint_batches: int = 0
    latest_checkpoint: Optional[str] = None
    best_metric: Optional[float] = None
    error: Optional[str] = None
    arrival: int = 0

    @property
    def alive(self) -> bool:
        return self.state in (PENDING, RUNNING, IDLE)

    def requeue_after_exit(self, last_train_done: bool = False) -> None:
        """Put back the work a stopped or crashed runner did not finish. Train lengths are
        cumulative, so repeating the last Train from an older checkpoint is exact.

        ``last_train_done``: the latest checkpoint already covers the last Train; it is
        not redone (an idle trial suspended after its work must stay IDLE, not PENDING).
        """
        if self.current_op is not None:
            if not (last_train_done and self.current_op.kind is OpKind.TRAIN):
                self.ops.appendleft(self.current_op)
            self.current_op = None
        if last_train_done:
            return
        if self.last_train is not None and not (self.ops and self.ops[0].kind is OpKind.TRAIN):
            self.ops.appendleft(TrialOp(OpKind.TRAIN, self.last_train))

    def snapshot(self) -> Dict[str, Any]:
        return {
            "ops": [op.to_dict() for op in self.ops],
            "current_op": self.current_op.to_dict() if self.current_op else None,
            "last_train": self.last_train.to_dict() if self.last_train else None,
            "checkpoint_of": self.checkpoint_of,
            "exit_reported": self.exit_reported,
        }

    def load_snapshot(self, d: Dict[str, Any]) -> None:
        self.ops = collections.deque(TrialOp.from_dict(o) for o in d.get("ops", []))
        self.current_op = TrialOp.from_dict(d["current_op"]) if d.get("current_op") else None
        self.last_train = Length.from_dict(d["last_train"]) if d.get("last_train") else None
        self.checkpoint_of = d.get("checkpoint_of")
        self.exit_reported = bool(d.get("exit_reported", False))
