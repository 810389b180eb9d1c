"""Properties over random snapshots: every move is allowed and lowers the imbalance; budgets hold;
the same input gives the same plan; placement ranks only eligible datastores.

The checks replay each plan on an independent model of the snapshot (placement, free space, VMs per
datastore, N per pod) rather than trusting the balancer's own bookkeeping.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from basil.core.balancer import recommend
from basil.core.params import CANDIDATE_ORDERS, OBJECTIVE_THROUGHPUT, OBJECTIVES, SEARCHES, BalancerParams
from basil.core.placement import PlacementRequest, place
from basil.core.plan import KIND_SWAP, STOP_BALANCED, Move, plan_to_dict
from basil.core.predictive import allowed_latency
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot

from .builders import sigma_over_mu

HOSTS = ["h1", "h2", "h3"]
DISK_HOSTS = [frozenset(), frozenset({"h1"}), frozenset({"h1", "h2"}), frozenset({"h2"}), frozenset({"h3"})]
NOW = 1_000_000.0
HOUR = 3600.0


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Snapshot, BalancerParams]:
    n_pods = draw(st.integers(1, 2))
    n_ds = draw(st.integers(2, 6))
    specs = []
    for i in range(n_ds):
        specs.append(
            {
                "name": f"ds{i}",
                "pod": f"pod{draw(st.integers(0, n_pods - 1))}",
                "hosts": draw(
                    st.sampled_from([frozenset(HOSTS)] * 3 + [frozenset(HOSTS[:2]), frozenset(HOSTS[2:])])
                ),
                "spare": draw(st.floats(0, 300)),
                "performance": draw(st.one_of(st.none(), st.floats(0.2, 5.0))),
                "maintenance": draw(st.sampled_from([False, False, False, False, True])),
            }
        )
    disks: list[Disk] = []
    n_vms = draw(st.integers(0, 12))
    for v in range(n_vms):
        for k in range(draw(st.integers(1, 3))):
            spec = draw(st.sampled_from(specs))
            disks.append(
                Disk(
                    id=f"vm{v}/d{k}",
                    vm=f"vm{v}",
                    datastore=spec["name"],
                    size_gb=draw(st.floats(0, 60)),
                    hosts=draw(st.sampled_from(DISK_HOSTS)),
                    load=draw(st.floats(0, 500)),
                    iops=draw(st.one_of(st.none(), st.floats(0, 1000))),
                    last_moved=draw(st.one_of(st.none(), st.floats(NOW - 100 * HOUR, NOW))),
                )
            )
    used: dict[str, float] = defaultdict(float)
    for d in disks:
        used[d.datastore] += d.size_gb
    datastores = []
    for spec in specs:
        # Sometimes roomy, sometimes tight against the headroom (up to 30 % below).
        capacity = (used[spec["name"]] + spec["spare"]) / 0.75 + 1
        datastores.append(
            Datastore(
                name=spec["name"],
                capacity_gb=capacity,
                free_gb=capacity - used[spec["name"]],
                hosts=spec["hosts"],
                maintenance=spec["maintenance"],
                performance=spec["performance"],
                pod=spec["pod"],
            )
        )
    vms = sorted({d.vm for d in disks})
    rules = Rules()
    if vms:
        groups = draw(st.lists(st.sets(st.sampled_from(vms), max_size=3), max_size=2)) if len(vms) > 1 else []
        rules = Rules(
            splittable_vms=frozenset(draw(st.sets(st.sampled_from(vms)))),
            anti_affinity=tuple(frozenset(g) for g in groups if len(g) >= 2),
            excluded_vms=frozenset(draw(st.sets(st.sampled_from(vms), max_size=2))),
        )
    params = BalancerParams(
        imbalance_threshold=draw(st.sampled_from([0.0, 0.05, 0.2, 0.5])),
        max_moves=draw(st.one_of(st.none(), st.integers(0, 5))),
        max_gb=draw(st.one_of(st.none(), st.floats(0, 200))),
        space_headroom_pct=draw(st.floats(0, 30)),
        candidate_order=draw(st.sampled_from(CANDIDATE_ORDERS)),
        ping_pong_hours=draw(st.sampled_from([0.0, 24.0])),
        seed=draw(st.integers(0, 1000)),
        objective=draw(st.sampled_from(OBJECTIVES)),
        search=draw(st.sampled_from(SEARCHES)),
        min_gain_pct=draw(st.sampled_from([0.0, 0.5, 5.0])),
    )
    return Snapshot(tuple(datastores), tuple(disks), rules, now=NOW), params


def effective_performance(snap: Snapshot) -> dict[str, float]:
    """P per datastore, with the pod's median P standing in for datastores without one."""
    by_pod: dict[str, list[float]] = defaultdict(list)
    for ds in snap.datastores:
        if ds.performance is not None:
            by_pod[ds.pod].append(ds.performance)
    return {
        ds.name: ds.performance
        if ds.performance is not None
        else (statistics.median(by_pod[ds.pod]) if by_pod[ds.pod] else 1.0)
        for ds in snap.datastores
    }


def pod_imbalance(snap: Snapshot, where: dict[str, str], perf: dict[str, float], pod: str) -> float:
    members = [ds.name for ds in snap.datastores if ds.pod == pod and not ds.maintenance]
    totals = dict.fromkeys(members, 0.0)
    for d in snap.disks:
        if where[d.id] in totals:
            totals[where[d.id]] += d.load or 0.0
    return sigma_over_mu(totals[m] / perf[m] for m in members)


def fairness(
    change: list[Move], params: BalancerParams, cap: dict[str, float], start: dict[str, float]
) -> None:
    """Replay the fairness rule over one recommended change (a move, or both halves of a swap, judged
    by the state after it): a datastore's cap is the allowance of the latency it had at the start of
    the round (none when it was empty), lowered to each arriving unit's own allowance (that of the
    datastore it started on); the pod's IOPS-weighted latency at the start is always allowed."""
    after: dict[str, tuple[float, int]] = {}
    for move in change:
        source, target = move.datastore_effects
        assert move.pod_latency_ms_before is not None
        pod = start.setdefault(f"pod {move.pod}", move.pod_latency_ms_before)
        for effect, disks_before in (
            (source, source.disks_after + len(move.disks)),
            (target, target.disks_after - len(move.disks)),
        ):
            # A datastore's first appearance shows its latency at the start of the round.
            if effect.datastore not in start:
                allowance = allowed_latency(
                    effect.latency_ms_before, params.fairness_pct, params.fairness_ms, pod
                )
                start[effect.datastore] = allowance if disks_before else math.inf
                cap[effect.datastore] = start[effect.datastore]
            after[effect.datastore] = (effect.latency_ms_after, effect.disks_after)
        cap[target.datastore] = min(cap[target.datastore], start[source.datastore])
    for name, (latency, disks) in after.items():
        if disks:
            assert latency <= cap[name] + 1e-6


def check_objective(moves: tuple[Move, ...], params: BalancerParams) -> None:
    """No recommended change makes the objective worse: a single move improves it, and so does each
    swap taken whole (its two halves are consecutive moves of kind swap); under the throughput
    objective (the one the move's pod used) no datastore's predicted latency exceeds the fairness cap
    of its start latency."""
    cap: dict[str, float] = {}
    start: dict[str, float] = {}
    i = 0
    while i < len(moves):
        m = moves[i]
        last = moves[i + 1] if m.kind == KIND_SWAP else m
        if m.kind == KIND_SWAP:
            assert last.kind == KIND_SWAP
            assert {last.source, last.target} == {m.source, m.target}
        if m.objective == OBJECTIVE_THROUGHPUT:  # the pod's objective (params' may be auto)
            assert m.pod_iops_before is not None
            assert last.pod_iops_after is not None
            assert last.pod_iops_after > m.pod_iops_before
            assert last.pod_latency_ms_after is not None
            assert m.pod_latency_ms_before is not None
            assert last.pod_latency_ms_after < m.pod_latency_ms_before
            fairness([m, last] if last is not m else [m], params, cap, start)
        else:
            assert last.imbalance_after < m.imbalance_before
            if m.kind != KIND_SWAP:
                assert m.target_n_after < m.source_n_before, (
                    "a move left its target hotter than its source was"
                )
        i += 2 if m.kind == KIND_SWAP else 1


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios())
def test_every_move_respects_the_constraints_and_lowers_the_imbalance(
    scenario: tuple[Snapshot, BalancerParams],
) -> None:
    snap, params = scenario
    plan = recommend(snap, params)
    event(f"moves: {min(len(plan.moves), 3)}{'+' if len(plan.moves) >= 3 else ''}")
    event(f"stop: {sorted({o.stop for o in plan.pods})}")
    ds = {d.name: d for d in snap.datastores}
    disk = {d.id: d for d in snap.disks}
    perf = effective_performance(snap)
    where = {d.id: d.datastore for d in snap.disks}
    free = {d.name: d.free_gb for d in snap.datastores}
    received: dict[str, int] = defaultdict(int)
    moved: set[str] = set()
    conflicts: dict[str, set[str]] = defaultdict(set)
    for group in snap.rules.anti_affinity:
        for vm in group:
            conflicts[vm] |= group - {vm}

    for m in plan.moves:
        source, target = ds[m.source], ds[m.target]
        assert source.name != target.name
        assert source.pod == target.pod == m.pod
        assert not source.maintenance
        assert not target.maintenance
        assert m.vm not in snap.rules.excluded_vms
        assert all(where[d] == m.source for d in m.disks)
        assert all(disk[d].vm == m.vm for d in m.disks)
        assert not moved & set(m.disks), "a disk moved twice in one round"
        if m.vm not in snap.rules.splittable_vms:
            together = {d.id for d in snap.disks if d.vm == m.vm and d.datastore == m.source}
            assert set(m.disks) == together, "an unsplittable VM's disks on one datastore move together"
        else:
            assert len(m.disks) == 1
        for d in m.disks:
            last = disk[d].last_moved
            assert last is None or NOW - last >= params.ping_pong_hours * HOUR
        hosts = frozenset().union(*(disk[d].hosts for d in m.disks))
        assert hosts <= target.hosts
        size = sum(disk[d].size_gb for d in m.disks)
        assert m.size_gb == pytest.approx(size)
        assert free[m.target] - size >= target.capacity_gb * params.space_headroom_pct / 100 - 1e-6
        on_target = {disk[d].vm for d, at in where.items() if at == m.target}
        assert not conflicts[m.vm] & on_target, "anti-affine VMs on one datastore"
        if target.performance is None:
            assert received[m.target] == 0, "a datastore without a model takes one unit per round"
            received[m.target] += 1

        f_before = pod_imbalance(snap, where, perf, m.pod)
        for d in m.disks:
            where[d] = m.target
        moved |= set(m.disks)
        free[m.source] += size
        free[m.target] -= size
        f_after = pod_imbalance(snap, where, perf, m.pod)
        assert m.imbalance_before == pytest.approx(f_before, abs=1e-9)
        assert m.imbalance_after == pytest.approx(f_after, abs=1e-9)
    check_objective(plan.moves, params)

    if params.max_moves is not None:
        assert len(plan.moves) <= params.max_moves
    if params.max_gb is not None:
        assert plan.total_gb <= params.max_gb + 1e-6
    for outcome in plan.pods:
        assert outcome.after.imbalance == pytest.approx(
            pod_imbalance(snap, where, perf, outcome.pod), abs=1e-9
        )
        if outcome.stop == STOP_BALANCED:
            assert outcome.after.imbalance <= params.imbalance_threshold


@SETTINGS
@given(scenarios())
def test_same_input_same_plan(scenario: tuple[Snapshot, BalancerParams]) -> None:
    snap, params = scenario
    assert plan_to_dict(recommend(snap, params)) == plan_to_dict(recommend(snap, params))


@SETTINGS
@given(scenarios(), st.floats(0, 80), st.floats(0, 400), st.sets(st.sampled_from(HOSTS), max_size=2))
def test_placement_ranks_only_eligible_datastores(
    scenario: tuple[Snapshot, BalancerParams], size: float, load: float, hosts: set[str]
) -> None:
    snap, params = scenario
    result = place(snap, PlacementRequest(size_gb=size, load=load, hosts=frozenset(hosts)), params)
    names = [r.datastore for r in result.ranked] + [e.datastore for e in result.excluded]
    assert sorted(names) == sorted(ds.name for ds in snap.datastores)
    assert all(e.reasons for e in result.excluded)
    n_after = [r.n_after for r in result.ranked]
    assert n_after == sorted(n_after)
    ds = {d.name: d for d in snap.datastores}
    perf = effective_performance(snap)
    for r in result.ranked:
        target = ds[r.datastore]
        assert not target.maintenance
        assert frozenset(hosts) <= target.hosts
        assert target.free_gb - size >= target.capacity_gb * params.space_headroom_pct / 100 - 1e-6
        current = sum(d.load or 0.0 for d in snap.disks if d.datastore == r.datastore)
        assert r.n_after == pytest.approx((current + load) / perf[r.datastore])
