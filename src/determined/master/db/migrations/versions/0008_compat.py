"""Determined 0.13 compatibility: an experiment's git origin (``det e create --git``) and
a user's agent user and group (``det user link-with-agent-user``).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_GIT = ("git_remote", "git_commit", "git_committer", "git_commit_date")


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        for name in _GIT:
            batch.add_column(sa.Column(name, sa.String(1024), nullable=True))
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("agent_uid", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("agent_gid", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("agent_user", sa.String(255), nullable=True))
        batch.add_column(sa.Column("agent_group", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        for name in ("agent_group", "agent_user", "agent_gid", "agent_uid"):
            batch.drop_column(name)
    with op.batch_alter_table("experiments") as batch:
        for name in reversed(_GIT):
            batch.drop_column(name)
