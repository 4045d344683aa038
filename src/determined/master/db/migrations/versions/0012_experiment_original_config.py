"""An experiment's config as submitted (``POST /experiments``, before the master fills
in defaults), which the web UI's fork tab starts from. NULL for experiments made
before: readers fall back to the expanded ``config``.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import JSONText

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("original_config", JSONText(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("original_config")
