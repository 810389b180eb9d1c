"""Prediction checked against reality: every applied plan's prediction, measured an hour later.

When a plan that moved at least one disk ends, Basil predicts, for the placement it left and the
models in force, each datastore of the pod's latency and IOPS and the pod's imbalance:

- each disk keeps its outstanding IOs N and the share ρ of its IOs that are reads: its means over
  the half hour of samples before the plan started (a workload's outstanding IOs do not depend on
  where its disk is; the copies' load is left out);
- a datastore's read latency L from its device model, ``L = intercept + slope · Σ outstanding reads``
  (BASIL §4, fitted on reads; slope = 1/P); a datastore without a usable fit takes the median slope
  and intercept of the pod's fits (as the balancer's stand-in P). Its write latency W (the array's
  write cache, which the read fit does not see) is the one measured before the plan started (the
  pod's median for a datastore that had no writes);
- the disks form a closed loop: an IO takes R = ρ·L + (1 − ρ)·W, a disk completes X = N / R IOs a
  second (Little's law) and keeps X·ρ·L reads outstanding, which sets L again; the fixed point gives
  the datastore's IOPS ΣX and its IOPS-weighted latency ΣN / ΣX, as the measured one is weighted;
- the imbalance is the pod's "imbalance now" (:func:`basil.app.recommendation.pod_load`) on the new
  placement; for a plan from a recommendation, the round's own predicted imbalance is kept too.

One hour later in vCenter's time (sample timestamps; the lab's clock runs faster than wall time),
the measured means over the 15 minutes before that moment and the imbalance then (on the models of
that time) are recorded with the errors: per datastore ``(predicted − measured) / measured``, per pod
the median absolute error of latency and of IOPS over its datastores with IO, and the imbalance's.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from basil.app.pods import ResolvedPod
from basil.app.recommendation import PodSnapshot, pod_load
from basil.errors import BasilError, NotFoundError
from basil.store import plans as plan_store
from basil.store.fits import DatastoreModel
from basil.store.predictions import (
    DatastoreFigures,
    DiskLoadFigures,
    PredictionCheck,
    datastore_figures,
    disk_oio,
    due_checks,
    get_check,
    pod_checks,
    record_measurement,
    save_check,
)
from basil.store.recommendations import get_recommendation

if TYPE_CHECKING:
    from basil.app.service import Service

log = logging.getLogger(__name__)

DELAY_S = 3600  # the measurement is taken this long after the plan ended, in vCenter's time
WINDOW_S = 900  # measured means over this long before the measurement time
OIO_WINDOW_S = 1800  # each disk's OIO: its mean over this long before the plan started


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def solve_datastore(
    disks: list[DiskLoadFigures], intercept: float, slope: float, write_ms: float
) -> tuple[float, float, float] | None:
    """A datastore's read latency, IOPS and IOPS-weighted latency with *disks* on it (see the module doc).

    Each disk keeps its outstanding IOs N and its read share ρ; an IO's mean response time is
    R = ρ·L + (1 − ρ)·W, so the disk completes X = N / R IOs a second (Little's law) and keeps
    X·ρ·L reads outstanding; L = intercept + slope · Σ outstanding reads (BASIL §4) closes the loop.
    """
    if not disks or sum(d.oio for d in disks) <= 0:
        return None
    latency = intercept + slope * sum(d.read_oio for d in disks)
    for _ in range(50):
        if latency <= 0:
            return None
        reads = sum(
            d.oio * d.read_share * latency / (d.read_share * latency + (1 - d.read_share) * write_ms)
            for d in disks
        )
        updated = intercept + slope * reads
        if abs(updated - latency) < 1e-6 * max(latency, 1.0):
            latency = updated
            break
        latency = 0.5 * (latency + updated)  # damped: the map can overshoot on a steep fit
    if latency <= 0:
        return None
    x = [d.oio / ((d.read_share * latency + (1 - d.read_share) * write_ms) / 1000.0) for d in disks]
    iops = sum(x)
    return latency, iops, 1000.0 * sum(d.oio for d in disks) / iops


def predict(
    ps: PodSnapshot,
    pod: ResolvedPod,
    *,
    models: Mapping[tuple[str, str], DatastoreModel],
    oio: Mapping[tuple[str, str], DiskLoadFigures],
    recent: Mapping[str, DatastoreFigures],
    names: Mapping[str, str],
) -> dict[str, Any]:
    """The pod's predicted datastore latency and IOPS and imbalance on the placement of *ps*.

    *oio* is each disk's outstanding IOs and read share; *recent* the datastores' figures before the
    plan started, whose write latency (the array's write cache, which the read fit does not model) is
    kept.
    """
    fits = {
        ds: m
        for (vc, ds), m in models.items()
        if vc == pod.vcenter
        and ds in pod.datastores
        and m.quality == "ok"
        and m.slope is not None
        and m.slope > 0
        and m.intercept is not None
    }
    stand_in_slope = _median([float(m.slope or 0.0) for m in fits.values()])
    stand_in_intercept = _median([float(m.intercept or 0.0) for m in fits.values()])
    pod_write = _median([f.write_latency_ms for f in recent.values() if f.write_latency_ms is not None])
    on: dict[str, list[DiskLoadFigures]] = {ds: [] for ds in pod.datastores}
    for d in ps.snapshot.disks:
        vm, instance, _key = ps.disk_keys[d.id]
        figures = oio.get((vm, instance))
        if figures is not None:
            on.setdefault(d.datastore, []).append(figures)
    out: dict[str, Any] = {}
    for ds in pod.datastores:
        fit = fits.get(ds)
        entry: dict[str, Any] = {
            "name": names.get(ds, ds),
            "read_oio": sum(f.read_oio for f in on[ds]),
            "write_oio": sum(f.write_oio for f in on[ds]),
            "read_latency_ms": None,
            "latency_ms": None,
            "iops": 0.0 if not on[ds] else None,
        }
        out[ds] = entry
        if fit is not None:
            slope, intercept, entry["model"] = float(fit.slope or 0.0), float(fit.intercept or 0.0), "fit"
        elif stand_in_slope is not None and stand_in_intercept is not None:
            slope, intercept, entry["model"] = stand_in_slope, stand_in_intercept, "stand_in"
        else:
            entry["model"] = "none"
            continue
        before = recent.get(ds)
        write_ms = (before.write_latency_ms if before is not None else None) or pod_write or 1.0
        solved = solve_datastore(on[ds], intercept, slope, write_ms)
        if solved is not None:
            entry["read_latency_ms"], entry["iops"], entry["latency_ms"] = solved
    load = pod_load(ps)
    return {"datastores": out, "imbalance": load.imbalance, "normalized_load": dict(load.normalized_load)}


def _rel(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or measured is None or measured <= 0:
        return None
    return (predicted - measured) / measured


def errors(predicted: Mapping[str, Any], measured: Mapping[str, Any]) -> dict[str, Any]:
    """Per datastore and per pod, how far the prediction was from the measurement."""
    per: dict[str, dict[str, float | None]] = {}
    for ds, p in predicted["datastores"].items():
        m = measured["datastores"].get(ds) or {}
        busy = (m.get("iops") or 0) > 0
        per[ds] = {
            "latency": _rel(p.get("latency_ms"), m.get("latency_ms")) if busy else None,
            "read_latency": _rel(p.get("read_latency_ms"), m.get("read_latency_ms")) if busy else None,
            "iops": _rel(p.get("iops"), m.get("iops")),
        }
    lat = [abs(v["latency"]) for v in per.values() if v["latency"] is not None]
    read = [abs(v["read_latency"]) for v in per.values() if v["read_latency"] is not None]
    iops = [abs(v["iops"]) for v in per.values() if v["iops"] is not None]
    p_f, m_f = predicted.get("imbalance"), measured.get("imbalance")
    return {
        "datastores": per,
        "latency_median_abs": _median(lat),
        "read_latency_median_abs": _median(read),
        "iops_median_abs": _median(iops),
        "imbalance_abs": abs(p_f - m_f) if p_f is not None and m_f is not None else None,
        "imbalance_rel": _rel(p_f, m_f),
    }


def vcenter_now(svc: Service, vcenter: str) -> int | None:
    """vCenter's clock now (its ``CurrentTime``), or the newest sample's time when it cannot be read."""
    link = svc.links.get(vcenter)
    if link is not None:
        try:
            return int(link.collector.vcenter_time().timestamp())
        except BasilError as err:
            log.debug("vCenter %s time: %s", vcenter, err.message)
    return svc.sample_now(vcenter)


def record_prediction(
    svc: Service, plan: plan_store.Plan, started: int | None = None
) -> PredictionCheck | None:
    """The prediction of a plan that has ended having moved disks; None for any other plan.

    *started* is vCenter's time when the plan (or its resumption) started: the disks' outstanding IOs
    and the write latencies are taken from the half hour before it, free of the copies' load.
    """
    if plan.dry_run or plan.state not in plan_store.TERMINAL_PLAN_STATES:
        return None
    if not any(m.state == "succeeded" for m in plan.moves):
        return None
    try:
        pod = svc.resolved_pod(plan.pod)  # polls the inventory: the placement the plan left
    except NotFoundError:
        return None
    finished = vcenter_now(svc, pod.vcenter)
    if finished is None:
        return None
    newest = svc.sample_now(pod.vcenter) or finished
    if started is not None:
        newest = min(newest, started)
    inventory = svc.inventory(pod.vcenter, refresh=False)
    names = {ds.moid: ds.name for ds in inventory.datastores.values()}
    with svc.store.read_session() as session:
        oio = disk_oio(session, pod.vcenter, newest - OIO_WINDOW_S, newest)
        recent = datastore_figures(session, pod.vcenter, pod.datastores, newest - OIO_WINDOW_S, newest)
        rounds = {
            get_recommendation(session, m.recommendation_id)
            .spec.predicted.get("round", {})
            .get("after", {})
            .get("imbalance")
            for m in plan.moves
            if m.recommendation_id is not None and m.state == "succeeded"
        }
    predicted = predict(
        svc.pod_snapshot(pod),
        pod,
        models=svc.datastore_models(pod.vcenter),
        oio=oio,
        recent=recent,
        names=names,
    )
    predicted["imbalance_round"] = next(iter(rounds)) if len(rounds) == 1 else None
    predicted["moves"] = sum(1 for m in plan.moves if m.state == "succeeded")
    with svc.store.session() as session:
        return save_check(
            session,
            plan.id,
            pod=pod.name,
            vcenter=pod.vcenter,
            finished_ts=finished,
            due_ts=finished + DELAY_S,
            predicted=predicted,
        )


def check_predictions(svc: Service) -> list[dict[str, Any]]:
    """Measure every prediction whose hour has passed in its vCenter's samples."""
    done: list[dict[str, Any]] = []
    pods = {p.name: p for p in svc.resolved_pods(refresh=False)}
    for vcenter in svc.links:
        now_ts = svc.sample_now(vcenter)
        if now_ts is None:
            continue
        with svc.store.read_session() as session:
            due = due_checks(session, vcenter, now_ts)
        for check in due:
            pod = pods.get(check.pod)
            if pod is None:
                continue
            with svc.store.read_session() as session:
                figures = datastore_figures(
                    session,
                    vcenter,
                    list(check.predicted["datastores"]),
                    check.due_ts - WINDOW_S,
                    check.due_ts,
                )
            try:
                imbalance_now: float | None = pod_load(svc.pod_snapshot(pod)).imbalance
            except BasilError:
                imbalance_now = None
            measured = {
                "datastores": {
                    ds: {
                        "latency_ms": f.latency_ms,
                        "read_latency_ms": f.read_latency_ms,
                        "iops": f.iops,
                        "read_oio": f.read_oio,
                        "write_oio": f.write_oio,
                        "samples": f.samples,
                    }
                    for ds, f in figures.items()
                },
                "imbalance": imbalance_now,
                "window": {"since_ts": check.due_ts - WINDOW_S, "until_ts": check.due_ts},
                "imbalance_at_ts": now_ts,
            }
            error = errors(check.predicted, measured)
            with svc.store.session() as session:
                record_measurement(session, check.plan_id, measured, error, datetime.now(UTC))
            done.append(
                {
                    "plan": check.plan_id,
                    "pod": check.pod,
                    **{k: v for k, v in error.items() if k != "datastores"},
                }
            )
    return done


def latest_measured(svc: Service, pod: str) -> PredictionCheck | None:
    """The pod's newest measured check."""
    with svc.store.read_session() as session:
        return next((c for c in pod_checks(session, pod, limit=50) if c.measured is not None), None)


def check_of(svc: Service, plan_id: int) -> PredictionCheck | None:
    with svc.store.read_session() as session:
        return get_check(session, plan_id)
