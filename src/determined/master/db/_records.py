"""Plain, immutable records the store returns (never ORM objects).

All timestamps are timezone-aware UTC datetimes.
"""

import dataclasses
import datetime
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union

__all__ = [
    "Agent",
    "Checkpoint",
    "Experiment",
    "LogLine",
    "MetricsRecord",
    "MetricsRow",
    "SearcherSnapshot",
    "Trial",
    "User",
    "TRAINING",
    "VALIDATION",
]

TRAINING = "training"
VALIDATION = "validation"
METRIC_KINDS = (TRAINING, VALIDATION)


@dataclasses.dataclass(frozen=True)
class Experiment:
    """An experiment; ``config`` is the stored (validated) experiment config."""

    id: int
    state: str
    config: Dict[str, Any]
    owner: str
    parent_id: Optional[int]
    description: str
    labels: List[str]
    archived: bool
    weight: float
    priority: Optional[int]
    max_slots: Optional[int]
    progress: Optional[float]
    start_time: datetime.datetime
    end_time: Optional[datetime.datetime]
    #: ``{git_remote, git_commit, git_committer, git_commit_date}`` (``det e create --git``).
    git: Optional[Dict[str, str]] = None


@dataclasses.dataclass(frozen=True)
class SearcherSnapshot:
    """The searcher's JSON snapshot after ``events_applied`` events."""

    experiment_id: int
    snapshot: Dict[str, Any]
    events_applied: int
    updated_at: datetime.datetime


@dataclasses.dataclass(frozen=True)
class Trial:
    """A trial: one hyperparameter assignment; ``id`` is unique cluster-wide."""

    id: int
    experiment_id: int
    request_id: str
    state: str
    hparams: Dict[str, Any]
    seed: int
    warm_start_checkpoint: Optional[str]
    restarts: int
    total_batches: int
    start_time: datetime.datetime
    end_time: Optional[datetime.datetime]
    latest_checkpoint: Optional[str]
    best_validation: Optional[float]
    # The integer id of the warm-start checkpoint (upstream's warm_start_checkpoint_id).
    warm_start_checkpoint_id: Optional[int] = None
    # Why its process last failed (``Trial failed (exit code 1): ...``); None if it never did.
    error: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class MetricsRecord:
    """The metrics of one workload; ``kind`` is ``"training"`` or ``"validation"``.

    ``batch_metrics`` (training only) is the list of per-batch dicts, or None.
    """

    id: int
    trial_id: int
    kind: str
    total_batches: int
    end_time: datetime.datetime
    metrics: Dict[str, Any]
    batch_metrics: Optional[List[Dict[str, Any]]]


class MetricsRow(NamedTuple):
    """One row for :meth:`Store.add_metrics_bulk` (a plain tuple or mapping works too)."""

    trial_id: int
    kind: str
    total_batches: int
    metrics: Mapping[str, Any]
    batch_metrics: Optional[Sequence[Mapping[str, Any]]] = None


MetricsRowLike = Union[MetricsRow, Sequence[Any], Mapping[str, Any]]


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint record (SPEC 5.1).

    ``validation`` holds the trial's validation metrics at the same ``total_batches``
    (the dict given to ``add_validation_metrics``), or None if there were none.
    """

    uuid: str
    trial_id: int
    experiment_id: int
    total_batches: int
    state: str
    resources: Dict[str, int]
    metadata: Dict[str, Any]
    framework: str
    format: str
    determined_version: str
    start_time: datetime.datetime
    end_time: Optional[datetime.datetime]
    validation: Optional[Dict[str, Any]]
    id: int = 0  # the row's integer id (upstream's checkpoint ``id``)


class LogLine(NamedTuple):
    """One log line (of a trial or a task); ``id`` increases with insertion order."""

    id: int
    timestamp: datetime.datetime
    line: str


@dataclasses.dataclass(frozen=True)
class Agent:
    id: str
    slots: int
    label: str
    enabled: bool
    registered_at: datetime.datetime
    last_seen: datetime.datetime


@dataclasses.dataclass(frozen=True)
class User:
    id: int
    username: str
    admin: bool
    active: bool
    has_password: bool
    #: ``{agent_uid, agent_gid, agent_user, agent_group}`` (``link-with-agent-user``).
    agent_user_group: Optional[Dict[str, Any]] = None
