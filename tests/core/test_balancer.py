"""The load balancer (Algorithm 1): the paper's worked cases, constraints, budgets, order, determinism."""

from __future__ import annotations

import dataclasses

import pytest

from basil.core.balancer import recommend
from basil.core.device_model import DeviceSample
from basil.core.params import REASON_BALANCE_IO, BalancerParams
from basil.core.plan import (
    STOP_BALANCED,
    STOP_BUDGET_GB,
    STOP_BUDGET_MOVES,
    STOP_NO_IMPROVING_MOVE,
    STOP_NOTHING_TO_BALANCE,
    plan_to_dict,
)
from basil.core.snapshot import Disk, Rules, Snapshot
from basil.core.workload_model import WorkloadConstants, load_metric
from basil.errors import ValidationError

from .builders import (
    after_plan,
    applied_placement,
    datastore,
    disk,
    example,
    normalized_loads,
    sigma_over_mu,
    snapshot,
)

HOUR = 3600.0


def model_loads(snap: Snapshot) -> dict[str, float]:
    """L per disk from its workload with the default constants (eq. 1), computed by the test."""
    k = WorkloadConstants()
    return {
        d.id: d.load if d.load is not None else load_metric(d.workload, k)
        for d in snap.disks
        if d.workload or d.load
    }


def performance_of(snap: Snapshot) -> dict[str, float]:
    return {ds.name: ds.performance for ds in snap.datastores if ds.performance is not None}


# --- BASIL §6.2, Tables 2 and 3 ---------------------------------------------------------------------


def test_table2_moves_go_from_the_3disk_lun_towards_the_9disk_lun() -> None:
    doc = example("basil-table2.json")
    snap = doc.snapshot
    plan = recommend(snap, doc.params)
    loads, perf = model_loads(snap), performance_of(snap)
    before = normalized_loads(snap, {d.id: d.datastore for d in snap.disks}, loads, perf)

    # The models say what Table 3 shows: the 3-disk LUN is the most loaded, the 9-disk the least.
    assert max(before, key=before.__getitem__) == "3diskLUN"
    assert min(before, key=before.__getitem__) == "9diskLUN"
    assert plan.moves, "Table 2's placement is unbalanced; BASIL recommended migrations"
    assert plan.moves[0].source == "3diskLUN"
    assert all(m.target == "9diskLUN" for m in plan.moves)  # every Table 2 migration lands on it
    # The 16-OIO OLTP workload, the heaviest on the 3-disk LUN, is moved as in Table 2.
    assert "oltp-2/scsi0:1" in {d for m in plan.moves for d in m.disks}

    after = normalized_loads(snap, applied_placement(snap, plan), loads, perf)
    outcome = plan.pod("default")
    assert outcome.before.normalized_load == pytest.approx(before)
    assert outcome.after.normalized_load == pytest.approx(after)
    assert outcome.before.imbalance == pytest.approx(sigma_over_mu(before.values()))
    assert outcome.after.imbalance == pytest.approx(sigma_over_mu(after.values()))
    assert outcome.after.imbalance < outcome.before.imbalance
    # More balanced: the spread of N shrinks, not just σ/μ.
    assert max(after.values()) / min(after.values()) < max(before.values()) / min(before.values())
    assert outcome.stop == STOP_BALANCED
    assert outcome.after.imbalance <= doc.params.imbalance_threshold


def test_table2_moves_explain_themselves_with_numbers() -> None:
    doc = example("basil-table2.json")
    plan = recommend(doc.snapshot, doc.params)
    first = plan.moves[0]
    assert first.reason_code == REASON_BALANCE_IO
    for number in (first.source_n_before, first.source_n_after, first.target_n_before, first.target_n_after):
        assert f"{number:.4g}" in first.reason
    assert f"{first.imbalance_before:.3f}" in first.reason
    assert f"{first.imbalance_after:.3f}" in first.reason
    assert f"{first.size_gb:.1f} GB" in first.reason
    assert f"L = {first.load:.4g}" in first.reason
    assert first.size_gb == 10.0
    assert first.disk_sizes_gb == (10.0,)


def test_table2_second_round_after_the_moves_recommends_nothing_more() -> None:
    doc = example("basil-table2.json")
    plan = recommend(doc.snapshot, doc.params)
    again = recommend(after_plan(doc.snapshot, plan), doc.params)
    assert again.moves == ()
    assert again.pod("default").stop == STOP_BALANCED


# --- BASIL §6.3, Tables 4 and 5: new devices -----------------------------------------------------------


def test_table4_first_round_puts_one_workload_on_each_new_lun() -> None:
    doc = example("basil-table4.json")
    plan = recommend(doc.snapshot, doc.params)
    assert [m.source for m in plan.moves] == ["6diskLUN", "6diskLUN"]
    assert sorted(m.target for m in plan.moves) == ["3diskLUN", "9diskLUN"]
    assert all(m.target_new for m in plan.moves)
    assert all(m.imbalance_after < m.imbalance_before for m in plan.moves)
    outcome = plan.pod("default")
    assert outcome.stop == STOP_NO_IMPROVING_MOVE
    assert "§6.3" in outcome.stop_reason
    assert plan.datastores["3diskLUN"].new
    assert any("no device model" in note for note in plan.notes)


def test_table4_second_round_with_measured_models_loads_the_9disk_lun_most() -> None:
    doc = example("basil-table4.json")
    first = recommend(doc.snapshot, doc.params)
    # After round 1 the new LUNs have IO, so the modeler fits them (Table 5: P = 0.6 and 1.7).
    measured = {"3diskLUN": 0.6, "9diskLUN": 1.7}
    snap2 = after_plan(doc.snapshot, first, measured)
    second = recommend(snap2, doc.params)
    assert second.moves
    assert all(m.source == "6diskLUN" for m in second.moves)  # still the most loaded, as in Table 4
    assert not any(m.target_new for m in second.moves)
    loads, perf = model_loads(snap2), performance_of(snap2)
    where = applied_placement(snap2, second)
    after = normalized_loads(snap2, where, loads, perf)
    before = normalized_loads(snap2, {d.id: d.datastore for d in snap2.disks}, loads, perf)
    assert sigma_over_mu(after.values()) < sigma_over_mu(before.values())
    total = {name: sum(loads[d] for d, ds in where.items() if ds == name) for name in perf}
    # Load ends up roughly in proportion to P: the 9-disk LUN carries more than the 3-disk one.
    assert total["9diskLUN"] > total["3diskLUN"]


# --- units, constraints, rules ---------------------------------------------------------------------


def two_datastores(*disks: Disk, rules: Rules | None = None, now: float | None = None) -> Snapshot:
    """A hot and a cold datastore of equal P with the given disks."""
    return snapshot([datastore("hot"), datastore("cold")], list(disks), rules=rules, now=now)


def test_a_vms_disks_on_one_datastore_move_together() -> None:
    # Equalizing needs L = 90 moved: vm1's two disks (50 + 30) fit, vm2 (100) would overshoot.
    snap = two_datastores(
        disk("vm1/d0", "hot", load=50, size_gb=10),
        disk("vm1/d1", "hot", load=30, size_gb=20),
        disk("vm2/d0", "hot", load=100),
    )
    plan = recommend(snap)
    assert [m.vm for m in plan.moves] == ["vm1"]
    moved = plan.moves
    assert moved[0].disks == ("vm1/d0", "vm1/d1")
    assert moved[0].size_gb == 30
    assert moved[0].load == 80
    entries = [e for e in plan_to_dict(plan)["moves"] if e["vm"] == "vm1"]
    assert [e["disk"] for e in entries] == ["vm1/d0", "vm1/d1"]
    assert {e["move"] for e in entries} == {moved[0].number}
    assert [e["size_gb"] for e in entries] == [10, 20]


def test_a_splittable_vm_may_be_split() -> None:
    snap = two_datastores(
        disk("vm1/d0", "hot", load=100),
        disk("vm1/d1", "hot", load=100),
        rules=Rules(splittable_vms=frozenset({"vm1"})),
    )
    plan = recommend(snap)
    assert [m.disks for m in plan.moves] == [("vm1/d0",)]
    assert plan.pod("default").after.imbalance == 0.0


def test_unsplittable_vm_is_not_split_even_if_that_would_balance() -> None:
    snap = two_datastores(disk("vm1/d0", "hot", load=100), disk("vm1/d1", "hot", load=100))
    plan = recommend(snap)
    assert plan.moves == ()  # moving both just swaps the imbalance around


def test_excluded_vms_and_recent_moves_stay_put() -> None:
    now = 100 * HOUR
    snap = two_datastores(
        disk("excluded/d0", "hot", load=100),
        disk("recent/d0", "hot", load=100, last_moved=now - HOUR),
        disk("old/d0", "hot", load=100, last_moved=now - 48 * HOUR),
        rules=Rules(excluded_vms=frozenset({"excluded"})),
        now=now,
    )
    plan = recommend(snap)
    assert [m.vm for m in plan.moves] == ["old"]
    assert {p.vm: p.code for p in plan.pinned} == {"excluded": "excluded_vm", "recent": "ping_pong"}


def test_last_moved_needs_a_snapshot_time() -> None:
    snap = two_datastores(disk("vm/d0", "hot", last_moved=5.0))
    with pytest.raises(ValidationError) as err:
        recommend(snap)
    assert "now" in {p.field for p in err.value.problems}


def test_targets_in_maintenance_are_never_used_and_left_out_of_the_balance() -> None:
    snap = snapshot(
        [datastore("hot"), datastore("empty-maint", maintenance=True), datastore("cold")],
        [
            disk("vm1/d0", "hot", load=100),
            disk("vm2/d0", "hot", load=100),
            disk("vm3/d0", "empty-maint", load=5),
        ],
    )
    plan = recommend(snap)
    assert plan.moves
    assert all(m.target == "cold" for m in plan.moves)
    outcome = plan.pod("default")
    assert set(outcome.before.normalized_load) == {"hot", "cold"}
    assert outcome.excluded == ("empty-maint",)
    assert not any(m.source == "empty-maint" for m in plan.moves)


def test_targets_must_be_visible_from_the_disks_hosts() -> None:
    snap = snapshot(
        # cold is slower than blind, so only visibility can explain choosing it.
        [datastore("hot"), datastore("blind", hosts=("esx-2",)), datastore("cold", performance=0.8)],
        [
            disk("vm1/d0", "hot", load=100, hosts=("esx-1",)),
            disk("vm2/d0", "hot", load=100, hosts=("esx-1",)),
        ],
    )
    plan = recommend(snap)
    assert plan.moves
    assert all(m.target == "cold" for m in plan.moves)


def test_a_move_never_leaves_its_target_hotter_than_its_source_was() -> None:
    # Moving 100 onto the slow datastore would lower σ/μ (1.41 -> 0.82) only because μ rises: the
    # hot spot would just move there (N 200 -> 200). That is no balancing.
    snap = snapshot(
        [datastore("hot"), datastore("slow", performance=0.5), datastore("idle", hosts=("esx-2",))],
        [
            disk("vm1/d0", "hot", load=100, hosts=("esx-1",)),
            disk("vm2/d0", "hot", load=100, hosts=("esx-1",)),
        ],
    )
    plan = recommend(snap)
    assert plan.moves == ()
    assert plan.pods[0].stop == STOP_NO_IMPROVING_MOVE


def test_anti_affine_vms_never_share_a_target() -> None:
    snap = snapshot(
        [datastore("hot"), datastore("foe"), datastore("far", performance=0.4)],
        [disk("vm1/d0", "hot", load=100), disk("vm2/d0", "hot", load=100), disk("vm9/d0", "foe", load=1)],
        rules=Rules(anti_affinity=(frozenset({"vm1", "vm2", "vm9"}),)),
    )
    plan = recommend(snap, BalancerParams(imbalance_threshold=0.0))
    for m in plan.moves:
        assert m.target != "foe"


def test_space_headroom_is_kept_on_the_target() -> None:
    snap = snapshot(
        [datastore("hot"), datastore("tight", capacity_gb=100, free_gb=25)],
        [disk("big/d0", "hot", load=100, size_gb=20), disk("small/d0", "hot", load=60, size_gb=10)],
    )
    plan = recommend(snap, BalancerParams(space_headroom_pct=10))
    assert [m.vm for m in plan.moves] == ["small"]  # 20 GB would leave 5 GB < 10 GB headroom


def test_pods_are_balanced_separately() -> None:
    snap = snapshot(
        [
            datastore("a1", pod="a"),
            datastore("a2", pod="a"),
            datastore("b1", pod="b"),
            datastore("b2", pod="b"),
        ],
        [
            disk("vm1/d0", "a1", load=100),
            disk("vm2/d0", "a1", load=100),
            disk("vm3/d0", "b1", load=50),
            disk("vm4/d0", "b1", load=50),
        ],
    )
    plan = recommend(snap)
    pods_of = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}
    assert {m.pod for m in plan.moves} == {"a", "b"}
    for m in plan.moves:
        assert pods_of[m.source] == pods_of[m.target] == m.pod
    assert set(plan.pod("a").after.normalized_load) == {"a1", "a2"}
    assert plan.pod("a").after.imbalance == 0.0
    assert plan.pod("b").after.imbalance == 0.0


def test_worst_pod_spends_a_small_budget_first() -> None:
    snap = snapshot(
        [
            datastore("a1", pod="a"),
            datastore("a2", pod="a"),
            datastore("b1", pod="b"),
            datastore("b2", pod="b"),
        ],
        [
            disk("vm1/d0", "a1", load=100),
            disk("vm2/d0", "a1", load=100),
            disk("vm3/d0", "b1", load=50),
            disk("vm4/d0", "b1", load=50),
            disk("vm5/d0", "b2", load=40),
            disk("vm6/d0", "a2", load=1),
        ],
    )
    plan = recommend(snap, BalancerParams(max_moves=1))
    assert [m.pod for m in plan.moves] == ["a"]  # pod a is the more imbalanced one
    assert plan.pod("b").stop == STOP_BUDGET_MOVES


# --- budgets, order, determinism -------------------------------------------------------------------


def many_disks() -> Snapshot:
    return snapshot(
        [datastore("hot", capacity_gb=5000), datastore("cold", capacity_gb=5000, performance=3.0)],
        [disk(f"vm{i}/d0", "hot", load=10 + i, size_gb=10 + 5 * i) for i in range(12)],
    )


def test_move_budget() -> None:
    plan = recommend(many_disks(), BalancerParams(max_moves=2))
    assert len(plan.moves) == 2
    assert plan.pod("default").stop == STOP_BUDGET_MOVES


def test_gb_budget() -> None:
    plan = recommend(many_disks(), BalancerParams(max_gb=60))
    assert plan.total_gb <= 60
    assert plan.moves
    assert plan.pod("default").stop == STOP_BUDGET_GB


def test_load_per_gb_moves_less_data_than_least_disturbance_when_asked() -> None:
    # Two ways to fix the same imbalance: a small busy disk or a big quiet one, equal L.
    snap = two_datastores(
        disk("small/d0", "hot", load=100, size_gb=10, iops=1000),
        disk("big/d0", "hot", load=100, size_gb=200, iops=10),
        disk("rest/d0", "hot", load=100, size_gb=50, iops=10),
    )
    by_gb = recommend(snap, BalancerParams(candidate_order="load_per_gb"))
    quiet = recommend(snap, BalancerParams(candidate_order="least_disturbance"))
    assert [m.vm for m in by_gb.moves] == ["small"]
    assert [m.vm for m in quiet.moves] in (["big"], ["rest"])
    assert quiet.moves[0].vm != "small"


def test_same_input_same_plan() -> None:
    doc = example("basil-table2.json")
    assert plan_to_dict(recommend(doc.snapshot, doc.params)) == plan_to_dict(
        recommend(doc.snapshot, doc.params)
    )
    big = many_disks()
    assert plan_to_dict(recommend(big)) == plan_to_dict(recommend(big))


def test_every_move_strictly_lowers_the_imbalance() -> None:
    plan = recommend(many_disks(), BalancerParams(imbalance_threshold=0.0))
    assert plan.moves
    f = plan.pod("default").before.imbalance
    for m in plan.moves:
        assert m.imbalance_before == pytest.approx(f)
        assert m.imbalance_after < m.imbalance_before
        f = m.imbalance_after
    assert f == pytest.approx(plan.pod("default").after.imbalance)


def test_balanced_pod_gets_no_moves() -> None:
    snap = two_datastores(disk("vm1/d0", "hot", load=100), disk("vm2/d0", "cold", load=100))
    plan = recommend(snap)
    assert plan.moves == ()
    assert plan.pod("default").stop == STOP_BALANCED


def test_a_pod_of_one_datastore_has_nothing_to_balance() -> None:
    plan = recommend(snapshot([datastore("only")], [disk("vm1/d0", "only")]))
    assert plan.pod("default").stop == STOP_NOTHING_TO_BALANCE


def test_bad_params_are_reported_before_anything_runs() -> None:
    with pytest.raises(ValidationError) as err:
        recommend(
            many_disks(), BalancerParams(imbalance_threshold=-1, max_moves=-2, candidate_order="fastest")
        )
    assert {p.field for p in err.value.problems} == {"imbalance_threshold", "max_moves", "candidate_order"}


def test_device_models_fitted_from_samples_drive_the_balance() -> None:
    def line(slope: float, host_count: int = 2) -> tuple[DeviceSample, ...]:
        # Each host sees half of the total OIO; latency follows the device's line in the total.
        return tuple(
            DeviceSample(f"esx-{h + 1}", total / host_count, 2 + slope * total, 100, 8, 5, time=float(t))
            for t, total in enumerate((4.0, 8.0, 16.0, 24.0, 32.0, 48.0))
            for h in range(host_count)
        )

    slow = dataclasses.replace(datastore("slow", performance=None), samples=line(2.0))  # P = 0.5
    fast = dataclasses.replace(datastore("fast", performance=None), samples=line(0.25))  # P = 4
    disks = [disk(f"vm{i}/d0", "slow", load=100) for i in range(3)]
    snap = snapshot([slow, fast], [*disks, disk("vm9/d0", "fast", load=100)])
    plan = recommend(snap)
    assert plan.datastores["slow"].source == "fitted"
    assert plan.datastores["slow"].performance == pytest.approx(0.5)
    assert plan.datastores["fast"].performance == pytest.approx(4.0)
    assert plan.moves
    assert all((m.source, m.target) == ("slow", "fast") for m in plan.moves)
    fit = plan_to_dict(plan)["datastores"]["fast"]["fit"]
    assert fit["status"] == "ok"
    assert fit["points_used"] == 6
    assert fit["r_squared"] == pytest.approx(1.0)
