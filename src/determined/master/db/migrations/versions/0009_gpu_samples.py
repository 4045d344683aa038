"""GPU metrics: readings of the GPUs a trial ran on (utilization, memory), one row each.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import BigId, UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gpu_samples",
        sa.Column("id", BigId, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("time", UTCDateTime(), nullable=False),
        sa.Column("gpu_index", sa.Integer(), nullable=False),
        sa.Column("gpu_uuid", sa.String(128), nullable=False),
        sa.Column("utilization", sa.Float(), nullable=False),
        sa.Column("memory_used", sa.BigInteger(), nullable=False),
        sa.Column("memory_total", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_gpu_samples"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_gpu_samples_trial_id_trials",
            ondelete="CASCADE"
        ),
    )
    op.create_index("ix_gpu_samples_trial_id", "gpu_samples", ["trial_id", "time"])


def downgrade() -> None:
    op.drop_index("ix_gpu_samples_trial_id", table_name="gpu_samples")
    op.drop_table("gpu_samples")
