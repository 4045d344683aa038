"""Tasks: commands, notebooks, shells and TensorBoards.

Reserved revision: a no-op until its owner fills it in. Revisions are chained
linearly (0003 -> 0007) so that parallel work never creates two heads.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
