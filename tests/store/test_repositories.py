"""The smaller repositories: inventory, models, recommendations, pools, settings, jobs, audit, retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from basil.config import RetentionConfig
from basil.errors import ConflictError, NotFoundError
from basil.store import (
    Store,
    applied,
    audit,
    fits,
    inventory,
    job_runs,
    overrides,
    recommendations,
    slo_history,
    srp_pools,
)
from basil.store.retention import apply_retention
from basil.store.samples import DiskRef

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def test_inventory_versions_and_prune(store: Store) -> None:
    with store.session() as session:
        assert inventory.save_inventory(session, "vc", {"hosts": 1}, NOW - timedelta(days=9)) == 1
        assert inventory.save_inventory(session, "vc", {"hosts": 2}, NOW - timedelta(days=8)) == 2
        assert inventory.save_inventory(session, "other", {"hosts": 7}, NOW - timedelta(days=30)) == 1
    with store.session() as session:
        assert inventory.prune_inventory(session, NOW - timedelta(days=7)) == 1
    with store.read_session() as session:
        latest = inventory.latest_inventory(session, "vc")
        assert latest is not None
        assert (latest.version, latest.document) == (2, {"hosts": 2})
        assert latest.taken_at == NOW - timedelta(days=8)
        assert inventory.latest_inventory(session, "other") is not None  # the latest is always kept
        assert inventory.latest_inventory(session, "missing") is None


def disk_model(disk: DiskRef, at: datetime, oio: float) -> fits.DiskModel:
    return fits.DiskModel(
        disk, at, at - timedelta(days=1), at, oio, 8.0, 70.0, 50.0, 123.0, 4320, ("x",), {"n": 1}
    )


def test_models_keep_history_and_one_current(store: Store) -> None:
    disk = DiskRef("vc", "vm-1", "scsi0:0")
    with store.session() as session:
        fits.save_disk_models(session, [disk_model(disk, NOW - timedelta(hours=1), 2.0)])
        fits.save_disk_models(session, [disk_model(disk, NOW, 3.0)])
        ds = fits.DatastoreModel(
            "vc", "ds-1", NOW, NOW - timedelta(days=1), NOW, 0.5, 2.0, 1.0, 0.9, 500, 20, "good"
        )
        fits.save_datastore_models(session, [ds])
        fits.save_datastore_models(session, [ds])
    with store.read_session() as session:
        current = fits.current_disk_models(session)
        history = fits.disk_model_history(session, disk)
        assert fits.current_datastore_models(session)[("vc", "ds-1")].p == 0.5
        assert len(fits.datastore_model_history(session, "vc", "ds-1")) == 2
    assert current[disk].oio == 3.0
    assert current[disk].flags == ("x",)
    assert [m.oio for m in history] == [3.0, 2.0]
    with store.session() as session:
        assert fits.prune_models(session, NOW + timedelta(days=1)) == 2  # the two non-current ones


def test_only_the_current_device_model_keeps_the_next_fit_s_memory(store: Store) -> None:
    def model(p: float) -> fits.DatastoreModel:
        details = {
            "summary": f"P = {p}",
            "disks": ["vm-1/scsi0:1"],
            "moves_out": {"task-1": ["vm-2", "scsi0:1", "ds-2"]},
        }
        return fits.DatastoreModel(
            "vc", "ds-1", NOW, NOW - timedelta(days=1), NOW, p, 1 / p, 1.0, 0.9, 50, 0, "ok", details
        )

    with store.session() as session:
        fits.save_datastore_models(session, [model(1.0)])
        fits.save_datastore_models(session, [model(2.0)])
    with store.read_session() as session:
        current, older = fits.datastore_model_history(session, "vc", "ds-1")
    assert current.details["disks"] == ["vm-1/scsi0:1"]
    assert "task-1" in current.details["moves_out"]
    assert older.details == {"summary": "P = 1.0"}


def spec(disk_key: int) -> recommendations.RecommendationSpec:
    return recommendations.RecommendationSpec(
        "vc", "vm-1", disk_key, "ds-1", "ds-2", 10 * 2**30, predicted={"gain": 0.2}
    )


def test_recommendation_rounds(store: Store) -> None:
    with store.session() as session:
        first = recommendations.save_round(session, "gold", [spec(1), spec(2)], NOW)
        second = recommendations.save_round(session, "gold", [spec(3)], NOW)
    with store.read_session() as session:
        assert [r.spec.disk_key for r in recommendations.open_recommendations(session, "gold")] == [3]
        assert recommendations.get_recommendation(session, first[0].id).status == "superseded"
    with pytest.raises(ConflictError, match="no longer open"), store.session() as session:
        recommendations.dismiss(session, [first[0].id])
    with store.session() as session:
        recommendations.dismiss(session, [second[0].id])
    with pytest.raises(NotFoundError), store.session() as session:
        recommendations.mark_planned(session, [9999], 1)


def test_pool_trees_are_versioned(store: Store) -> None:
    with store.session() as session:
        v1 = srp_pools.put_pools(session, "gold", {"root": {"r": 100}}, expected_version=0, by="alice")
    with pytest.raises(ConflictError, match=r"exists|version"), store.session() as session:
        srp_pools.put_pools(session, "gold", {"root": {}}, expected_version=0, by="eve")
    with store.session() as session:
        v2 = srp_pools.put_pools(session, "gold", {"root": {"r": 200}}, expected_version=v1.version, by="bob")
    with pytest.raises(ConflictError, match="someone changed it"), store.session() as session:
        srp_pools.put_pools(session, "gold", {"root": {"r": 1}}, expected_version=v1.version, by="eve")
    with store.read_session() as session:
        assert srp_pools.get_pools(session, "gold").document == {"root": {"r": 200}}
    with store.session() as session:
        srp_pools.delete_pools(session, "gold", expected_version=v2.version, by="bob")
    with store.read_session() as session:
        assert [p.version for p in srp_pools.pool_history(session, "gold")] == [3, 2, 1]
        with pytest.raises(NotFoundError):
            srp_pools.get_pools(session, "gold")
    with store.session() as session:  # re-created: versions keep counting up
        assert srp_pools.put_pools(session, "gold", {}, expected_version=0, by="bob").version == 4


def test_applied_settings_keep_the_latest(store: Store) -> None:
    with store.session() as session:
        for shares in (1000, 2000):
            applied.record_disk_settings(
                session,
                [
                    applied.DiskSetting(
                        "vc", "vm-1", 2000, "scsi0:0", "gold/a", 100, -1, shares, "custom", NOW
                    )
                ],
            )
        applied.record_datastore_settings(session, [applied.DatastoreSetting("vc", "ds-1", True, 30.0, NOW)])
    with store.read_session() as session:
        assert applied.disk_settings(session)[("vc", "vm-1", 2000)].shares == 2000
        assert applied.datastore_settings(session, "vc")[("vc", "ds-1")].congestion_threshold_ms == 30.0


def test_job_runs(store: Store) -> None:
    with store.session() as session:
        run = job_runs.start_run(session, "collect", NOW)
        job_runs.finish_run(session, run, "succeeded", "9200 samples", details={"samples": 9200}, now=NOW)
        dangling = job_runs.start_run(session, "model", NOW)
    with pytest.raises(ConflictError), store.session() as session:
        job_runs.finish_run(session, run, "failed")
    with store.session() as session:
        assert job_runs.abandon_running(session) == 1
    with store.read_session() as session:
        last = job_runs.last_runs(session)
        assert last["collect"].details == {"samples": 9200}
        assert last["model"].id == dangling
        assert last["model"].outcome == "failed"
        assert job_runs.get_run(session, run).message == "9200 samples"
        with pytest.raises(NotFoundError):
            job_runs.get_run(session, dangling + 1)


def test_audit(store: Store) -> None:
    with store.session() as session:
        audit.record(
            session, audit.AuditEntry("alice", "token", "plan.approve", "plan/1", "10.0.0.5", "ok", at=NOW)
        )
        audit.record(
            session, audit.AuditEntry("eve", "token", "plan.cancel", "plan/1", "10.0.0.6", "denied", at=NOW)
        )
        audit.record(session, audit.AuditEntry("cli", "cli", "token.create", "token/x", "cli", "ok", at=NOW))
    with store.read_session() as session:
        assert [e.actor for e in audit.query(session, action="plan.")] == ["eve", "alice"]
        assert audit.query(session, actor="eve")[0].outcome == "denied"
        assert len(audit.query(session, since=NOW + timedelta(seconds=1))) == 0


def test_retention_pass(store: Store) -> None:
    old = NOW - timedelta(days=400)
    with store.session() as session:
        audit.record(session, audit.AuditEntry("a", "cli", "x", "y", "cli", "ok", at=old))
        audit.record(session, audit.AuditEntry("a", "cli", "x", "y", "cli", "ok", at=NOW))
        run = job_runs.start_run(session, "collect", old)
        job_runs.finish_run(session, run, "succeeded", now=old)
        counts = apply_retention(session, RetentionConfig(), NOW)
    assert counts["audit_log"] == 1
    assert counts["job_runs"] == 1
    assert counts["disk/raw"] == 0


def test_setting_overrides_are_kept_replaced_and_forgotten(store: Store) -> None:
    with store.session() as session:
        assert overrides.get_override(session, "schedules.rebalance") is None
        overrides.put_override(session, "schedules.rebalance", {"cron": "0 1 * * sun"}, by="ann", now=NOW)
    with store.session() as session:
        later = NOW + timedelta(minutes=5)
        overrides.put_override(
            session, "schedules.rebalance", {"cron": "0 3 * * sun", "duration": "2h"}, by="bob", now=later
        )
    with store.read_session() as session:
        kept = overrides.get_override(session, "schedules.rebalance")
        assert kept is not None
        assert kept.value == {"cron": "0 3 * * sun", "duration": "2h"}
        assert (kept.updated_by, kept.updated_at) == ("bob", later)
    with store.session() as session:
        assert overrides.delete_override(session, "schedules.rebalance") is True
        assert overrides.delete_override(session, "schedules.rebalance") is False
    with store.read_session() as session:
        assert overrides.get_override(session, "schedules.rebalance") is None


def test_slo_history_points_window_and_retention(store: Store) -> None:
    section = {
        "damage_before": 10.0,
        "damage_after": 2.0,
        "groups": [
            {"name": "gold", "drt_ms": 2.0, "measured_ms": 5.0, "measured_damage": 4.5, "iops": 100.0},
            {"name": "bronze", "drt_ms": 40.0, "measured_ms": None, "measured_damage": None},
        ],
    }
    with store.session() as session:
        for days in (100, 2, 1):
            slo_history.save_point(session, "tiers", NOW - timedelta(days=days), None, section)
        slo_history.save_point(session, "other", NOW, "r", section)
        found = slo_history.points(session, "tiers", since=NOW - timedelta(days=2))
        assert [p.at for p in found] == [NOW - timedelta(days=2), NOW - timedelta(days=1)]
        assert found[0].measured_damage == 4.5  # the groups' measured damage, where measured
        assert found[0].groups[0]["name"] == "gold"
        assert "iops" not in found[0].groups[0]  # only the fields of the series
        counts = apply_retention(session, RetentionConfig(), NOW)
        assert counts["slo_history"] == 1  # older than the 90 days hourly rollups are kept
        assert len(slo_history.points(session, "tiers")) == 2
        assert len(slo_history.points(session, "tiers", until=NOW - timedelta(days=2))) == 1
