"""Model registry, config templates, per-slot drain flags and ``num_inputs`` (master parity).

- ``models`` (name unique, description, metadata, times) and ``model_versions``
  (version numbers 1, 2, ... per model; the registered checkpoint's uuid).
- ``templates``: named config templates (``det template set``).
- ``agents.disabled_slots``: slot indices ``det slot disable`` took out of scheduling.
- ``metrics.num_inputs``: records a workload trained or validated on.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import JSONText, UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("metadata", JSONText(), nullable=False),
        sa.Column("creation_time", UTCDateTime(), nullable=False),
        sa.Column("last_updated_time", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_models"),
        sa.UniqueConstraint("name", name="uq_models_name"),
    )
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("checkpoint_uuid", sa.String(64), nullable=False),
        sa.Column("creation_time", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_model_versions"),
        sa.ForeignKeyConstraint(
            ["model_id"], ["models.id"], name="fk_model_versions_model_id_models",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "model_id", "version", name="uq_model_versions_model_id_version"
        ),
    )
    op.create_index(
        "ix_model_versions_checkpoint_uuid", "model_versions", ["checkpoint_uuid"]
    )
    op.create_table(
        "templates",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("config", JSONText(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_templates"),
    )
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("disabled_slots", JSONText(), nullable=True))
    with op.batch_alter_table("metrics") as batch:
        batch.add_column(sa.Column("num_inputs", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("metrics") as batch:
        batch.drop_column("num_inputs")
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("disabled_slots")
    op.drop_table("templates")
    op.drop_index("ix_model_versions_checkpoint_uuid", "model_versions")
    op.drop_table("model_versions")
    op.drop_table("models")
