"""The pool tree: layout, effective values, and every validation problem, reported all at once."""

from __future__ import annotations

import math

import pytest

from basil.errors import ValidationError
from basil.srp.tree import (
    SHARE_LEVELS,
    Controls,
    LeafSpec,
    NodeKind,
    PoolSpec,
    build_tree,
    format_iops,
    parse_shares,
)

from .builders import INF, controls, pool, vm


def problems_of(
    root: Controls,
    pools: list[PoolSpec],
    leaves: list[LeafSpec],
    reservable: float | None = None,
) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        build_tree(root, pools, leaves, reservable)
    return [str(p) for p in caught.value.problems]


def test_tree_is_laid_out_parents_first_with_effective_values() -> None:
    tree = build_tree(
        controls(1000),
        [pool("P", reservation=100, limit=800), pool("Q", parent="P", limit=300)],
        [vm("a", "P", reservation=200), vm("b", "Q", reservation=50, limit=100), vm("c", "Q", limit=150)],
    )
    names = [n.name for n in tree.nodes]
    assert names[0] == "root"
    for node in tree.nodes[1:]:
        assert node.parent < node.index, "a parent always comes before its children"
    index = {n.name: n.index for n in tree.nodes}
    # P reserves 100 itself, but its children are promised 200 + 50: the effective reservation covers them.
    assert tree.reservation[index["P"]] == 250
    assert tree.reservation[index["Q"]] == 50
    # Q's effective user limit is min(300, 100 + 150); P's min(800, unlimited a + 250).
    assert tree.user_limit[index["Q"]] == 250
    assert tree.user_limit[index["P"]] == 800
    assert tree.nodes[index["a"]].kind is NodeKind.VM
    assert tree.vm_names() == {"a", "b", "c"}


def test_disk_leaves_are_their_own_nodes() -> None:
    tree = build_tree(
        controls(), [pool("P"), pool("Q")], [vm("x", "P", disk="scsi0:0"), vm("x", "Q", disk="scsi0:1")]
    )
    disks = [n for n in tree.nodes if n.kind is NodeKind.DISK]
    assert sorted(n.name for n in disks) == ["x/scsi0:0", "x/scsi0:1"]
    assert {n.vm for n in disks} == {"x"}


@pytest.mark.parametrize(
    ("pools", "leaves", "expected"),
    [
        pytest.param(
            [pool("P", parent="Q"), pool("Q", parent="P")], [], "pools form a cycle: P -> Q -> P", id="cycle"
        ),
        pytest.param([pool("P", parent="P")], [], "pools form a cycle: P -> P", id="self-parent"),
        pytest.param([pool("P"), pool("P")], [], "duplicate pool name 'P'", id="duplicate-pool"),
        pytest.param(
            [pool("P"), pool("Q")], [vm("a", "P"), vm("a", "Q")], "VM 'a' is in two pools", id="vm-twice"
        ),
        pytest.param(
            [pool("P")],
            [vm("a", "P"), vm("a", "P", disk="scsi0:0")],
            "as a whole VM and by its disk",
            id="vm-and-disk",
        ),
        pytest.param(
            [pool("P")],
            [vm("a", "P", disk="scsi0:0"), vm("a", "P", disk="scsi0:0")],
            "disk 'a/scsi0:0' is in two pools",
            id="disk-twice",
        ),
        pytest.param(
            [pool("P", reservation=500, limit=100)],
            [],
            "reservation 500 is above the limit 100",
            id="r-above-l",
        ),
        pytest.param(
            [], [vm("a", reservation=-5)], "must not be negative (got -5)", id="negative-reservation"
        ),
        pytest.param([pool("P", limit=-1)], [], "must not be negative (got -1)", id="negative-limit"),
        pytest.param([pool("P", shares=-10)], [], "must not be negative (got -10)", id="negative-shares"),
        pytest.param([pool("P", shares=0)], [], "must be positive", id="zero-shares"),
        pytest.param(
            [pool("P", limit=300)],
            [vm("a", "P", reservation=200), vm("b", "P", reservation=200)],
            "children's reservations add up to 400 IOPS, above the pool's limit 300",
            id="children-reservations-above-limit",
        ),
        pytest.param([pool("P", parent="nowhere")], [], "unknown parent pool 'nowhere'", id="unknown-parent"),
        pytest.param(
            [], [vm("a", parent="nowhere")], "unknown parent pool 'nowhere'", id="leaf-unknown-parent"
        ),
        pytest.param([pool("")], [], "must not be empty", id="empty-name"),
    ],
)
def test_each_problem_kind_is_named(pools: list[PoolSpec], leaves: list[LeafSpec], expected: str) -> None:
    found = problems_of(controls(10_000), pools, leaves)
    assert any(expected in p for p in found), found


def test_admission_control_against_reservable_capacity() -> None:
    found = problems_of(controls(5000), [], [], reservable=4000)
    assert any("root.reservation" in p and "reservable capacity" in p for p in found), found
    build_tree(controls(4000), [], [], reservable_capacity=4000)  # at the bound is fine


def test_admission_control_against_the_root_reservation() -> None:
    found = problems_of(controls(300), [pool("P")], [vm("a", "P", reservation=200), vm("b", reservation=200)])
    assert any("reservations below the root add up to 400" in p for p in found), found


def test_every_problem_is_reported_at_once() -> None:
    pools = [
        pool("cycle-a", parent="cycle-b"),
        pool("cycle-b", parent="cycle-a"),
        pool("dup"),
        pool("dup"),
        pool("tight", limit=100),
        pool("inverted", reservation=50, limit=10),
    ]
    leaves = [
        vm("twice", "dup"),
        vm("twice", "tight"),
        vm("big", "tight", reservation=90),
        vm("big2", "tight", reservation=90),
        vm("negative", "dup", reservation=-1),
    ]
    with pytest.raises(ValidationError) as caught:
        build_tree(controls(5000, shares=1000), pools, leaves, reservable_capacity=1000)
    text = caught.value.message
    for expected in (
        "pools form a cycle",
        "duplicate pool name 'dup'",
        "VM 'twice' is in two pools",
        "reservation 50 is above the limit 10",
        "must not be negative (got -1)",
        "children's reservations add up to 180 IOPS, above the pool's limit 100",
        "above the reservable capacity",
    ):
        assert expected in text, text
    fields = {p.field for p in caught.value.problems}
    assert "pools[dup].name" in fields
    assert "leaves[negative].reservation" in fields
    assert "root.reservation" in fields


def test_bad_controls_are_reported_once_without_echoes() -> None:
    # A negative reservation is one problem; it must not also show up as an admission-control sum.
    found = problems_of(controls(100), [pool("P")], [vm("a", "P", reservation=-500)])
    assert len(found) == 1, found


def test_valid_tree_with_unlimited_and_nested_pools() -> None:
    tree = build_tree(
        controls(1200, 2300),
        [pool("E", shares=3000), pool("F", limit=500)],
        [vm("A", "E", reservation=400), vm("B", "E", shares=2000), vm("C", "F"), vm("D", "F")],
        reservable_capacity=1200,
    )
    assert len(tree.leaves) == 4
    index = {n.name: n.index for n in tree.pools}
    assert math.isinf(tree.user_limit[index["E"]])
    assert tree.user_limit[index["F"]] == 500
    assert tree.reservation[index["E"]] == 400, "A's reservation is promised through E"
    assert tree.reservation[index["F"]] == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("low", 500), ("normal", 1000), ("high", 2000), ("High", 2000), (1500, 1500), (2.5, 2.5)],
)
def test_share_levels(value: object, expected: float) -> None:
    assert parse_shares(value) == expected


@pytest.mark.parametrize("value", ["medium", True, None, [1000]])
def test_bad_share_values(value: object) -> None:
    with pytest.raises(ValueError, match=r"low, normal, high|number"):
        parse_shares(value)


def test_share_levels_are_vsphere_values() -> None:
    assert SHARE_LEVELS == {"low": 500, "normal": 1000, "high": 2000}


def test_unlimited_is_printed_as_unlimited() -> None:
    assert format_iops(INF) == "unlimited"
    assert format_iops(1200.0) == "1200"
    assert format_iops(1200.26) == "1200.3"


def test_effective_reservation_never_exceeds_the_limit_by_rounding() -> None:
    # 0.1 + 0.2 is 0.30000000000000004 in floating point; validation lets that through as 0.3, and
    # the effective reservation must then stay at the limit, or the divvy would see r > l (found
    # by the random-tree property in test_engine).
    tree = build_tree(
        controls(1.0), [pool("P", limit=0.3)], [vm("a", "P", reservation=0.1), vm("b", "P", reservation=0.2)]
    )
    index = next(n.index for n in tree.pools)
    assert tree.reservation[index] <= 0.3
    assert tree.reservation[index] <= tree.user_limit[index]
