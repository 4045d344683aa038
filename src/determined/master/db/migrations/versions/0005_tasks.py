"""Tasks: commands, notebooks, shells and TensorBoards (``tasks``, ``task_logs``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import BigId, JSONText, UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("config", JSONText(), nullable=False),
        sa.Column("context", sa.LargeBinary(), nullable=True),
        sa.Column("agent_id", sa.String(255), nullable=True),
        sa.Column("slot_ids", JSONText(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("end_reason", sa.Text(), nullable=True),
        sa.Column("start_time", UTCDateTime(), nullable=False),
        sa.Column("end_time", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
    )
    op.create_index("ix_tasks_owner", "tasks", ["owner"])
    op.create_table(
        "task_logs",
        sa.Column("id", BigId, nullable=False),
        sa.Column("task_id", sa.String(64), nullable=False),
        sa.Column("timestamp", UTCDateTime(), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_task_logs"),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name="fk_task_logs_task_id_tasks",
                                ondelete="CASCADE"),
    )
    op.create_index("ix_task_logs_task_id", "task_logs", ["task_id", "id"])


def downgrade() -> None:
    op.drop_table("task_logs")
    op.drop_table("tasks")
