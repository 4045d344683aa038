"""Translate a searcher operation for one trial into the operation its runner executes."""

from __future__ import annotations

from typing import Any

from determined import searcher as searchers
from determined.harness._host import OpKind, TrialOp

__all__ = ["trial_op"]

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
