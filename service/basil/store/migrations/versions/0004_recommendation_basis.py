"""Add what a recommendation was computed from (``basis``) and why it is stale (``stale_reason``), and
``prediction_checks``: each applied plan's prediction against what was measured an hour later.

Revision ID: 0004
Revises: 0003_latency_us
Create Date: 2026-11-25

Written out in full, like 0001, so that it keeps creating the schema of its own day.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003_latency_us"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("recommendations", sa.Column("basis", sa.JSON(), nullable=True))
    op.add_column("recommendations", sa.Column("stale_reason", sa.Text(), nullable=True))
    op.create_table(
        "prediction_checks",
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("pod", sa.String(length=64), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("finished_ts", sa.BigInteger(), nullable=False),
        sa.Column("due_ts", sa.BigInteger(), nullable=False),
        sa.Column("predicted", sa.JSON(), nullable=False),
        sa.Column("measured", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["plan_id"], ["plans.id"], name=op.f("fk_prediction_checks_plan_id_plans"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("plan_id", name=op.f("pk_prediction_checks")),
    )
    op.create_index(op.f("ix_prediction_checks_pod"), "prediction_checks", ["pod", "due_ts"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_prediction_checks_pod"), table_name="prediction_checks")
    op.drop_table("prediction_checks")
    with op.batch_alter_table("recommendations") as batch:
        batch.drop_column("stale_reason")
        batch.drop_column("basis")
