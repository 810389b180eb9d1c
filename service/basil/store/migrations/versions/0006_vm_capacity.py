"""Add ``vm_capacity``: per VM, the capacity its uploaded request trace needs for a latency target.

The trace itself is not kept, only the answer of the capacity search (Lu's RTT) with the trace's
summary and who uploaded it when; one row per VM, replaced by the next upload.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "vm_capacity",
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("vm", sa.String(length=64), nullable=False),
        sa.Column("fraction", sa.Float(), nullable=False),
        sa.Column("bound_ms", sa.Float(), nullable=False),
        sa.Column("capacity_iops", sa.Float(), nullable=False),
        sa.Column("capacity_full_iops", sa.Float(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("uploaded_by", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("vcenter", "vm", name=op.f("pk_vm_capacity")),
    )


def downgrade() -> None:
    op.drop_table("vm_capacity")
