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

Beside it, each datastore's figures from the consolidation what-if (Casale et al., docs/whatif.md):
each disk's read/write IOPS, latency and OIO over the same half hour are the inputs; on every
datastore the disks that stayed lose the batches of those that left
(:func:`basil.core.consolidation.predict_departure`) and gain those of the disks that arrived (one
group per source), the datastore's parallelism from its device model (``predicted.datastores[ds].whatif``).

One hour later in vCenter's time (sample timestamps; the lab's clock runs faster than wall time),
the measured means over the 15 minutes before that moment and the imbalance then (on the models of
that time) are recorded with the errors: per datastore ``(predicted − measured) / measured``, per pod
the median absolute error of latency and of IOPS over its datastores with IO, and the imbalance's.
"""

from __future__ import annotations

import contextlib
import logging
import statistics
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from basil.app.pods import ResolvedPod
from basil.app.recommendation import PodSnapshot, pod_load
from basil.app.whatif import device_params
from basil.core.consolidation import (
    DeviceParams,
    WorkloadMeasurement,
    WorkloadPrediction,
    isolate,
    predict_consolidation,
    predict_departure,
)
from basil.errors import BasilError, NotFoundError
from basil.store import plans as plan_store
from basil.store.fits import DatastoreModel
from basil.store.predictions import (
    DatastoreFigures,
    DiskFigures,
    DiskLoadFigures,
    PredictionCheck,
    datastore_checks,
    datastore_figures,
    disk_figures,
    disk_oio,
    due_checks,
    get_check,
    pod_checks,
    record_measurement,
    save_check,
    vcenter_measured_checks,
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


def _as_measurement(p: WorkloadPrediction) -> WorkloadMeasurement:
    """A prediction as the input of the next step, keeping its group (measured together)."""
    return WorkloadMeasurement(
        p.name, p.read_iops, p.write_iops, p.read_latency_ms, p.write_latency_ms, group=p.group
    )


def whatif_predict(
    datastores: list[str],
    before: Mapping[tuple[str, str], str],
    after: Mapping[tuple[str, str], str],
    figures: Mapping[tuple[str, str], DiskFigures],
    devices: Mapping[str, DeviceParams],
) -> dict[str, dict[str, Any]]:
    """Each datastore's predicted IOPS and IOPS-weighted latencies once the disks placed *before* are
    placed *after* (both by (VM, instance)), from each disk's *figures* before (see the module doc)."""

    def measurement(key: tuple[str, str], group: str) -> WorkloadMeasurement | None:
        f = figures.get(key)
        if f is None or f.read_iops + f.write_iops <= 0:
            return None
        return WorkloadMeasurement(
            f"{key[0]}:{key[1]}", f.read_iops, f.write_iops, f.read_latency_ms, f.write_latency_ms,
            read_oio=f.read_oio, write_oio=f.write_oio, group=group,
        )  # fmt: skip

    out: dict[str, dict[str, Any]] = {}
    for ds in datastores:
        device = devices.get(ds, DeviceParams())
        was = [(k, w) for k in before if before[k] == ds and (w := measurement(k, "stayed")) is not None]
        gone = {w.name for k, w in was if after.get(k) != ds}
        if gone and len(gone) < len(was):
            staying = [_as_measurement(p) for p in predict_departure([w for _k, w in was], gone, device)]
        else:
            staying = [w for _k, w in was if w.name not in gone]
        arriving: list[WorkloadMeasurement] = []
        sources = dict.fromkeys(before[k] for k in after if after[k] == ds and before.get(k, ds) != ds)
        for src in sources:
            group = [
                w for k in before if before[k] == src and (w := measurement(k, f"from {src}")) is not None
            ]
            coming = {f"{k[0]}:{k[1]}" for k in after if after[k] == ds and before.get(k) == src}
            arriving += isolate(group, coming, devices.get(src, DeviceParams()))
        entry: dict[str, Any] = {"parallelism": device.parallelism, "disks": len(staying) + len(arriving)}
        if not staying and not arriving:
            out[ds] = {
                **entry,
                "iops": 0.0,
                "read_latency_ms": None,
                "write_latency_ms": None,
                "latency_ms": None,
            }
            continue
        together = predict_consolidation([*staying, *arriving], device).workloads
        reads = sum(w.read_iops for w in together)
        writes = sum(w.write_iops for w in together)
        read_ms = sum(w.read_iops * w.read_latency_ms for w in together)
        write_ms = sum(w.write_iops * w.write_latency_ms for w in together)
        out[ds] = {
            **entry,
            "iops": reads + writes,
            "read_latency_ms": read_ms / reads if reads > 0 else None,
            "write_latency_ms": write_ms / writes if writes > 0 else None,
            "latency_ms": (read_ms + write_ms) / (reads + writes) if reads + writes > 0 else None,
        }
    return out


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
        w = p.get("whatif") or {}
        per[ds] = {
            "latency": _rel(p.get("latency_ms"), m.get("latency_ms")) if busy else None,
            "read_latency": _rel(p.get("read_latency_ms"), m.get("read_latency_ms")) if busy else None,
            "iops": _rel(p.get("iops"), m.get("iops")),
            "whatif_latency": _rel(w.get("latency_ms"), m.get("latency_ms")) if busy else None,
            "whatif_read_latency": _rel(w.get("read_latency_ms"), m.get("read_latency_ms")) if busy else None,
            "whatif_iops": _rel(w.get("iops"), m.get("iops")) if w else None,
        }
    lat = [abs(v["latency"]) for v in per.values() if v["latency"] is not None]
    read = [abs(v["read_latency"]) for v in per.values() if v["read_latency"] is not None]
    iops = [abs(v["iops"]) for v in per.values() if v["iops"] is not None]
    p_f, m_f = predicted.get("imbalance"), measured.get("imbalance")

    def median_abs(key: str) -> float | None:
        return _median([abs(x) for v in per.values() if (x := v.get(key)) is not None])

    return {
        "datastores": per,
        "whatif_latency_median_abs": median_abs("whatif_latency"),
        "whatif_read_latency_median_abs": median_abs("whatif_read_latency"),
        "whatif_iops_median_abs": median_abs("whatif_iops"),
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
    with svc.store.read_session() as session:
        figures = disk_figures(session, pod.vcenter, newest - OIO_WINDOW_S, newest)
    after = {(vm, instance): ds for (vm, instance, _k), ds in _placement(svc.pod_snapshot(pod)).items()}
    before = dict(after)
    for m in plan.moves:
        if m.state == "succeeded":
            before[(m.vm, m.instance)] = m.source_datastore
    hosts, models = svc.newest_host_samples(pod.vcenter), svc.datastore_models(pod.vcenter)
    devices = {ds: device_params(pod.vcenter, ds, hosts, models)[0] for ds in pod.datastores}
    for ds, figures_ds in whatif_predict(list(pod.datastores), before, after, figures, devices).items():
        if ds in predicted["datastores"]:
            predicted["datastores"][ds]["whatif"] = figures_ds
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


def _placement(ps: PodSnapshot) -> dict[tuple[str, str, int], str]:
    """Every disk of the pod's snapshot and the datastore it is on."""
    return {ps.disk_keys[d.id]: d.datastore for d in ps.snapshot.disks if d.id in ps.disk_keys}


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


ERROR_QUANTITIES = (
    ("device_model", "latency", "latency"),
    ("device_model", "read_latency", "read_latency"),
    ("device_model", "iops", "iops"),
    ("whatif", "latency", "whatif_latency"),
    ("whatif", "read_latency", "whatif_read_latency"),
    ("whatif", "iops", "whatif_iops"),
)


def _ts(value: int) -> str:
    return datetime.fromtimestamp(value, UTC).isoformat()


def datastore_predictions(svc: Service, datastore_ident: str, limit: int = 100) -> dict[str, Any]:
    """A datastore's predictions against measurements over time: every applied plan of a pod holding
    it, oldest first, with both estimators' figures (device model, what-if) and their errors."""
    vcenter, moid = svc.ids.parse_object(datastore_ident, "datastore")
    inventory = svc.inventory(vcenter, refresh=False)
    target = inventory.datastores.get(moid)
    if target is None:
        raise NotFoundError(f"no datastore {datastore_ident!r}")
    with svc.store.read_session() as session:
        checks = datastore_checks(session, vcenter, moid, limit=limit)
    series = []
    for c in checks:
        p = c.predicted["datastores"][moid]
        m = (c.measured or {}).get("datastores", {}).get(moid)
        e = (c.error or {}).get("datastores", {}).get(moid)
        series.append(
            {
                "plan": c.plan_id,
                "pod": c.pod,
                "state": "measured" if c.measured is not None else "waiting",
                "finished_at": _ts(c.finished_ts),
                "due_at": _ts(c.due_ts),
                "predicted": {
                    "device_model": {k: p.get(k) for k in ("latency_ms", "read_latency_ms", "iops")},
                    "whatif": p.get("whatif"),
                },
                "measured": None
                if m is None
                else {k: m.get(k) for k in ("latency_ms", "read_latency_ms", "iops")},
                "error": None
                if e is None
                else {
                    estimator: {q: e.get(key) for est, q, key in ERROR_QUANTITIES if est == estimator}
                    for estimator in ("device_model", "whatif")
                },
            }
        )
    return {"datastore": svc.ids.object_id(vcenter, moid), "name": target.name, "series": series}


def datastore_gauges(svc: Service) -> list[tuple[str, Mapping[str, str], float]]:
    """``basil_datastore_prediction_error``: each datastore's newest measured error, per estimator."""
    out: list[tuple[str, Mapping[str, str], float]] = []
    for vcenter in svc.links:
        newest: dict[str, dict[str, Any]] = {}
        with svc.store.read_session() as session:
            for check in vcenter_measured_checks(session, vcenter):
                for ds, e in (check.error or {}).get("datastores", {}).items():
                    newest.setdefault(ds, e)  # newest first
        names: dict[str, str] = {}
        with contextlib.suppress(BasilError):
            names = {d.moid: d.name for d in svc.inventory(vcenter, refresh=False).datastores.values()}
        for ds, e in newest.items():
            for estimator, quantity, key in ERROR_QUANTITIES:
                if e.get(key) is not None:
                    labels = {
                        "vcenter": vcenter,
                        "datastore": names.get(ds, ds),
                        "estimator": estimator,
                        "quantity": quantity,
                    }
                    out.append(("basil_datastore_prediction_error", labels, float(e[key])))
    return out
