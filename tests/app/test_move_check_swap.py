"""The apply-time check with a recommended swap, on plain snapshots: the balancer's swap (whose first
half alone raises the imbalance) is judged by the state after both halves, skipped whole when it no
longer helps, and its pairing comes from the plan's moves (``swap_group``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from basil.app.move_check import NO_LONGER_HELPS, why_skip
from basil.app.planner import half_done_swaps, half_swap
from basil.app.recommendation import PodSnapshot, pod_load
from basil.core.balancer import recommend
from basil.core.params import BalancerParams
from basil.core.plan import KIND_SWAP, plan_to_dict, swap_groups
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot
from basil.store.plans import Move, Plan

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
HOSTS = frozenset({"host-1"})

# ds-a is loaded (1.0), ds-b light (0.65): no single move helps, exchanging vm-2 (4) and vm-4 (1.5) does.
SWAPPABLE = {
    "vm-1": ("ds-a", 6.0),
    "vm-2": ("ds-a", 4.0),
    "vm-3": ("ds-b", 5.0),
    "vm-4": ("ds-b", 1.5),
    "vm-5": ("ds-c", 8.0),
}


def pod_snapshot(placement: dict[str, tuple[str, float]]) -> PodSnapshot:
    """Three datastores of equal P; *placement* maps a VM's one disk to (datastore, L)."""
    datastores = tuple(
        Datastore(name=n, capacity_gb=1000, free_gb=900, hosts=HOSTS, performance=10.0, pod="pod")
        for n in ("ds-a", "ds-b", "ds-c")
    )
    disks = tuple(
        Disk(id=f"{vm}:scsi0:0", vm=vm, datastore=ds, size_gb=10, hosts=HOSTS, load=load)
        for vm, (ds, load) in sorted(placement.items())
    )
    snap = Snapshot(datastores, disks, Rules(), now=NOW.timestamp())
    keys = {d.id: (d.vm, "scsi0:0", 2000) for d in disks}
    return PodSnapshot(snap, BalancerParams(imbalance_threshold=0.05, ping_pong_hours=24), (), keys)


def plan_of(*moves: tuple[str, str, str, str, int | None]) -> Plan:
    """A running plan of recommended moves (vm, source, target, state, swap group)."""
    rows = tuple(
        Move(
            id=i + 1, plan_id=1, seq=i, vcenter="lab", vm=vm, vm_name=vm, disk_key=2000, instance="scsi0:0",
            size_bytes=10 * 2**30, source_datastore=src, target_datastore=dst, state=state, task_id=None,
            progress=0, message="", started_at=None, finished_at=None, recommendation_id=i + 1,
            swap_group=group,
        )
        for i, (vm, src, dst, state, group) in enumerate(moves)
    )  # fmt: skip
    return Plan(
        id=1, pod="pod", vcenter="lab", state="running", source="recommendation", created_at=NOW,
        created_by="t", approved_at=NOW, approved_by="t", started_at=NOW, finished_at=None, updated_at=NOW,
        cancel_requested=False, on_move_failure="continue", max_moves=None, max_gb=None, deadline=None,
        dry_run=False, message="", revision=1, moves=rows,
    )  # fmt: skip


def recommended_plan(ps: PodSnapshot, *, paired: bool = True) -> Plan:
    """The balancer's plan for *ps* as the executor stores it (one disk per move here)."""
    found = recommend(ps.snapshot, ps.params)
    groups = swap_groups(found.moves) if paired else {}
    return plan_of(*((m.vm, m.source, m.target, "pending", groups.get(m.number)) for m in found.moves))


def test_the_balancer_recommends_a_swap_whose_first_half_alone_raises_the_imbalance() -> None:
    ps = pod_snapshot(SWAPPABLE)
    found = recommend(ps.snapshot, ps.params)
    assert [m.kind for m in found.moves] == [KIND_SWAP, KIND_SWAP]
    first, second = found.moves
    assert first.imbalance_after > first.imbalance_before
    assert second.imbalance_after < first.imbalance_before
    assert swap_groups(found.moves) == {1: 1, 2: 1}


def test_unpaired_halves_are_judged_alone_and_the_first_is_skipped() -> None:
    # The bug: without the pairing the check judges the first half alone, which raises the imbalance.
    ps = pod_snapshot(SWAPPABLE)
    plan = recommended_plan(ps, paired=False)
    assert why_skip(ps, plan, plan.moves[0]).startswith(NO_LONGER_HELPS)


def test_a_swap_that_still_helps_starts_both_halves() -> None:
    ps = pod_snapshot(SWAPPABLE)
    plan = recommended_plan(ps)
    assert [m.swap_group for m in plan.moves] == [1, 1]
    assert why_skip(ps, plan, plan.moves[0]) == ""
    # After the first half moved, the live placement has it on its target: the second half follows.
    vm = plan.moves[0].vm
    moved = pod_snapshot({**SWAPPABLE, vm: (plan.moves[0].target_datastore, SWAPPABLE[vm][1])})
    done = replace(plan, moves=(replace(plan.moves[0], state="succeeded"), plan.moves[1]))
    assert pod_load(moved).imbalance > pod_load(ps).imbalance  # the half swap is worse than before
    assert why_skip(moved, done, done.moves[1]) == ""


def test_a_swap_that_no_longer_helps_is_skipped_with_the_imbalance_after_both_halves() -> None:
    ps = pod_snapshot(SWAPPABLE)
    plan = recommended_plan(ps)
    # Since then vm-1 left ds-a for ds-b: exchanging vm-2 and vm-4 now makes the pod worse.
    live = pod_snapshot({**SWAPPABLE, "vm-1": ("ds-b", 6.0)})
    load = pod_load(live)
    halves = [(m.source_datastore, m.target_datastore, SWAPPABLE[m.vm][1]) for m in plan.moves]
    after = load.imbalance_after(halves)
    assert after > load.imbalance
    for move in plan.moves:
        why = why_skip(live, plan, move, {"ds-a": "LUN-A", "ds-b": "LUN-B"})
        assert why.startswith(NO_LONGER_HELPS)
        assert f"{load.imbalance:.3f} now and would be {after:.3f} after the swap" in why
        assert "vm-2 LUN-A → LUN-B, vm-4 LUN-B → LUN-A" in why


def test_a_swap_with_a_disk_moved_elsewhere_is_skipped_whole() -> None:
    ps = pod_snapshot(SWAPPABLE)
    plan = recommended_plan(ps)
    live = pod_snapshot({**SWAPPABLE, "vm-4": ("ds-c", 1.5)})
    for move in plan.moves:
        assert "the swap no longer fits: disk scsi0:0 of vm-4 is on ds-c" in why_skip(live, plan, move)


def test_a_swap_without_its_other_half_in_the_plan_is_skipped() -> None:
    ps = pod_snapshot(SWAPPABLE)
    plan = recommended_plan(ps)
    alone = replace(plan, moves=plan.moves[:1])
    assert why_skip(ps, alone, alone.moves[0]).startswith("the swap is incomplete")


def test_the_executor_drops_the_rest_of_a_swap_whose_first_half_did_not_move() -> None:
    plan = plan_of(("vm-2", "ds-a", "ds-b", "failed", 1), ("vm-4", "ds-b", "ds-a", "pending", 1))
    assert (
        half_swap(plan, plan.moves[1])
        == "the swap's move 1 (scsi0:0 of vm-2) failed: half a swap is not applied alone"
    )
    assert half_done_swaps(plan) == []
    started = plan_of(("vm-2", "ds-a", "ds-b", "succeeded", 1), ("vm-4", "ds-b", "ds-a", "pending", 1))
    assert half_swap(started, started.moves[1]) == ""
    plain = plan_of(("vm-2", "ds-a", "ds-b", "failed", None), ("vm-4", "ds-b", "ds-a", "pending", None))
    assert half_swap(plain, plain.moves[1]) == ""


def test_a_half_done_swap_is_named() -> None:
    plan = plan_of(
        ("vm-1", "ds-a", "ds-c", "succeeded", None),
        ("vm-2", "ds-a", "ds-b", "succeeded", 2),
        ("vm-4", "ds-b", "ds-a", "failed", 2),
    )
    assert half_done_swaps(plan) == [
        "swap of moves 2, 3 is half done: moved scsi0:0 of vm-2 ds-a → ds-b; "
        "not moved scsi0:0 of vm-4 ds-b → ds-a (failed) (nothing moved back)"
    ]


def test_swap_groups_pair_consecutive_halves_of_one_pod() -> None:
    ps = pod_snapshot(SWAPPABLE)
    a, b = recommend(ps.snapshot, ps.params).moves
    moves = (
        replace(a, number=1, kind="move"),
        replace(a, number=2),
        replace(b, number=3),
        replace(a, number=4),
        replace(b, number=5),
        replace(a, number=6),  # a half whose partner is not in the plan is its own group
        replace(b, number=7, pod="other"),
    )
    assert swap_groups(moves) == {2: 2, 3: 2, 4: 4, 5: 4, 6: 6, 7: 7}
    shown = plan_to_dict(replace(recommend(ps.snapshot, ps.params), moves=moves))
    assert [m["effect"]["swap_group"] for m in shown["moves"]] == [None, 2, 2, 4, 4, 6, 7]
