"""Metrics ids are never reused (SQLite ``AUTOINCREMENT``): a trial going back to a
checkpoint deletes its later rows, and without it the rows stored again took the
deleted rows' ids, at or below where a live channel's tail (``metrics_after``) already
was, so they were never sent to an open page. PostgreSQL's sequences never reuse ids:
nothing to do there.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _recreate(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("metrics", recreate="always",
                              table_kwargs={"sqlite_autoincrement": autoincrement}):
        pass


def upgrade() -> None:
    _recreate(True)


def downgrade() -> None:
    _recreate(False)
