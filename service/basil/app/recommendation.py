"""Recommendation per pod: a :mod:`basil.core` snapshot from inventory, models and options; ``recommend``.

The snapshot names datastores and VMs by moid (unique, unlike names) and disks ``<vm moid>:<instance>``.
A disk's L is its current workload model's (BASIL eq. 1); a disk without one yet (never sampled in
the window, or idle) weighs 0. A datastore's P is its current device model's when the fit is usable;
otherwise it is new (§6.3). Rules come from the configuration and from tags:

- ``balance.exclude_tag``: VMs with that tag are never moved;
- ``balance.keep_vmdks_together: false``: every VM's disks may be split;
- anti-affinity: VMs sharing a tag of the category ``basil-anti-affinity`` never share a datastore
  (Basil's convention; vSphere's own anti-affinity rules live on datastore clusters and are not
  read yet);
- ping-pong: each disk's last successful move, from the plans in the store;
- ``balance.latency_threshold_ms``: Storage DRS's I/O latency threshold. A round recommends no move
  while no datastore of the pod is observed above it (:mod:`basil.core.latency_gate`), judged on the
  newest host samples collected (each datastore's latency IOPS-weighted over its hosts); the round
  still reports the imbalance, and its stop reason says why nothing moves.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from basil.app.pods import ResolvedPod
from basil.config import BalanceConfig
from basil.core.balancer import recommend
from basil.core.latency_gate import HostLatency, LatencyGate, datastore_latency, latency_gate, without_moves
from basil.core.params import BalancerParams
from basil.core.plan import Plan
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot
from basil.store import Store
from basil.store.fits import DatastoreModel, DiskModel
from basil.store.recommendations import RecommendationSpec, save_round
from basil.store.samples import DiskRef
from basil.vcenter.types import HostDatastoreSample, Inventory

log = logging.getLogger(__name__)

ANTI_AFFINITY_CATEGORY = "basil-anti-affinity"
GB = 2**30
# Host samples this much older than a pod's newest one are left out of its latency: a host that
# stopped doing IO on a datastore (or stopped reporting) must not keep an old latency alive.
LATENCY_SAMPLE_AGE_S = 60.0


def balancer_params(balance: BalanceConfig) -> BalancerParams:
    """The balancer's parameters for a pod; the configuration names candidate orders as the balancer
    does, and the balancer validates its parameters itself (as placement does)."""
    return BalancerParams(
        imbalance_threshold=balance.imbalance_threshold,
        max_moves=int(balance.max_moves),
        max_gb=float(balance.max_gb),
        space_headroom_pct=balance.space_headroom_pct,
        candidate_order=balance.candidate_order,
        ping_pong_hours=balance.ping_pong_hours,
        objective=balance.objective,
    )


def disk_key(vm: str, instance: str) -> str:
    return f"{vm}:{instance}"


@dataclass(frozen=True)
class PodSnapshot:
    """The snapshot of one pod and what it was built from, for the round's record."""

    snapshot: Snapshot
    params: BalancerParams
    unmodelled_disks: tuple[str, ...]
    disk_keys: Mapping[str, tuple[str, str, int]]  # snapshot disk id -> (vm, instance, device key)
    notes: tuple[str, ...] = ()


def build_snapshot(
    pod: ResolvedPod,
    inventory: Inventory,
    *,
    disk_models: Mapping[DiskRef, DiskModel],
    datastore_models: Mapping[tuple[str, str], DatastoreModel],
    last_moves: Mapping[tuple[str, int], datetime],
    now: datetime,
    disk_iops: Mapping[tuple[str, str], float] | None = None,
) -> PodSnapshot:
    """The pod as the balancer sees it: its datastores, the disks on them, and the rules."""
    vc = pod.vcenter
    members = set(pod.datastores)
    datastores: list[Datastore] = []
    for moid in pod.datastores:
        ds = inventory.datastores[moid]
        model = datastore_models.get((vc, moid))
        performance = model.p if model is not None and model.quality == "ok" and model.p else None
        datastores.append(
            Datastore(
                name=moid,
                capacity_gb=max(ds.capacity_bytes / GB, 1e-9),
                free_gb=min(ds.free_bytes, ds.capacity_bytes) / GB,
                hosts=frozenset(ds.hosts),
                maintenance=ds.in_maintenance or not ds.accessible,
                performance=performance,
                pod=pod.name,
            )
        )
    disks: list[Disk] = []
    unmodelled: list[str] = []
    keys: dict[str, tuple[str, str, int]] = {}
    vms_in_pod: set[str] = set()
    for vm in sorted(inventory.vms.values(), key=lambda v: v.moid):
        if vm.template:
            continue
        for d in vm.disks:
            if d.datastore not in members:
                continue
            ident = disk_key(vm.moid, d.instance)
            wmodel = disk_models.get(DiskRef(vc, vm.moid, d.instance))
            if wmodel is None:
                unmodelled.append(ident)
            moved = last_moves.get((vm.moid, d.key))
            iops = (disk_iops or {}).get((vm.moid, d.instance))
            disks.append(
                Disk(
                    id=ident,
                    vm=vm.moid,
                    datastore=d.datastore,
                    size_gb=d.capacity_bytes / GB,
                    hosts=frozenset([vm.host]) if vm.host else frozenset(),
                    load=wmodel.load if wmodel is not None else 0.0,
                    iops=iops,
                    last_moved=moved.timestamp() if moved is not None else None,
                )
            )
            keys[ident] = (vm.moid, d.instance, d.key)
            vms_in_pod.add(vm.moid)
    balance = pod.config.balance
    excluded = (
        frozenset(v for v in inventory.tagged(balance.exclude_tag) if v in vms_in_pod)
        if balance.exclude_tag
        else frozenset()
    )
    splittable = frozenset() if balance.keep_vmdks_together else frozenset(vms_in_pod)
    groups: dict[str, set[str]] = {}
    for tag in inventory.tags.values():
        if tag.category == ANTI_AFFINITY_CATEGORY:
            members_of_tag = {v for v in inventory.tagged(tag.path) if v in vms_in_pod}
            if len(members_of_tag) >= 2:
                groups[tag.path] = members_of_tag
    rules = Rules(
        splittable_vms=splittable,
        anti_affinity=tuple(frozenset(g) for _, g in sorted(groups.items())),
        excluded_vms=excluded,
    )
    snapshot = Snapshot(
        datastores=tuple(datastores),
        disks=tuple(disks),
        rules=rules,
        now=now.timestamp(),
        description=f"pod {pod.name} of {vc}",
    )
    notes = tuple(f"configured {m} is not in vCenter" for m in pod.missing)
    return PodSnapshot(snapshot, balancer_params(balance), tuple(unmodelled), keys, notes)


def pod_latency_gate(pod: ResolvedPod, samples: Iterable[HostDatastoreSample]) -> LatencyGate:
    """The pod's I/O latency gate from the newest host samples of its datastores."""
    mine = [s for s in samples if s.datastore in pod.datastores]
    newest = max((s.timestamp for s in mine), default=None)
    observed = datastore_latency(
        HostLatency(s.datastore, s.iops or 0.0, s.latency_ms if s.latency_ms is not None else math.nan)
        for s in mine
        if newest is not None and (newest - s.timestamp).total_seconds() <= LATENCY_SAMPLE_AGE_S
    )
    return latency_gate(pod.config.balance.latency_threshold_ms, observed, pod.datastores)


def readable(text: str, inventory: Inventory) -> str:
    """The core's reason text names datastores and VMs by moid; people know them by name."""
    names = {ds.moid: ds.name for ds in inventory.datastores.values()}
    names.update({vm.moid: vm.name for vm in inventory.vms.values()})
    return re.sub(r"\b(?:datastore|vm)-\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)


@dataclass(frozen=True)
class Round:
    """One recommendation round of one pod: the core's plan and what was saved."""

    pod: str
    vcenter: str
    round_id: str | None  # None when the round recommended no move (nothing saved)
    created_at: datetime
    plan: Plan
    pod_snapshot: PodSnapshot
    recommendation_ids: tuple[int, ...] = ()
    summary: dict[str, Any] = field(default_factory=dict)


def round_summary(plan: Plan, pod: str, ps: PodSnapshot) -> dict[str, Any]:
    """Before and after of the pod and why the round stopped (kept with every recommendation of it)."""
    outcome = plan.pod(pod)
    return {
        "before": {
            "imbalance": outcome.before.imbalance,
            "normalized_load": dict(outcome.before.normalized_load),
        },
        "after": {
            "imbalance": outcome.after.imbalance,
            "normalized_load": dict(outcome.after.normalized_load),
        },
        "threshold": outcome.threshold,
        "stop": outcome.stop,
        "stop_reason": outcome.stop_reason,
        "notes": [*plan.notes, *ps.notes]
        + (
            [f"{len(ps.unmodelled_disks)} disks have no workload model yet (L = 0)"]
            if ps.unmodelled_disks
            else []
        ),
        "datastores": {
            name: {
                "model": m.source,
                "P": m.performance,
                "effective_P": m.effective_performance,
            }
            for name, m in plan.datastores.items()
        },
        "pinned": [
            {"vm": p.vm, "disks": list(p.disks), "code": p.code, "reason": p.reason} for p in plan.pinned
        ],
    }


def run_round(
    store: Store,
    pod: ResolvedPod,
    inventory: Inventory,
    ps: PodSnapshot,
    now: datetime | None = None,
    *,
    host_samples: Iterable[HostDatastoreSample] | None = None,
) -> Round:
    """Recommend for one pod and save the round (its previous open recommendations become superseded).

    With *host_samples* (the newest per host and datastore), the pod's I/O latency gate applies: while
    it is closed (no datastore above the threshold) the round recommends no move.
    """
    at = now or datetime.now(UTC)
    latency = pod_latency_gate(pod, host_samples) if host_samples is not None else None
    plan = recommend(ps.snapshot, ps.params)
    if latency is not None and not latency.open:
        names = {ds.moid: ds.name for ds in inventory.datastores.values()}
        plan = without_moves(plan, pod.name, latency.reason(names))
    summary = round_summary(plan, pod.name, ps)
    if latency is not None:
        summary["latency"] = {
            "threshold_ms": latency.threshold_ms,
            "observed_ms": dict(latency.latency_ms),
            "balancing": latency.open,
        }
    specs: list[RecommendationSpec] = []
    for move in plan.moves:
        for disk, size, load in zip(move.disks, move.disk_sizes_gb, move.disk_loads, strict=True):
            vm, instance, key = ps.disk_keys[disk]
            vm_obj = inventory.vms.get(vm)
            real_size = next((d.capacity_bytes for d in vm_obj.disks if d.key == key), 0) if vm_obj else 0
            specs.append(
                RecommendationSpec(
                    vcenter=pod.vcenter,
                    vm=vm,
                    disk_key=key,
                    source_datastore=move.source,
                    target_datastore=move.target,
                    size_bytes=real_size or int(size * GB),
                    reason=move.reason_code,
                    vm_name=vm_obj.name if vm_obj else vm,
                    instance=instance,
                    predicted={
                        "move": move.number,
                        "load": load,
                        "move_load": move.load,
                        "disks_in_move": list(move.disks),
                        "reason": readable(move.reason, inventory),
                        "from_N_before": move.source_n_before,
                        "from_N_after": move.source_n_after,
                        "to_N_before": move.target_n_before,
                        "to_N_after": move.target_n_after,
                        "imbalance_before": move.imbalance_before,
                        "imbalance_after": move.imbalance_after,
                        "target_new": move.target_new,
                        "round": summary,
                    },
                )
            )
    with store.session() as session:
        saved = save_round(session, pod.name, specs, at)
    round_id = saved[0].round_id if saved else None
    log.info("pod %s: %d moves recommended (%s)", pod.name, len(plan.moves), summary["stop_reason"])
    return Round(pod.name, pod.vcenter, round_id, at, plan, ps, tuple(r.id for r in saved), summary)
