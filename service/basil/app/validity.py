"""Recommendations that stay true: a round is bound to the placement it was computed from.

A round keeps its *basis*: a digest of the pod's placement (every disk and its datastore), the plans
then running in the pod and when the models it used were fitted. It is stale once

- a move of the pod succeeded after it was computed (recorded on the round as the move ends), or
- a plan is moving disks of the pod now (the placement it was built on is changing), or
- the pod's placement in vCenter no longer has its digest (a disk moved, appeared or went away
  outside Basil's plans).

A stale round is shown with its reason and is never taken into a plan (409). Models refitted since
are reported (``models_changed``) but do not make a round stale: a refit changes no placement, and the
apply-time check (:mod:`basil.app.move_check`) judges each move on the live models anyway.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from basil.app.pods import ResolvedPod
from basil.app.recommendation import PodSnapshot
from basil.app.view_cache import CONFIG
from basil.errors import BasilError, ConflictError
from basil.store import plans as plan_store
from basil.store.fits import DatastoreModel, DiskModel
from basil.store.recommendations import Recommendation, mark_stale, moves_finished_since
from basil.store.samples import DiskRef

if TYPE_CHECKING:
    from basil.app.service import Service


def placement_digest(placement: Iterable[tuple[str, str]]) -> str:
    """A digest of (disk id, datastore) pairs, independent of their order."""
    h = hashlib.sha256()
    for disk, datastore in sorted(placement):
        h.update(f"{disk}@{datastore}\n".encode())
    return h.hexdigest()


def snapshot_digest(ps: PodSnapshot) -> str:
    return placement_digest((d.id, d.datastore) for d in ps.snapshot.disks)


def _newest(times: Iterable[datetime]) -> str | None:
    newest = max(times, default=None)
    return newest.astimezone(UTC).isoformat() if newest is not None else None


def round_basis(
    ps: PodSnapshot,
    pod: ResolvedPod,
    *,
    running_plans: Sequence[int],
    datastore_models: Mapping[tuple[str, str], DatastoreModel],
    disk_models: Mapping[DiskRef, DiskModel],
) -> dict[str, Any]:
    """What a round of *pod* is computed from, as it is kept with its recommendations."""
    members = set(pod.datastores)
    ds_times = [
        m.fitted_at for (vc, ds), m in datastore_models.items() if vc == pod.vcenter and ds in members
    ]
    disk_times = [
        m.fitted_at
        for ref, m in disk_models.items()
        if ref.vcenter == pod.vcenter and ps.disk_keys.get(f"{ref.vm}:{ref.instance}") is not None
    ]
    return {
        "placement": snapshot_digest(ps),
        "disks": len(ps.snapshot.disks),
        "datastores": list(pod.datastores),
        "plans_running": list(running_plans),
        "models_fitted_at": _newest([*ds_times, *disk_times]),
    }


@dataclass(frozen=True)
class Validity:
    """Whether a round may still be planned, and why not."""

    valid: bool
    reason: str = ""
    models_changed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "stale_reason": self.reason or None,
            "models_changed": self.models_changed,
        }


def _when(svc: Service, moment: datetime, vcenter: str) -> str:
    """*moment* (the service's clock) as text on vCenter's clock, as every time Basil shows is."""
    shown = svc.shown(moment, vcenter) or moment
    return shown.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def round_validity(svc: Service, pod: ResolvedPod, recs: Sequence[Recommendation]) -> Validity:
    """The validity of one round (its recommendations, all of one pod) against the live state."""
    if not recs:
        return Validity(False, "the round has no moves")
    first = min(recs, key=lambda r: r.id)
    basis = first.basis or {}
    models_now = round_models_time(svc, pod)
    models_changed = bool(basis.get("models_fitted_at")) and models_now != basis.get("models_fitted_at")
    stored = next((r.stale_reason for r in recs if r.stale_reason), None)
    if stored:
        return Validity(False, stored, models_changed)
    with svc.store.read_session() as session:
        moved = moves_finished_since(session, pod.vcenter, pod.datastores, first.created_at)
        running = plan_store.list_plans(session, pod=pod.name, states=["running"], limit=10)
    mine = {r.plan_id for r in recs if r.plan_id is not None}
    moved = [m for m in moved if m[0] not in mine]
    if moved:
        plan_id, _count, last = moved[-1]
        total = sum(n for _, n, _ in moved)
        return Validity(
            False,
            f"plan {plan_id} moved {total} disk(s) of pod {pod.name} after this recommendation was computed "
            f"(the last at {_when(svc, last, pod.vcenter)}); the placement it was built on has changed, "
            "recompute it",
            models_changed,
        )
    busy = [p.id for p in running if p.id not in mine]
    if busy:
        return Validity(
            False,
            f"plan {busy[0]} is moving disks of pod {pod.name} now; the placement this recommendation "
            "was built on is changing, recompute it after the plan ends",
            models_changed,
        )
    digest = basis.get("placement")
    if digest is not None and first.status == "open":
        try:
            now_digest = current_digest(svc, pod)
        except BasilError:
            now_digest = digest  # no inventory to compare with: the moves recorded above decide
        if now_digest != digest:
            return Validity(
                False,
                f"the placement of pod {pod.name} in vCenter differs from the one this recommendation was "
                "computed from (a disk was moved, added or removed outside Basil's plans); recompute it",
                models_changed,
            )
    return Validity(True, "", models_changed)


def current_digest(svc: Service, pod: ResolvedPod) -> str:
    """The digest of the pod's placement as last polled (cached until the inventory changes)."""
    basis = svc.basis([pod.vcenter], (), (CONFIG,))
    return svc.cache.get(
        ("placement_digest", pod.name), basis, lambda: snapshot_digest(svc.pod_snapshot(pod))
    )


def round_models_time(svc: Service, pod: ResolvedPod) -> str | None:
    """When the models of *pod* now in use were fitted (the newest), as a round's basis writes it."""
    members = set(pod.datastores)
    ds_times = [
        m.fitted_at
        for (vc, ds), m in svc.datastore_models(pod.vcenter).items()
        if vc == pod.vcenter and ds in members
    ]
    try:
        keys = svc.pod_snapshot(pod).disk_keys
    except BasilError:
        keys = {}
    disk_times = [
        m.fitted_at for ref, m in svc.disk_models(pod.vcenter).items() if f"{ref.vm}:{ref.instance}" in keys
    ]
    return _newest([*ds_times, *disk_times])


def ensure_valid(svc: Service, pod: ResolvedPod, recs: Sequence[Recommendation]) -> None:
    """Raise ConflictError (409) with the reason when the round may not be planned any more."""
    validity = round_validity(svc, pod, recs)
    if not validity.valid:
        round_id = recs[0].round_id if recs else "?"
        raise ConflictError(f"recommendation {round_id} is stale: {validity.reason}")


def stale_after_move(svc: Service, move: plan_store.Move) -> int:
    """A move succeeded: the open recommendations of its pod computed before it are stale now."""
    if move.state != "succeeded" or move.finished_at is None:
        return 0
    with svc.store.read_session() as session:
        plan = plan_store.get_plan(session, move.plan_id)
    names: dict[str, str] = {}
    link = svc.links.get(move.vcenter)
    inventory = link.last_inventory if link is not None else None
    if inventory is not None:
        names = {ds.moid: ds.name for ds in inventory.datastores.values()}
    reason = (
        f"plan {plan.id} moved disk {move.instance} of {move.vm_name or move.vm} from "
        f"{names.get(move.source_datastore, move.source_datastore)} to "
        f"{names.get(move.target_datastore, move.target_datastore)} at "
        f"{_when(svc, move.finished_at, move.vcenter)}, after "
        "this recommendation was computed; the placement it was built on has changed, recompute it"
    )
    with svc.store.session() as session:
        return mark_stale(session, plan.pod, reason, move.finished_at)
