"""One SRP control step end to end: the paper's Figure 3, and properties on random pool trees."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.errors import ValidationError
from basil.srp.capacity import ArrayState
from basil.srp.demand import DemandSnapshot, VmStats, tree_demand
from basil.srp.engine import Allocation, SrpResult, allocate, control_step
from basil.srp.params import SrpParams
from basil.srp.tree import Controls, LeafSpec, NodeKind, PoolSpec, PoolTree, build_tree

from .builders import INF, L_C, PARAMS, controls, demanding, pool, snapshot, vm, with_disks

TOL = 1e-6


# --- Figure 3 -------------------------------------------------------------------------------------


def figure3_tree() -> PoolTree:
    """The resource pool tree of Figure 3, reconstructed from the prose of §3.3 (the figure itself
    did not survive the text extraction).

    Stated in the prose: the root divides R = 1200 and L = 2300; E and F have shares 3:1; A and B
    under E have shares 1:2 and A reserves 400; C and D under F have identical static settings
    and shares 1:1.

    Reconstructed, with the reason:
    - Root shares S = 1000: C's and D's dynamic shares are 125 = 1000 × 1/4 (F) × 1/2.
    - E and F shares 3000 and 1000 (any 3:1 pair gives the same result); their reservations 0
      (anything up to 900 and 300 respectively divides the same way).
    - F's static limit 500 and E's unlimited: the children's demand (1500) is below L = 2300, so
      the L-divvy uses the user-set limits, and "capped at the limit setting of the child" turns
      2300 in 3:1 (1725 / 575) into 1800 / 500. So F's limit is 500 (at least its demand 500, below
      575) and E's at least 1800; unlimited is the plain reading.
    - A: (400, unlimited, 1000), B: (0, unlimited, 2000), C and D: (0, unlimited, 1000).
    """
    return build_tree(
        Controls(reservation=1200, limit=2300, shares=1000),
        [pool("E", shares=3000), pool("F", limit=500, shares=1000)],
        [
            vm("A", "E", reservation=400, shares=1000),
            vm("B", "E", shares=2000),
            vm("C", "F"),
            vm("D", "F"),
        ],
        reservable_capacity=1200,
    )


def figure3_demand() -> DemandSnapshot:
    """Demands of A, B, C, D: 400, 600, 400, 100 IOPS (each measured at latency L_c, so by eq. 1-2
    the demand equals the measured IOPS).

    The prose lists the temporary limits of "nodes A through D" as 600, 400, 400 and 100 and those
    of E and F as 1000 and 500. Read in that order, B's temporary limit in the R-divvy would be
    400, and B could not receive the 500 the prose gives it (see
    test_figure3_with_the_demands_in_the_order_printed). The only assignment of {600, 400} to A
    and B under which every number of the prose holds is A = 400, B = 600, so that is the one
    used here; the sums E = 1000 and F = 500 are the same either way.
    """
    return snapshot(
        A=demanding(400, host="h1"),
        B=demanding(600, host="h2"),
        C=demanding(400, host="h1"),
        D=demanding(100, host="h2"),
    )


def test_figure3_r_divvy_l_divvy_s_divvy() -> None:
    result = allocate(figure3_tree(), figure3_demand(), 1200, PARAMS)
    pools, vms = result.pools, result.vms
    # R-divvy: 1200 at the root in 3:1 -> E 900, F 300.
    assert (pools["E"].reservation, pools["F"].reservation) == pytest.approx((900, 300))
    # At E, 900 in 1:2 would give A 300, below its reservation: A gets 400, B the remaining 500.
    assert (vms["A"].reservation, vms["B"].reservation) == pytest.approx((400, 500))
    # At F, 300 in 1:1 is 150 each, but D's limit is capped at its demand 100: C 200, D 100.
    assert (vms["C"].reservation, vms["D"].reservation) == pytest.approx((200, 100))
    # L-divvy: 2300 in 3:1 capped at F's limit -> E 1800, F 500.
    assert (pools["E"].limit, pools["F"].limit) == pytest.approx((1800, 500))
    # S-divvy: E 750, F 250; A 250, B 500; C and D 125 each.
    assert (pools["E"].shares, pools["F"].shares) == pytest.approx((750, 250))
    assert (vms["A"].shares, vms["B"].shares) == pytest.approx((250, 500))
    # "C and D have identical static settings [but] the dynamic settings are different:
    # (200, 400, 125) and (100, 100, 125) respectively."
    assert (vms["C"].reservation, vms["C"].limit, vms["C"].shares) == pytest.approx((200, 400, 125))
    assert (vms["D"].reservation, vms["D"].limit, vms["D"].shares) == pytest.approx((100, 100, 125))
    # Not printed in the paper, but fixed by Algorithm 2: E's 1800 in 1:2 with the user-set
    # (unlimited) limits, the demands 400 and 600 being met.
    assert (vms["A"].limit, vms["B"].limit) == pytest.approx((600, 1200))
    # "excess reservation was given to VM B over VM A ... B received less than twice A's reservation"
    assert vms["A"].reservation < vms["B"].reservation < 2 * vms["A"].reservation
    # Demands: the leaves' own, the pools' sums.
    assert [vms[x].demand for x in "ABCD"] == pytest.approx([400, 600, 400, 100])
    assert (pools["E"].demand, pools["F"].demand, result.root.demand) == pytest.approx((1000, 500, 1500))


def test_figure3_entitlements_and_host_queue_depths() -> None:
    # The paper gives no array capacity for Figure 3; at 2000 IOPS (Q = 60 at L_c = 30 ms):
    # root: 2000 in 3:1 with every demand met -> E 1500, F 500; E: 1500 in 1:2 above both demands
    # -> A 500, B 1000; F: exactly its demand -> C 400, D 100.
    result = allocate(figure3_tree(), figure3_demand(), 2000, PARAMS)
    assert [result.vms[x].entitlement for x in "ABCD"] == pytest.approx([500, 1000, 400, 100])
    assert result.queue_depth == pytest.approx(60)
    # eq. 6: h1 runs A and C (900 of 2000), h2 runs B and D (1100).
    assert result.hosts == pytest.approx({"h1": 27, "h2": 33})


def test_figure3_with_the_demands_in_the_order_printed() -> None:
    # A = 600, B = 400: B's temporary limit in E's R-divvy is its demand, 400, so B cannot get the
    # 500 the prose gives it; Algorithm 2 gives B 400 and A the other 500. Everything else holds.
    demand = snapshot(A=demanding(600), B=demanding(400), C=demanding(400), D=demanding(100))
    result = allocate(figure3_tree(), demand, 1200, PARAMS)
    assert (result.vms["A"].reservation, result.vms["B"].reservation) == pytest.approx((500, 400))
    assert (result.pools["E"].reservation, result.pools["F"].reservation) == pytest.approx((900, 300))
    assert (result.vms["C"].reservation, result.vms["C"].limit) == pytest.approx((200, 400))
    assert (result.pools["E"].limit, result.pools["F"].limit) == pytest.approx((1800, 500))


# --- the step as a whole ----------------------------------------------------------------------------


def test_control_step_runs_eq4_then_eq5() -> None:
    params = SrpParams(latency_threshold_ms=L_C, gamma=0.5, io_size_charging=False)
    # Q(t) = 40 at 60 ms: Q(t+1) = 20 + 0.5 × 0.5 × 40 = 30 -> 30 / 0.030 = 1000 IOPS.
    result = control_step(figure3_tree(), figure3_demand(), ArrayState(40, 60), params)
    assert result.queue_depth == pytest.approx(30)
    assert result.array_iops == pytest.approx(1000)
    assert math.fsum(result.hosts.values()) == pytest.approx(30)


def test_entitlement_capacity_is_capped_by_the_root_limit() -> None:
    result = allocate(figure3_tree(), figure3_demand(), 10_000, PARAMS)
    assert result.root.entitlement == 2300
    assert math.fsum(a.entitlement for a in result.vms.values()) <= 2300 + TOL


def test_disks_of_a_vm_split_its_allocation_by_demand() -> None:
    tree = build_tree(controls(600, 1000), [pool("P")], [vm("x", "P", reservation=200), vm("y", "P")])
    demand = snapshot(
        x=with_disks(("scsi0:0", 100), ("scsi0:1", 300), host="h1"), y=demanding(400, host="h2")
    )
    result = allocate(tree, demand, 800, PARAMS)
    x = result.vms["x"]
    parts = {d.disk: d.allocation for d in result.disks if d.vm == "x"}
    assert set(parts) == {"scsi0:0", "scsi0:1"}
    for field in ("reservation", "limit", "shares", "entitlement", "demand"):
        whole = getattr(x, field)
        assert getattr(parts["scsi0:0"], field) == pytest.approx(whole * 0.25)
        assert getattr(parts["scsi0:1"], field) == pytest.approx(whole * 0.75)
    assert all(d.host == "h1" and d.datastore == "ds1" and not d.leaf for d in result.disks)
    assert not any(d.vm == "y" for d in result.disks), "a VM without per-disk figures has no disk entries"


def test_unlimited_vm_limit_stays_unlimited_on_each_disk() -> None:
    tree = build_tree(controls(0), [], [vm("x")])
    result = allocate(tree, snapshot(x=with_disks(("a", 0), ("b", 10))), 100, PARAMS)
    assert all(math.isinf(d.allocation.limit) for d in result.disks)


def test_disk_leaves_have_their_own_settings_and_their_vm_the_sum() -> None:
    tree = build_tree(
        controls(300),
        [pool("gold", shares=3000), pool("bronze", shares=1000)],
        [vm("db", "gold", disk="scsi0:1", reservation=200), vm("db", "bronze", disk="scsi0:0")],
    )
    demand = snapshot(db=with_disks(("scsi0:0", 500), ("scsi0:1", 500), host="h1"))
    result = allocate(tree, demand, 800, PARAMS)
    by_disk = {d.disk: d for d in result.disks}
    assert all(d.leaf for d in by_disk.values())
    assert by_disk["scsi0:1"].allocation.reservation == pytest.approx(225)  # 300 in 3:1, at least 200
    # 800 in 3:1 would be 600 / 200, but the gold disk's temporary limit is its demand, 500.
    assert by_disk["scsi0:1"].allocation.entitlement == pytest.approx(500)
    assert by_disk["scsi0:0"].allocation.entitlement == pytest.approx(300)
    assert result.vms["db"].entitlement == pytest.approx(800)
    assert result.vms["db"].shares == pytest.approx(1000)
    assert result.hosts == pytest.approx({"h1": 800 * L_C / 1000})


def test_bad_capacity_and_snapshot_are_reported_together() -> None:
    with pytest.raises(ValidationError) as caught:
        allocate(figure3_tree(), snapshot(A=VmStats(iops=-1, latency_ms=5)), -5, PARAMS)
    assert {p.field for p in caught.value.problems} == {"capacity", "A.iops"}


# --- random trees -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    root: Controls
    pools: list[PoolSpec]
    leaves: list[LeafSpec]
    demand: DemandSnapshot

    def tree(self) -> PoolTree:
        return build_tree(self.root, self.pools, self.leaves)


share_values = st.sampled_from([500.0, 1000.0, 2000.0]) | st.floats(1, 4000)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A random valid tree: pools nested at random, VMs anywhere, controls that pass validation."""
    pool_count = draw(st.integers(0, 7))
    parents: list[str | None] = []
    for i in range(pool_count):
        parents.append(draw(st.sampled_from([None, *[f"p{j}" for j in range(i)]])))
    vm_count = draw(st.integers(1, 16))
    vm_parents = [
        draw(st.sampled_from([None, *[f"p{j}" for j in range(pool_count)]])) for _ in range(vm_count)
    ]

    leaves: list[LeafSpec] = []
    promised: dict[str | None, float] = {}
    for i, parent in enumerate(vm_parents):
        r = draw(st.sampled_from([0.0, 0.0, 50.0, 200.0]) | st.floats(0, 500))
        limit = INF if draw(st.booleans()) else r + draw(st.floats(0, 2000))
        leaves.append(vm(f"v{i}", parent, r, limit, draw(share_values)))
        promised[parent] = promised.get(parent, 0.0) + r

    pools: list[PoolSpec] = [pool("placeholder")] * pool_count
    for i in range(pool_count - 1, -1, -1):  # children (higher numbers) before parents
        own = draw(st.sampled_from([0.0, 0.0, 300.0]) | st.floats(0, 1500))
        effective = max(own, promised.get(f"p{i}", 0.0))
        limit = INF if draw(st.booleans()) else effective + draw(st.floats(0, 3000))
        pools[i] = pool(f"p{i}", parents[i], own, limit, draw(share_values))
        promised[parents[i]] = promised.get(parents[i], 0.0) + effective
    root_r = promised.get(None, 0.0) + draw(st.floats(0, 3000))
    root_l = INF if draw(st.booleans()) else root_r + draw(st.floats(0, 5000))
    root = controls(root_r, root_l, draw(share_values))

    stats: dict[str, VmStats] = {}
    for i in range(vm_count):
        if draw(st.integers(0, 4)) > 0:  # some VMs are idle (absent)
            stats[f"v{i}"] = demanding(draw(st.floats(0, 3000)), host=f"h{draw(st.integers(0, 2))}")
    return Scenario(root, pools, leaves, DemandSnapshot(stats))


def _kids(tree: PoolTree, index: int) -> Sequence[int]:
    return tree.nodes[index].children


def _per_index(tree: PoolTree, result: SrpResult) -> dict[int, tuple[float, float, float, float]]:
    """(R, L, S, E) per node index."""
    out: dict[int, tuple[float, float, float, float]] = {}
    for node in tree.nodes:
        if node.kind is NodeKind.ROOT:
            a = result.root
        elif node.kind is NodeKind.POOL:
            a = result.pools[node.name]
        else:
            a = result.vms[node.name]
        out[node.index] = (a.reservation, a.limit, a.shares, a.entitlement)
    return out


@settings(max_examples=150, deadline=None)
@given(scenario=scenarios(), capacity=st.floats(0, 20000))
def test_every_child_within_its_reservation_and_temporary_limit(scenario: Scenario, capacity: float) -> None:
    tree = scenario.tree()
    result = allocate(tree, scenario.demand, capacity, PARAMS)
    demand = tree_demand(tree, scenario.demand, PARAMS).clamped
    values = _per_index(tree, result)
    for node in tree.nodes:
        kids = _kids(tree, node.index)
        if not kids:
            continue
        for which in (0, 1, 3):  # R-divvy, L-divvy, entitlements
            parent_capacity = values[node.index][which]
            short = math.fsum(demand[k] for k in kids) < parent_capacity
            lower = [demand[k] if short else tree.reservation[k] for k in kids]
            upper = [tree.user_limit[k] if short else demand[k] for k in kids]
            got = [values[k][which] for k in kids]
            for a, lo, hi, k in zip(got, lower, upper, kids, strict=True):
                assert tree.reservation[k] - TOL <= a, "at least the reservation"
                assert lo - TOL <= a <= hi * (1 + 1e-9) + TOL, "within the temporary bounds"
            if math.isfinite(parent_capacity) and math.fsum(lower) <= parent_capacity:
                # Fully handed out whenever the children's (temporary) limits allow.
                expected = min(parent_capacity, math.fsum(upper))
                assert math.fsum(got) == pytest.approx(expected, rel=1e-9, abs=1e-6)
            # Children strictly between their bounds share in proportion to their shares.
            levels = [
                a / tree.shares[k]
                for a, lo, hi, k in zip(got, lower, upper, kids, strict=True)
                if lo + 1e-6 < a < hi - 1e-6
            ]
            assert all(math.isclose(x, levels[0], rel_tol=1e-7) for x in levels)


def _same(a: float, b: float) -> bool:
    """Equal, or equal within float tolerance (an unlimited limit must stay unlimited)."""
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _differences(label: str, a: SrpResult, b: SrpResult) -> list[str]:
    """Every (table, name, field) whose value differs between two results, for a readable failure."""
    out: list[str] = []
    tables = {"root": ({"root": a.root}, {"root": b.root}), "pool": (a.pools, b.pools), "vm": (a.vms, b.vms)}
    for table, (left, right) in tables.items():
        if set(left) != set(right):
            out.append(f"{label}: {table} names {sorted(left)} != {sorted(right)}")
            continue
        for name in left:
            x, y = left[name], right[name]
            for field in Allocation._fields:
                if not _same(getattr(x, field), getattr(y, field)):
                    out.append(f"{label}: {table} {name}.{field} {getattr(x, field)} != {getattr(y, field)}")
    if set(a.hosts) != set(b.hosts) or not all(_same(a.hosts[h], b.hosts[h]) for h in a.hosts):
        out.append(f"{label}: hosts {dict(a.hosts)} != {dict(b.hosts)}")
    return out


@settings(max_examples=150, deadline=None)
@given(scenario=scenarios(), seed=st.integers(0, 2**32 - 1), capacity=st.floats(0, 20000))
def test_order_of_children_does_not_change_the_result(scenario: Scenario, seed: int, capacity: float) -> None:
    result = allocate(scenario.tree(), scenario.demand, capacity, PARAMS)
    rng = random.Random(seed)
    pools, leaves = list(scenario.pools), list(scenario.leaves)
    rng.shuffle(pools)
    rng.shuffle(leaves)
    shuffled = allocate(build_tree(scenario.root, pools, leaves), scenario.demand, capacity, PARAMS)
    # Every pool's and VM's (and the root's) R, L, S, entitlement and demand, and every host's Q_h.
    assert _differences("shuffled", result, shuffled) == []
    assert len(result.pools) == len(scenario.pools)
    assert len(result.vms) == len({leaf.vm for leaf in scenario.leaves})


def test_order_check_compares_pools_too() -> None:
    # The comparison above reports a pool's value, not only its name: two capacities give the same
    # names but different entitlements of pool P.
    tree = build_tree(controls(100), [pool("P")], [vm("x", "P"), vm("y", "P")])
    demand = snapshot(x=demanding(300, host="h1"), y=demanding(300, host="h2"))
    a, b = allocate(tree, demand, 400, PARAMS), allocate(tree, demand, 500, PARAMS)
    assert _differences("same", a, a) == []
    found = _differences("capacity", a, b)
    assert any("pool P.entitlement" in d for d in found), found


@settings(max_examples=150, deadline=None)
@given(scenario=scenarios(), position=st.floats(0, 1))
def test_reservation_entitlement_limit_are_ordered(scenario: Scenario, position: float) -> None:
    # With R <= arrayIOPS <= L at the root, every VM's dynamic R <= entitlement <= dynamic L, and
    # never below its static reservation; the VMs' reservations stay within the root's R.
    root = scenario.root
    top = root.limit if math.isfinite(root.limit) else root.reservation + 10_000
    capacity = root.reservation + position * (top - root.reservation)
    result = allocate(scenario.tree(), scenario.demand, capacity, PARAMS)
    static = {leaf.vm: leaf.controls for leaf in scenario.leaves}
    for name, a in result.vms.items():
        assert a.reservation <= a.entitlement * (1 + 1e-9) + TOL
        assert a.entitlement <= a.limit * (1 + 1e-9) + TOL
        assert a.reservation >= static[name].reservation - TOL
        assert a.limit <= static[name].limit
    assert math.fsum(a.reservation for a in result.vms.values()) <= root.reservation * (1 + 1e-9) + TOL


@settings(max_examples=100, deadline=None)
@given(scenario=scenarios(), capacity=st.floats(1, 20000))
def test_hosts_get_the_whole_queue_and_shares_add_up(scenario: Scenario, capacity: float) -> None:
    tree = scenario.tree()
    result = allocate(tree, scenario.demand, capacity, PARAMS)
    if result.hosts:
        assert math.fsum(result.hosts.values()) == pytest.approx(result.queue_depth, rel=1e-9)
    empty_pools = [n.name for n in tree.nodes if n.kind is NodeKind.POOL and not n.children]
    total = math.fsum(a.shares for a in result.vms.values()) + math.fsum(
        result.pools[name].shares for name in empty_pools
    )
    assert total == pytest.approx(scenario.root.shares, rel=1e-9)


def test_result_tables_read_like_a_mapping_and_a_sequence() -> None:
    tree = build_tree(controls(0), [pool("P")], [vm("x", "P"), vm("y", "P")])
    demand = snapshot(x=with_disks(("a", 10), ("b", 30)), y=with_disks(("c", 20)))
    result = allocate(tree, demand, 60, PARAMS)
    assert list(result.vms) == ["x", "y"]
    assert len(result.vms) == 2
    assert "x" in result.vms
    assert "z" not in result.vms
    assert result.vms["y"].entitlement == pytest.approx(20)
    disks = result.disks
    assert len(disks) == 3
    assert [d.key for d in disks] == ["x/a", "x/b", "y/c"]
    assert disks[-1] == disks[2]
    assert [d.disk for d in disks[0:2]] == ["a", "b"]
    assert disks[1].allocation.entitlement == pytest.approx(30)
    with pytest.raises(IndexError):
        disks[3]
