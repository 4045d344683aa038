"""The master's database layer: SQLAlchemy models, Alembic migrations and :class:`Store`.

The master touches the database only through a :class:`Store`::

    store = Store("sqlite:///" + path)        # or "postgresql+psycopg://..."
    store.upgrade()                           # migrations to head, at every start
    exp_id = store.create_experiment(config, model_def, owner="determined")
    store.set_experiment_state(exp_id, "ACTIVE")
    trial_id = store.create_trial(exp_id, request_id, hparams, seed)
    store.add_training_metrics(trial_id, 100, {"loss": 0.3})
    store.close()

See :class:`Store` for the contract every backend keeps.
"""

from determined.master.db._errors import (
    ConflictError,
    IllegalTransitionError,
    NotFoundError,
    StoreError,
)
from determined.master.db._records import (
    TRAINING,
    VALIDATION,
    Agent,
    Checkpoint,
    Experiment,
    LogLine,
    MetricsRecord,
    MetricsRow,
    SearcherSnapshot,
    Trial,
    User,
)
from determined.master.db._states import (
    CHECKPOINT_TRANSITIONS,
    EXPERIMENT_TRANSITIONS,
    TERMINAL_STATES,
    TRIAL_TRANSITIONS,
    USER_REQUESTABLE_STATES,
    check_transition,
)
from determined.master.db._store import Store
from determined.master.db._record_effects import (
    RecordEffects,
    SourceCheckpointError,
    checkpoint_resources,
    resolve_source_checkpoint,
    restore_location,
)

__all__ = [
    "Agent",
    "CHECKPOINT_TRANSITIONS",
    "Checkpoint",
    "ConflictError",
    "EXPERIMENT_TRANSITIONS",
    "Experiment",
    "IllegalTransitionError",
    "LogLine",
    "MetricsRecord",
    "MetricsRow",
    "NotFoundError",
    "SearcherSnapshot",
    "Store",
    "RecordEffects",
    "SourceCheckpointError",
    "checkpoint_resources",
    "resolve_source_checkpoint",
    "restore_location",
    "StoreError",
    "TERMINAL_STATES",
    "TRAINING",
    "TRIAL_TRANSITIONS",
    "Trial",
    "USER_REQUESTABLE_STATES",
    "User",
    "VALIDATION",
    "check_transition",
]
