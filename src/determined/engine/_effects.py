"""What the core asks its adapter to do. Adapters carry effects out in order.

Every effect names the handler method that carries it out (``handler``):
:func:`dispatch` calls it, so an adapter implements one method per effect it owns
(records: ``determined.master.db.RecordEffects``; processes: the adapter itself) and
never tests effect types.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, Iterable, Optional, Union

__all__ = [
    "CreateTrial", "LaunchTrial", "StopTrial", "KillTrial", "WakeTrial", "StoreMetrics",
    "RollbackMetrics", "RegisterCheckpoint", "DeleteCheckpoint", "UpdateTrial", "TrialLog",
    "SetExperimentState", "FinishExperiment", "SaveSnapshot", "Effect", "dispatch",
]


@dataclasses.dataclass(frozen=True)
class CreateTrial:
    """Create the trial's record (later effects name it by ``request_id``)."""

    handler: ClassVar[str] = "create_trial"
    request_id: int
    hparams: Dict[str, Any]
    seed: int
    checkpoint_of: Optional[int]
    warm_start: Optional[str]


@dataclasses.dataclass(frozen=True)
class LaunchTrial:
    """The trial has work and wants a slot (``ExperimentCore.schedulable`` lists it)."""

    handler: ClassVar[str] = "launch_trial"
    request_id: int


@dataclasses.dataclass(frozen=True)
class StopTrial:
    """Ask the trial's process to checkpoint and exit (its next request hears it)."""

    handler: ClassVar[str] = "stop_trial"
    request_id: int


@dataclasses.dataclass(frozen=True)
class KillTrial:
    handler: ClassVar[str] = "kill_process"
    request_id: int


@dataclasses.dataclass(frozen=True)
class WakeTrial:
    """A process waiting for an operation can have one now (``next_op``)."""

    handler: ClassVar[str] = "wake_trial"
    request_id: int


@dataclasses.dataclass(frozen=True)
class StoreMetrics:
    """Store a report as the trial process sent it (``avg_metrics``/``batch_metrics``
    for training, ``validation_metrics`` for validation, ``num_inputs``)."""

    handler: ClassVar[str] = "store_metrics"
    request_id: int
    kind: str  # "training" or "validation"
    batches: int
    metrics: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class RollbackMetrics:
    """Discard the trial's metrics past ``batches`` (it restarts from that checkpoint)."""

    handler: ClassVar[str] = "rollback_metrics"
    request_id: int
    batches: int


@dataclasses.dataclass(frozen=True)
class RegisterCheckpoint:
    """Record a new checkpoint: its files (relative path -> bytes), framework and
    format as reported (a repeated report is no new checkpoint)."""

    handler: ClassVar[str] = "register_checkpoint"
    request_id: int
    uuid: str
    batches: int
    resources: Dict[str, int] = dataclasses.field(default_factory=dict)
    framework: str = ""
    format: str = ""


@dataclasses.dataclass(frozen=True)
class DeleteCheckpoint:
    handler: ClassVar[str] = "delete_checkpoint"
    uuid: str


@dataclasses.dataclass(frozen=True)
class UpdateTrial:
    """Store changed trial fields: any of state (display state: ACTIVE, PAUSED,
    COMPLETED, ERROR, CANCELED), restarts, best_validation, latest_checkpoint,
    total_batches, warm_start_checkpoint, error (why its process last failed)."""

    handler: ClassVar[str] = "update_trial"
    request_id: int
    fields: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class TrialLog:
    """A lifecycle line for the trial's log."""

    handler: ClassVar[str] = "trial_log"
    request_id: int
    line: str


@dataclasses.dataclass(frozen=True)
class SetExperimentState:
    handler: ClassVar[str] = "set_experiment_state"
    state: str


@dataclasses.dataclass(frozen=True)
class FinishExperiment:
    handler: ClassVar[str] = "finish_experiment"
    state: str
    reason: str


@dataclasses.dataclass(frozen=True)
class SaveSnapshot:
    """The core's state changed in a way a restart must see: store ``snapshot()``."""

    handler: ClassVar[str] = "save_snapshot"

Effect = Union[CreateTrial, LaunchTrial, StopTrial, KillTrial, WakeTrial, StoreMetrics,
               RollbackMetrics, RegisterCheckpoint, DeleteCheckpoint, UpdateTrial, TrialLog,
               SetExperimentState, FinishExperiment, SaveSnapshot]


def dispatch(effects: Iterable[Effect], handler: Any) -> None:
    """Carry ``effects`` out in order: ``handler.<effect.handler>(effect)`` each."""
    for e in effects:
        getattr(handler, e.handler)(e)

