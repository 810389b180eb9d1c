"""Add ``swap_group`` to recommendations and plan moves: the halves of one swap share it.

The balancer may recommend a swap (two moves that exchange units between two datastores); its halves
must be judged and applied together, so the pairing is stored with every disk of both halves.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("recommendations", sa.Column("swap_group", sa.Integer(), nullable=True))
    op.add_column("plan_moves", sa.Column("swap_group", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("plan_moves") as batch:
        batch.drop_column("swap_group")
    with op.batch_alter_table("recommendations") as batch:
        batch.drop_column("swap_group")
