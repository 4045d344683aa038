"""A trial as the experiment core sees it."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Dict, List, Optional, Tuple

from determined import searcher as searchers
from determined.config import Length
from determined.engine._states import TrialState

__all__ = ["CoreTrial", "ERROR_CHARS", "ERROR_LINE_CHARS", "stopped_after_checkpoint",
           "trial_error"]

#: The most a trial's stored error holds, and the most of each of its lines.
ERROR_CHARS = 2000
ERROR_LINE_CHARS = 300


def stopped_after_checkpoint(progress: str, resumes: bool) -> str:
    """The trial log line for a trial process that exited after a checkpoint: it has
    queued work (it resumes), or it waits for the searcher (an ASHA rung) to decide."""
    tail = ("it resumes later" if resumes
            else "it resumes only if the searcher asks for more")
    return f"Trial stopped after a checkpoint at {progress}; {tail}"


def _cut(line: str) -> str:
    return line if len(line) <= ERROR_LINE_CHARS else line[:ERROR_LINE_CHARS - 1] + "…"


def trial_error(how: str, message: str = "") -> Tuple[str, str]:
    """``(line, error)`` of a trial whose process failed ``how`` (``exit code 1``):
    ``line`` for its log, ``Trial failed (how): <message's last line>``, and ``error`` to
    store, ``Trial failed (how): <message>`` (``message``: why, as its process's output
    says: a traceback, its last lines). The error is bounded: a line over
    :data:`ERROR_LINE_CHARS` is cut, and over :data:`ERROR_CHARS` in all it keeps its
    first line and as many of its last as fit (a deep traceback's first frames go).

    Example:
        >>> line, error = trial_error("exit code 1", "its last output:\\nloading\\nno GPU")
        >>> line
        'Trial failed (exit code 1): no GPU'
        >>> print(error)
        Trial failed (exit code 1): its last output:
        loading
        no GPU
    """
    head = f"Trial failed ({how})"
    lines = [_cut(line.rstrip()) for line in message.strip().splitlines()]
    if not lines:
        return head, head
    lines[0] = _cut(f"{head}: {lines[0]}")
    kept: List[str] = []
    size = len(lines[0]) + 2  # and "…" when lines go
    for line in reversed(lines[1:]):
        if size + len(line) + 1 > ERROR_CHARS:
            kept.append("…")
            break
        kept.append(line)
        size += len(line) + 1
    last = _cut(f"{head}: {lines[-1].strip()}") if len(lines) > 1 else lines[0]
    return last, "\n".join([lines[0], *reversed(kept)])


@dataclasses.dataclass
class CoreTrial:
    """One trial's lifecycle data; every field survives a snapshot. Its record (ids,
    times, the recorded state) is ``master.db.Trial``."""

    request_id: int
    hparams: Dict[str, Any]
    seed: int
    checkpoint_of: Optional[int] = None  # request id of the searcher's warm-start parent
    warm_start: Optional[str] = None
    arrival: int = 0
    state: TrialState = TrialState.PENDING
    shown_state: str = "ACTIVE"  # as last recorded (_states.recorded_trial_state)
    ops: List[Any] = dataclasses.field(default_factory=list)  # queued searcher ops
    current_op: Optional[Any] = None
    last_train: Optional[Length] = None
    batches: int = 0  # highest training/validation count stored
    validated_batches: int = -1  # none yet (perform_initial_validation stores batch 0)
    last_validation: Optional[Tuple[int, Optional[float]]] = None
    checkpoint_batches: int = 0
    latest_checkpoint: Optional[str] = None
    restarts: int = 0
    starts: int = 0
    failed_last: bool = False
    best_metric: Optional[float] = None
    exit_reported: bool = False
    progress_units: float = 0.0  # a script's reported progress (``trial_progressed``)
    error: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        d["state"] = self.state.value
        d["ops"] = [op.to_dict() for op in self.ops]
        d["current_op"] = self.current_op.to_dict() if self.current_op else None
        d["last_train"] = self.last_train.to_dict() if self.last_train else None
        d["last_validation"] = list(self.last_validation) if self.last_validation else None
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "CoreTrial":
        d = copy.deepcopy(dict(d))
        d["state"] = TrialState(d["state"])
        d["ops"] = [searchers.operation_from_dict(o) for o in d.get("ops", [])]
        d["current_op"] = (searchers.operation_from_dict(d["current_op"])
                           if d.get("current_op") else None)
        d["last_train"] = Length.from_dict(d["last_train"]) if d.get("last_train") else None
        d["last_validation"] = tuple(d["last_validation"]) if d.get("last_validation") else None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
