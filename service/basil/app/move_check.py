"""The apply-time check of a recommended move: does it still help, on the live placement and models?

A plan is applied minutes or hours after its recommendation was computed; meanwhile other moves,
refitted models and changed workloads may have made a move pointless or harmful. Before each move
of a plan made from a recommendation, the executor asks :class:`MoveCheck`; a move that no longer
lowers the pod's imbalance ("imbalance now", :func:`basil.app.recommendation.pod_load`), or whose
pod is already at or below its threshold, is skipped with the reason (skipped, not failed).

The unit that moves is judged whole: the plan's pending moves of the same VM from the same source to
the same target (the disks a recommendation moves together). Once one disk of such a unit has moved,
the rest follow without a check, so a VM's disks are not left split. Moves given by hand are the
administrator's decision and are not checked; where the disk is now is the executor's check.
Moves of a pod with ``goal: slo`` are not judged by the imbalance (they may raise it on purpose) but
by the pod's predicted damage (:func:`why_skip_slo`): with the live placement, IOPS and workload
models and the calibration of the round that recommended them, a move (or swap) is skipped when the
damage is 0 already, or when it no longer lowers the damage and does not relieve a datastore over
the utilisation cap (the round's own rule for keeping a move).

A swap (moves sharing a ``swap_group``: one unit from x to y and another from y to x) is judged as
one unit too: the imbalance after both halves against the imbalance now, since its first half alone
may raise it. Before the swap starts, both halves must be in the plan and every disk still on its
source; otherwise the swap is skipped whole. Once part of it has moved, the rest follows without a
check. (The executor drops a swap whose first move failed or was skipped before any disk moved, and
names a swap left half done in the plan's outcome: :func:`basil.app.planner.half_swap`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from basil.app.recommendation import PodLoad, PodSnapshot, SloCase, disk_key, pod_load, slo_case
from basil.core.slo import GOAL_SLO, damage_with_moves
from basil.errors import BasilError
from basil.store.plans import Move, Plan
from basil.store.recommendations import get_recommendation

if TYPE_CHECKING:
    from basil.app.service import Service

NO_LONGER_HELPS = "no longer helps"
NO_LONGER_NEEDED = "no longer needed"


def _unit(plan: Plan, move: Move) -> tuple[list[Move], bool]:
    """The plan's moves of *move*'s unit still pending, and whether part of the unit has moved already."""
    same = [
        m
        for m in plan.moves
        if m.vm == move.vm
        and m.source_datastore == move.source_datastore
        and m.target_datastore == move.target_datastore
    ]
    started = any(m.state in ("running", "succeeded") for m in same if m.id != move.id)
    return [m for m in same if m.state == "pending" or m.id == move.id], started


def _swap(plan: Plan, move: Move) -> tuple[list[Move], bool]:
    """The plan's moves of *move*'s swap (both halves), and whether part of it has started already."""
    same = [m for m in plan.moves if m.swap_group is not None and m.swap_group == move.swap_group]
    started = any(m.state in ("running", "succeeded") for m in same if m.id != move.id)
    return same, started


def _swap_misfit(ps: PodSnapshot, halves: list[Move], names: dict[str, str]) -> str:
    """Why the swap cannot be applied as recommended: a half missing, or a disk not on its source."""
    ways = {(m.source_datastore, m.target_datastore) for m in halves}
    if not any((b, a) in ways for a, b in ways):
        return (
            "the swap is incomplete: its other half is not in the plan, and half a swap is not applied alone"
        )
    where = {d.id: d.datastore for d in ps.snapshot.disks}
    for m in halves:
        now = where.get(disk_key(m.vm, m.instance))
        if now != m.source_datastore:
            return (
                f"the swap no longer fits: disk {m.instance} of {m.vm_name or m.vm} is on "
                f"{names.get(now or '', now or 'no datastore')}, not on "
                f"{names.get(m.source_datastore, m.source_datastore)} (live placement)"
            )
    return ""


def _why_skip_swap(ps: PodSnapshot, plan: Plan, move: Move, live: PodLoad, names: dict[str, str]) -> str:
    halves, started = _swap(plan, move)
    if started:
        return ""
    misfit = _swap_misfit(ps, halves, names)
    if misfit:
        return misfit
    if any(
        m.source_datastore not in live.balanced or m.target_datastore not in live.balanced for m in halves
    ):
        return ""  # maintenance on either side: the actuator's pre-checks decide
    threshold = ps.params.imbalance_threshold
    if live.imbalance <= threshold:
        return (
            f"{NO_LONGER_NEEDED}: the pod's imbalance is {live.imbalance:.3f} now, at or below its "
            f"threshold {threshold:g} (live placement and models)"
        )
    flows = [
        (m.source_datastore, m.target_datastore, live.disk_load.get(disk_key(m.vm, m.instance), 0.0))
        for m in halves
    ]
    after = live.imbalance_after(flows)
    if after >= live.imbalance - 1e-9:
        what = ", ".join(
            dict.fromkeys(
                f"{m.vm_name or m.vm} {names.get(m.source_datastore, m.source_datastore)} → "
                f"{names.get(m.target_datastore, m.target_datastore)}"
                for m in halves
            )
        )
        return (
            f"{NO_LONGER_HELPS}: the pod's imbalance is {live.imbalance:.3f} now and would be {after:.3f} "
            f"after the swap ({what}; both halves, {len(halves)} disk(s)) (live placement and models)"
        )
    return ""


def why_skip(ps: PodSnapshot, plan: Plan, move: Move, names: dict[str, str] | None = None) -> str:
    """Why the recommended *move* should not start on the live snapshot *ps* ("" when it should)."""
    if move.swap_group is not None:
        return _why_skip_swap(ps, plan, move, pod_load(ps), names or {})
    return _why_skip_move(ps, plan, move, names)


def _why_skip_move(ps: PodSnapshot, plan: Plan, move: Move, names: dict[str, str] | None) -> str:
    unit, started = _unit(plan, move)
    if started:
        return ""
    where = {d.id: d.datastore for d in ps.snapshot.disks}
    if where.get(disk_key(move.vm, move.instance)) != move.source_datastore:
        return ""  # not where the plan expects it: the executor says where it is
    live: PodLoad = pod_load(ps)
    if move.source_datastore not in live.balanced or move.target_datastore not in live.balanced:
        return ""  # maintenance on either side: the actuator's pre-checks decide
    nm = names or {}
    src = nm.get(move.source_datastore, move.source_datastore)
    dst = nm.get(move.target_datastore, move.target_datastore)
    threshold = ps.params.imbalance_threshold
    if live.imbalance <= threshold:
        return (
            f"{NO_LONGER_NEEDED}: the pod's imbalance is {live.imbalance:.3f} now, at or below its "
            f"threshold {threshold:g} (live placement and models)"
        )
    ids = [
        disk_key(m.vm, m.instance)
        for m in unit
        if where.get(disk_key(m.vm, m.instance)) == m.source_datastore
    ]
    load = sum(live.disk_load.get(i, 0.0) for i in ids)
    after = live.imbalance_after([(move.source_datastore, move.target_datastore, load)])
    if after >= live.imbalance - 1e-9:
        return (
            f"{NO_LONGER_HELPS}: the pod's imbalance is {live.imbalance:.3f} now and would be {after:.3f} "
            f"after moving {len(ids)} disk(s) of {move.vm_name or move.vm} from {src} to {dst} "
            "(live placement and models)"
        )
    return ""


def _round_calibration(predicted: Mapping[str, Any]) -> dict[str, float] | None:
    """The calibration per datastore of the round a recommendation came from (None if it has none)."""
    round_ = predicted.get("round")
    slo = round_.get("slo") if isinstance(round_, dict) else None
    stores = slo.get("datastores") if isinstance(slo, dict) else None
    if not isinstance(stores, dict):
        return None
    out = {
        name: float(entry["calibration"])
        for name, entry in stores.items()
        if isinstance(entry, dict) and isinstance(entry.get("calibration"), int | float)
    }
    return out or None


def _slo_unit(ps: PodSnapshot, plan: Plan, move: Move, names: dict[str, str]) -> tuple[list[Move], str]:
    """The moves judged with *move* (its unit, or both halves of its swap) still on their sources, and
    why the swap cannot be applied as recommended; no moves when the check does not apply (started
    already, or the disk is not where the plan expects it: the executor says where it is)."""
    where = {d.id: d.datastore for d in ps.snapshot.disks}
    if move.swap_group is not None:
        unit, started = _swap(plan, move)
        misfit = "" if started else _swap_misfit(ps, unit, names)
    else:
        unit, started = _unit(plan, move)
        misfit = ""
        if where.get(disk_key(move.vm, move.instance)) != move.source_datastore:
            started = True
    if started:
        return [], ""
    return [m for m in unit if where.get(disk_key(m.vm, m.instance)) == m.source_datastore], misfit


def why_skip_slo(
    case: SloCase,
    ps: PodSnapshot,
    plan: Plan,
    move: Move,
    *,
    names: dict[str, str] | None = None,
    calibration: Mapping[str, float] | None = None,
) -> str:
    """Why the recommended *move* of an SLO pod should not start ("" when it should): the pod's
    predicted damage on the live placement (*case*, *ps*), with and without the move's unit (both
    halves of a swap), is 0 already, or is not lowered by it while its sources are within the
    utilisation cap. *calibration* is the round's factor per datastore (else the model calibrates on
    the newest measured latencies)."""
    nm = names or {}
    moving, misfit = _slo_unit(ps, plan, move, nm)
    if misfit or not moving:
        return misfit
    check = damage_with_moves(
        case.snapshot,
        ps.params,
        case.params,
        membership=case.membership,
        pod=next(iter(case.snapshot.pods()), ""),  # the snapshot of one pod
        moves=[([disk_key(m.vm, m.instance)], m.target_datastore) for m in moving],
        calibration=calibration,
        measured_ms=case.measured,
        lines=case.lines,
    )
    if check.before <= 1e-9:
        return (
            f"{NO_LONGER_NEEDED}: the pod's predicted damage is 0 now, every group within its DRT "
            "(live placement and models)"
        )
    cap = case.params.utilisation_cap
    if any(
        check.utilisation.get(m.source_datastore, 0.0) > cap + 1e-12
        and check.utilisation_after.get(m.source_datastore, 0.0)
        < check.utilisation.get(m.source_datastore, 0.0) - 1e-12
        for m in moving
    ):
        return ""  # it relieves a datastore over the utilisation cap, as the round's rule keeps it
    if check.after >= check.before - 1e-9:
        what = ", ".join(
            dict.fromkeys(
                f"{m.vm_name or m.vm} from {nm.get(m.source_datastore, m.source_datastore)} to "
                f"{nm.get(m.target_datastore, m.target_datastore)}"
                for m in moving
            )
        )
        return (
            f"{NO_LONGER_HELPS}: the pod's predicted damage is {check.before:.4g} now and would be "
            f"{check.after:.4g} after moving {len(moving)} disk(s) of {what} (live placement and models)"
        )
    return ""


class MoveCheck:
    """The executor's hook: ``check(plan, move)`` answers why not to start the move, or ""."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc

    def __call__(self, plan: Plan, move: Move) -> str:
        if move.recommendation_id is None:
            return ""
        try:
            pod = self.svc.resolved_pod(plan.pod, refresh=False)
            ps = self.svc.pod_snapshot(pod)
            inventory = self.svc.inventory(pod.vcenter, refresh=False)
        except BasilError:
            return ""  # no live view to judge by: the executor's own checks apply
        names = {ds.moid: ds.name for ds in inventory.datastores.values()}
        if pod.config.goal == GOAL_SLO:
            # An SLO move may raise the imbalance on purpose: it is judged by the damage (docs/slo.md).
            try:
                case = slo_case(pod, inventory, ps, self.svc.slo_inputs(pod))
                with self.svc.store.read_session() as session:
                    rec = get_recommendation(session, move.recommendation_id)
            except BasilError:
                return ""
            return why_skip_slo(
                case, ps, plan, move, names=names, calibration=_round_calibration(rec.spec.predicted)
            )
        return why_skip(ps, plan, move, names)
