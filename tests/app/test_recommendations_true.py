"""Recommendations that stay true, on plain snapshots: the apply-time check skips a move that no longer
helps (and keeps a unit whole), pinned disks are named when they keep a pod over its threshold, and the
placement digest tells placements apart."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from basil.app.move_check import NO_LONGER_HELPS, NO_LONGER_NEEDED, why_skip
from basil.app.recommendation import PodSnapshot, pod_load, round_summary
from basil.app.validity import placement_digest
from basil.core.balancer import recommend
from basil.core.params import BalancerParams
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot
from basil.store.plans import Move, Plan

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
HOSTS = frozenset({"host-1"})


def pod_snapshot(
    placement: dict[str, tuple[str, float]],
    *,
    rules: Rules | None = None,
    last_moved: dict[str, float] | None = None,
    threshold: float = 0.1,
) -> PodSnapshot:
    """Three datastores of equal P; *placement* maps a VM's one disk to (datastore, L)."""
    datastores = tuple(
        Datastore(name=n, capacity_gb=1000, free_gb=900, hosts=HOSTS, performance=10.0, pod="pod")
        for n in ("ds-a", "ds-b", "ds-c")
    )
    disks = tuple(
        Disk(
            id=f"{vm}:scsi0:0",
            vm=vm,
            datastore=ds,
            size_gb=10,
            hosts=HOSTS,
            load=load,
            last_moved=(last_moved or {}).get(vm),
        )
        for vm, (ds, load) in sorted(placement.items())
    )
    snap = Snapshot(datastores, disks, rules or Rules(), now=NOW.timestamp())
    keys = {d.id: (d.vm, "scsi0:0", 2000) for d in disks}
    return PodSnapshot(snap, BalancerParams(imbalance_threshold=threshold, ping_pong_hours=24), (), keys)


def plan_of(*moves: tuple[str, str, str, str]) -> Plan:
    """A running plan of recommended moves (vm, source, target, state)."""
    rows = tuple(
        Move(
            id=i + 1, plan_id=1, seq=i, vcenter="lab", vm=vm, vm_name=vm, disk_key=2000, instance="scsi0:0",
            size_bytes=10 * 2**30, source_datastore=src, target_datastore=dst, state=state, task_id=None,
            progress=0, message="", started_at=None, finished_at=None, recommendation_id=i + 1,
        )
        for i, (vm, src, dst, state) in enumerate(moves)
    )  # fmt: skip
    return Plan(
        id=1, pod="pod", vcenter="lab", state="running", source="recommendation", created_at=NOW,
        created_by="t", approved_at=NOW, approved_by="t", started_at=NOW, finished_at=None, updated_at=NOW,
        cancel_requested=False, on_move_failure="continue", max_moves=None, max_gb=None, deadline=None,
        dry_run=False, message="", revision=1, moves=rows,
    )  # fmt: skip


SKEWED = {"vm-1": ("ds-a", 4.0), "vm-2": ("ds-a", 4.0), "vm-3": ("ds-a", 4.0), "vm-4": ("ds-b", 1.0)}


def test_a_move_that_still_helps_starts() -> None:
    ps = pod_snapshot(SKEWED)
    plan = plan_of(("vm-1", "ds-a", "ds-c", "pending"))
    assert why_skip(ps, plan, plan.moves[0]) == ""


def test_a_move_that_no_longer_helps_is_skipped_with_the_live_imbalance() -> None:
    # Recommended when ds-c was empty; since then ds-c received load: moving vm-1 there makes it worse.
    ps = pod_snapshot({**SKEWED, "vm-5": ("ds-c", 9.0), "vm-6": ("ds-c", 4.0)})
    plan = plan_of(("vm-1", "ds-a", "ds-c", "pending"))
    why = why_skip(ps, plan, plan.moves[0], {"ds-a": "LUN-A", "ds-c": "LUN-C"})
    load = pod_load(ps)
    after = load.imbalance_after([("ds-a", "ds-c", 4.0)])
    assert after > load.imbalance
    assert why.startswith(NO_LONGER_HELPS)
    assert f"{load.imbalance:.3f} now and would be {after:.3f}" in why
    assert "from LUN-A to LUN-C" in why


def test_a_move_in_a_pod_already_balanced_is_not_needed() -> None:
    ps = pod_snapshot({"vm-1": ("ds-a", 4.0), "vm-2": ("ds-b", 4.0), "vm-3": ("ds-c", 4.0)})
    plan = plan_of(("vm-1", "ds-a", "ds-b", "pending"))
    assert why_skip(ps, plan, plan.moves[0]).startswith(NO_LONGER_NEEDED)


def test_the_rest_of_a_unit_follows_once_part_of_it_moved() -> None:
    ps = pod_snapshot({**SKEWED, "vm-5": ("ds-c", 9.0), "vm-6": ("ds-c", 4.0)})
    plan = plan_of(("vm-1", "ds-a", "ds-c", "succeeded"), ("vm-1", "ds-a", "ds-c", "pending"))
    assert why_skip(ps, plan, plan.moves[1]) == ""


def test_a_disk_not_on_its_source_is_left_to_the_executor() -> None:
    ps = pod_snapshot({**SKEWED, "vm-5": ("ds-c", 9.0), "vm-6": ("ds-c", 4.0)})
    plan = plan_of(("vm-1", "ds-b", "ds-c", "pending"))
    assert why_skip(ps, plan, plan.moves[0]) == ""


@pytest.mark.parametrize(
    ("rules", "last_moved", "code"),
    [
        pytest.param(None, dict.fromkeys(("vm-1", "vm-2", "vm-3"), NOW.timestamp() - 3600), "ping_pong",
                     id="ping-pong"),
        pytest.param(Rules(excluded_vms=frozenset({"vm-1", "vm-2", "vm-3"})), None, "excluded_vm",
                     id="excluded"),
        pytest.param(None, None, "anti_affinity", id="anti-affinity"),  # the groups are built below
    ],
)  # fmt: skip
def test_pinned_disks_are_named_when_they_keep_the_pod_over_its_threshold(
    rules: Rules | None, last_moved: dict[str, float] | None, code: str
) -> None:
    # vm-4 alone on ds-b, ds-c empty: every helpful unit is on ds-a and cannot move.
    placement = {**SKEWED, "vm-4": ("ds-b", 1.0)}
    if code == "anti_affinity":
        placement["vm-4"] = ("ds-b", 0.5)
        placement["vm-7"] = ("ds-c", 0.5)
        rules = Rules(
            anti_affinity=(
                frozenset({"vm-1", "vm-4", "vm-7"}),
                frozenset({"vm-2", "vm-4", "vm-7"}),
                frozenset({"vm-3", "vm-4", "vm-7"}),
            )
        )
    ps = pod_snapshot(placement, rules=rules, last_moved=last_moved)
    plan = recommend(ps.snapshot, ps.params)
    summary = round_summary(plan, "pod", ps)
    assert summary["after"]["imbalance"] > summary["threshold"]
    assert summary["stop"] == "no_improving_move"
    blocking = summary["pinned_blocking"]
    assert {e["vm"] for e in blocking} == {"vm-1", "vm-2", "vm-3"}
    assert {e["code"] for e in blocking} == {code}
    assert all(e["imbalance_if_moved"] < summary["after"]["imbalance"] for e in blocking)
    assert "3 disk(s) that would lower it cannot move" in summary["stop_reason"]


def test_no_pinned_disks_are_named_when_the_pod_is_balanced() -> None:
    ps = pod_snapshot({"vm-1": ("ds-a", 4.0), "vm-2": ("ds-b", 4.0), "vm-3": ("ds-c", 4.0)},
                      last_moved={"vm-1": NOW.timestamp()})  # fmt: skip
    summary = round_summary(recommend(ps.snapshot, ps.params), "pod", ps)
    assert summary["pinned_blocking"] == []
    assert "cannot move" not in summary["stop_reason"]


def test_imbalance_now_is_the_balancers_before() -> None:
    ps = pod_snapshot({**SKEWED, "vm-5": ("ds-c", 2.0)})
    plan = recommend(ps.snapshot, ps.params)
    assert pod_load(ps).imbalance == pytest.approx(plan.pod("pod").before.imbalance, abs=1e-12)


def test_placement_digest_tells_placements_apart_and_ignores_order() -> None:
    a = [("vm-1:scsi0:0", "ds-a"), ("vm-2:scsi0:0", "ds-b")]
    assert placement_digest(a) == placement_digest(list(reversed(a)))
    assert placement_digest(a) != placement_digest([("vm-1:scsi0:0", "ds-b"), ("vm-2:scsi0:0", "ds-b")])
