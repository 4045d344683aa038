"""What the core asks its adapter to do. Adapters carry effects out in order."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Union

__all__ = [
    "CreateTrial", "LaunchTrial", "StopTrial", "KillTrial", "WakeTrial", "StoreMetrics",
    "RollbackMetrics", "RegisterCheckpoint", "DeleteCheckpoint", "UpdateTrial", "TrialLog",
    "SetExperimentState", "FinishExperiment", "SaveSnapshot", "Effect",
]


@dataclasses.dataclass(frozen=True)
class CreateTrial:
    """Create the trial's record (later effects name it by ``request_id``)."""

    request_id: int
    hparams: Dict[str, Any]
    seed: int
    checkpoint_of: Optional[int]
    warm_start: Optional[str]


@dataclasses.dataclass(frozen=True)
class LaunchTrial:
    """The trial has work and wants a slot (``ExperimentCore.schedulable`` lists it)."""

    request_id: int


@dataclasses.dataclass(frozen=True)
class StopTrial:
    """Ask the trial's process to checkpoint and exit (its next request hears it)."""

    request_id: int


@dataclasses.dataclass(frozen=True)
class KillTrial:
    request_id: int


@dataclasses.dataclass(frozen=True)
class WakeTrial:
    """A process waiting for an operation can have one now (``next_op``)."""

    request_id: int


@dataclasses.dataclass(frozen=True)
class StoreMetrics:
    request_id: int
    kind: str  # "training" or "validation"
    batches: int
    metrics: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class RollbackMetrics:
    """Discard the trial's metrics past ``batches`` (it restarts from that checkpoint)."""

    request_id: int
    batches: int


@dataclasses.dataclass(frozen=True)
class RegisterCheckpoint:
    request_id: int
    uuid: str
    batches: int


@dataclasses.dataclass(frozen=True)
class DeleteCheckpoint:
    uuid: str


@dataclasses.dataclass(frozen=True)
class UpdateTrial:
    """Store changed trial fields: any of state (display state: ACTIVE, PAUSED,
    COMPLETED, ERROR, CANCELED), restarts, best_validation, latest_checkpoint,
    total_batches, warm_start_checkpoint."""

    request_id: int
    fields: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class TrialLog:
    """A lifecycle line for the trial's log."""

    request_id: int
    line: str


@dataclasses.dataclass(frozen=True)
class SetExperimentState:
    state: str


@dataclasses.dataclass(frozen=True)
class FinishExperiment:
    state: str
    reason: str


@dataclasses.dataclass(frozen=True)
class SaveSnapshot:
    """The core's state changed in a way a restart must see: store ``snapshot()``."""


Effect = Union[CreateTrial, LaunchTrial, StopTrial, KillTrial, WakeTrial, StoreMetrics,
               RollbackMetrics, RegisterCheckpoint, DeleteCheckpoint, UpdateTrial, TrialLog,
               SetExperimentState, FinishExperiment, SaveSnapshot]
