"""The actuator: dry run changes nothing, the budget is kept, Storage vMotion limits hold, QoS backend."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime

import pytest

from basil.errors import ValidationError
from basil.vcenter.actions import RelocateDisk, SetDiskIOAllocation
from basil.vcenter.actuator import ActionResult, Actuator, ActuatorParams
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.types import Inventory, IOAllocation

from .labvc import LabVC

pytestmark = pytest.mark.lab


def fresh(conn: VCenterConnection) -> Inventory:
    return fetch_inventory(conn, with_tags=False)


def test_params_report_every_problem(conn: VCenterConnection) -> None:
    with pytest.raises(ValidationError) as info:
        Actuator(conn, ActuatorParams(per_datastore=9, per_host=0, max_moves=-1, max_gb=-2, workers=0))
    assert sorted(p.field for p in info.value.problems) == [
        "max_gb",
        "max_moves",
        "per_datastore",
        "per_host",
        "workers",
    ]


def test_dry_run_reports_and_changes_nothing(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    web = inv.vm_by_name("web-1")
    actions = [
        RelocateDisk(web.moid, "scsi0:0", inv.datastore_by_name("ds-nfs").moid),
        SetDiskIOAllocation(web.moid, "scsi0:1", IOAllocation(10, 100, "low", 500)),
        RelocateDisk(web.moid, "scsi0:1", inv.datastore_by_name("ds-maint").moid),
    ]
    before = conn.requests_made
    report = Actuator(conn, ActuatorParams(dry_run=True)).run(actions, inv)
    assert conn.requests_made == before  # nothing sent to vCenter at all
    assert [r.state for r in report.results] == ["dry_run", "dry_run", "precheck_failed"]
    assert report.results[0].plan is not None
    assert report.results[0].plan["spec"]["disk"][0]["diskId"] == web.disk("scsi0:0").key
    assert "maintenance" in report.results[2].message
    assert fresh(conn).vms[web.moid] == web


def test_budget_limits_moves_and_gigabytes(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    db = inv.vm_by_name("db-1")
    nfs = inv.datastore_by_name("ds-nfs").moid
    moves = [RelocateDisk(db.moid, "scsi0:1", nfs), RelocateDisk(db.moid, "scsi1:0", nfs)]
    report = Actuator(conn, ActuatorParams(dry_run=True, max_moves=1)).run(moves, inv)
    assert [r.state for r in report.results] == ["dry_run", "skipped"]
    assert report.results[1].message == "budget: 1 moves per run"
    report = Actuator(conn, ActuatorParams(dry_run=True, max_gb=45)).run(moves, inv)
    assert [r.state for r in report.results] == ["dry_run", "skipped"]  # 40 GB fits, 40 + 10 does not
    assert report.moves == 1
    assert report.gb == pytest.approx(40)


def overlap(results: Sequence[ActionResult], key: Callable[[ActionResult], str]) -> int:
    """The largest number of actions with the same *key* running at one moment."""
    events: dict[str, list[tuple[datetime, int]]] = defaultdict(list)
    for r in results:
        assert r.started_at is not None
        assert r.finished_at is not None
        events[key(r)] += [(r.started_at, 1), (r.finished_at, -1)]
    peak = 0
    for evs in events.values():
        level = 0
        for _, step in sorted(evs, key=lambda e: (e[0], e[1])):
            level += step
            peak = max(peak, level)
    return peak


def test_per_host_limit_holds_while_moves_run_concurrently(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    web, db = inv.vm_by_name("web-1"), inv.vm_by_name("db-1")
    fast, slow, nfs = (inv.datastore_by_name(n).moid for n in ("ds-fast", "ds-slow", "ds-nfs"))
    moves = [
        RelocateDisk(web.moid, "scsi0:0", nfs),
        RelocateDisk(web.moid, "scsi0:1", fast),
        RelocateDisk(db.moid, "scsi0:0", slow),
        RelocateDisk(db.moid, "scsi0:1", nfs),
        RelocateDisk(db.moid, "scsi1:0", slow),
    ]
    report = Actuator(conn, ActuatorParams(per_host=1, workers=8)).run(moves, inv)
    assert [r.state for r in report.results] == ["succeeded"] * 5, [r.message for r in report.results]
    host_of = {web.moid: str(web.host), db.moid: str(db.host)}
    # One move at a time per host (limit 1), yet the two hosts' moves ran side by side.
    assert overlap(report.results, lambda r: host_of[r.action.vm]) == 1  # type: ignore[attr-defined]
    assert overlap(report.results, lambda r: "all") == 2
    after = fresh(conn)
    for a in moves:
        assert after.vms[a.vm].disk(a.instance).datastore == a.target


def test_qos_backend_applies_settings_through_the_actuator(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    db = inv.vm_by_name("db-1")
    settings = {
        (db.moid, "scsi0:0"): IOAllocation(0, 300, "normal", 1000),
        (db.moid, "scsi1:0"): IOAllocation(20, -1, "high", 2000),
    }
    report = Actuator(conn).apply_qos(settings, inv)
    assert report.ok
    assert report.moves == 0
    after = fresh(conn).vms[db.moid]
    assert after.disk("scsi0:0").io == settings[(db.moid, "scsi0:0")]
    assert after.disk("scsi1:0").io == settings[(db.moid, "scsi1:0")]
    assert after.disk("scsi0:1").io == db.disk("scsi0:1").io


def test_per_datastore_limit_holds(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    web, db = inv.vm_by_name("web-1"), inv.vm_by_name("db-1")
    nfs = inv.datastore_by_name("ds-nfs").moid
    moves = [RelocateDisk(web.moid, "scsi0:0", nfs), RelocateDisk(db.moid, "scsi1:0", nfs)]
    report = Actuator(conn, ActuatorParams(per_datastore=1)).run(moves, inv)
    assert [r.state for r in report.results] == ["succeeded", "succeeded"]
    # Different VMs on different hosts, but the same target: one after the other.
    assert overlap(report.results, lambda r: "ds-nfs") == 1
