"""Why a trial's process last failed (``Trial failed (exit code 1): ...`` with the
process's traceback or last lines of output), shown by ``det trial describe`` and in
the trial's JSON. NULL for trials that never failed and for those stored before.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("error")
