"""The collection's wire path (requests written and answers read without pyVmomi's objects) stores exactly
what pyVmomi's own QueryPerf path stores: the same keys, sample times and values, raw and rolled up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from basil.app.collection import CollectionWriter
from basil.store import Store
from basil.store.models import Disk, DiskRollup, DiskSample, HostDatastore, HostDatastoreSample
from basil.store.samples import roll_up
from basil.vcenter import perf, perf_wire
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.perf import CollectorParams, PerfCollector
from tests.app.conftest import SCENARIOS
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.2.yaml", speed=0) as lab:
        yield lab


def stored(store: Store) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every raw sample with its series' key, in a fixed order (ids differ between stores)."""
    disk_columns = [c for c in DiskSample.__table__.columns if c.name != "disk_id"]
    host_columns = [c for c in HostDatastoreSample.__table__.columns if c.name != "hd_id"]
    with store.read_session() as session:
        disks = session.execute(
            select(Disk.vcenter, Disk.vm, Disk.instance, *disk_columns).join(
                Disk, Disk.id == DiskSample.disk_id
            )
        ).all()
        hosts = session.execute(
            select(HostDatastore.vcenter, HostDatastore.host, HostDatastore.datastore, *host_columns).join(
                HostDatastore, HostDatastore.id == HostDatastoreSample.hd_id
            )
        ).all()
    return sorted(tuple(r) for r in disks), sorted(tuple(r) for r in hosts)


def rollups(store: Store) -> list[tuple[Any, ...]]:
    columns = [c for c in DiskRollup.__table__.columns if c.name != "disk_id"]
    with store.read_session() as session:
        rows = session.execute(
            select(Disk.vm, Disk.instance, *columns).join(Disk, Disk.id == DiskRollup.disk_id)
        )
        return sorted(tuple(r) for r in rows)


def test_the_wire_path_stores_what_pyvmomis_path_stores(
    lab: LabProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab.control("POST", "reset")
    lab.set_speed(0)
    lab.step(2)
    answered: list[bool] = []
    real = perf_wire.query_perf_csv

    def counted(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(perf, "query_perf_csv", counted)
    stores = {name: Store(f"sqlite:///{tmp_path / name}.db") for name in ("wire", "pyvmomi")}
    for store in stores.values():
        store.upgrade()
    with VCenterConnection(lab.connection_params()) as conn:
        inventory = fetch_inventory(conn, with_tags=False)
        # Small windows, so that the catch-up below runs in closed windows (start and end) over rounds.
        collectors = {
            "wire": PerfCollector(conn, CollectorParams(window_samples=3)),
            "pyvmomi": PerfCollector(conn, CollectorParams(window_samples=3, fast_parse=False)),
        }
        for steps in (0, 1, 1, 14):  # first look (newest sample only), two regular cycles, a catch-up
            if steps:
                lab.step(steps)
            for name, collector in collectors.items():
                report = collector.collect(inventory, sink=CollectionWriter(stores[name], "lab"))
                assert report.errors == ()
    assert answered, "the wire path was not taken"
    assert all(answered), "the wire path fell back to pyVmomi"
    wire, pyvmomi = stored(stores["wire"]), stored(stores["pyvmomi"])
    assert wire[0]
    assert wire[1]
    per_disk = {(r[1], r[2]) for r in wire[0]}
    assert len(wire[0]) >= 15 * len(per_disk)  # 1 + 1 + 1 + 14 intervals, less the publication grace
    assert wire == pyvmomi
    for store in stores.values():
        with store.session() as session:
            roll_up(session, max(r[3] for r in wire[0]) + 3600, grace_s=0)
    assert rollups(stores["wire"])
    assert rollups(stores["wire"]) == rollups(stores["pyvmomi"])
