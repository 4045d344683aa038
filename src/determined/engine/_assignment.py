"""What ``ExperimentCore.next_op`` answers a trial's process."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict

from determined import searcher as searchers
from determined.trial_ops import OpKind, TrialOp

__all__ = ["Assignment", "trial_op"]

_KINDS = {
    searchers.Validate: OpKind.VALIDATE,
    searchers.Checkpoint: OpKind.CHECKPOINT,
    searchers.Close: OpKind.CLOSE,
}


def trial_op(op: Any) -> TrialOp:
    """The runner's form of a Train, Validate, Checkpoint or Close operation."""
    if isinstance(op, searchers.Train):
        return TrialOp(OpKind.TRAIN, op.length)
    try:
        return TrialOp(_KINDS[type(op)])
    except KeyError:
        raise TypeError(f"Expected a per-trial searcher operation. Received: {op!r}") from None


@dataclasses.dataclass(frozen=True)
class Assignment:
    """The trial's next operation. ``resume_later``: a Close that is not the searcher's
    (pause, preemption, suspension): the process checkpoints and exits, and the trial
    resumes later."""

    op: Any
    resume_later: bool = False

    def to_dict(self) -> Dict[str, Any]:
        """The runner's form (``stop: true`` marks a Close to resume from)."""
        out = trial_op(self.op).to_dict()
        if self.resume_later:
            out["stop"] = True
        return out
