"""Read models: JSON-ready dicts in the shapes of the API contract, built from the store, the inventory
and what the service holds in memory (newest samples, last rounds, SRP results).

Times are ISO 8601 strings in UTC; sizes in GB; ids as :mod:`basil.app.ids` writes them. The views
of pods and datastores are cached (:mod:`basil.app.view_cache`): each names what it is built from, so
that it is built again as soon as one of those changed, and never changes a cached value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from basil import __version__
from basil.app.jobs import JOBS, SCHEDULED, triggers
from basil.app.planner import MOVE_OUTCOMES, move_outcome
from basil.app.pods import ResolvedPod, pod_of_datastore, resolve_pod
from basil.app.prediction import datastore_gauges, latest_measured
from basil.app.recommendation import Round, pod_load, readable
from basil.app.validity import round_validity
from basil.app.view_cache import CONFIG, FITS, PLANS, PREDICTIONS, RECOMMENDATIONS, ROUNDS, SAMPLES, Basis
from basil.errors import BasilError, NotFoundError
from basil.store import job_runs as runs
from basil.store import plans as plan_store
from basil.store.applied import disk_settings
from basil.store.audit import query as audit_query
from basil.store.fits import DiskModel, disk_model_history
from basil.store.models import JobRunRow
from basil.store.overrides import Override
from basil.store.predictions import PredictionCheck, pod_checks
from basil.store.recommendations import Recommendation, get_recommendation, open_recommendations
from basil.store.samples import DiskRef, device_points
from basil.store.srp_pools import PoolTree as StoredPoolTree
from basil.vcenter.types import Datastore, Inventory

if TYPE_CHECKING:
    from basil.app.service import Service

GB = 2**30


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment is not None else None


def shown(svc: Service, moment: datetime | None, vcenter: str | None = None) -> str | None:
    """A moment of the service's clock, shown on vCenter's as every time is (basil.app.clock)."""
    return iso(svc.shown(moment, vcenter))


def _finite(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


# --- pods and datastores ----------------------------------------------------------------------------


def pod_state(svc: Service, pod: ResolvedPod) -> dict[str, Any]:
    """N_j = ΣL_i / P_j (BASIL eq. 5) per datastore and the imbalance σ/μ, from the current models."""
    basis = svc.basis([pod.vcenter], FITS, (CONFIG,))
    return svc.cache.get(("pod_state", pod.name), basis, lambda: _pod_state(svc, pod))


def _pod_state(svc: Service, pod: ResolvedPod) -> dict[str, Any]:
    # The one "imbalance now" (basil.app.recommendation.pod_load): the balancer's N and σ/μ.
    load = pod_load(svc.pod_snapshot(pod))
    return {
        "imbalance": load.imbalance,
        "load_sum_L": dict(load.load_sum_l),
        "normalized_load": dict(load.normalized_load),
        "P": dict(load.performance),
        "model": dict(load.model),
    }


def _host_figures(svc: Service, vcenter: str, moid: str) -> dict[str, float | None]:
    read = write = lat_iops = 0.0
    seen = False
    for (_host, ds), s in svc.newest_host_samples(vcenter).items():
        if ds != moid:
            continue
        seen = True
        r, w = s.read_iops or 0.0, s.write_iops or 0.0
        read += r
        write += w
        lat_iops += (s.read_latency_ms or 0.0) * r + (s.write_latency_ms or 0.0) * w
    if not seen:
        return {"latency_ms": None, "read_iops": None, "write_iops": None, "iops": None}
    total = read + write
    return {
        "latency_ms": lat_iops / total if total > 0 else 0.0,
        "read_iops": read,
        "write_iops": write,
        "iops": total,
    }


def datastore_summary(
    svc: Service, vcenter: str, ds: Datastore, pod: ResolvedPod | None, state: Mapping[str, Any] | None
) -> dict[str, Any]:
    model = svc.datastore_models(vcenter).get((vcenter, ds.moid))
    n = (state or {}).get("normalized_load", {}).get(ds.moid)
    load = (state or {}).get("load_sum_L", {}).get(ds.moid)
    return {
        "id": svc.ids.object_id(vcenter, ds.moid),
        "name": ds.name,
        "pod": pod.name if pod else None,
        "capacity_gb": ds.capacity_bytes / GB,
        "free_gb": ds.free_bytes / GB,
        "maintenance": ds.in_maintenance,
        "accessible": ds.accessible,
        "P": _finite(model.p) if model is not None and model.quality == "ok" else None,
        "model_status": model.quality if model is not None else "no_model",
        "load_sum_L": _finite(load),
        "normalized_load": _finite(n),
        **_host_figures(svc, vcenter, ds.moid),
    }


def _pending_moves(svc: Service, pod: str) -> list[plan_store.Move]:
    def build() -> list[plan_store.Move]:
        with svc.store.read_session() as session:
            return plan_store.pending_moves(session, pod, plans=100)

    return svc.cache.get(("pending_moves", pod), svc.basis(tables=PLANS), build)


def _round_of(svc: Service, pod: str) -> dict[str, Any] | None:
    r = svc.rounds.get(pod)
    if r is not None:
        return {
            "id": r.round_id,
            "created_at": shown(svc, r.created_at, r.vcenter),
            "moves": len(r.plan.moves),
        }
    with svc.store.read_session() as session:
        recs = open_recommendations(session, pod)
    if not recs:
        return None
    last = max(recs, key=lambda x: x.id)
    return {
        "id": last.round_id,
        "created_at": shown(svc, last.created_at, last.spec.vcenter),
        "moves": sum(1 for x in recs if x.round_id == last.round_id),
    }


def _pod_basis(svc: Service, pod: ResolvedPod) -> Basis:
    """What a pod's view is built from: inventory, models, plans, recommendations, samples, rounds."""
    return svc.basis([pod.vcenter], FITS + PLANS + RECOMMENDATIONS + PREDICTIONS, (SAMPLES, ROUNDS, CONFIG))


def _pod_view(svc: Service, pod: ResolvedPod) -> dict[str, Any]:
    # The plans are read only for the count of pending moves: a plan created or cancelled (a burst of
    # them) builds that count again, not the rest of the view (datastores, models, samples, rounds).
    base_basis = svc.basis([pod.vcenter], FITS + RECOMMENDATIONS + PREDICTIONS, (SAMPLES, ROUNDS, CONFIG))
    base = svc.cache.get(("pod", pod.name), base_basis, lambda: _build_pod_view(svc, pod))
    return {**base, "pending_moves": len(_pending_moves(svc, pod.name))}


def _build_pod_view(svc: Service, pod: ResolvedPod) -> dict[str, Any]:
    """A pod's view but for its count of pending moves (None here; see _pod_view)."""
    inv = svc.inventory(pod.vcenter, refresh=False)
    try:
        state: dict[str, Any] | None = pod_state(svc, pod)
    except BasilError:
        state = None
    balance = pod.config.balance
    return {
        "name": pod.name,
        "vcenter": pod.vcenter,
        # The StoragePod's id (as datastore ids are written) when the pod is a datastore cluster: the
        # plugin's tab on a datastore cluster finds its pod by it.
        "storage_pod": svc.ids.object_id(pod.vcenter, pod.storage_pod) if pod.storage_pod else None,
        "mode": pod.config.mode,
        "imbalance": _finite(state["imbalance"]) if state else None,
        "threshold": balance.imbalance_threshold,
        "datastores": [
            datastore_summary(svc, pod.vcenter, inv.datastores[d], pod, state) for d in pod.datastores
        ],
        "missing": list(pod.missing),
        "pending_moves": None,  # the plans' part, filled in by _pod_view
        "last_recommendation": _round_of(svc, pod.name),
        "prediction_error": _prediction_summary(svc, pod.name),
    }


def _vc_time(ts: int | None) -> str | None:
    return iso(datetime.fromtimestamp(ts, UTC)) if ts is not None else None


_FIGURES = ("latency_ms", "read_latency_ms", "iops", "read_oio", "write_oio")
_ERRORS = (
    "latency_median_abs",
    "read_latency_median_abs",
    "iops_median_abs",
    "imbalance_abs",
    "imbalance_rel",
)


def prediction_dict(svc: Service, check: PredictionCheck) -> dict[str, Any]:
    """An applied plan's prediction, what was measured an hour later (vCenter time) and the error."""
    vcenter = check.vcenter
    measured = check.measured or {}
    error = check.error or {}
    datastores = []
    for ds, p in check.predicted.get("datastores", {}).items():
        m = (measured.get("datastores") or {}).get(ds) or {}
        e = (error.get("datastores") or {}).get(ds) or {}
        datastores.append(
            {
                "datastore": svc.ids.object_id(vcenter, ds),
                "name": p.get("name", ds),
                "model": p.get("model"),
                "predicted": {k: p.get(k) for k in _FIGURES},
                "measured": None if check.measured is None else {k: m.get(k) for k in _FIGURES},
                "error": None
                if check.error is None
                else {k: e.get(k) for k in ("latency", "read_latency", "iops")},
            }
        )
    return {
        "plan": check.plan_id,
        "pod": check.pod,
        "state": "measured" if check.measured is not None else "waiting",
        "finished_at": _vc_time(check.finished_ts),
        "due_at": _vc_time(check.due_ts),
        "measured_at": iso(check.measured_at),
        "moves": check.predicted.get("moves"),
        "imbalance": {
            "predicted": check.predicted.get("imbalance"),
            "predicted_by_round": check.predicted.get("imbalance_round"),
            "measured": measured.get("imbalance"),
        },
        "error": None if check.error is None else {k: error.get(k) for k in _ERRORS},
        "datastores": datastores,
    }


def _prediction_summary(svc: Service, pod_name: str) -> dict[str, Any] | None:
    check = latest_measured(svc, pod_name)
    if check is None or check.error is None:
        return None
    return {
        "plan": check.plan_id,
        "due_at": _vc_time(check.due_ts),
        **{k: check.error.get(k) for k in _ERRORS},
    }


def predictions(svc: Service, pod_name: str, limit: int = 50) -> list[dict[str, Any]]:
    svc.resolved_pod(pod_name, refresh=False)  # 404 for an unknown pod
    with svc.store.read_session() as session:
        found = pod_checks(session, pod_name, limit=limit)
    return [prediction_dict(svc, c) for c in found]


def pods(svc: Service) -> list[dict[str, Any]]:
    return [_pod_view(svc, p) for p in svc.resolved_pods(refresh=False)]


def pod(svc: Service, name: str) -> dict[str, Any]:
    resolved = svc.resolved_pod(name, refresh=False)
    basis = _pod_basis(svc, resolved)
    return svc.cache.get(("pod_detail", name), basis, lambda: _build_pod_detail(svc, resolved))


def _build_pod_detail(svc: Service, resolved: ResolvedPod) -> dict[str, Any]:
    with svc.store.read_session() as session:
        plans = plan_store.list_plans(session, pod=resolved.name, limit=20)
    # Every move that ended (moved, already there, failed, skipped, cancelled), newest first.
    recent = [m for p in plans for m in p.moves if m.finished_at is not None]
    recent.sort(key=lambda m: (m.finished_at or datetime.min.replace(tzinfo=UTC), m.id), reverse=True)
    return {
        **_pod_view(svc, resolved),
        "pending": [move_dict(svc, m) for m in _pending_moves(svc, resolved.name)],
        "recent_moves": [move_dict(svc, m) for m in recent[:20]],
    }


def _model_runs(svc: Service, hours: float) -> list[runs.JobRun]:
    # "The last hours" on vCenter's clock, as the points are shown.
    since = svc.vcenter_time() - timedelta(hours=hours)
    with svc.store.read_session() as session:
        found = runs.recent_runs(session, "model", limit=2000)
    return sorted(
        (r for r in found if (svc.shown(r.started_at) or r.started_at) >= since and r.outcome == "succeeded"),
        key=lambda r: r.started_at,
    )


def pod_history(svc: Service, name: str, hours: float) -> dict[str, Any]:
    """Imbalance and each datastore's N after every modelling run within *hours*."""
    resolved = svc.resolved_pod(name, refresh=False)
    points = []
    for run in _model_runs(svc, hours):
        state = run.details.get("pods", {}).get(name)
        if state:
            points.append(
                {
                    "t": shown(svc, run.finished_at or run.started_at),
                    "imbalance": state.get("imbalance"),
                    "normalized_load": {
                        svc.ids.object_id(resolved.vcenter, ds): n
                        for ds, n in state.get("normalized_load", {}).items()
                    },
                }
            )
    return {"pod": name, "hours": hours, "points": points}


def _datastore_of(svc: Service, ident: str) -> tuple[str, Inventory, Datastore]:
    vcenter, moid = svc.ids.parse_object(ident, "datastore")
    inv = svc.inventory(vcenter, refresh=False)
    ds = inv.datastores.get(moid) or next((d for d in inv.datastores.values() if d.name == moid), None)
    if ds is None:
        raise NotFoundError(f"no datastore {ident!r}")
    return vcenter, inv, ds


def datastore(svc: Service, ident: str) -> dict[str, Any]:
    vcenter, _inv, ds = _datastore_of(svc, ident)
    basis = svc.basis([vcenter], FITS, (SAMPLES, CONFIG))
    return svc.cache.get(("datastore", vcenter, ds.moid), basis, lambda: _build_datastore(svc, vcenter, ds))


def _build_datastore(svc: Service, vcenter: str, ds: Datastore) -> dict[str, Any]:
    pods_now = svc.resolved_pods(refresh=False)
    pod_ = pod_of_datastore(pods_now, vcenter, ds.moid)
    state = None
    if pod_ is not None:
        try:
            state = pod_state(svc, pod_)
        except BasilError:
            state = None
    view = datastore_summary(svc, vcenter, ds, pod_, state)
    m = svc.datastore_models(vcenter).get((vcenter, ds.moid))
    view["model"] = (
        {
            "status": m.quality,
            "P": _finite(m.p),
            "slope_ms_per_oio": _finite(m.slope),
            "intercept_ms": _finite(m.intercept),
            "r2": _finite(m.r_squared),
            "points_used": m.points_used,
            "points_filtered": m.points_filtered,
            "summary": m.details.get("summary", ""),
            "fitted_at": shown(svc, m.fitted_at, vcenter),
            # The device model's P in use, its confidence interval and where it comes from.
            "P_low": _finite(m.details.get("p_low")),
            "P_high": _finite(m.details.get("p_high")),
            "source": m.details.get("source"),
            "credible": m.details.get("credible"),
            "latency_resolution": m.details.get("latency_resolution"),
            "reason": m.details.get("reason", ""),
        }
        if m is not None
        else {
            "status": "no_model",
            "P": None,
            "slope_ms_per_oio": None,
            "intercept_ms": None,
            "r2": None,
            "points_used": 0,
            "fitted_at": None,
        }
    )
    view["sioc"] = {
        "enabled": ds.iorm.enabled,
        "threshold_ms": ds.iorm.threshold_ms,
        "mode": ds.iorm.threshold_mode,
    }
    view["hosts"] = [svc.ids.object_id(vcenter, h) for h in ds.hosts]
    return view


def datastore_points(svc: Service, ident: str, hours: float) -> list[dict[str, Any]]:
    """The ⟨OIO, latency⟩ points behind the device model (per interval, all hosts aggregated)."""
    vcenter, _inv, ds = _datastore_of(svc, ident)
    now_ts = svc.sample_now(vcenter)
    if now_ts is None:
        return []
    with svc.store.read_session() as session:
        pts = device_points(session, vcenter, ds.moid, now_ts + 1 - int(hours * 3600), now_ts + 1)
    return [
        {"oio": o, "latency_ms": lat, "iops": i, "t": iso(datetime.fromtimestamp(t, UTC))}
        for t, o, lat, i in zip(pts.ts, pts.read_oio, pts.read_latency_ms, pts.read_iops, strict=True)
    ]


def datastore_load(svc: Service, ident: str, hours: float) -> list[dict[str, Any]]:
    """N of the datastore after each modelling run within *hours*."""
    vcenter, _inv, ds = _datastore_of(svc, ident)
    pod_ = pod_of_datastore(svc.resolved_pods(refresh=False), vcenter, ds.moid)
    if pod_ is None:
        return []
    out = []
    for run in _model_runs(svc, hours):
        state = run.details.get("pods", {}).get(pod_.name)
        if state and ds.moid in state.get("normalized_load", {}):
            out.append(
                {
                    "t": shown(svc, run.finished_at or run.started_at),
                    "normalized_load": state["normalized_load"][ds.moid],
                    "load_sum_L": state.get("load_sum_L", {}).get(ds.moid),
                }
            )
    return out


# --- VMs and disks ---------------------------------------------------------------------------------


def vm(svc: Service, ident: str) -> dict[str, Any]:
    vcenter, moid = svc.ids.parse_object(ident, "VM")
    inv = svc.inventory(vcenter, refresh=False)
    v = inv.vms.get(moid) or next((x for x in inv.vms.values() if x.name == moid), None)
    if v is None:
        raise NotFoundError(f"no VM {ident!r}")
    models = svc.disk_models(vcenter)
    with svc.store.read_session() as session:
        applied = disk_settings(session, vcenter)
    latest = svc.latest_disks.get(vcenter, {})
    pools = [
        {"pool_tree": doc.name, "datastore": svc.ids.object_id(vcenter, doc.datastore)}
        for doc in svc.pool_documents(refresh=False)
        if doc.vcenter == vcenter and v.moid in doc.tree.vm_names()
    ]
    disks = []
    for d in v.disks:
        m = models.get(DiskRef(vcenter, v.moid, d.instance))
        s = latest.get((v.moid, d.instance))
        a = applied.get((vcenter, v.moid, d.key))
        ds = inv.datastores.get(d.datastore)
        disks.append(
            {
                "id": svc.ids.disk_id(vcenter, v.moid, d.instance),
                "instance": d.instance,
                "label": d.label,
                "size_gb": d.capacity_gb,
                "datastore": svc.ids.object_id(vcenter, d.datastore),
                "datastore_name": ds.name if ds else None,
                "model": None
                if m is None
                else {
                    "oio": m.oio,
                    "io_size_kb": m.io_size_kb,
                    "read_pct": m.read_pct,
                    "random_pct": m.random_pct,
                    "L": m.load,
                    "samples": m.samples_used,
                    "flags": list(m.flags),
                    **_workload_class(m),
                    "fitted_at": shown(svc, m.fitted_at, vcenter),
                },
                "io": {
                    "reservation": d.io.reservation,
                    "limit": d.io.limit,
                    "shares": d.io.shares,
                    "shares_level": d.io.shares_level,
                },
                "applied": None
                if a is None
                else {
                    "reservation": a.reservation,
                    "limit": a.limit,
                    "shares": a.shares,
                    "pool": a.pool,
                    "issued_at": shown(svc, a.issued_at, vcenter),
                    "outcome": a.outcome,
                    "message": a.message,
                },
                "latest": None
                if s is None
                else {"t": iso(s.timestamp), "iops": s.iops, "latency_ms": s.latency_ms, "oio": s.oio},
            }
        )
    return {
        "id": svc.ids.object_id(vcenter, v.moid),
        "name": v.name,
        "host": svc.ids.object_id(vcenter, v.host) if v.host else None,
        "host_name": inv.hosts[v.host].name if v.host is not None and v.host in inv.hosts else None,
        "power_state": v.power_state,
        "disks": disks,
        "pools": pools,
    }


def _workload_class(m: DiskModel) -> dict[str, Any]:
    """A disk model's class (sequential, write_heavy, bursty, random; "unknown" for older models)."""
    traits = m.quality.get("traits", [])
    return {
        "class": m.quality.get("class", "unknown"),
        "sequential": "sequential" in traits,
        "traits": traits,
    }


def disk_model(svc: Service, ident: str, hours: float) -> dict[str, Any]:
    """The four parameters' p90 and L of a disk after each fit within *hours*, oldest first."""
    vcenter, vm_moid, instance = svc.ids.parse_disk(ident)
    since = svc.vcenter_time(vcenter) - timedelta(hours=hours)
    with svc.store.read_session() as session:
        history = disk_model_history(session, DiskRef(vcenter, vm_moid, instance), limit=5000)
    if not history:
        inv = svc.inventory(vcenter, refresh=False)
        if vm_moid not in inv.vms or not any(d.instance == instance for d in inv.vms[vm_moid].disks):
            raise NotFoundError(f"no disk {ident!r}")
    points = [
        {
            "t": shown(svc, m.fitted_at, vcenter),
            "oio": m.oio,
            "io_size_kb": m.io_size_kb,
            "read_pct": m.read_pct,
            "random_pct": m.random_pct,
            "L": m.load,
            "samples": m.samples_used,
            "flags": list(m.flags),
            **_workload_class(m),
        }
        for m in reversed(history)
        if (svc.shown(m.fitted_at, vcenter) or m.fitted_at) >= since
    ]
    return {"disk": ident, "percentile": svc.workload_params.percentile, "hours": hours, "points": points}


# --- recommendations and plans ---------------------------------------------------------------------


def _move_base(
    svc: Service, vcenter: str, vm: str, instance: str, *, src: str, dst: str, size_bytes: int
) -> dict[str, Any]:
    try:
        inv: Inventory | None = svc.inventory(vcenter, refresh=False)
    except BasilError:
        inv = None
    names = {k: v.name for k, v in inv.datastores.items()} if inv else {}
    return {
        "disk": svc.ids.disk_id(vcenter, vm, instance),
        "vm_id": svc.ids.object_id(vcenter, vm),
        "from": svc.ids.object_id(vcenter, src),
        "to": svc.ids.object_id(vcenter, dst),
        "from_name": names.get(src, src),
        "to_name": names.get(dst, dst),
        "size_gb": size_bytes / GB,
    }


def _predicted(p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "reason": p.get("reason", ""),
        "from_N_before": p.get("from_N_before"),
        "from_N_after": p.get("from_N_after"),
        "to_N_before": p.get("to_N_before"),
        "to_N_after": p.get("to_N_after"),
        "imbalance_before": p.get("imbalance_before"),
        "imbalance_after": p.get("imbalance_after"),
        "load": p.get("load"),
        "move": p.get("move"),
        "consolidation": p.get("consolidation"),  # what-if of both datastores' disks (docs/whatif.md)
    }


def recommendation_move(svc: Service, r: Recommendation) -> dict[str, Any]:
    s = r.spec
    return {
        "id": r.id,
        **_move_base(
            svc,
            s.vcenter,
            s.vm,
            s.instance,
            src=s.source_datastore,
            dst=s.target_datastore,
            size_bytes=s.size_bytes,
        ),
        "vm": s.vm_name,
        "reason_code": s.reason,
        **_predicted(s.predicted),
        **({"slo": s.predicted["slo"]} if "slo" in s.predicted else {}),
        "kind": s.predicted.get("kind", "move"),
        "swap_group": s.swap_group,
        "status": r.status,
    }


def _validity(svc: Service, pod_name: str, recs: list[Recommendation]) -> dict[str, Any]:
    """Whether the round may still be planned (basil.app.validity); a round without moves is valid."""
    if not recs:
        return {"valid": True, "state": "current", "stale_reason": None, "models_changed": False}
    closed = next((x for x in recs if x.status != "open"), None)
    if closed is not None:  # planned, dismissed or superseded: not offered, but not stale either
        return {"valid": False, "state": closed.status, "stale_reason": None, "models_changed": False}
    try:
        validity = round_validity(svc, svc.resolved_pod(pod_name, refresh=False), recs).to_dict()
        return {**validity, "state": "current" if validity["valid"] else "stale"}
    except BasilError as err:
        return {"valid": False, "state": "stale", "stale_reason": err.message, "models_changed": False}


def _round_extras(
    svc: Service, pod_name: str, summary: Mapping[str, Any], recs: list[Recommendation]
) -> dict[str, Any]:
    validity = _validity(svc, pod_name, recs)
    vcenter = recs[0].spec.vcenter if recs else None

    def disk(ident: str) -> str:
        vm, _, instance = ident.partition(":")
        return svc.ids.disk_id(vcenter, vm, instance) if vcenter else ident

    blocking = [
        {**e, "disks": [disk(d) for d in e.get("disks", [])]} for e in summary.get("pinned_blocking", [])
    ]
    return {
        **validity,
        "pinned_blocking": blocking,
        "pinned_blocking_total": summary.get("pinned_blocking_total", len(blocking)),
        **({"slo": summary["slo"]} if "slo" in summary else {}),  # goal: slo (docs/slo.md)
    }


def _by_name(svc: Service, vcenter: str, text: str | None) -> str | None:
    """A reason or note of the core with datastores and VMs by name (rounds kept from before names)."""
    if text is None:
        return None
    try:
        return readable(text, svc.inventory(vcenter, refresh=False))
    except BasilError:
        return text


def _named(svc: Service, vcenter: str | None, state: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A round's before or after: the normalized loads keyed as stored, with each datastore's name
    (``names``) and as a list of ``{id, name, normalized_load}`` (ids as the API writes them)."""
    if state is None or vcenter is None:
        return state
    try:
        inv: Inventory | None = svc.inventory(vcenter, refresh=False)
    except BasilError:
        inv = None
    loads: Mapping[str, Any] = state.get("normalized_load") or {}
    names = {k: inv.datastores[k].name if inv is not None and k in inv.datastores else k for k in loads}
    return {
        **state,
        "names": names,
        "datastores": [
            {"id": svc.ids.object_id(vcenter, k), "name": names[k], "normalized_load": n}
            for k, n in sorted(loads.items(), key=lambda kv: names[kv[0]])
        ],
    }


def round_dict(svc: Service, r: Round) -> dict[str, Any]:
    with svc.store.read_session() as session:
        recs = [get_recommendation(session, i) for i in r.recommendation_ids]
    return {
        "id": r.round_id,
        "pod": r.pod,
        "created_at": shown(svc, r.created_at, r.vcenter),
        **{k: r.summary[k] for k in ("threshold", "stop")},
        "stop_reason": _by_name(svc, r.vcenter, r.summary["stop_reason"]),
        "notes": [_by_name(svc, r.vcenter, n) for n in r.summary["notes"]],
        "before": _named(svc, r.vcenter, r.summary["before"]),
        "after": _named(svc, r.vcenter, r.summary["after"]),
        "moves": [recommendation_move(svc, x) for x in recs],
        **_round_extras(svc, r.pod, r.summary, recs),
    }


def latest_recommendation(svc: Service, pod_name: str) -> dict[str, Any] | None:
    svc.resolved_pod(pod_name, refresh=False)  # 404 for an unknown pod
    r = svc.rounds.get(pod_name)
    if r is not None:
        return round_dict(svc, r)
    with svc.store.read_session() as session:
        recs = open_recommendations(session, pod_name)
    if not recs:
        return None
    round_id = max(recs, key=lambda x: x.id).round_id
    mine = [x for x in recs if x.round_id == round_id]
    summary = mine[0].spec.predicted.get("round", {})
    return {
        "id": round_id,
        "pod": pod_name,
        "created_at": shown(svc, mine[0].created_at, mine[0].spec.vcenter),
        "before": _named(svc, mine[0].spec.vcenter, summary.get("before")),
        "after": _named(svc, mine[0].spec.vcenter, summary.get("after")),
        "threshold": summary.get("threshold"),
        "stop": summary.get("stop"),
        "stop_reason": _by_name(svc, mine[0].spec.vcenter, summary.get("stop_reason")),
        "notes": [_by_name(svc, mine[0].spec.vcenter, n) for n in summary.get("notes", [])],
        "moves": [recommendation_move(svc, x) for x in mine],
        **_round_extras(svc, pod_name, summary, mine),
    }


def move_dict(svc: Service, m: plan_store.Move) -> dict[str, Any]:
    predicted: dict[str, Any] = {}
    reason_code = "manual"
    if m.recommendation_id is not None:
        try:
            with svc.store.read_session() as session:
                rec = get_recommendation(session, m.recommendation_id)
            predicted, reason_code = _predicted(rec.spec.predicted), rec.spec.reason
        except NotFoundError:
            pass
    return {
        "id": m.id,
        "seq": m.seq,
        **_move_base(
            svc,
            m.vcenter,
            m.vm,
            m.instance,
            src=m.source_datastore,
            dst=m.target_datastore,
            size_bytes=m.size_bytes,
        ),
        "vm": m.vm_name,
        "reason_code": reason_code,
        **predicted,
        "state": m.state,
        # What happened, honestly: moved, already_there (found on its target, not moved), failed,
        # skipped, cancelled, pending or running (basil.app.planner.move_outcome).
        "outcome": move_outcome(m.state, m.task_id, m.message),
        "progress": m.progress,
        "task": m.task_id,
        "message": m.message,
        "started_at": shown(svc, m.started_at, m.vcenter),
        "finished_at": shown(svc, m.finished_at, m.vcenter),
        "recommendation_id": m.recommendation_id,
        "kind": "move" if m.swap_group is None else "swap",
        "swap_group": m.swap_group,
    }


def plan_dict(svc: Service, p: plan_store.Plan) -> dict[str, Any]:
    counts = p.counts()
    total = len(p.moves)
    done = sum(100 if m.state in ("succeeded", "failed", "skipped") else m.progress for m in p.moves)
    return {
        "id": p.id,
        "pod": p.pod,
        "vcenter": p.vcenter,
        "state": p.state,
        "source": p.source,
        "created_at": shown(svc, p.created_at, p.vcenter),
        "created_by": p.created_by,
        "approved_at": shown(svc, p.approved_at, p.vcenter),
        "approved_by": p.approved_by,
        "started_at": shown(svc, p.started_at, p.vcenter),
        "finished_at": shown(svc, p.finished_at, p.vcenter),
        "cancel_requested": p.cancel_requested,
        "on_move_failure": p.on_move_failure,
        "max_moves": p.max_moves,
        "max_gb": p.max_gb,
        "deadline": shown(svc, p.deadline, p.vcenter),
        "dry_run": p.dry_run,
        "message": p.message,
        "revision": p.revision,
        "progress": round(done / total) if total else 100,
        "counts": counts,
        "outcomes": _outcome_counts(p),
        "size_gb": sum(m.size_bytes for m in p.moves) / GB,
        "moves": [move_dict(svc, m) for m in p.moves],
    }


def _outcome_counts(p: plan_store.Plan) -> dict[str, int]:
    """How many moves were moved, found already there, failed, skipped, cancelled, pending, running."""
    found = dict.fromkeys(MOVE_OUTCOMES, 0)
    for m in p.moves:
        found[move_outcome(m.state, m.task_id, m.message)] += 1
    return found


def plans(svc: Service, state: str | None, pod_name: str | None) -> list[dict[str, Any]]:
    with svc.store.read_session() as session:
        found = plan_store.list_plans(session, pod=pod_name, states=[state] if state else None)
    return [plan_dict(svc, p) for p in found]


def placement_dict(svc: Service, pod_: ResolvedPod, result: dict[str, Any]) -> dict[str, Any]:
    """Core's placement ranking with datastore ids as the API writes them, and names."""
    inv = svc.inventory(pod_.vcenter, refresh=False)

    def ident(moid: str) -> dict[str, Any]:
        ds = inv.datastores.get(moid)
        return {"datastore": svc.ids.object_id(pod_.vcenter, moid), "datastore_name": ds.name if ds else moid}

    out = dict(result)
    out["pod"] = pod_.name
    out["ranked"] = [{**r, **ident(r["datastore"])} for r in result.get("ranked", [])]
    out["excluded"] = [{**r, **ident(r["datastore"])} for r in result.get("excluded", [])]
    return out


# --- pools ------------------------------------------------------------------------------------------


def pool_dict(svc: Service, t: StoredPoolTree) -> dict[str, Any]:
    doc = dict(t.document)
    moid = doc.pop("datastore_moid", None)
    vcenter = doc.get("vcenter", "")
    return {
        **doc,
        "name": t.name,
        "datastore_id": svc.ids.object_id(vcenter, moid) if moid else None,
        "version": t.version,
        "updated_at": shown(svc, t.updated_at, vcenter or None),
        "updated_by": t.updated_by,
        "root": doc.get("root", {}),
        "pools": doc.get("pools", []),
    }


def _limit(x: float) -> float | None:
    return None if x == float("inf") else x


def entitlements(svc: Service, name: str) -> dict[str, Any]:
    """The tree's last control step: per VM and disk R, L, S, entitlement and demand, per-host Q_h."""
    doc = next((d for d in svc.pool_documents(refresh=False) if d.name == name), None)
    if doc is None:
        svc.pool(name)  # NotFoundError for an unknown tree
        raise NotFoundError(f"pool tree {name!r} is not valid against the current inventory")
    state = svc.srp.states.get(name)
    result = state.result if state is not None else None
    inv = svc.inventory(doc.vcenter, refresh=False)
    with svc.store.read_session() as session:
        applied = disk_settings(session, doc.vcenter)
    names = dict(doc.vm_names)
    vms: list[dict[str, Any]] = []
    disks: list[dict[str, Any]] = []
    if result is not None:
        for vm_moid, a in sorted(result.vms.items()):
            vms.append(
                {
                    "vm": names.get(vm_moid, vm_moid),
                    "vm_id": svc.ids.object_id(doc.vcenter, vm_moid),
                    "reservation": a.reservation,
                    "limit": _limit(a.limit),
                    "shares": a.shares,
                    "entitlement": a.entitlement,
                    "demand": a.demand,
                }
            )
        for d in result.disks:
            vm_obj = inv.vms.get(d.vm)
            key = next((x.key for x in vm_obj.disks if x.instance == d.disk), None) if vm_obj else None
            a_set = applied.get((doc.vcenter, d.vm, key)) if key is not None else None
            disks.append(
                {
                    "disk": svc.ids.disk_id(doc.vcenter, d.vm, d.disk),
                    "vm": names.get(d.vm, d.vm),
                    "reservation": d.reservation,
                    "limit": _limit(d.limit),
                    "shares": d.shares,
                    "entitlement": d.entitlement,
                    "demand": d.demand,
                    "applied": None
                    if a_set is None
                    else {
                        "reservation": a_set.reservation,
                        "limit": a_set.limit,
                        "shares": a_set.shares,
                        "issued_at": shown(svc, a_set.issued_at, doc.vcenter),
                        "outcome": a_set.outcome,
                        "message": a_set.message,
                    },
                }
            )
    return {
        "name": name,
        "datastore": svc.ids.object_id(doc.vcenter, doc.datastore),
        "computed_at": shown(svc, state.computed_at, doc.vcenter) if state else None,
        "measured_at": iso(state.measured_at) if state else None,
        "array_iops": result.array_iops if result else None,
        "queue_depth": result.queue_depth if result else None,
        "latency_threshold_ms": svc.config.srp.latency_threshold_ms,
        "hosts": [
            {"host": svc.ids.object_id(doc.vcenter, h), "queue_depth": q}
            for h, q in sorted((result.hosts if result else {}).items())
        ],
        "pools": [
            {
                "pool": p,
                "reservation": a.reservation,
                "limit": _limit(a.limit),
                "shares": a.shares,
                "entitlement": a.entitlement,
                "demand": a.demand,
            }
            for p, a in sorted((result.pools if result else {}).items())
        ],
        "vms": vms,
        "disks": disks,
    }


# --- jobs, schedules, health, audit, metrics -------------------------------------------------------


def job_run(svc: Service, r: runs.JobRun) -> dict[str, Any]:
    return {
        "id": r.id,
        "job": r.job_id,
        "started": shown(svc, r.started_at),
        "finished": shown(svc, r.finished_at),
        "outcome": r.outcome,
        "message": r.message,
        "details": r.details,
    }


def _last_runs(svc: Service) -> dict[str, runs.JobRun]:
    """The latest run of every job, read again only after a run was recorded or changed."""

    def build() -> dict[str, runs.JobRun]:
        with svc.store.read_session() as session:
            return runs.last_runs(session)

    return svc.cache.get(("last_runs",), svc.basis(tables=(JobRunRow.__tablename__,)), build)


def jobs(svc: Service) -> list[dict[str, Any]]:
    last = _last_runs(svc)
    scheduled = (
        {j.id: j for j in svc.scheduler.get_jobs(jobstore=SCHEDULED)} if svc.scheduler is not None else {}
    )

    configured = triggers(svc.config)
    out = []
    for job_id, spec in JOBS.items():
        job = scheduled.get(job_id)
        run = last.get(job_id)
        out.append(
            {
                "id": job_id,
                "name": spec.name,
                "description": spec.description,
                "enabled": job_id in configured,
                # As the operator wrote it: "every 20 s", or the window's cron expression and time zone.
                "trigger": _trigger_words(svc, job_id) if job_id in configured else None,
                "schedule": _schedule(svc, job_id) if job_id in configured else None,
                "next_run": shown(svc, job.next_run_time) if job is not None else None,
                "last_run": None
                if run is None
                else {
                    "started": shown(svc, run.started_at),
                    "finished": shown(svc, run.finished_at),
                    "outcome": run.outcome,
                    "message": run.message,
                },
            }
        )
    return out


_EVERY = {
    "collect": "collect_s",
    "inventory": "inventory_s",
    "model": "model_s",
    "recommend": "recommend_s",
    "maintenance": "maintenance_s",
    "srp": "srp_s",
}


def _schedule(svc: Service, job_id: str) -> dict[str, Any]:
    """A job's schedule as configured: an interval in seconds, or the rebalance window's cron."""
    s = svc.config.schedules
    if job_id == "rebalance":
        rb = s.rebalance
        return {
            "kind": "cron",
            "cron": rb.cron,
            "timezone": rb.timezone,
            "duration_s": int(rb.duration.total_seconds()),
        }
    return {"kind": "interval", "every_s": getattr(s, _EVERY[job_id])}


def _trigger_words(svc: Service, job_id: str) -> str:
    sched = _schedule(svc, job_id)
    if sched["kind"] == "cron":
        minutes = sched["duration_s"] // 60
        return f"cron '{sched['cron']}' in {sched['timezone']}, for {minutes} min"
    return f"every {sched['every_s']:g} s"


def schedules(svc: Service) -> dict[str, Any]:
    s = svc.config.schedules
    rb = s.rebalance
    nxt = rb.next_window(svc.clock()) if rb.enabled else None
    window = {
        "enabled": rb.enabled,
        "cron": rb.cron,
        "timezone": rb.timezone,
        "duration": f"{int(rb.duration.total_seconds() // 60)}m",
        "duration_s": int(rb.duration.total_seconds()),
        "max_moves": rb.max_moves,
        "max_gb": rb.max_gb,
        "next_window": None if nxt is None else {"start": shown(svc, nxt[0]), "end": shown(svc, nxt[1])},
        "changed": _kept(svc, svc.rebalance_override),
    }
    return {
        "collect_s": s.collect_s,
        "inventory_s": s.inventory_s,
        "model_s": s.model_s,
        "recommend_s": s.recommend_s,
        "srp_s": s.srp_s,
        "maintenance_s": s.maintenance_s,
        "rebalance": window,
        "pods": {p.name: {"mode": p.mode, "rebalance": window} for p in svc.config.pods},
    }


def _kept(svc: Service, kept: Override | None) -> dict[str, Any] | None:
    """The window's change made through the API and kept in the store (None: the file's window)."""
    if kept is None:
        return None
    return {"fields": kept.value, "at": shown(svc, kept.updated_at), "by": kept.updated_by}


def vcenters(svc: Service) -> list[dict[str, Any]]:
    out = []
    for name, link in svc.links.items():
        out.append(
            {
                "name": name,
                "server": link.config.server,
                "instance_uuid": link.instance_uuid,
                "connected": link.connected,
                "last_collection": iso(link.last_collection),
                "last_error": link.last_error or None,
                "last_error_at": shown(svc, link.last_error_at, name),
                # Every job failing on this vCenter now (cleared when the job succeeds again).
                "problems": [{**p.to_dict(), "at": shown(svc, p.at, name)} for p in link.problem_list()],
                "next_attempt": shown(svc, link.next_attempt, name),
                # Now on this vCenter's clock (as last read): what every time shown is relative to.
                "now": iso(svc.vcenter_time(name)),
                "tags": "on" if link.tags_enabled else "off",
            }
        )
    return out


def _inaccessible_pod_datastores(svc: Service) -> list[dict[str, Any]]:
    """A pod datastore whose paths are all down (as last polled): the pod cannot balance onto it."""
    out: list[dict[str, Any]] = []
    for config in svc.config.pods:
        link = svc.links.get(config.vcenter)
        inventory = link.last_inventory if link is not None else None  # never connects, never waits
        if inventory is None:
            continue
        pod = resolve_pod(config, inventory)
        for moid in pod.datastores:
            ds = inventory.datastores.get(moid)
            if ds is not None and not ds.accessible:
                error = f"datastore {ds.name} of pod {pod.name} is inaccessible"
                out.append({"vcenter": pod.vcenter, "job": "inventory", "error": error, "at": None})
    return out


def health(svc: Service) -> dict[str, Any]:
    store_ok = True
    try:
        with svc.store.read_session() as session:
            runs.last_runs(session)
    except BasilError:
        store_ok = False
    vcs = [
        {
            "name": v["name"],
            "connected": v["connected"],
            "last_collection": v["last_collection"],
            "now": v["now"],
            "problems": v["problems"],
            "next_attempt": v["next_attempt"],
        }
        for v in vcenters(svc)
    ]
    # What degrades the service: a vCenter that is down, a job failing on one (collection,
    # inventory, tags, models), pods that overlap. Each names its vCenter, job and error.
    problems = [{"vcenter": v["name"], **p} for v in vcs for p in v["problems"]]
    problems += [
        {"vcenter": v["name"], "job": "connect", "error": "not connected", "at": None}
        for v in vcs
        if not v["connected"] and not any(p["job"] == "connect" for p in v["problems"])
    ]
    with svc._lock:
        overlaps = list(svc.pod_overlaps)
    problems += [{"vcenter": None, "job": "inventory", "error": text, "at": None} for text in overlaps]
    problems += _inaccessible_pod_datastores(svc)
    running = svc.scheduler is not None and svc.scheduler.running
    ok = store_ok and not problems
    return {
        "status": "ok" if ok else "degraded",
        "version": __version__,
        "scheduler": "running" if running else "stopped",
        "store": "ok" if store_ok else "unavailable",
        "vcenters": vcs,
        "problems": problems,
    }


def audit(svc: Service, limit: int, before: datetime | None) -> list[dict[str, Any]]:
    with svc.store.read_session() as session:
        entries = audit_query(session, until=before, limit=limit)
    return [
        {
            "id": e.id,
            "at": shown(svc, e.at),
            "who": e.actor,
            "kind": e.actor_kind,
            "action": e.action,
            "target": e.target,
            "from": e.source,
            "outcome": e.outcome,
            "message": e.message,
            "detail": e.details,
        }
        for e in entries
    ]


def metrics_text(svc: Service) -> str:
    with svc.store.read_session() as session:
        recent = plan_store.list_plans(session, limit=10_000)
    states: dict[str, int] = dict.fromkeys(plan_store.PLAN_TRANSITIONS, 0)
    for p in recent:
        states[p.state] += 1
    gauges: list[tuple[str, Mapping[str, str], float]] = [
        ("basil_plans", {"state": s}, float(n)) for s, n in states.items()
    ]
    gauges += [
        ("basil_vcenter_connected", {"vcenter": n}, 1.0 if link.connected else 0.0)
        for n, link in svc.links.items()
    ]
    # 1 per job failing on a vCenter now, so an alert can say which (0 series are not written).
    gauges += [
        ("basil_vcenter_job_failing", {"vcenter": n, "job": p.job}, 1.0)
        for n, link in svc.links.items()
        for p in link.problem_list()
    ]
    gauges += _pod_gauges(svc)
    gauges += datastore_gauges(svc)  # what-if and device model, per datastore
    return svc.counters.render(gauges)


def _pod_gauges(svc: Service) -> list[tuple[str, Mapping[str, str], float]]:
    """Each pod's imbalance now (the pod view's figure), its threshold, and whether its latest
    recommendation is stale."""
    out: list[tuple[str, Mapping[str, str], float]] = []
    for resolved in svc.resolved_pods(refresh=False):
        view = _pod_view(svc, resolved)
        labels = {"pod": resolved.name}
        if view["imbalance"] is not None:
            out.append(("basil_pod_imbalance", labels, float(view["imbalance"])))
        out.append(("basil_pod_imbalance_threshold", labels, float(view["threshold"])))
        latest = latest_recommendation(svc, resolved.name)
        if latest is not None:
            out.append(("basil_recommendation_stale", labels, 0.0 if latest["valid"] else 1.0))
        error = view.get("prediction_error")
        if error is not None:
            for quantity, key in (
                ("latency", "latency_median_abs"),
                ("read_latency", "read_latency_median_abs"),
                ("iops", "iops_median_abs"),
                ("imbalance", "imbalance_rel"),
            ):
                if error.get(key) is not None:
                    out.append(
                        ("basil_prediction_error", {**labels, "quantity": quantity}, float(error[key]))
                    )
    return out
