"""Plain data of the adapter: validation, derived figures, JSON round trip, no pyVmomi import."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from basil.errors import NotFoundError
from basil.vcenter.types import (
    DiskSample,
    HostDatastoreSample,
    Inventory,
    IOAllocation,
    datastore_uuid_from_url,
)

from .builders import build_inventory


def test_io_allocation_reports_every_problem_at_once() -> None:
    problems = IOAllocation(reservation=-5, limit=0, shares_level="huge", shares=-1).validate("io")
    fields = sorted(p.field for p in problems)
    assert fields == ["io.limit", "io.reservation", "io.shares", "io.shares_level"]


@pytest.mark.parametrize(
    ("io", "field"),
    [
        pytest.param(
            IOAllocation(reservation=500, limit=100), "io.reservation", id="reservation-above-limit"
        ),
        pytest.param(IOAllocation(shares_level="high", shares=1000), "io.shares", id="level-disagrees"),
    ],
)
def test_io_allocation_inconsistent_settings(io: IOAllocation, field: str) -> None:
    assert [p.field for p in io.validate()] == [field]


def test_io_allocation_valid_and_from_share_count() -> None:
    assert IOAllocation(reservation=100, limit=500).validate() == []
    assert IOAllocation.with_shares(0, -1, 2000) == IOAllocation(0, -1, "high", 2000)
    assert IOAllocation.with_shares(0, -1, 1234) == IOAllocation(0, -1, "custom", 1234)
    assert IOAllocation.with_shares(0, -1, "low").shares == 500


def test_datastore_uuid_is_the_last_element_of_its_url() -> None:
    assert datastore_uuid_from_url("ds:///vmfs/volumes/5f1a-22b3/") == "5f1a-22b3"
    assert datastore_uuid_from_url("") == ""


def test_inventory_round_trips_through_json() -> None:
    inv = build_inventory()
    doc = json.loads(json.dumps(inv.to_dict()))
    back = Inventory.from_dict(doc)
    assert back == inv
    assert doc["datastores"][0]["uuid"] == "datastore-1-uuid"


def test_inventory_lookups() -> None:
    inv = build_inventory()
    assert inv.vm_by_name("vm2").moid == "vm-2"
    assert inv.datastores_by_uuid()["datastore-2-uuid"] == "datastore-2"
    assert inv.tagged("basil/gold") == ("datastore-2", "vm-1")
    assert [t.path for t in inv.tags_of("vm-1")] == ["basil/gold"]
    assert inv.vm("vm-1").disk("scsi0:1").key == 2001
    with pytest.raises(NotFoundError, match="vm-9"):
        inv.vm("vm-9")
    with pytest.raises(NotFoundError, match=r"scsi0:7"):
        inv.vm("vm-1").disk("scsi0:7")


def test_disk_sample_derived_figures() -> None:
    s = DiskSample(
        vm="vm-1",
        instance="scsi0:0",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        interval_s=20,
        read_iops=300,
        write_iops=100,
        read_latency_ms=4,
        write_latency_ms=8,
        read_oio=2,
        write_oio=1,
        read_io_size_kb=8,
        write_io_size_kb=64,
    )
    assert s.iops == 400
    assert s.oio == 3
    assert s.read_pct == 75
    assert s.latency_ms == pytest.approx((4 * 300 + 8 * 100) / 400)
    assert s.io_size_kb == pytest.approx((8 * 300 + 64 * 100) / 400)
    assert s.disk_id == "vm-1:scsi0:0"
    assert DiskSample(vm="v", instance="i", timestamp=s.timestamp, interval_s=20).iops is None


def test_host_datastore_sample_latency_is_iops_weighted() -> None:
    s = HostDatastoreSample(
        host="host-1",
        datastore="datastore-1",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        interval_s=20,
        read_iops=100,
        write_iops=300,
        read_latency_ms=10,
        write_latency_ms=2,
        read_oio=1,
        write_oio=0.5,
    )
    assert s.latency_ms == pytest.approx(4.0)
    assert s.oio == 1.5


def test_types_and_errors_do_not_load_pyvmomi() -> None:
    code = (
        "import sys, basil.vcenter.types, basil.vcenter.errors; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyVmomi', 'pyVim', 'vmware', 'com')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
