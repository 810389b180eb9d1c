"""Add ``slo_history``: per round of a pod with ``goal: slo``, each priority group's DRT, measured and
predicted response times and damage, for the plugin's SLO chart over time (docs/slo.md).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26

Written out in full, like 0001, so that it keeps creating the table of its own day.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "slo_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pod", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("round_id", sa.String(length=36), nullable=True),
        sa.Column("damage_before", sa.Float(), nullable=False),
        sa.Column("damage_after", sa.Float(), nullable=False),
        sa.Column("measured_damage", sa.Float(), nullable=True),
        sa.Column("groups", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slo_history")),
    )
    op.create_index(op.f("ix_slo_history_pod"), "slo_history", ["pod", "at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_slo_history_pod"), table_name="slo_history")
    op.drop_table("slo_history")
