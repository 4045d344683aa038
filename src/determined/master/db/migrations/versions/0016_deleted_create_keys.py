"""The idempotency keys of deleted experiments (``deleted_create_keys``), kept for a day:
a create retried after ``det e delete`` removed the experiment it made (the key went
with the experiment's row, 0014) is answered 410 naming that experiment instead of
creating another. A key is unique per owner, as in ``experiments``.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deleted_create_keys",
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("create_key", sa.String(255), nullable=False),
        sa.Column("create_digest", sa.String(64), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE",
                                name="fk_deleted_create_keys_owner_id_users"),
        sa.PrimaryKeyConstraint("owner_id", "create_key", name="pk_deleted_create_keys"),
    )
    op.create_index("ix_deleted_create_keys_deleted_at", "deleted_create_keys",
                    ["deleted_at"])


def downgrade() -> None:
    op.drop_index("ix_deleted_create_keys_deleted_at", table_name="deleted_create_keys")
    op.drop_table("deleted_create_keys")
