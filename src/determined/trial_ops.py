"""The operations a trial runner executes (shared by the runner and the drivers, which
import no runner). The engine translates a searcher operation into one
(``engine._assignment``). It names the config's lengths, so it sits above
``determined.config``, not in ``determined.common``."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, Optional

from determined.config import Length

__all__ = ["EXIT_USER_ERROR", "OpKind", "TrialOp"]

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
