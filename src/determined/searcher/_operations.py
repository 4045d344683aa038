"""Operations a searcher asks its driver to carry out, and why a trial can exit early.

A driver (the local runner or the cluster master) applies operations in the order the
searcher returns them; operations for one ``request_id`` run in order. Each operation is
a frozen dataclass that round-trips through JSON with ``to_dict`` / ``from_dict``:

    >>> op = Train(3, Length.from_dict({"batches": 100}))
    >>> operation_from_dict(op.to_dict()) == op
    True
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from typing import Any, Dict, Mapping, Optional, Type, Union

from determined.config import Length

__all__ = [
    "Checkpoint",
    "Close",
    "Create",
    "ExitedReason",
    "Operation",
    "Shutdown",
    "Train",
    "Validate",
    "operation_from_dict",
]


class ExitedReason(str, enum.Enum):
    """Why a trial stopped before the searcher closed it.

    Only ``ERRORED`` counts toward the "every trial failed" rule; all three make
    adaptive searchers and PBT treat the trial as having the worst metric. No method
    replaces an exited trial with a fresh sample (random, grid and single just count it
    as done; with ``max_concurrent_trials`` its slot goes to the next trial).
    """

    ERRORED = "errored"
    USER_REQUESTED_STOP = "user_requested_stop"
    INVALID_HP = "invalid_hp"


@dataclasses.dataclass(frozen=True)
class Create:
    """Create a trial.

    Args:
        request_id: The searcher's id for the trial (1, 2, 3, ... in creation order).
        trial_seed: The trial's seed, in ``[0, 2**31)``.
        hparams: Nested dict of plain hyperparameter values, mirroring the space.
        checkpoint_of: If set, the request id of a trial whose checkpoint the new trial
            warm-starts from: the one written by the last ``Checkpoint`` op issued for that
            trial before this ``Create``. The driver must finish that ``Checkpoint`` before
            it creates this trial.
    """

    request_id: int
    trial_seed: int
    hparams: Dict[str, Any]
    checkpoint_of: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "type": "create",
            "request_id": self.request_id,
            "trial_seed": self.trial_seed,
            "hparams": copy.deepcopy(self.hparams),
            "checkpoint_of": self.checkpoint_of,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Create":
        return cls(
            int(d["request_id"]),
            int(d["trial_seed"]),
            copy.deepcopy(dict(d["hparams"])),
            None if d.get("checkpoint_of") is None else int(d["checkpoint_of"]),
        )


@dataclasses.dataclass(frozen=True)
class Train:
    """Train the trial until it has trained ``length`` **in total** (cumulative).

    ``length`` counts from the trial's own start (a warm start from another trial's
    checkpoint does not count). Applying the same ``Train`` twice is harmless: a driver
    that restarts a trial from a checkpoint trains only what is missing.
    """

    request_id: int
    length: Length

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "train", "request_id": self.request_id, "length": self.length.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Train":
        return cls(int(d["request_id"]), Length.from_dict(d["length"]))


@dataclasses.dataclass(frozen=True)
class Validate:
    """Compute validation metrics; report them with ``Searcher.on_validation_completed``."""

    request_id: int

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "validate", "request_id": self.request_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Validate":
        return cls(int(d["request_id"]))


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """Checkpoint the trial (a later ``Create`` may warm-start from it)."""

    request_id: int

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "checkpoint", "request_id": self.request_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Checkpoint":
        return cls(int(d["request_id"]))


@dataclasses.dataclass(frozen=True)
class Close:
    """Finish the trial; report it with ``Searcher.on_trial_closed``."""

    request_id: int

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "close", "request_id": self.request_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Close":
        return cls(int(d["request_id"]))


@dataclasses.dataclass(frozen=True)
class Shutdown:
    """The search is over and every trial is closed.

    ``failure`` is true (with a ``reason``) when every trial exited early with an error.
    """

    failure: bool = False
    reason: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "shutdown", "failure": self.failure, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Shutdown":
        return cls(bool(d.get("failure", False)), str(d.get("reason", "")))


Operation = Union[Create, Train, Validate, Checkpoint, Close, Shutdown]

_KINDS: Dict[str, Type[Any]] = {
    "create": Create,
    "train": Train,
    "validate": Validate,
    "checkpoint": Checkpoint,
    "close": Close,
    "shutdown": Shutdown,
}


def operation_from_dict(d: Mapping[str, Any]) -> Operation:
    """Rebuild any operation from its ``to_dict()`` form."""
    kind = d.get("type") if isinstance(d, Mapping) else None
    if kind not in _KINDS:
        raise ValueError(
            f"Expected an operation type in {sorted(_KINDS)}. Received: type={kind!r}"
        )
    return _KINDS[kind].from_dict(d)  # type: ignore[no-any-return]
