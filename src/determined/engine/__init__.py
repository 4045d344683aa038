"""The experiment lifecycle as a pure object (events in, effects out, JSON snapshots).

The local driver (``determined.local``) and the master (``determined.master.experiments``)
are adapters around :class:`ExperimentCore`; this package does no I/O and imports no
framework and nothing from the master.
"""

from determined.engine._assignment import Assignment
from determined.engine._checkpoints import check_checkpoint_id
from determined.engine._core import ExperimentCore
from determined.engine._effects import (
    CreateTrial,
    DeleteCheckpoint,
    Effect,
    FinishExperiment,
    KillTrial,
    LaunchTrial,
    RegisterCheckpoint,
    RollbackMetrics,
    SaveSnapshot,
    SetExperimentState,
    StopTrial,
    StoreMetrics,
    TrialLog,
    UpdateTrial,
    WakeTrial,
    dispatch,
)
from determined.engine._states import (
    EXPERIMENT_TRANSITIONS,
    LIVE,
    TERMINAL,
    TERMINAL_EXPERIMENT,
    TRANSITIONS,
    EngineError,
    ExperimentState,
    IllegalTransition,
    TrialState,
)
from determined.engine._slots import capacity, release_waiting
from determined.engine._snapshot import SNAPSHOT_VERSION
from determined.engine._trial import ERROR_CHARS, ERROR_LINE_CHARS, CoreTrial, trial_error

__all__ = [
    "Assignment", "capacity", "dispatch", "release_waiting", "EXPERIMENT_TRANSITIONS",
    "SNAPSHOT_VERSION", "ERROR_CHARS", "ERROR_LINE_CHARS",
    "TERMINAL_EXPERIMENT",
    "CoreTrial", "CreateTrial", "DeleteCheckpoint", "Effect", "EngineError",
    "ExperimentCore", "ExperimentState", "FinishExperiment", "IllegalTransition", "KillTrial",
    "LaunchTrial", "LIVE", "RegisterCheckpoint", "RollbackMetrics", "SaveSnapshot",
    "SetExperimentState", "StopTrial", "StoreMetrics", "TERMINAL", "TRANSITIONS", "TrialLog",
    "TrialState", "UpdateTrial", "WakeTrial", "check_checkpoint_id", "trial_error",
]
