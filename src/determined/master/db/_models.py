"""SQLAlchemy ORM models: the schema the migrations in ``migrations/versions`` build.

Tables: ``users``, ``experiments``, ``searcher_snapshots``, ``trials``, ``metrics``
(training and validation, one row per workload), ``checkpoints``, ``trial_logs``,
``agents``, ``auth_tokens``, ``gpu_samples``, ``deleted_create_keys`` (the idempotency
keys of deleted experiments). Deleting an experiment cascades to its trials and their
rows. On SQLite, experiments, trials, checkpoints and metrics are ``AUTOINCREMENT``: ids
are never reused, as PostgreSQL's sequences never reuse them.
``tests/master/db/test_db_migrations.py`` checks the migrations match these models.
"""

import datetime
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy import orm

from determined.master.db._types import BigId, JSONText, UTCDateTime, utcnow

__all__ = [
    "AuthToken",
    "Agent",
    "Base",
    "Checkpoint",
    "DeletedCreateKey",
    "Experiment",
    "GpuSample",
    "Metrics",
    "LogLineColumns",
    "ModelVersion",
    "RegistryModel",
    "SearcherSnapshot",
    "Template",
    "Trial",
    "TrialLog",
    "User",
]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class User(Base):
    __tablename__ = "users"

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    username: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    # NULL means the blank password.
    password_hash: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    admin: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    active: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=True)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime, default=utcnow)
    # The POSIX user and group on agents (`det user link-with-agent-user`); recorded only.
    agent_uid: orm.Mapped[Optional[int]] = orm.mapped_column(sa.Integer)
    agent_gid: orm.Mapped[Optional[int]] = orm.mapped_column(sa.Integer)
    agent_user: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    agent_group: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))


class Experiment(Base):
    __tablename__ = "experiments"
    # A create's idempotency key is unique per owner; NULLs (no key) never collide.
    # AUTOINCREMENT (migration 0017): a deleted experiment's id is never given again.
    __table_args__ = (sa.Index("ix_experiments_owner_create_key", "owner_id", "create_key",
                               unique=True), {"sqlite_autoincrement": True})

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(32), index=True)
    config: orm.Mapped[Any] = orm.mapped_column(JSONText)
    # The gzipped tarball of the context directory; large, so never selected in lists.
    model_def: orm.Mapped[bytes] = orm.mapped_column(sa.LargeBinary, deferred=True)
    owner_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("users.id"), index=True)
    parent_id: orm.Mapped[Optional[int]] = orm.mapped_column(
        sa.ForeignKey("experiments.id", ondelete="SET NULL")
    )
    description: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")
    labels: orm.Mapped[Any] = orm.mapped_column(JSONText)
    archived: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False, index=True)
    weight: orm.Mapped[float] = orm.mapped_column(sa.Float, default=1.0)
    priority: orm.Mapped[Optional[int]] = orm.mapped_column(sa.Integer)
    max_slots: orm.Mapped[Optional[int]] = orm.mapped_column(sa.Integer)
    progress: orm.Mapped[Optional[float]] = orm.mapped_column(sa.Float)
    start_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime, default=utcnow)
    end_time: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(UTCDateTime)
    # When it last became PAUSED (its duration stops there); None while not paused.
    paused_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(UTCDateTime)
    # Where the model definition came from (`det e create --git`).
    git_remote: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(1024))
    git_commit: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(1024))
    git_committer: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(1024))
    git_commit_date: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(1024))
    # Bytes of the context's files unpacked (the context quotas); None: not recorded.
    context_bytes: orm.Mapped[Optional[int]] = orm.mapped_column(sa.BigInteger)
    # The config as submitted, before defaults (the UI's fork starts from it); None for
    # experiments made before it was kept. Read alone, so never selected in lists.
    original_config: orm.Mapped[Optional[Any]] = orm.mapped_column(JSONText, deferred=True)
    # The ``Idempotency-Key`` it was created with and the SHA-256 of that request's
    # body (migration 0014): a retried create returns this experiment. None: no key.
    create_key: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    create_digest: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(64))

    owner: orm.Mapped[User] = orm.relationship(lazy="joined", innerjoin=True)


class DeletedCreateKey(Base):
    """The idempotency key of a deleted experiment, kept for a while (migration 0016): a
    late retry of its create is told the experiment was deleted instead of making
    another. Rows older than ``CREATE_KEY_RETENTION`` are pruned."""

    __tablename__ = "deleted_create_keys"

    owner_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    create_key: orm.Mapped[str] = orm.mapped_column(sa.String(255), primary_key=True)
    create_digest: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    # The deleted experiment's id (no foreign key: that row is gone).
    experiment_id: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    deleted_at: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime, index=True)


class SearcherSnapshot(Base):
    __tablename__ = "searcher_snapshots"

    experiment_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    snapshot: orm.Mapped[Any] = orm.mapped_column(JSONText)
    events_applied: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime, default=utcnow)


class Trial(Base):
    __tablename__ = "trials"
    # AUTOINCREMENT (migration 0017): a deleted trial's id is never given again.
    __table_args__ = (sa.UniqueConstraint("experiment_id", "request_id"),
                      {"sqlite_autoincrement": True})

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    experiment_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("experiments.id", ondelete="CASCADE")
    )
    request_id: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    state: orm.Mapped[str] = orm.mapped_column(sa.String(32), default="ACTIVE")
    hparams: orm.Mapped[Any] = orm.mapped_column(JSONText)
    seed: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    # Not a foreign key: the source checkpoint may belong to another experiment.
    warm_start_checkpoint: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(64))
    restarts: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    total_batches: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    start_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime, default=utcnow)
    end_time: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(UTCDateTime)
    latest_checkpoint: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(64))
    best_validation: orm.Mapped[Optional[float]] = orm.mapped_column(sa.Float)
    # Why its process last failed (migration 0013): ``Trial failed (exit code 1): ...``.
    error: orm.Mapped[Optional[str]] = orm.mapped_column(sa.Text, nullable=True)


class Metrics(Base):
    """One training or validation workload's metrics; unique per (trial, kind, batches)."""

    __tablename__ = "metrics"
    # AUTOINCREMENT (migration 0011): ids of rows deleted by a rewind are not reused, so
    # live tails by id (``/ui/events`` metrics_after) see the rows stored again.
    __table_args__ = (sa.UniqueConstraint("trial_id", "kind", "total_batches"),
                      {"sqlite_autoincrement": True})

    id: orm.Mapped[int] = orm.mapped_column(BigId, primary_key=True)
    trial_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("trials.id", ondelete="CASCADE")
    )
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    total_batches: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    end_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    metrics: orm.Mapped[Any] = orm.mapped_column(JSONText)
    batch_metrics: orm.Mapped[Any] = orm.mapped_column(JSONText, nullable=True)
    # Records trained or validated on (migration 0003); NULL when not reported.
    num_inputs: orm.Mapped[Optional[int]] = orm.mapped_column(sa.BigInteger, nullable=True)


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    # AUTOINCREMENT (migration 0017): ids of records deleted by a rewind are not reused.
    __table_args__ = (sa.Index(None, "trial_id", "total_batches"),
                      {"sqlite_autoincrement": True})

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(64), unique=True)
    trial_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("trials.id", ondelete="CASCADE")
    )
    total_batches: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    resources: orm.Mapped[Any] = orm.mapped_column(JSONText)
    # "metadata" is reserved on declarative classes.
    metadata_: orm.Mapped[Any] = orm.mapped_column("metadata", JSONText)
    framework: orm.Mapped[str] = orm.mapped_column(sa.String(255), default="")
    format: orm.Mapped[str] = orm.mapped_column(sa.String(255), default="")
    determined_version: orm.Mapped[str] = orm.mapped_column(sa.String(64), default="")
    start_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime, default=utcnow)
    end_time: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(UTCDateTime)


class LogLineColumns:
    """The columns every log table has besides its owner's key (``trial_logs``,
    ``task_logs``): the line, when it came, and an id that orders the lines."""

    # sort_order: the first column, before the owner's key, as the migrations create it.
    id: orm.Mapped[int] = orm.mapped_column(BigId, primary_key=True, sort_order=-1)
    timestamp: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    line: orm.Mapped[str] = orm.mapped_column(sa.Text)


class TrialLog(LogLineColumns, Base):
    __tablename__ = "trial_logs"
    __table_args__ = (sa.Index(None, "trial_id", "id"),)

    trial_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("trials.id", ondelete="CASCADE")
    )


class GpuSample(Base):
    """One reading of a GPU a trial ran on, taken by its agent (NVML; migration 0009)."""

    __tablename__ = "gpu_samples"
    __table_args__ = (sa.Index(None, "trial_id", "time"),)

    id: orm.Mapped[int] = orm.mapped_column(BigId, primary_key=True)
    trial_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("trials.id", ondelete="CASCADE")
    )
    time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    gpu_index: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    gpu_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(128), default="")
    utilization: orm.Mapped[float] = orm.mapped_column(sa.Float)  # percent
    memory_used: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)  # bytes
    memory_total: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)  # bytes


class Agent(Base):
    __tablename__ = "agents"

    id: orm.Mapped[str] = orm.mapped_column(sa.String(255), primary_key=True)
    slots: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    label: orm.Mapped[str] = orm.mapped_column(sa.String(255), default="")
    enabled: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=True)
    # Slot indices taken out of scheduling by `det slot disable` (migration 0003).
    disabled_slots: orm.Mapped[Any] = orm.mapped_column(JSONText, nullable=True)
    registered_at: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    last_seen: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)


class AuthToken(Base):
    """A bearer token, stored as its SHA-256; for a trial runner or a logged-in user."""

    __tablename__ = "auth_tokens"

    token_hash: orm.Mapped[str] = orm.mapped_column(sa.String(64), primary_key=True)
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    trial_id: orm.Mapped[Optional[int]] = orm.mapped_column(
        sa.ForeignKey("trials.id", ondelete="CASCADE"), index=True
    )
    user_id: orm.Mapped[Optional[int]] = orm.mapped_column(
        sa.ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    # When a user session ends (migration 0002); NULL: never (trial tokens).
    expires_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(UTCDateTime)


class RegistryModel(Base):
    """A model of the model registry (migration 0003); versions are checkpoints."""

    __tablename__ = "models"

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), unique=True)
    description: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")
    metadata_: orm.Mapped[Any] = orm.mapped_column("metadata", JSONText)
    creation_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    last_updated_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)


class ModelVersion(Base):
    """Version ``version`` (1, 2, ...) of a registry model: a checkpoint's uuid."""

    __tablename__ = "model_versions"
    __table_args__ = (sa.UniqueConstraint("model_id", "version"),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    model_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey("models.id", ondelete="CASCADE")
    )
    version: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    # Not a foreign key: deleting an experiment is refused while a version uses it.
    checkpoint_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(64), index=True)
    creation_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)


class Template(Base):
    """A named experiment-config template (``det template set``)."""

    __tablename__ = "templates"

    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), primary_key=True)
    config: orm.Mapped[Any] = orm.mapped_column(JSONText)
    # The user who made it (a name, as experiments' owners are shown); None: made
    # before templates had owners, changed by admins only.
    owner: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
