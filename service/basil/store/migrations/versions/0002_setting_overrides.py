"""Add ``setting_overrides``: parts of the configuration changed through the API (the rebalance window),
kept across restarts and applied over the configuration file at start.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Written out in full, like 0001, so that it keeps creating the table of its own day.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "setting_overrides",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_setting_overrides")),
    )


def downgrade() -> None:
    op.drop_table("setting_overrides")
