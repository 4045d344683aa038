"""Model registry, config templates and checkpoint metadata (master parity).

Reserved revision: a no-op until its owner fills it in. Revisions are chained
linearly (0003 -> 0007) so that parallel work never creates two heads.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
