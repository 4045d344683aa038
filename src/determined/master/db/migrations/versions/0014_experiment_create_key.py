"""The idempotency key an experiment was created with (``Idempotency-Key`` on
``POST /experiments``) and a digest of that request's body: a retried create (the
answer was lost) returns the stored experiment instead of making another. NULL for
experiments created without a key and for those stored before; a key is unique per
owner.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("create_key", sa.String(255), nullable=True))
        batch.add_column(sa.Column("create_digest", sa.String(64), nullable=True))
    op.create_index("ix_experiments_owner_create_key", "experiments",
                    ["owner_id", "create_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_experiments_owner_create_key", table_name="experiments")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("create_digest")
        batch.drop_column("create_key")
