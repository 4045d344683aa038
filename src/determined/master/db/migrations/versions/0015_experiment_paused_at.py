"""When an experiment was last paused (``paused_at``), so that a PAUSED experiment's
duration stops there; NULL while it is not paused. Experiments already PAUSED get their
searcher snapshot's last save (a pause saves one), or their start if they have none.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("paused_at", UTCDateTime(), nullable=True))
    op.execute(
        "UPDATE experiments SET paused_at = COALESCE("
        "(SELECT s.updated_at FROM searcher_snapshots s WHERE s.experiment_id = experiments.id),"
        " start_time) WHERE state = 'PAUSED'"
    )


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("paused_at")
