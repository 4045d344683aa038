"""Initial schema; seeds the users admin and determined (blank passwords).

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

import datetime

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import BigId, JSONText, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    users = op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(255), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("username", name="uq_users_username"),
    )
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("config", JSONText(), nullable=False),
        sa.Column("model_def", sa.LargeBinary(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("labels", JSONText(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=True),
        sa.Column("max_slots", sa.Integer(), nullable=True),
        sa.Column("progress", sa.Float(), nullable=True),
        sa.Column("start_time", UTCDateTime(), nullable=False),
        sa.Column("end_time", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_experiments"),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], name="fk_experiments_owner_id_users"),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["experiments.id"],
            name="fk_experiments_parent_id_experiments", ondelete="SET NULL",
        ),
    )
    op.create_index("ix_experiments_state", "experiments", ["state"])
    op.create_index("ix_experiments_owner_id", "experiments", ["owner_id"])
    op.create_index("ix_experiments_archived", "experiments", ["archived"])
    op.create_table(
        "searcher_snapshots",
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("snapshot", JSONText(), nullable=False),
        sa.Column("events_applied", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("experiment_id", name="pk_searcher_snapshots"),
        sa.ForeignKeyConstraint(
            ["experiment_id"], ["experiments.id"],
            name="fk_searcher_snapshots_experiment_id_experiments", ondelete="CASCADE",
        ),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("hparams", JSONText(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("warm_start_checkpoint", sa.String(64), nullable=True),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("total_batches", sa.Integer(), nullable=False),
        sa.Column("start_time", UTCDateTime(), nullable=False),
        sa.Column("end_time", UTCDateTime(), nullable=True),
        sa.Column("latest_checkpoint", sa.String(64), nullable=True),
        sa.Column("best_validation", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_trials"),
        sa.ForeignKeyConstraint(
            ["experiment_id"], ["experiments.id"],
            name="fk_trials_experiment_id_experiments", ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "experiment_id", "request_id", name="uq_trials_experiment_id_request_id"
        ),
    )
    op.create_table(
        "metrics",
        sa.Column("id", BigId, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("total_batches", sa.Integer(), nullable=False),
        sa.Column("end_time", UTCDateTime(), nullable=False),
        sa.Column("metrics", JSONText(), nullable=False),
        sa.Column("batch_metrics", JSONText(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_metrics"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_metrics_trial_id_trials", ondelete="CASCADE"
        ),
        sa.UniqueConstraint(
            "trial_id", "kind", "total_batches", name="uq_metrics_trial_id_kind_total_batches"
        ),
    )
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(64), nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("total_batches", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("resources", JSONText(), nullable=False),
        sa.Column("metadata", JSONText(), nullable=False),
        sa.Column("framework", sa.String(255), nullable=False),
        sa.Column("format", sa.String(255), nullable=False),
        sa.Column("determined_version", sa.String(64), nullable=False),
        sa.Column("start_time", UTCDateTime(), nullable=False),
        sa.Column("end_time", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_checkpoints"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_checkpoints_trial_id_trials", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("uuid", name="uq_checkpoints_uuid"),
    )
    op.create_index("ix_checkpoints_trial_id", "checkpoints", ["trial_id", "total_batches"])
    op.create_table(
        "trial_logs",
        sa.Column("id", BigId, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("timestamp", UTCDateTime(), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_trial_logs"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_trial_logs_trial_id_trials", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_trial_logs_trial_id", "trial_logs", ["trial_id", "id"])
    op.create_table(
        "agents",
        sa.Column("id", sa.String(255), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("registered_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_agents"),
    )
    op.create_table(
        "auth_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_auth_tokens"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_auth_tokens_trial_id_trials", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_auth_tokens_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_auth_tokens_trial_id", "auth_tokens", ["trial_id"])
    op.create_index("ix_auth_tokens_user_id", "auth_tokens", ["user_id"])

    now = datetime.datetime.now(datetime.timezone.utc)
    op.bulk_insert(
        users,
        [
            {"username": "admin", "password_hash": None, "admin": True, "active": True,
             "created_at": now},
            {"username": "determined", "password_hash": None, "admin": False, "active": True,
             "created_at": now},
        ],
    )


def downgrade() -> None:
    for table in (
        "auth_tokens", "agents", "trial_logs", "checkpoints", "metrics", "trials",
        "searcher_snapshots", "experiments", "users",
    ):
        op.drop_table(table)
