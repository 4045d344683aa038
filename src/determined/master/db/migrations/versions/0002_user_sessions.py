"""User sessions expire: ``auth_tokens.expires_at`` (NULL for trial tokens).

Sessions created before this revision get ``created_at`` + 7 days, the default
session length of the master (``security.session_ttl_hours``).

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

import datetime

import sqlalchemy as sa
from alembic import op

from determined.master.db._types import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_OLD_SESSION_TTL = datetime.timedelta(days=7)


def upgrade() -> None:
    with op.batch_alter_table("auth_tokens") as batch:
        batch.add_column(sa.Column("expires_at", UTCDateTime(), nullable=True))
    tokens = sa.table(
        "auth_tokens",
        sa.column("token_hash", sa.String(64)),
        sa.column("kind", sa.String(16)),
        sa.column("created_at", UTCDateTime()),
        sa.column("expires_at", UTCDateTime()),
    )
    conn = op.get_bind()
    sessions = conn.execute(
        sa.select(tokens.c.token_hash, tokens.c.created_at).where(tokens.c.kind == "user")
    ).all()
    for token_hash, created_at in sessions:
        conn.execute(
            sa.update(tokens)
            .where(tokens.c.token_hash == token_hash)
            .values(expires_at=created_at + _OLD_SESSION_TTL)
        )


def downgrade() -> None:
    with op.batch_alter_table("auth_tokens") as batch:
        batch.drop_column("expires_at")
