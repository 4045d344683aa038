"""Limits and ownership (issue 22): a template's owner (only they or an admin change
it; NULL for templates made before: admins only) and an experiment's unpacked context
size (for the context quotas; NULL before: the packed size counts).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("templates") as batch:
        batch.add_column(sa.Column("owner", sa.String(255), nullable=True))
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("context_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("context_bytes")
    with op.batch_alter_table("templates") as batch:
        batch.drop_column("owner")
