"""The tables of Basil's store, as typed SQLAlchemy 2 models; the migrations create exactly these.

Sample tables keep time as integer seconds since the epoch (UTC): they are the hot path, and an
integer compares, buckets (``ts - ts % 300``) and indexes the same way on SQLite and PostgreSQL.
Every other time is an aware UTC ``datetime`` (:class:`UTCDateTime`). Repositories in the sibling
modules return plain dataclasses, so no object of this module travels beyond ``basil.store``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    Unicode,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Explicit constraint names, identical on SQLite and PostgreSQL, so later migrations can name them.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

PLAN_STATES = ("proposed", "approved", "running", "succeeded", "failed", "cancelled")
MOVE_STATES = ("pending", "running", "succeeded", "failed", "skipped")
ROLES = ("viewer", "operator", "admin")
RECOMMENDATION_STATES = ("open", "superseded", "planned", "dismissed")
JOB_OUTCOMES = ("running", "succeeded", "failed", "skipped")

# Rollup levels, by bucket length in seconds.
LEVEL_5MIN = 300
LEVEL_HOUR = 3600


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend (SQLite stores it naive; it comes back with UTC attached)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use an aware UTC datetime")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
    }


# --- inventory --------------------------------------------------------------------------------------


class InventorySnapshot(Base):
    """One vCenter's inventory as collected (``basil.vcenter.types.Inventory`` as JSON), versioned."""

    __tablename__ = "inventory_snapshots"
    __table_args__ = (
        UniqueConstraint("vcenter", "version"),
        Index("ix_inventory_snapshots_taken", "vcenter", "taken_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vcenter: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)
    taken_at: Mapped[datetime]
    document: Mapped[dict[str, Any]]


# --- samples ----------------------------------------------------------------------------------------


class Disk(Base):
    """A virtual disk as vCenter's performance counters name it: VM moid and instance (``scsi0:1``)."""

    __tablename__ = "disks"
    __table_args__ = (UniqueConstraint("vcenter", "vm", "instance"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vcenter: Mapped[str] = mapped_column(String(64))
    vm: Mapped[str] = mapped_column(String(64))
    instance: Mapped[str] = mapped_column(String(32))
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]


class HostDatastore(Base):
    """A (host, datastore) pair: the instance of the host-level ``datastore.*`` counters."""

    __tablename__ = "host_datastores"
    __table_args__ = (UniqueConstraint("vcenter", "host", "datastore"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vcenter: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column(String(64))
    datastore: Mapped[str] = mapped_column(String(64))
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]


class DiskSample(Base):
    """One 20 s real-time sample of a virtual disk (``virtualDisk.*`` counters)."""

    __tablename__ = "disk_samples"
    __table_args__ = (Index("ix_disk_samples_ts", "ts"),)

    disk_id: Mapped[int] = mapped_column(ForeignKey("disks.id", ondelete="CASCADE"), primary_key=True)
    ts: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    read_iops: Mapped[float] = mapped_column(Float)
    write_iops: Mapped[float] = mapped_column(Float)
    read_oio: Mapped[float] = mapped_column(Float)
    write_oio: Mapped[float] = mapped_column(Float)
    read_latency_ms: Mapped[float] = mapped_column(Float)
    write_latency_ms: Mapped[float] = mapped_column(Float)
    read_io_size_kb: Mapped[float] = mapped_column(Float)
    write_io_size_kb: Mapped[float] = mapped_column(Float)
    small_seeks: Mapped[float | None] = mapped_column(Float)
    medium_seeks: Mapped[float | None] = mapped_column(Float)
    large_seeks: Mapped[float | None] = mapped_column(Float)
    # readLatencyUS when vCenter has it: the device model's microsecond read latency (0003).
    read_latency_us: Mapped[float | None] = mapped_column(Float)


class DiskRollup(Base):
    """A 5-minute or hourly summary of a disk's samples: sums for means, maxima, and a quantile sketch.

    ``sketch`` holds mergeable histograms of the four workload parameters (BASIL §3: OIO, IO size,
    read %, random %), so the 90th percentile over any span of buckets is exact up to the sketch's
    1 % relative error (see :mod:`basil.store.sketch`).
    """

    __tablename__ = "disk_rollups"
    __table_args__ = (Index("ix_disk_rollups_bucket", "level", "bucket"),)

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    disk_id: Mapped[int] = mapped_column(ForeignKey("disks.id", ondelete="CASCADE"), primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    sum_read_iops: Mapped[float] = mapped_column(Float)
    sum_write_iops: Mapped[float] = mapped_column(Float)
    sum_read_oio: Mapped[float] = mapped_column(Float)
    sum_write_oio: Mapped[float] = mapped_column(Float)
    # Σ latency × IOPS, so that an IOPS-weighted mean latency can be recovered for any span.
    sum_read_latency_iops: Mapped[float] = mapped_column(Float)
    sum_write_latency_iops: Mapped[float] = mapped_column(Float)
    sum_read_kbps: Mapped[float] = mapped_column(Float)
    sum_write_kbps: Mapped[float] = mapped_column(Float)
    max_oio: Mapped[float] = mapped_column(Float)
    max_latency_ms: Mapped[float] = mapped_column(Float)
    sketch: Mapped[bytes] = mapped_column(LargeBinary)


class HostDatastoreSample(Base):
    """One 20 s real-time sample of a datastore as one host sees it (host-level ``datastore.*`` counters)."""

    __tablename__ = "host_datastore_samples"
    __table_args__ = (Index("ix_host_datastore_samples_ts", "ts"),)

    hd_id: Mapped[int] = mapped_column(ForeignKey("host_datastores.id", ondelete="CASCADE"), primary_key=True)
    ts: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    read_iops: Mapped[float] = mapped_column(Float)
    write_iops: Mapped[float] = mapped_column(Float)
    read_oio: Mapped[float] = mapped_column(Float)
    write_oio: Mapped[float] = mapped_column(Float)
    read_latency_ms: Mapped[float] = mapped_column(Float)
    write_latency_ms: Mapped[float] = mapped_column(Float)
    read_kbps: Mapped[float] = mapped_column(Float)
    write_kbps: Mapped[float] = mapped_column(Float)
    max_queue_depth: Mapped[float | None] = mapped_column(Float)


class HostDatastoreRollup(Base):
    """A 5-minute or hourly summary of a (host, datastore) pair: device-model points and a latency sketch."""

    __tablename__ = "host_datastore_rollups"
    __table_args__ = (Index("ix_host_datastore_rollups_bucket", "level", "bucket"),)

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    hd_id: Mapped[int] = mapped_column(ForeignKey("host_datastores.id", ondelete="CASCADE"), primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    sum_read_iops: Mapped[float] = mapped_column(Float)
    sum_write_iops: Mapped[float] = mapped_column(Float)
    sum_read_oio: Mapped[float] = mapped_column(Float)
    sum_write_oio: Mapped[float] = mapped_column(Float)
    sum_read_latency_iops: Mapped[float] = mapped_column(Float)
    sum_write_latency_iops: Mapped[float] = mapped_column(Float)
    sum_read_kbps: Mapped[float] = mapped_column(Float)
    sum_write_kbps: Mapped[float] = mapped_column(Float)
    max_read_latency_ms: Mapped[float] = mapped_column(Float)
    max_queue_depth: Mapped[float | None] = mapped_column(Float)
    sketch: Mapped[bytes] = mapped_column(LargeBinary)


class RollupState(Base):
    """How far each rollup level has got: every bucket that starts before ``watermark`` is rolled up."""

    __tablename__ = "rollup_state"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    watermark: Mapped[int] = mapped_column(BigInteger)


# --- models -------------------------------------------------------------------------------------------


class DiskModelRow(Base):
    """A disk's workload model (BASIL §3) as fitted at one time; ``is_current`` marks the latest."""

    __tablename__ = "disk_models"
    __table_args__ = (
        Index("ix_disk_models_disk", "disk_id", "fitted_at"),
        Index("ix_disk_models_current", "is_current", "disk_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    disk_id: Mapped[int] = mapped_column(ForeignKey("disks.id", ondelete="CASCADE"))
    fitted_at: Mapped[datetime]
    window_start: Mapped[datetime]
    window_end: Mapped[datetime]
    oio: Mapped[float] = mapped_column(Float)
    io_size_kb: Mapped[float] = mapped_column(Float)
    read_pct: Mapped[float] = mapped_column(Float)
    random_pct: Mapped[float] = mapped_column(Float)
    load: Mapped[float] = mapped_column(Float)
    samples_used: Mapped[int] = mapped_column(Integer)
    flags: Mapped[list[Any]]
    quality: Mapped[dict[str, Any]]
    is_current: Mapped[bool] = mapped_column(Boolean)


class DatastoreModelRow(Base):
    """A datastore's device model (BASIL §4: P = 1/slope of read latency over read OIO), fit quality."""

    __tablename__ = "datastore_models"
    __table_args__ = (
        Index("ix_datastore_models_datastore", "vcenter", "datastore", "fitted_at"),
        Index("ix_datastore_models_current", "is_current", "vcenter"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vcenter: Mapped[str] = mapped_column(String(64))
    datastore: Mapped[str] = mapped_column(String(64))
    fitted_at: Mapped[datetime]
    window_start: Mapped[datetime]
    window_end: Mapped[datetime]
    p: Mapped[float | None] = mapped_column(Float)
    slope: Mapped[float | None] = mapped_column(Float)
    intercept: Mapped[float | None] = mapped_column(Float)
    r_squared: Mapped[float | None] = mapped_column(Float)
    points_used: Mapped[int] = mapped_column(Integer)
    points_filtered: Mapped[int] = mapped_column(Integer)
    quality: Mapped[str] = mapped_column(String(16))
    details: Mapped[dict[str, Any]]
    is_current: Mapped[bool] = mapped_column(Boolean)


# --- recommendations and plans ---------------------------------------------------------------------


class RecommendationRow(Base):
    """One recommended Storage vMotion of one disk, with its reason code and predicted effect."""

    __tablename__ = "recommendations"
    __table_args__ = (
        CheckConstraint(_one_of("status", RECOMMENDATION_STATES), name="status"),
        Index("ix_recommendations_pod", "pod", "status"),
        Index("ix_recommendations_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[str] = mapped_column(String(36))
    pod: Mapped[str] = mapped_column(String(64))
    vcenter: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    reason: Mapped[str] = mapped_column(String(64))
    vm: Mapped[str] = mapped_column(String(64))
    vm_name: Mapped[str] = mapped_column(String(255))
    disk_key: Mapped[int] = mapped_column(Integer)
    instance: Mapped[str] = mapped_column(String(32))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    source_datastore: Mapped[str] = mapped_column(String(64))
    target_datastore: Mapped[str] = mapped_column(String(64))
    predicted: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16))
    plan_id: Mapped[int | None] = mapped_column(ForeignKey("plans.id", ondelete="SET NULL"))
    # What the round was computed from (placement digest, models, plans then running): see
    # basil.app.validity. Set when a move changed that placement; a stale move is never planned.
    basis: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    stale_reason: Mapped[str | None] = mapped_column(Text)
    # The halves of one recommended swap share it (the number of the swap's first move in its round).
    swap_group: Mapped[int | None] = mapped_column(Integer)


class SloHistoryRow(Base):
    """One round of a pod with ``goal: slo``: per priority group its DRT, measured and predicted
    response times and damage (``groups``, a list of dicts; docs/slo.md), at vCenter's time."""

    __tablename__ = "slo_history"
    __table_args__ = (Index("ix_slo_history_pod", "pod", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pod: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime]
    round_id: Mapped[str | None] = mapped_column(String(36))  # None: the round recommended no move
    damage_before: Mapped[float] = mapped_column(Float)
    damage_after: Mapped[float] = mapped_column(Float)
    measured_damage: Mapped[float | None] = mapped_column(Float)
    groups: Mapped[list[Any]]


class PlanRow(Base):
    """A plan of moves for one pod: proposed → approved → running → succeeded/failed/cancelled."""

    __tablename__ = "plans"
    __table_args__ = (
        CheckConstraint(_one_of("state", PLAN_STATES), name="state"),
        CheckConstraint(_one_of("on_move_failure", ("continue", "stop")), name="on_move_failure"),
        Index("ix_plans_state", "state"),
        Index("ix_plans_pod", "pod", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pod: Mapped[str] = mapped_column(String(64))
    vcenter: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(128))
    approved_at: Mapped[datetime | None]
    approved_by: Mapped[str | None] = mapped_column(String(128))
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    cancel_requested: Mapped[bool] = mapped_column(Boolean)
    on_move_failure: Mapped[str] = mapped_column(String(8))
    max_moves: Mapped[int | None] = mapped_column(Integer)
    max_gb: Mapped[float | None] = mapped_column(Float)
    # No move may start at or after this moment (the end of the rebalance window that runs the plan).
    deadline: Mapped[datetime | None]
    dry_run: Mapped[bool] = mapped_column(Boolean)
    message: Mapped[str] = mapped_column(Text)
    # Optimistic concurrency: every change bumps it; a stale writer gets ConflictError.
    revision: Mapped[int] = mapped_column(Integer)

    __mapper_args__ = {"version_id_col": revision}  # noqa: RUF012 (SQLAlchemy declares it an instance attribute)


class PlanMoveRow(Base):
    """One move of a plan: pending → running → succeeded/failed/skipped, with vCenter's task and message."""

    __tablename__ = "plan_moves"
    __table_args__ = (
        UniqueConstraint("plan_id", "seq"),
        CheckConstraint(_one_of("state", MOVE_STATES), name="state"),
        CheckConstraint("progress BETWEEN 0 AND 100", name="progress"),
        Index("ix_plan_moves_disk", "vcenter", "vm", "disk_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    plan_id: Mapped[int] = mapped_column(ForeignKey("plans.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    recommendation_id: Mapped[int | None] = mapped_column(
        ForeignKey("recommendations.id", ondelete="SET NULL")
    )
    vcenter: Mapped[str] = mapped_column(String(64))
    vm: Mapped[str] = mapped_column(String(64))
    vm_name: Mapped[str] = mapped_column(String(255))
    disk_key: Mapped[int] = mapped_column(Integer)
    instance: Mapped[str] = mapped_column(String(32))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    source_datastore: Mapped[str] = mapped_column(String(64))
    target_datastore: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))
    task_id: Mapped[str | None] = mapped_column(String(64))
    progress: Mapped[int] = mapped_column(Integer)
    message: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    # The moves of both halves of one swap share it: they are judged, applied or skipped together.
    swap_group: Mapped[int | None] = mapped_column(Integer)


# --- SRP -------------------------------------------------------------------------------------------


class PredictionCheckRow(Base):
    """What an applied plan predicted for its pod, and what was measured an hour later in vCenter time.

    ``due_ts`` is vCenter's time (seconds since the epoch, as sample timestamps) at which the
    measurement is taken: the plan's end plus the delay. ``measured`` stays null until then.
    """

    __tablename__ = "prediction_checks"
    __table_args__ = (Index("ix_prediction_checks_pod", "pod", "due_ts"),)

    plan_id: Mapped[int] = mapped_column(ForeignKey("plans.id", ondelete="CASCADE"), primary_key=True)
    pod: Mapped[str] = mapped_column(String(64))
    vcenter: Mapped[str] = mapped_column(String(64))
    finished_ts: Mapped[int] = mapped_column(BigInteger)
    due_ts: Mapped[int] = mapped_column(BigInteger)
    predicted: Mapped[dict[str, Any]]
    measured: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    measured_at: Mapped[datetime | None]


class SrpPoolTreeRow(Base):
    """The current pool tree document of one scope (a pod), with its version for optimistic concurrency."""

    __tablename__ = "srp_pools"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    document: Mapped[dict[str, Any]]
    version: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]
    updated_by: Mapped[str] = mapped_column(String(128))


class SrpPoolVersionRow(Base):
    """Every version a pool tree has had (a deleted tree leaves a last version with ``deleted`` set)."""

    __tablename__ = "srp_pool_versions"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    document: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]
    updated_by: Mapped[str] = mapped_column(String(128))
    deleted: Mapped[bool] = mapped_column(Boolean)


class AppliedDiskSettingRow(Base):
    """What Basil last issued for one disk's IO allocation (reservation, limit, shares), when, outcome."""

    __tablename__ = "applied_disk_settings"

    vcenter: Mapped[str] = mapped_column(String(64), primary_key=True)
    vm: Mapped[str] = mapped_column(String(64), primary_key=True)
    disk_key: Mapped[int] = mapped_column(Integer, primary_key=True)
    instance: Mapped[str] = mapped_column(String(32))
    pool: Mapped[str] = mapped_column(String(128))
    reservation: Mapped[int] = mapped_column(BigInteger)
    limit: Mapped[int] = mapped_column(BigInteger)
    shares: Mapped[int] = mapped_column(Integer)
    shares_level: Mapped[str] = mapped_column(String(16))
    issued_at: Mapped[datetime]
    task_id: Mapped[str | None] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)


class AppliedDatastoreSettingRow(Base):
    """What Basil last issued for a datastore's SIOC (enabled, congestion threshold = L_c)."""

    __tablename__ = "applied_datastore_settings"

    vcenter: Mapped[str] = mapped_column(String(64), primary_key=True)
    datastore: Mapped[str] = mapped_column(String(64), primary_key=True)
    sioc_enabled: Mapped[bool] = mapped_column(Boolean)
    congestion_threshold_ms: Mapped[float] = mapped_column(Float)
    issued_at: Mapped[datetime]
    task_id: Mapped[str | None] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)


class VmCapacityRow(Base):
    """The capacity a VM's request trace needs for its target (Lu's RTT search), kept per VM in place
    of the trace itself: only the latest upload per VM (see :mod:`basil.store.vm_capacity`)."""

    __tablename__ = "vm_capacity"

    vcenter: Mapped[str] = mapped_column(String(64), primary_key=True)
    vm: Mapped[str] = mapped_column(String(64), primary_key=True)
    fraction: Mapped[float] = mapped_column(Float)
    bound_ms: Mapped[float] = mapped_column(Float)
    capacity_iops: Mapped[float] = mapped_column(Float)
    capacity_full_iops: Mapped[float] = mapped_column(Float)
    result: Mapped[dict[str, Any]]
    uploaded_at: Mapped[datetime]
    uploaded_by: Mapped[str] = mapped_column(String(128))


# --- operations -------------------------------------------------------------------------------------


class SettingOverrideRow(Base):
    """A part of the configuration changed at run time (through the API), kept across restarts and
    applied over the configuration file at every start; ``key`` names the part (``schedules.rebalance``)."""

    __tablename__ = "setting_overrides"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]
    updated_by: Mapped[str] = mapped_column(String(128))


class JobRunRow(Base):
    """One run of a scheduled job."""

    __tablename__ = "job_runs"
    __table_args__ = (
        CheckConstraint(_one_of("outcome", JOB_OUTCOMES), name="outcome"),
        Index("ix_job_runs_job", "job_id", "started_at"),
        Index("ix_job_runs_started", "started_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]]


class AuditRow(Base):
    """Who did what, when, from where, and how it ended."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_at", "at"),
        Index("ix_audit_log_actor", "actor", "at"),
        Index("ix_audit_log_action", "action", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime]
    actor: Mapped[str] = mapped_column(String(128))
    actor_kind: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(255))
    source: Mapped[str] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]]


class ApiTokenRow(Base):
    """An API token: its public lookup id and a salted PBKDF2 digest of its secret — never the token."""

    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint(_one_of("role", ROLES), name="role"), UniqueConstraint("lookup_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    lookup_id: Mapped[str] = mapped_column(String(16))
    salt: Mapped[bytes] = mapped_column(LargeBinary(32))
    digest: Mapped[bytes] = mapped_column(LargeBinary(64))
    iterations: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class APSchedulerJobRow(Base):
    """APScheduler 3's job table (``SQLAlchemyJobStore``), created by our migration: one schema owner.

    The column definitions match APScheduler's own, so its ``create_all(checkfirst=True)`` finds the
    table and leaves it alone; only APScheduler reads and writes it.
    """

    __tablename__ = "apscheduler_jobs"

    id: Mapped[str] = mapped_column(Unicode(191), primary_key=True)
    next_run_time: Mapped[float | None] = mapped_column(Float(25), index=True)
    job_state: Mapped[bytes] = mapped_column(LargeBinary)
