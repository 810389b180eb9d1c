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

A pod's "imbalance now" is :func:`pod_load` everywhere (the API's pod view, the metrics, the
apply-time check): the balancer's own N = ΣL/P (BASIL eq. 5) over the datastores not in maintenance.
When a round ends over the threshold, the pinned units (ping-pong window, excluded VMs) and units
that anti-affinity keeps from every datastore that would help, and that would lower the imbalance if
they could move, are listed with their reasons (:func:`pinned_blocking`) and named in the stop reason.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from basil.app.pods import ResolvedPod
from basil.app.pools import vm_tags
from basil.config import BalanceConfig
from basil.config.schema import DeviceConfig
from basil.core.balancer import recommend
from basil.core.constraints import ANTI_AFFINITY, PlacementState, Unit, build_units
from basil.core.latency_gate import HostLatency, LatencyGate, datastore_latency, latency_gate, without_moves
from basil.core.normalized_load import imbalance, resolve_models
from basil.core.params import BalancerParams
from basil.core.plan import STOP_NO_IMPROVING_MOVE, STOP_SEARCH_LIMIT, Plan, swap_groups
from basil.core.slo import (
    GOAL_SLO,
    PriorityGroup,
    SloParams,
    SloPodReport,
    SloResult,
    assign_groups,
    effect_dict,
    pod_report_dict,
    recommend_slo,
)
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot
from basil.core.workload_model import WorkloadParams
from basil.errors import ConflictError, VCenterError
from basil.store import Store
from basil.store.fits import DatastoreModel, DiskModel
from basil.store.recommendations import RecommendationSpec, save_round
from basil.store.samples import DiskRef
from basil.store.slo_history import save_point
from basil.vcenter.types import DiskSample, HostDatastoreSample, Inventory

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
    exclude = pod.config.balance.exclude_tag
    if exclude and inventory.tags_error and not inventory.tags:
        # Never read since the service started: balancing without them could move a VM that must stay.
        raise VCenterError(
            f"pod {pod.name}: VMs tagged {exclude} must not be moved, and tags cannot be read: "
            f"{inventory.tags_error}",
            fault="TaggingUnavailable",
        )
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


@dataclass(frozen=True)
class PodLoad:
    """A pod's load now: per datastore ΣL, P and N = ΣL/P (BASIL eq. 5), and the imbalance σ/μ of N
    over the datastores that take part (not in maintenance), as the balancer computes them."""

    imbalance: float
    load_sum_l: Mapping[str, float]
    normalized_load: Mapping[str, float]
    performance: Mapping[str, float | None]
    effective_performance: Mapping[str, float]
    model: Mapping[str, str]
    balanced: tuple[str, ...]
    disk_load: Mapping[str, float]

    def imbalance_after(self, moves: Iterable[tuple[str, str, float]]) -> float:
        """The imbalance once loads (source, target, ΣL) have moved, on the same models."""
        sums = dict(self.load_sum_l)
        for source, target, load in moves:
            sums[source] = sums.get(source, 0.0) - load
            sums[target] = sums.get(target, 0.0) + load
        return imbalance([sums[d] / self.effective_performance[d] for d in self.balanced])


def pod_load(ps: PodSnapshot) -> PodLoad:
    """The pod's imbalance now, from its snapshot: the one figure the API, metrics and checks show."""
    snap = ps.snapshot
    models = resolve_models(snap, ps.params)
    names = [d.name for d in snap.datastores]
    sums: dict[str, float] = dict.fromkeys(names, 0.0)
    for d in snap.disks:
        sums[d.datastore] = sums.get(d.datastore, 0.0) + models.disks[d.id].load
    eff = {n: models.datastores[n].effective_performance for n in names}
    loads = {n: sums[n] / eff[n] for n in names}
    balanced = tuple(d.name for d in snap.datastores if not d.maintenance)
    return PodLoad(
        imbalance=imbalance([loads[n] for n in balanced]),
        load_sum_l=sums,
        normalized_load=loads,
        performance={n: models.datastores[n].performance for n in names},
        effective_performance=eff,
        model={n: models.datastores[n].source for n in names},
        balanced=balanced,
        disk_load={d: m.load for d, m in models.disks.items()},
    )


_PIN_WORDS = {
    "ping_pong": "moved within the ping-pong window",
    "excluded_vm": "excluded from balancing",
    ANTI_AFFINITY: "kept by anti-affinity from every datastore that would help",
}
_MAX_LISTED = 50


def pinned_blocking(plan: Plan, pod: str, ps: PodSnapshot) -> list[dict[str, Any]]:
    """Units that would lower the pod's imbalance after the round, had they been free to move: pinned
    (ping-pong window, excluded VM) or kept by anti-affinity from every datastore where they would
    help. Empty unless the round ended over the threshold for want of an eligible move."""
    outcome = plan.pod(pod)
    if outcome.after.imbalance <= outcome.threshold or outcome.stop not in (
        STOP_NO_IMPROVING_MOVE,
        STOP_SEARCH_LIMIT,
    ):
        return []
    snap, params = ps.snapshot, ps.params
    models = resolve_models(snap, params)
    units = build_units(snap, models, params)
    by_disks = {frozenset(u.disks): u for u in units}
    state = PlacementState(snap, models, params)
    moved: set[str] = set()
    for m in plan.moves:
        moved.update(m.disks)
        unit = by_disks.get(frozenset(m.disks))
        if unit is not None:
            state.apply(unit, m.source, m.target)
    balanced = [d.name for d in snap.datastores if d.pod == pod and not d.maintenance]
    n_after = {n: outcome.after.normalized_load.get(n, 0.0) for n in balanced}
    eff = {n: models.datastores[n].effective_performance for n in balanced}
    f_now = imbalance(list(n_after.values()))

    def f_with(unit: Unit, target: str) -> float:
        n = dict(n_after)
        n[unit.datastore] -= unit.load / eff[unit.datastore]
        n[target] += unit.load / eff[target]
        return imbalance(list(n.values()))

    found: list[tuple[float, dict[str, Any]]] = []
    for unit in units:
        if unit.datastore not in n_after or moved.intersection(unit.disks) or unit.load <= 0:
            continue
        helps = sorted(
            (f, t) for t in balanced if t != unit.datastore and (f := f_with(unit, t)) < f_now - 1e-9
        )
        if not helps:
            continue
        code, reason = unit.pinned, unit.pinned_reason
        if code is None:
            blocked = [state.violations(unit, t, new_limit=False) for _, t in helps]
            if not all(any(v.code == ANTI_AFFINITY for v in vs) for vs in blocked):
                continue
            code = ANTI_AFFINITY
            reason = next(str(v) for v in blocked[0] if v.code == ANTI_AFFINITY)
        if code not in _PIN_WORDS:
            continue
        best_f, best_t = helps[0]
        found.append(
            (
                best_f,
                {
                    "vm": unit.vm,
                    "disks": list(unit.disks),
                    "datastore": unit.datastore,
                    "code": code,
                    "reason": reason,
                    "best_target": best_t,
                    "imbalance_if_moved": best_f,
                },
            )
        )
    found.sort(key=lambda x: (x[0], x[1]["vm"]))
    return [entry for _, entry in found]


def _pinned_words(entries: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["code"]] = counts.get(e["code"], 0) + len(e["disks"])
    parts = [f"{n} {_PIN_WORDS[c]}" for c, n in sorted(counts.items())]
    total = sum(counts.values())
    return f"{total} disk(s) that would lower it cannot move: " + ", ".join(parts)


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
    slo: SloResult | None = None  # the SLO goal's report, for pods with goal: slo


def slo_summary(report: SloPodReport, inventory: Inventory) -> dict[str, Any]:
    """The SLO section of a round: per group DRT, measured and predicted RT, damage; datastores by
    moid with their names."""
    out = pod_report_dict(report)
    names = {ds.moid: ds.name for ds in inventory.datastores.values()}
    for moid, entry in out["datastores"].items():
        entry["name"] = names.get(moid, moid)
    out["unmet"] = [readable(text, inventory) for text in out["unmet"]]
    return out


def round_summary(
    plan: Plan, pod: str, ps: PodSnapshot, inventory: Inventory | None = None
) -> dict[str, Any]:
    """Before and after of the pod and why the round stopped (kept with every recommendation of it)."""
    outcome = plan.pod(pod)
    blocking = pinned_blocking(plan, pod, ps)
    stop_reason = outcome.stop_reason
    if blocking:
        stop_reason += f"; {_pinned_words(blocking)} (see pinned_blocking)"
    names = {ds.moid: ds.name for ds in inventory.datastores.values()} if inventory is not None else {}
    vm_names = {vm.moid: vm.name for vm in inventory.vms.values()} if inventory is not None else {}
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
        "stop_reason": readable(stop_reason, inventory) if inventory is not None else stop_reason,
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
        "pinned_blocking": [
            {
                **e,
                "vm_name": vm_names.get(e["vm"], e["vm"]),
                "datastore_name": names.get(e["datastore"], e["datastore"]),
                "best_target_name": names.get(e["best_target"], e["best_target"]),
                "reason": readable(e["reason"], inventory) if inventory is not None else e["reason"],
            }
            for e in blocking[:_MAX_LISTED]
        ],
        "pinned_blocking_total": len(blocking),
    }


@dataclass(frozen=True)
class SloInputs:
    """What a round of the SLO goal reads beyond the pod's snapshot (``goal: slo``, docs/slo.md)."""

    disk_models: Mapping[DiskRef, DiskModel]
    datastore_models: Mapping[tuple[str, str], DatastoreModel]
    devices: Callable[[str], DeviceConfig | None]  # the configured device of a datastore, by name
    disk_latency_ms: Mapping[tuple[str, str], float]  # newest read latency per (VM moid, instance)
    pool_documents: Sequence[Mapping[str, Any]] = ()  # the stored SRP pool trees


def disk_read_latency(samples: Mapping[tuple[str, str], DiskSample]) -> dict[tuple[str, str], float]:
    """Each disk's newest read latency (ms), from ``readLatencyUS`` where vCenter gives it (flash
    reads 0 or 1 in whole milliseconds), else ``totalReadLatency``; idle disks have none."""
    out: dict[tuple[str, str], float] = {}
    for key, s in samples.items():
        if not s.read_iops:
            continue
        if s.read_latency_us is not None:
            out[key] = s.read_latency_us / 1000.0
        elif s.read_latency_ms is not None:
            out[key] = s.read_latency_ms
    return out


def _pool_vms(documents: Sequence[Mapping[str, Any]], inventory: Inventory) -> dict[str, list[str]]:
    """Every named SRP pool's VMs (moids): the ``vm`` leaves below it, by VM name or moid."""
    by_name = {vm.name: vm.moid for vm in inventory.vms.values()}
    out: dict[str, list[str]] = {}

    def walk(nodes: object) -> list[str]:
        found: list[str] = []
        for node in nodes if isinstance(nodes, list) else []:
            if not isinstance(node, dict):
                continue
            vm = node.get("vm")
            if isinstance(vm, str):
                found.append(by_name.get(vm, vm))
            below = walk(node.get("children", node.get("pools", [])))
            if isinstance(node.get("name"), str):
                out.setdefault(node["name"], []).extend(below)
            found += below
        return found

    for document in documents:
        walk(document.get("pools", []))
    return out


@dataclass(frozen=True)
class SloCase:
    """What the SLO model of one pod is computed from: the snapshot with device kinds and workload
    mixes, the groups' parameters and membership, measured latencies and stored device fits."""

    snapshot: Snapshot
    params: SloParams
    membership: Mapping[str, str]
    measured: Mapping[str, float]
    lines: Mapping[str, tuple[float, float]]


def slo_round(pod: ResolvedPod, inventory: Inventory, ps: PodSnapshot, inputs: SloInputs) -> SloResult:
    """The pod's round under the SLO goal: groups from tags and SRP pools, service models from the
    stored device fits or the configured device kinds, each disk's workload mix and IOPS."""
    case = slo_case(pod, inventory, ps, inputs)
    return recommend_slo(
        case.snapshot, ps.params, case.params, case.membership, measured_ms=case.measured, lines=case.lines
    )


def slo_case(pod: ResolvedPod, inventory: Inventory, ps: PodSnapshot, inputs: SloInputs) -> SloCase:
    """The inputs of the pod's SLO model (:func:`slo_round`, and the apply-time check of its moves)."""
    cfg = pod.config.slo
    params = SloParams(
        groups=tuple(PriorityGroup(g.name, g.drt_ms, g.tag, g.pools) for g in cfg.groups),
        utilisation_cap=cfg.utilisation_cap_pct / 100.0,
        priority_queues=cfg.priority_queues,
        iterations=cfg.iterations,
        min_gain_pct=cfg.min_gain_pct,
        tag_category=cfg.tag_category,
    )
    stores = []
    lines: dict[str, tuple[float, float]] = {}
    for ds in ps.snapshot.datastores:
        device = inputs.devices(inventory.datastores[ds.name].name)
        stores.append(
            dataclasses.replace(
                ds,
                device_kind=device.kind or None if device is not None else None,
                spindles=device.spindles or None if device is not None and device.kind else None,
            )
        )
        model = inputs.datastore_models.get((pod.vcenter, ds.name))
        if model is not None and model.quality == "ok" and model.p and model.intercept:
            lines[ds.name] = (model.intercept, model.p)
    disks = []
    measured: dict[str, float] = {}
    for d in ps.snapshot.disks:
        vm, instance, _ = ps.disk_keys[d.id]
        w = inputs.disk_models.get(DiskRef(pod.vcenter, vm, instance))
        workload = WorkloadParams(w.oio, w.io_size_kb, w.read_pct, w.random_pct) if w is not None else None
        vm_obj = inventory.vms.get(vm)
        # A VM that is not running does no IO; vCenter samples it no more, so its newest sample is
        # from before it stopped: its disks are idle for the model.
        iops = d.iops if vm_obj is None or vm_obj.powered_on else 0.0
        disks.append(dataclasses.replace(d, workload=workload, iops=iops))
        latency = inputs.disk_latency_ms.get((vm, instance))
        if latency is not None:
            measured[d.id] = latency
    snapshot = dataclasses.replace(ps.snapshot, datastores=tuple(stores), disks=tuple(disks))
    tags: dict[str, list[str]] = {}
    group_tags = {params.group_tag(g) for g in params.groups}
    for path, moids in vm_tags(inventory).items():
        if path.partition("/")[0] == cfg.tag_category or path in group_tags:
            for moid in moids:
                tags.setdefault(moid, []).append(path)
    membership = assign_groups(
        params,
        snapshot,
        vm_tags=tags,
        pool_vms=_pool_vms(inputs.pool_documents, inventory),
        path=f"pods.{pod.name}.slo",
    )
    return SloCase(snapshot, params, membership, measured, lines)


def _why_empty(pod: ResolvedPod) -> str:
    if pod.missing:
        return "; ".join(f"configured {m} is not in vCenter {pod.vcenter}" for m in pod.missing)
    if pod.config.datastore_cluster:
        return f"datastore cluster {pod.config.datastore_cluster} is empty"
    return "none of its datastores is in vCenter"


# (source, target, snapshot disk ids) -> the predicted figures of both datastores' disks, or None
MoveEffect = Callable[[str, str, Sequence[str]], dict[str, Any] | None]


def run_round(
    store: Store,
    pod: ResolvedPod,
    inventory: Inventory,
    ps: PodSnapshot,
    now: datetime | None = None,
    *,
    host_samples: Iterable[HostDatastoreSample] | None = None,
    basis: dict[str, Any] | None = None,
    slo: SloInputs | None = None,
    move_effect: MoveEffect | None = None,
) -> Round:
    """Recommend for one pod and save the round (its previous open recommendations become superseded).

    With *move_effect* (:func:`basil.app.whatif.move_effects`), each move's predicted effect gains
    the consolidation what-if of its source and target datastores (``predicted.consolidation``).

    With *host_samples* (the newest per host and datastore), the pod's I/O latency gate applies: while
    it is closed (no datastore above the threshold) the round recommends no move.
    """
    at = now or datetime.now(UTC)
    if not pod.datastores:
        raise ConflictError(f"pod {pod.name} has no datastores to balance: {_why_empty(pod)}")
    latency = pod_latency_gate(pod, host_samples) if host_samples is not None else None
    slo_result: SloResult | None = None
    if pod.config.goal == GOAL_SLO:  # the one dispatch point of the goals (docs/slo.md)
        # Storage DRS's latency gate is the balance goal's: a 2 ms target can be missed far below it.
        latency = None
        slo_result = slo_round(pod, inventory, ps, slo or SloInputs({}, {}, lambda _name: None, {}))
        plan = slo_result.plan
    else:
        plan = recommend(ps.snapshot, ps.params)
    if latency is not None and not latency.open:
        names = {ds.moid: ds.name for ds in inventory.datastores.values()}
        plan = without_moves(plan, pod.name, latency.reason(names))
    summary = round_summary(plan, pod.name, ps, inventory)
    if slo_result is not None:
        summary["slo"] = slo_summary(slo_result.pod(pod.name), inventory)
    if latency is not None:
        summary["latency"] = {
            "threshold_ms": latency.threshold_ms,
            "observed_ms": dict(latency.latency_ms),
            "balancing": latency.open,
        }
    specs: list[RecommendationSpec] = []
    groups = swap_groups(plan.moves)
    effects = {m.number: move_effect(m.source, m.target, m.disks) for m in plan.moves} if move_effect else {}
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
                    swap_group=groups.get(move.number),
                    predicted={
                        "move": move.number,
                        "kind": move.kind,
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
                        **(
                            {"slo": effect_dict(slo_result.effects[move.number])}
                            if slo_result is not None and move.number in slo_result.effects
                            else {}
                        ),
                        "consolidation": effects.get(move.number),
                        "round": summary,
                    },
                )
            )
    with store.session() as session:
        saved = save_round(session, pod.name, specs, at, basis)
        if "slo" in summary:  # one point of the pod's SLO series per round (docs/slo.md)
            save_point(session, pod.name, at, saved[0].round_id if saved else None, summary["slo"])
    round_id = saved[0].round_id if saved else None
    log.info("pod %s: %d moves recommended (%s)", pod.name, len(plan.moves), summary["stop_reason"])
    return Round(
        pod.name, pod.vcenter, round_id, at, plan, ps, tuple(r.id for r in saved), summary, slo_result
    )
