"""Create every table of Basil's store (inventory, samples and rollups, models, recommendations, plans,
SRP pools, applied settings, job runs, audit log, API tokens, APScheduler's jobs).

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Written out in full, not imported from ``basil.store.models``: a migration must keep creating the
schema of its own day when the models have moved on. ``tests/store/test_migrations.py`` checks that
the two agree today.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("lookup_id", sa.String(length=16), nullable=False),
        sa.Column("salt", sa.LargeBinary(length=32), nullable=False),
        sa.Column("digest", sa.LargeBinary(length=64), nullable=False),
        sa.Column("iterations", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("role IN ('viewer', 'operator', 'admin')", name=op.f("ck_api_tokens_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("lookup_id", name=op.f("uq_api_tokens_lookup_id")),
        sa.UniqueConstraint("name", name=op.f("uq_api_tokens_name")),
    )
    op.create_table(
        "applied_datastore_settings",
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("datastore", sa.String(length=64), nullable=False),
        sa.Column("sioc_enabled", sa.Boolean(), nullable=False),
        sa.Column("congestion_threshold_ms", sa.Float(), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("vcenter", "datastore", name=op.f("pk_applied_datastore_settings")),
    )
    op.create_table(
        "applied_disk_settings",
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("vm", sa.String(length=64), nullable=False),
        sa.Column("disk_key", sa.Integer(), nullable=False),
        sa.Column("instance", sa.String(length=32), nullable=False),
        sa.Column("pool", sa.String(length=128), nullable=False),
        sa.Column("reservation", sa.BigInteger(), nullable=False),
        sa.Column("limit", sa.BigInteger(), nullable=False),
        sa.Column("shares", sa.Integer(), nullable=False),
        sa.Column("shares_level", sa.String(length=16), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("vcenter", "vm", "disk_key", name=op.f("pk_applied_disk_settings")),
    )
    op.create_table(
        "apscheduler_jobs",
        sa.Column("id", sa.Unicode(length=191), nullable=False),
        sa.Column("next_run_time", sa.Float(precision=25), nullable=True),
        sa.Column("job_state", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_apscheduler_jobs")),
    )
    op.create_index(
        op.f("ix_apscheduler_jobs_next_run_time"), "apscheduler_jobs", ["next_run_time"], unique=False
    )

    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("actor_kind", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index(op.f("ix_audit_log_action"), "audit_log", ["action", "at"], unique=False)
    op.create_index(op.f("ix_audit_log_actor"), "audit_log", ["actor", "at"], unique=False)
    op.create_index(op.f("ix_audit_log_at"), "audit_log", ["at"], unique=False)

    op.create_table(
        "datastore_models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("datastore", sa.String(length=64), nullable=False),
        sa.Column("fitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("p", sa.Float(), nullable=True),
        sa.Column("slope", sa.Float(), nullable=True),
        sa.Column("intercept", sa.Float(), nullable=True),
        sa.Column("r_squared", sa.Float(), nullable=True),
        sa.Column("points_used", sa.Integer(), nullable=False),
        sa.Column("points_filtered", sa.Integer(), nullable=False),
        sa.Column("quality", sa.String(length=16), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("is_current", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_datastore_models")),
    )
    op.create_index(
        op.f("ix_datastore_models_current"), "datastore_models", ["is_current", "vcenter"], unique=False
    )
    op.create_index(
        op.f("ix_datastore_models_datastore"),
        "datastore_models",
        ["vcenter", "datastore", "fitted_at"],
        unique=False,
    )

    op.create_table(
        "disks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("vm", sa.String(length=64), nullable=False),
        sa.Column("instance", sa.String(length=32), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_disks")),
        sa.UniqueConstraint("vcenter", "vm", "instance", name=op.f("uq_disks_vcenter_vm_instance")),
    )
    op.create_table(
        "host_datastores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=64), nullable=False),
        sa.Column("datastore", sa.String(length=64), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_datastores")),
        sa.UniqueConstraint(
            "vcenter", "host", "datastore", name=op.f("uq_host_datastores_vcenter_host_datastore")
        ),
    )
    op.create_table(
        "inventory_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inventory_snapshots")),
        sa.UniqueConstraint("vcenter", "version", name=op.f("uq_inventory_snapshots_vcenter_version")),
    )
    op.create_index(
        op.f("ix_inventory_snapshots_taken"), "inventory_snapshots", ["vcenter", "taken_at"], unique=False
    )

    op.create_table(
        "job_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.CheckConstraint(
            "outcome IN ('running', 'succeeded', 'failed', 'skipped')", name=op.f("ck_job_runs_outcome")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_runs")),
    )
    op.create_index(op.f("ix_job_runs_job"), "job_runs", ["job_id", "started_at"], unique=False)
    op.create_index(op.f("ix_job_runs_started"), "job_runs", ["started_at"], unique=False)

    op.create_table(
        "plans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pod", sa.String(length=64), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("approved_by", sa.String(length=128), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("on_move_failure", sa.String(length=8), nullable=False),
        sa.Column("max_moves", sa.Integer(), nullable=True),
        sa.Column("max_gb", sa.Float(), nullable=True),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.CheckConstraint("on_move_failure IN ('continue', 'stop')", name=op.f("ck_plans_on_move_failure")),
        sa.CheckConstraint(
            "state IN ('proposed', 'approved', 'running', 'succeeded', 'failed', 'cancelled')",
            name=op.f("ck_plans_state"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plans")),
    )
    op.create_index(op.f("ix_plans_pod"), "plans", ["pod", "created_at"], unique=False)
    op.create_index(op.f("ix_plans_state"), "plans", ["state"], unique=False)

    rollup_state = op.create_table(
        "rollup_state",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("watermark", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "level", name=op.f("pk_rollup_state")),
    )
    # The rows exist from the start: sample inserts lock them (FOR SHARE) against a concurrent roll-up.
    op.bulk_insert(
        rollup_state,
        [
            {"kind": kind, "level": level, "watermark": 0}
            for kind in ("disk", "host_datastore")
            for level in (300, 3600)
        ],
    )
    op.create_table(
        "srp_pool_versions",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", "version", name=op.f("pk_srp_pool_versions")),
    )
    op.create_table(
        "srp_pools",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_srp_pools")),
    )
    op.create_table(
        "disk_models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("disk_id", sa.Integer(), nullable=False),
        sa.Column("fitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("oio", sa.Float(), nullable=False),
        sa.Column("io_size_kb", sa.Float(), nullable=False),
        sa.Column("read_pct", sa.Float(), nullable=False),
        sa.Column("random_pct", sa.Float(), nullable=False),
        sa.Column("load", sa.Float(), nullable=False),
        sa.Column("samples_used", sa.Integer(), nullable=False),
        sa.Column("flags", sa.JSON(), nullable=False),
        sa.Column("quality", sa.JSON(), nullable=False),
        sa.Column("is_current", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["disk_id"], ["disks.id"], name=op.f("fk_disk_models_disk_id_disks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_disk_models")),
    )
    op.create_index(op.f("ix_disk_models_current"), "disk_models", ["is_current", "disk_id"], unique=False)
    op.create_index(op.f("ix_disk_models_disk"), "disk_models", ["disk_id", "fitted_at"], unique=False)

    op.create_table(
        "disk_rollups",
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("disk_id", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("sum_read_iops", sa.Float(), nullable=False),
        sa.Column("sum_write_iops", sa.Float(), nullable=False),
        sa.Column("sum_read_oio", sa.Float(), nullable=False),
        sa.Column("sum_write_oio", sa.Float(), nullable=False),
        sa.Column("sum_read_latency_iops", sa.Float(), nullable=False),
        sa.Column("sum_write_latency_iops", sa.Float(), nullable=False),
        sa.Column("sum_read_kbps", sa.Float(), nullable=False),
        sa.Column("sum_write_kbps", sa.Float(), nullable=False),
        sa.Column("max_oio", sa.Float(), nullable=False),
        sa.Column("max_latency_ms", sa.Float(), nullable=False),
        sa.Column("sketch", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["disk_id"], ["disks.id"], name=op.f("fk_disk_rollups_disk_id_disks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("level", "disk_id", "bucket", name=op.f("pk_disk_rollups")),
    )
    op.create_index(op.f("ix_disk_rollups_bucket"), "disk_rollups", ["level", "bucket"], unique=False)

    op.create_table(
        "disk_samples",
        sa.Column("disk_id", sa.Integer(), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("read_iops", sa.Float(), nullable=False),
        sa.Column("write_iops", sa.Float(), nullable=False),
        sa.Column("read_oio", sa.Float(), nullable=False),
        sa.Column("write_oio", sa.Float(), nullable=False),
        sa.Column("read_latency_ms", sa.Float(), nullable=False),
        sa.Column("write_latency_ms", sa.Float(), nullable=False),
        sa.Column("read_io_size_kb", sa.Float(), nullable=False),
        sa.Column("write_io_size_kb", sa.Float(), nullable=False),
        sa.Column("small_seeks", sa.Float(), nullable=True),
        sa.Column("medium_seeks", sa.Float(), nullable=True),
        sa.Column("large_seeks", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["disk_id"], ["disks.id"], name=op.f("fk_disk_samples_disk_id_disks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("disk_id", "ts", name=op.f("pk_disk_samples")),
    )
    op.create_index(op.f("ix_disk_samples_ts"), "disk_samples", ["ts"], unique=False)

    op.create_table(
        "host_datastore_rollups",
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("hd_id", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("sum_read_iops", sa.Float(), nullable=False),
        sa.Column("sum_write_iops", sa.Float(), nullable=False),
        sa.Column("sum_read_oio", sa.Float(), nullable=False),
        sa.Column("sum_write_oio", sa.Float(), nullable=False),
        sa.Column("sum_read_latency_iops", sa.Float(), nullable=False),
        sa.Column("sum_write_latency_iops", sa.Float(), nullable=False),
        sa.Column("sum_read_kbps", sa.Float(), nullable=False),
        sa.Column("sum_write_kbps", sa.Float(), nullable=False),
        sa.Column("max_read_latency_ms", sa.Float(), nullable=False),
        sa.Column("max_queue_depth", sa.Float(), nullable=True),
        sa.Column("sketch", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["hd_id"],
            ["host_datastores.id"],
            name=op.f("fk_host_datastore_rollups_hd_id_host_datastores"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("level", "hd_id", "bucket", name=op.f("pk_host_datastore_rollups")),
    )
    op.create_index(
        op.f("ix_host_datastore_rollups_bucket"), "host_datastore_rollups", ["level", "bucket"], unique=False
    )

    op.create_table(
        "host_datastore_samples",
        sa.Column("hd_id", sa.Integer(), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("read_iops", sa.Float(), nullable=False),
        sa.Column("write_iops", sa.Float(), nullable=False),
        sa.Column("read_oio", sa.Float(), nullable=False),
        sa.Column("write_oio", sa.Float(), nullable=False),
        sa.Column("read_latency_ms", sa.Float(), nullable=False),
        sa.Column("write_latency_ms", sa.Float(), nullable=False),
        sa.Column("read_kbps", sa.Float(), nullable=False),
        sa.Column("write_kbps", sa.Float(), nullable=False),
        sa.Column("max_queue_depth", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["hd_id"],
            ["host_datastores.id"],
            name=op.f("fk_host_datastore_samples_hd_id_host_datastores"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("hd_id", "ts", name=op.f("pk_host_datastore_samples")),
    )
    op.create_index(op.f("ix_host_datastore_samples_ts"), "host_datastore_samples", ["ts"], unique=False)

    op.create_table(
        "recommendations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.String(length=36), nullable=False),
        sa.Column("pod", sa.String(length=64), nullable=False),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("vm", sa.String(length=64), nullable=False),
        sa.Column("vm_name", sa.String(length=255), nullable=False),
        sa.Column("disk_key", sa.Integer(), nullable=False),
        sa.Column("instance", sa.String(length=32), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("source_datastore", sa.String(length=64), nullable=False),
        sa.Column("target_datastore", sa.String(length=64), nullable=False),
        sa.Column("predicted", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=True),
        sa.CheckConstraint(
            "status IN ('open', 'superseded', 'planned', 'dismissed')", name=op.f("ck_recommendations_status")
        ),
        sa.ForeignKeyConstraint(
            ["plan_id"], ["plans.id"], name=op.f("fk_recommendations_plan_id_plans"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recommendations")),
    )
    op.create_index(op.f("ix_recommendations_created"), "recommendations", ["created_at"], unique=False)
    op.create_index(op.f("ix_recommendations_pod"), "recommendations", ["pod", "status"], unique=False)

    op.create_table(
        "plan_moves",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("recommendation_id", sa.Integer(), nullable=True),
        sa.Column("vcenter", sa.String(length=64), nullable=False),
        sa.Column("vm", sa.String(length=64), nullable=False),
        sa.Column("vm_name", sa.String(length=255), nullable=False),
        sa.Column("disk_key", sa.Integer(), nullable=False),
        sa.Column("instance", sa.String(length=32), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("source_datastore", sa.String(length=64), nullable=False),
        sa.Column("target_datastore", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("progress", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "state IN ('pending', 'running', 'succeeded', 'failed', 'skipped')",
            name=op.f("ck_plan_moves_state"),
        ),
        sa.CheckConstraint("progress BETWEEN 0 AND 100", name=op.f("ck_plan_moves_progress")),
        sa.ForeignKeyConstraint(
            ["plan_id"], ["plans.id"], name=op.f("fk_plan_moves_plan_id_plans"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["recommendation_id"],
            ["recommendations.id"],
            name=op.f("fk_plan_moves_recommendation_id_recommendations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plan_moves")),
        sa.UniqueConstraint("plan_id", "seq", name=op.f("uq_plan_moves_plan_id_seq")),
    )
    op.create_index(op.f("ix_plan_moves_disk"), "plan_moves", ["vcenter", "vm", "disk_key"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_plan_moves_disk"), table_name="plan_moves")

    op.drop_table("plan_moves")
    op.drop_index(op.f("ix_recommendations_pod"), table_name="recommendations")
    op.drop_index(op.f("ix_recommendations_created"), table_name="recommendations")

    op.drop_table("recommendations")
    op.drop_index(op.f("ix_host_datastore_samples_ts"), table_name="host_datastore_samples")

    op.drop_table("host_datastore_samples")
    op.drop_index(op.f("ix_host_datastore_rollups_bucket"), table_name="host_datastore_rollups")

    op.drop_table("host_datastore_rollups")
    op.drop_index(op.f("ix_disk_samples_ts"), table_name="disk_samples")

    op.drop_table("disk_samples")
    op.drop_index(op.f("ix_disk_rollups_bucket"), table_name="disk_rollups")

    op.drop_table("disk_rollups")
    op.drop_index(op.f("ix_disk_models_disk"), table_name="disk_models")
    op.drop_index(op.f("ix_disk_models_current"), table_name="disk_models")

    op.drop_table("disk_models")
    op.drop_table("srp_pools")
    op.drop_table("srp_pool_versions")
    op.drop_table("rollup_state")
    op.drop_index(op.f("ix_plans_state"), table_name="plans")
    op.drop_index(op.f("ix_plans_pod"), table_name="plans")

    op.drop_table("plans")
    op.drop_index(op.f("ix_job_runs_started"), table_name="job_runs")
    op.drop_index(op.f("ix_job_runs_job"), table_name="job_runs")

    op.drop_table("job_runs")
    op.drop_index(op.f("ix_inventory_snapshots_taken"), table_name="inventory_snapshots")

    op.drop_table("inventory_snapshots")
    op.drop_table("host_datastores")
    op.drop_table("disks")
    op.drop_index(op.f("ix_datastore_models_datastore"), table_name="datastore_models")
    op.drop_index(op.f("ix_datastore_models_current"), table_name="datastore_models")

    op.drop_table("datastore_models")
    op.drop_index(op.f("ix_audit_log_at"), table_name="audit_log")
    op.drop_index(op.f("ix_audit_log_actor"), table_name="audit_log")
    op.drop_index(op.f("ix_audit_log_action"), table_name="audit_log")

    op.drop_table("audit_log")
    op.drop_index(op.f("ix_apscheduler_jobs_next_run_time"), table_name="apscheduler_jobs")

    op.drop_table("apscheduler_jobs")
    op.drop_table("applied_disk_settings")
    op.drop_table("applied_datastore_settings")
    op.drop_table("api_tokens")
