"""What ``ExperimentCore.next_op`` answers a trial's process."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict

from determined.common.trial_ops import trial_op

__all__ = ["Assignment"]


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
