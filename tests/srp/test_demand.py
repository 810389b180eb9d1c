"""Demand (SRP eq. 1-3), IO-size charging (§4) and the bottom-up aggregation with the clamp at each pool."""

from __future__ import annotations

import math

import pytest

from basil.errors import ValidationError
from basil.srp.demand import (
    DemandSnapshot,
    DiskStats,
    VmStats,
    aggregate_demand,
    charged_demand_iops,
    clamp_demand,
    demand_iops,
    demand_oio,
    io_cost,
    tree_demand,
)
from basil.srp.params import SrpParams
from basil.srp.tree import build_tree

from .builders import PARAMS, controls, demanding, pool, snapshot, vm, with_disks


def test_littles_law_units() -> None:
    # eq. 1: 200 IOPS at 40 ms keep 200 × 0.040 = 8 IOs outstanding.
    assert demand_oio(200, 40) == pytest.approx(8.0)
    # eq. 2: those 8 OIOs at L_c = 20 ms would get 8 / 0.020 = 400 IOPS.
    assert demand_iops(8.0, 20) == pytest.approx(400.0)


@pytest.mark.parametrize(
    ("demand", "r", "lim", "expected"),
    [(50, 100, 500, 100), (300, 100, 500, 300), (900, 100, 500, 500), (900, 0, math.inf, 900)],
    ids=["lifted-to-reservation", "inside", "capped-at-limit", "unlimited"],
)
def test_clamp(demand: float, r: float, lim: float, expected: float) -> None:
    assert clamp_demand(demand, r, lim) == expected  # eq. 3


@pytest.mark.parametrize(
    ("size_kb", "cost"),
    [(None, 1), (4, 1), (16, 1), (31, 1), (32, 2), (63.9, 2), (64, 3), (256, 9)],
)
def test_io_size_charging_one_extra_io_per_32kb(size_kb: float | None, cost: float) -> None:
    assert io_cost(size_kb) == cost


def test_charging_can_be_turned_off() -> None:
    on = charged_demand_iops(100, 30, 64, SrpParams(latency_threshold_ms=30))
    off = charged_demand_iops(100, 30, 64, SrpParams(latency_threshold_ms=30, io_size_charging=False))
    assert on == pytest.approx(300)
    assert off == pytest.approx(100)


def test_aggregation_clamps_at_every_pool() -> None:
    tree = build_tree(
        controls(500),
        [
            pool("capped", limit=250),
            pool("lifted", reservation=400),
            pool("outer"),
            pool("inner", parent="outer", limit=120),
        ],
        [
            vm("a", "capped"),
            vm("b", "capped"),
            vm("c", "lifted"),
            vm("d", "inner"),
            vm("e", "outer", reservation=30),
            vm("f", "inner", limit=40),
        ],
    )
    demand = tree_demand(
        tree,
        snapshot(a=demanding(200), b=demanding(150), c=demanding(100), d=demanding(100), f=demanding(70)),
        PARAMS,
    )
    by_name = {n.name: demand.clamped[n.index] for n in tree.nodes}
    assert by_name["capped"] == 250  # 350 clamped to the pool's limit
    assert by_name["lifted"] == 400  # 100 lifted to the pool's reservation
    assert by_name["f"] == 40  # a VM's own limit
    assert by_name["e"] == 30  # idle VM (no figures) lifted to its reservation
    assert by_name["inner"] == 120  # 100 + 40 clamped to 120
    assert by_name["outer"] == 150  # 120 + 30
    assert by_name["root"] == 250 + 400 + 150  # above the root's R = 500, so not lifted
    assert demand.raw[tree.nodes[0].index] == 0


def test_vm_known_by_disks_demands_their_sum_and_splits_by_demand() -> None:
    tree = build_tree(controls(), [pool("P")], [vm("x", "P")])
    demand = tree_demand(tree, snapshot(x=with_disks(("scsi0:0", 30), ("scsi0:1", 90))), PARAMS)
    index = next(n.index for n in tree.nodes if n.name == "x")
    assert demand.clamped[index] == pytest.approx(120)
    assert demand.disk_weights[index] == pytest.approx((0.25, 0.75))  # in the order of the disks


def test_idle_disks_split_equally() -> None:
    tree = build_tree(controls(), [], [vm("x")])
    demand = tree_demand(tree, snapshot(x=with_disks(("scsi0:0", 0), ("scsi0:1", 0), ("scsi0:2", 0))), PARAMS)
    assert demand.disk_weights[1] == pytest.approx((1 / 3, 1 / 3, 1 / 3))


def test_disk_leaf_takes_its_own_figures() -> None:
    tree = build_tree(
        controls(), [pool("P"), pool("Q")], [vm("x", "P", disk="scsi0:0"), vm("x", "Q", disk="scsi0:1")]
    )
    demand = tree_demand(tree, snapshot(x=with_disks(("scsi0:0", 30), ("scsi0:1", 90))), PARAMS)
    by_name = {n.name: demand.clamped[n.index] for n in tree.nodes}
    assert by_name["x/scsi0:0"] == pytest.approx(30)
    assert by_name["x/scsi0:1"] == pytest.approx(90)
    assert by_name["P"] == pytest.approx(30)


def test_aggregate_demand_on_given_leaf_values() -> None:
    tree = build_tree(controls(), [pool("P", limit=10)], [vm("a", "P"), vm("b", "P")])
    got = aggregate_demand(tree, [0.0, 0.0, 8.0, 7.0])
    assert got == [10.0, 10.0, 8.0, 7.0]


def test_snapshot_problems_are_all_reported() -> None:
    bad = DemandSnapshot(
        {
            "a": VmStats(iops=-1, latency_ms=math.nan),
            "b": VmStats(disks=(DiskStats("d", 1, 1, io_size_kb=0), DiskStats("d", 1, 1))),
        }
    )
    with pytest.raises(ValidationError) as caught:
        bad.validate()
    fields = [p.field for p in caught.value.problems]
    assert fields == ["a.iops", "a.latency_ms", "b.disks.d.io_size_kb", "b.disks.d"]


@pytest.mark.parametrize("size_kb", [None, 4, 32, 100])
@pytest.mark.parametrize("threshold", [5.0, 20.0, 30.0])
def test_charged_demand_is_eq1_then_eq2_then_charging(size_kb: float | None, threshold: float) -> None:
    params = SrpParams(latency_threshold_ms=threshold)
    expected = demand_iops(demand_oio(250, 17.5), threshold) * io_cost(size_kb)
    assert charged_demand_iops(250, 17.5, size_kb, params) == pytest.approx(expected, rel=1e-12)
