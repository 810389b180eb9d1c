"""Migrations: revision 0001 creates exactly the models' schema, on SQLite and on PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

from basil.store import Store
from basil.store.migrate import current_revision, downgrade, head_revision, history, upgrade, upgrade_sql
from basil.store.models import Base, RollupState


def test_upgrade_creates_the_models_schema(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        assert current_revision(store.engine) is None
        store.upgrade()
        assert current_revision(store.engine) == head_revision()
        with store.engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        assert diff == [], f"migration and models disagree: {diff}"
        assert set(Base.metadata.tables) <= set(store.table_names())
    finally:
        store.dispose()


def test_rollup_state_rows_exist_from_the_start(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        store.upgrade()
        with store.read_session() as session:
            rows = [
                (kind, level) for kind, level in session.execute(select(RollupState.kind, RollupState.level))
            ]
        assert sorted(rows) == [
            ("disk", 300),
            ("disk", 3600),
            ("host_datastore", 300),
            ("host_datastore", 3600),
        ]
    finally:
        store.dispose()


def test_upgrade_is_idempotent_and_downgrade_removes_everything(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        store.upgrade()
        store.upgrade()
        downgrade(store.engine, "base")
        remaining = set(inspect(store.engine).get_table_names()) - {"alembic_version"}
        assert remaining == set()
        store.upgrade()
        assert current_revision(store.engine) == head_revision()
    finally:
        store.dispose()


def test_history_names_the_revisions_in_order() -> None:
    assert [rev for rev, _ in history()] == [
        "0001",
        "0002",
        "0003_latency_us",
        "0004",
        "0005",
        "0006",
        "0007",
    ]


def test_offline_sql_for_a_dba() -> None:
    sql = upgrade_sql("postgresql+psycopg://basil@db/basil")
    assert "CREATE TABLE plans" in sql
    assert "CREATE TABLE apscheduler_jobs" in sql
    assert "CREATE TABLE setting_overrides" in sql


def test_0002_upgrades_a_store_of_0001_keeping_its_rows(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        upgrade(store.engine, "0001")
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE rollup_state SET watermark = 42 WHERE kind = 'disk' AND level = 300"))
        assert "setting_overrides" not in store.table_names()
        upgrade(store.engine, "0002")
        assert current_revision(store.engine) == "0002"
        assert "setting_overrides" in store.table_names()
        with store.read_session() as session:
            kept = session.execute(
                select(RollupState.watermark).where(RollupState.kind == "disk", RollupState.level == 300)
            ).scalar_one()
        assert kept == 42
        downgrade(store.engine, "0001")
        assert "setting_overrides" not in store.table_names()
    finally:
        store.dispose()


def test_0003_adds_the_microsecond_read_latency_keeping_samples(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        upgrade(store.engine, "0002")
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO disks (id, vcenter, vm, instance, first_seen, last_seen) "
                    "VALUES (1, 'vc', 'vm-1', 'scsi0:1', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO disk_samples (disk_id, ts, read_iops, write_iops, read_oio, write_oio, "
                    "read_latency_ms, write_latency_ms, read_io_size_kb, write_io_size_kb) "
                    "VALUES (1, 100, 10, 5, 1, 1, 2, 1, 8, 8)"
                )
            )
        columns = {c["name"] for c in inspect(store.engine).get_columns("disk_samples")}
        assert "read_latency_us" not in columns
        upgrade(store.engine, "0003_latency_us")
        columns = {c["name"] for c in inspect(store.engine).get_columns("disk_samples")}
        assert "read_latency_us" in columns
        with store.engine.connect() as conn:
            row = conn.execute(text("SELECT read_latency_ms, read_latency_us FROM disk_samples")).one()
        assert tuple(row) == (2.0, None)
        downgrade(store.engine, "0002")
        assert "read_latency_us" not in {c["name"] for c in inspect(store.engine).get_columns("disk_samples")}
    finally:
        store.dispose()


def test_sqlite_pragmas(tmp_path: object) -> None:
    store = Store(f"sqlite:///{tmp_path}/p.db")
    try:
        with store.engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    finally:
        store.dispose()


def test_0004_keeps_recommendations_and_adds_prediction_checks(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        upgrade(store.engine, "0003_latency_us")
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO recommendations (round_id, pod, vcenter, created_at, reason, vm, vm_name, "
                    "disk_key, instance, size_bytes, source_datastore, target_datastore, predicted, status) "
                    "VALUES ('r1', 'pod', 'lab', '2026-11-25 10:00:00+00:00', 'balanceDatastoreIOLoad', "
                    "'vm-1', 'a', 2000, 'scsi0:0', 1, 'datastore-1', 'datastore-2', '{}', 'open')"
                )
            )
        assert "prediction_checks" not in store.table_names()
        upgrade(store.engine, "0004")
        assert "prediction_checks" in store.table_names()
        with store.engine.connect() as conn:
            row = conn.execute(text("SELECT round_id, basis, stale_reason FROM recommendations")).one()
        assert tuple(row) == ("r1", None, None)
        downgrade(store.engine, "0003_latency_us")
        assert "prediction_checks" not in store.table_names()
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT round_id FROM recommendations")).scalar_one() == "r1"
    finally:
        store.dispose()


def test_0005_adds_swap_groups_keeping_recommendations_and_plan_moves(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        upgrade(store.engine, "0004")
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO recommendations (round_id, pod, vcenter, created_at, reason, vm, vm_name, "
                    "disk_key, instance, size_bytes, source_datastore, target_datastore, predicted, status) "
                    "VALUES ('r1', 'pod', 'lab', '2026-11-25 10:00:00+00:00', 'balanceDatastoreIOLoad', "
                    "'vm-1', 'a', 2000, 'scsi0:0', 1, 'datastore-1', 'datastore-2', '{}', 'open')"
                )
            )
        upgrade(store.engine, "0005")
        for table in ("recommendations", "plan_moves"):
            assert "swap_group" in {c["name"] for c in inspect(store.engine).get_columns(table)}
        with store.engine.connect() as conn:
            row = conn.execute(text("SELECT round_id, swap_group FROM recommendations")).one()
        assert tuple(row) == ("r1", None)
        downgrade(store.engine, "0004")
        for table in ("recommendations", "plan_moves"):
            assert "swap_group" not in {c["name"] for c in inspect(store.engine).get_columns(table)}
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT round_id FROM recommendations")).scalar_one() == "r1"
    finally:
        store.dispose()


def test_0006_adds_vm_capacity_and_removes_it_again(empty_store_url: str) -> None:
    store = Store(empty_store_url)
    try:
        upgrade(store.engine, "0005")
        assert "vm_capacity" not in store.table_names()
        upgrade(store.engine, "0006")
        assert "vm_capacity" in store.table_names()
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO vm_capacity (vcenter, vm, fraction, bound_ms, capacity_iops, "
                    "capacity_full_iops, result, uploaded_at, uploaded_by) VALUES ('lab', 'vm-1', 0.95, 10, "
                    "120, 300, '{}', '2026-11-26 00:00:00+00:00', 'op')"
                )
            )
        downgrade(store.engine, "0005")
        assert "vm_capacity" not in store.table_names()
    finally:
        store.dispose()
