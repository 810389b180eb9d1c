"""The vSphere mapping: IOPS and -1 for unlimited, shares in vSphere's range and in proportion per datastore,
and the hysteresis that keeps small changes from being re-issued."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.errors import ValidationError
from basil.srp.engine import DiskAllocation, allocate
from basil.srp.tree import build_tree
from basil.srp.vsphere_allocation import (
    VSPHERE_SHARES_MAX,
    VSPHERE_SHARES_MIN,
    VSPHERE_UNLIMITED,
    DiskKey,
    StorageIOAllocation,
    VSphereAllocationParams,
    changes,
    vsphere_allocations,
)

from .builders import INF, PARAMS, controls, pool, snapshot, vm, with_disks


def disk(
    name: str,
    entitlement: float,
    datastore: str = "ds1",
    reservation: float = 0.0,
    limit: float = INF,
) -> DiskAllocation:
    return DiskAllocation(
        vm=name,
        disk="scsi0:0",
        datastore=datastore,
        host="h1",
        leaf=False,
        reservation=reservation,
        limit=limit,
        shares=0.0,
        entitlement=entitlement,
        demand=0.0,
    )


def test_reservation_limit_and_unlimited() -> None:
    got = vsphere_allocations(
        [disk("a", 100, reservation=120.7, limit=300.2), disk("b", 50, limit=INF), disk("c", 0, limit=0.0)]
    )
    assert got[DiskKey("a", "scsi0:0")].reservation == 120  # rounded down: never promise more
    assert got[DiskKey("a", "scsi0:0")].limit == 301  # rounded up
    assert got[DiskKey("b", "scsi0:0")].limit == VSPHERE_UNLIMITED == -1
    # A limit of 0 (an idle disk capped at its demand) would keep it from ever showing demand again.
    assert got[DiskKey("c", "scsi0:0")].limit == VSphereAllocationParams().limit_floor_iops


def test_shares_follow_entitlements_within_each_datastore() -> None:
    got = vsphere_allocations(
        [
            disk("a", 1000, "ds1"),
            disk("b", 500, "ds1"),
            disk("c", 250, "ds1"),
            disk("x", 10, "ds2"),
            disk("y", 5, "ds2"),
        ]
    )
    shares = {key.vm: value.shares for key, value in got.items()}
    # Each datastore is scaled on its own: its largest entitlement gets the top of the range.
    assert shares == {"a": 4000, "b": 2000, "c": 1000, "x": 4000, "y": 2000}


def test_shares_are_clamped_into_the_vsphere_range() -> None:
    got = vsphere_allocations([disk("big", 10_000), disk("tiny", 1), disk("idle", 0)])
    shares = {key.vm: value.shares for key, value in got.items()}
    assert shares == {"big": VSPHERE_SHARES_MAX, "tiny": VSPHERE_SHARES_MIN, "idle": VSPHERE_SHARES_MIN}


def test_a_datastore_with_no_entitlement_gets_normal_shares() -> None:
    got = vsphere_allocations([disk("a", 0), disk("b", 0)])
    assert {v.shares for v in got.values()} == {1000}


@settings(max_examples=200, deadline=None)
@given(
    entitlements=st.lists(st.floats(0, 1e5), min_size=1, max_size=30),
    datastores=st.lists(st.sampled_from(["ds1", "ds2", "ds3"]), min_size=30, max_size=30),
)
def test_shares_in_range_and_proportional_within_a_datastore(
    entitlements: list[float], datastores: list[str]
) -> None:
    disks = [disk(f"vm{i}", e, datastores[i]) for i, e in enumerate(entitlements)]
    got = vsphere_allocations(disks)
    by_vm = {key.vm: value.shares for key, value in got.items()}
    for d in disks:
        assert VSPHERE_SHARES_MIN <= by_vm[d.vm] <= VSPHERE_SHARES_MAX
    for ds in set(datastores):
        members = [d for d in disks if d.datastore == ds and d.allocation.entitlement > 0]
        if not members:
            continue
        top = max(d.allocation.entitlement for d in members)
        for d in members:
            exact = VSPHERE_SHARES_MAX * d.allocation.entitlement / top
            if exact >= VSPHERE_SHARES_MIN:
                # Unclamped shares are the entitlement ratio, up to rounding to an integer.
                assert abs(by_vm[d.vm] - exact) <= 0.5 + 1e-9
            # Order is kept everywhere, clamping only merges the smallest.
            for other in members:
                if d.allocation.entitlement >= other.allocation.entitlement:
                    assert by_vm[d.vm] >= by_vm[other.vm]


def test_mapping_an_engine_result() -> None:
    tree = build_tree(
        controls(400), [pool("gold", shares=3000), pool("bronze")], [vm("a", "gold"), vm("b", "bronze")]
    )
    demand = snapshot(a=with_disks(("scsi0:0", 600), host="h1"), b=with_disks(("scsi0:0", 600), host="h2"))
    result = allocate(tree, demand, 800, PARAMS)
    got = vsphere_allocations(result.disks)
    a, b = got[DiskKey("a", "scsi0:0")], got[DiskKey("b", "scsi0:0")]
    assert (a.reservation, b.reservation) == (300, 100)  # R-divvy 400 in 3:1
    assert (a.shares, b.shares) == (4000, 1333)  # entitlements 600 : 200
    assert a.limit == b.limit == VSPHERE_UNLIMITED


CURRENT = StorageIOAllocation(reservation=1000, limit=2000, shares=2000)


@pytest.mark.parametrize(
    ("desired", "reissued"),
    [
        pytest.param(StorageIOAllocation(1000, 2000, 2000), False, id="same"),
        pytest.param(StorageIOAllocation(1090, 2150, 2150), False, id="all-within-10-percent"),
        pytest.param(StorageIOAllocation(1200, 2000, 2000), True, id="reservation-moved"),
        pytest.param(StorageIOAllocation(1000, 1700, 2000), True, id="limit-moved"),
        pytest.param(StorageIOAllocation(1000, 2000, 2400), True, id="shares-moved"),
        pytest.param(StorageIOAllocation(1000, -1, 2000), True, id="became-unlimited"),
    ],
)
def test_hysteresis(desired: StorageIOAllocation, reissued: bool) -> None:
    key = DiskKey("vm", "scsi0:0")
    found = changes({key: desired}, {key: CURRENT}, VSphereAllocationParams(hysteresis=0.10))
    assert bool(found) is reissued
    if reissued:
        assert found[0].desired == desired, "a re-issued disk gets all three new values"
        assert found[0].current == CURRENT


def test_hysteresis_has_an_iops_floor_for_small_values() -> None:
    key = DiskKey("vm", "scsi0:0")
    current = StorageIOAllocation(reservation=20, limit=40, shares=1000)
    params = VSphereAllocationParams(hysteresis=0.10, hysteresis_iops=10)
    assert changes({key: StorageIOAllocation(28, 48, 1000)}, {key: current}, params) == []
    assert changes({key: StorageIOAllocation(31, 40, 1000)}, {key: current}, params) != []


def test_unknown_disks_are_always_issued_and_described() -> None:
    key = DiskKey("vm", "scsi0:0")
    found = changes({key: CURRENT}, {}, datastores={key: "ds1"})
    assert len(found) == 1
    assert found[0].describe() == ("vm/scsi0:0 on ds1: unknown -> reservation 1000, limit 2000, shares 2000")
    unlimited = changes({key: StorageIOAllocation(0, -1, 1000)}, {key: CURRENT})
    assert "limit unlimited" in unlimited[0].describe()


def test_zero_hysteresis_reissues_any_change() -> None:
    key = DiskKey("vm", "scsi0:0")
    params = VSphereAllocationParams(hysteresis=0.0, hysteresis_iops=0.0)
    assert changes({key: StorageIOAllocation(1001, 2000, 2000)}, {key: CURRENT}, params) != []


def test_params_report_every_bad_field() -> None:
    with pytest.raises(ValidationError) as caught:
        VSphereAllocationParams(hysteresis=1.5, hysteresis_iops=math.nan, limit_floor_iops=0).validate()
    assert [p.field for p in caught.value.problems] == ["hysteresis", "hysteresis_iops", "limit_floor_iops"]
