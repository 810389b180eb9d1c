"""Add ``disk_samples.read_latency_us``: vCenter's ``virtualDisk.readLatencyUS``, the microsecond read
latency the device model aggregates per datastore (whole milliseconds cannot resolve flash).

Revision ID: 0003_latency_us
Revises: 0002
Create Date: 2026-11-25

Nullable: older samples, and vCenters without the counter, have none.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003_latency_us"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("disk_samples") as batch:
        batch.add_column(sa.Column("read_latency_us", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("disk_samples") as batch:
        batch.drop_column("read_latency_us")
