"""The operations a trial runner executes, and the translation of a searcher operation
for one trial into one (shared by the runner and the drivers, which import no runner)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, List, Optional

from determined import searcher as searchers
from determined.config import Length

__all__ = ["EXIT_USER_ERROR", "OpKind", "TrialOp", "core_script_event", "trial_op"]

# A trial process exits with this code when the user's code is at fault (an invalid
# trial, an exception it raised); drivers do not restart such a trial.
EXIT_USER_ERROR = 65


class OpKind(str, enum.Enum):
    TRAIN = "train"
    VALIDATE = "validate"
    CHECKPOINT = "checkpoint"
    CLOSE = "close"


@dataclasses.dataclass(frozen=True)
class TrialOp:
    """One searcher operation for this trial; ``length`` (TRAIN) is cumulative."""

    kind: OpKind
    length: Optional[Length] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind.value, "length": self.length.to_dict() if self.length else None}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TrialOp":
        length = Length.from_dict(d["length"]) if d.get("length") else None
        return cls(OpKind(d["kind"]), length)


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


def core_script_event(core: Any, method: str, *args: Any) -> List[Any]:
    """Issue 21 merge seam: call the engine's script-trial event ``method``
    (``trial_progressed``, ``script_exited``; branch timemetric adds them to
    ``ExperimentCore``) and return its effects; no effects while the engine lacks it.
    At merge, the adapters call the methods directly and this helper goes."""
    handler = getattr(core, method, None)
    return list(handler(*args)) if handler is not None else []
