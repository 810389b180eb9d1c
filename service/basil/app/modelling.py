"""Modelling: per disk BASIL's workload model from the store's sketches, per datastore its device model.

Workload model (BASIL §3, §6.1): the 90th percentile of OIO, IO size, read % and random % over the
window, read from the store's mergeable sketches, and L, the numerator of eq. 1. Device model (§4,
§6.1): the read ⟨OIO, latency⟩ points of a datastore, each interval aggregated over every host that
uses it (OIO summed, latency IOPS-weighted, done by the store's query), fitted by
:func:`basil.core.device_model.fit_device_model` and settled against the previous model and the
configured device (:func:`basil.core.device_model.settle_performance`). Both are saved with their
quality and kept as history. "Now" is vCenter's newest sample time.

Microsecond read latency per datastore. vCenter has no microsecond read latency per datastore and
host: ``datastore.totalReadLatency`` is whole milliseconds, and ``sizeNormalizedDatastoreLatency``
(µs) mixes reads with writes, is normalised to an IO size the device model does not use and is
published only while Storage I/O Control runs. ``virtualDisk.readLatencyUS`` is real-time, per
disk, in µs. So an interval's µs read latency is the read-IOPS-weighted mean of ``readLatencyUS``
over the disks the inventory places on the datastore, used when those disks have it and their read
IOPS account for the hosts' (within 10 % + 2 IOPS: a disk that moved in or out, or IO from outside
the inventory, falls back to the millisecond figure for that interval). The fit reports which it used.

The reads' device model with the destaging separated (docs/whatif.md). Where the datastore's
disks write through a write-back cache, its reads share the devices with the destaging of those
writes, so the plain line's slope carries it. Over the intervals the device model keeps, each
interval's destaged operations a second, D = Σ over the datastore's disks of cached write IOPS ×
k × random share (a write is cached when its latency is at most the what-if's write-cache
threshold, as :mod:`basil.core.consolidation` takes it; k, the RAID write cost, is 1: vCenter does
not report RAID levels and Basil has no configured write cost, so the fitted c is k · c, the
product the estimator needs), are fitted with the read OIO and latency by
:func:`basil.core.consolidation.separate_destage`: L = a + b·OIO + c·(D·L/1000). Its a, b, c and
point count are kept in the model's details (``destage_separation``) where this window's fit is
credible and b and c are determined (relative standard errors at most ``MAX_SEPARATION_ERROR``:
where the disks' writes keep step with their reads, OIO and destaging cannot be told apart); the
what-if reads m, t_pos and c from them (:mod:`basil.app.whatif`). Only raw 20 s
intervals with the disks' samples enter (rollups keep no per-disk seeks).

Storage vMotion. Copy windows come from vCenter's recent relocation tasks (Basil's own and anyone
else's, in vCenter's clock); Basil's own plan moves name their source and target, other tasks the
datastores the VM's disks are on now (the source of a finished foreign move is not known).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from basil.config.schema import DeviceConfig
from basil.core.consolidation import (
    DEFAULT_WRITE_CACHE_MS,
    MIN_SEPARATION_POINTS,
    ReadInterval,
    SeparatedFit,
    separate_destage,
)
from basil.core.device_model import (
    OP_WRITE,
    SOURCE_CARRIED,
    SOURCE_FIT,
    SOURCE_NONE,
    AggregatedInterval,
    DeviceFit,
    DeviceModelParams,
    DevicePrior,
    DeviceSample,
    FitStatus,
    device_prior,
    fit_device_model,
    fitted_intervals,
    settle_performance,
)
from basil.core.workload_model import (
    WorkloadModelParams,
    WorkloadParams,
    classify_workload,
    load_metric,
    workload_flags,
)
from basil.store import Store
from basil.store.fits import (
    DatastoreModel,
    DiskModel,
    current_datastore_models,
    own_relocations,
    save_datastore_models,
    save_disk_models,
)
from basil.store.samples import (
    CachedWrites,
    DevicePoints,
    cached_random_writes,
    device_points,
    disk_read_latency_us,
    epoch,
    from_epoch,
    workload_percentiles,
)
from basil.vcenter.relocations import Relocation
from basil.vcenter.types import Inventory

INTERVAL_S = 20  # vCenter's real-time interval
#: How closely the disks' read IOPS must match the hosts' for their µs latency to stand for the datastore.
COVERAGE_REL = 0.10
COVERAGE_ABS_IOPS = 2.0
#: The store's quality column holds 16 characters; longer statuses are saved under a short name.
_QUALITY = {FitStatus.NON_POSITIVE_SLOPE: "non_pos_slope", FitStatus.NEGATIVE_INTERCEPT: "neg_intercept"}
#: k, device operations per destaged write: vCenter does not report RAID levels (module doc).
DESTAGE_WRITE_COST = 1.0
#: The separated line is kept only where b and c are determined to this relative standard error:
#: where every disk writes in step with its reads (one mix), OIO and destaging cannot be told apart.
MAX_SEPARATION_ERROR = 0.2


@dataclass(frozen=True)
class DatastoreDisks:
    """The disks on a datastore, for its µs read latency: those there all along, and those that moved
    in (or out) within the window, counted only while they were there (epoch seconds, [from, until))."""

    disks: tuple[tuple[str, str], ...] = ()
    timed: tuple[tuple[str, str, int, int], ...] = ()
    # Relocations known to have left it: task -> (VM, instance, target); kept with the model so the
    # next fits still know the source while vCenter lists the task.
    moves_out: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)

    def current(self) -> list[str]:
        """The disks on it now, as "vm/instance" (kept with the model: the next fit's memory)."""
        now = [(vm, inst) for vm, inst, _a, until in self.timed if until > 2**61]
        return sorted(f"{vm}/{inst}" for vm, inst in (*self.disks, *now))


@dataclass(frozen=True)
class CopyWindow:
    """A Storage vMotion's copy: the datastores it reads or writes, over [start, end] (epoch seconds)."""

    datastores: frozenset[str]
    start: float
    end: float


@dataclass(frozen=True)
class ModellingOutcome:
    vcenter: str
    disks_modelled: int
    disks_incomplete: int  # sampled, but some parameter has no data in the window (an idle disk)
    datastores_fitted: int  # with a usable P
    datastores_without_model: int

    def summary(self) -> dict[str, object]:
        return {
            "vcenter": self.vcenter,
            "disks_modelled": self.disks_modelled,
            "disks_incomplete": self.disks_incomplete,
            "datastores_fitted": self.datastores_fitted,
            "datastores_without_model": self.datastores_without_model,
        }


def window(now_ts: int, params: WorkloadModelParams) -> tuple[int, int]:
    """[since, until) of the model window that ends with the newest sample."""
    until = now_ts + 1
    return until - int(params.window_hours * 3600), until


def fit_disk_models(
    store: Store, vcenter: str, now_ts: int, params: WorkloadModelParams, fitted_at: datetime | None = None
) -> tuple[int, int]:
    """Fit and save every sampled disk's workload model; returns (modelled, incomplete)."""
    since, until = window(now_ts, params)
    q = params.percentile / 100.0
    with store.read_session() as session:
        percentiles = workload_percentiles(session, since, until, q, vcenter=vcenter)
        # Medians too: a 90th percentile OIO far above the median marks a bursty disk.
        medians = workload_percentiles(session, since, until, 0.5, vcenter=vcenter)
    at = fitted_at or datetime.now(UTC)
    models: list[DiskModel] = []
    incomplete = 0
    for ref, p in percentiles.items():
        if not p.complete:
            incomplete += 1
            continue
        w = WorkloadParams(p.oio or 0.0, p.io_size_kb or 0.0, p.read_pct or 0.0, p.random_pct or 0.0)
        median = medians.get(ref)
        kind = classify_workload(w, params, median.oio if median is not None else None)
        models.append(
            DiskModel(
                disk=ref,
                fitted_at=at,
                window_start=from_epoch(since),
                window_end=from_epoch(until),
                oio=w.oio,
                io_size_kb=w.io_size_kb,
                read_pct=w.read_pct,
                random_pct=w.random_pct,
                load=load_metric(w, params.constants),  # BASIL eq. 1, numerator
                samples_used=p.samples,
                flags=workload_flags(w, params),
                quality={
                    "percentile": params.percentile,
                    "samples": list(p.counts),
                    "class": kind.name,
                    "traits": list(kind.traits),
                    "burst_ratio": kind.burst_ratio if kind.burst_ratio != math.inf else None,
                },
            )
        )
    if models:
        with store.session() as session:
            save_disk_models(session, models)
    return len(models), incomplete


def device_samples(
    points: DevicePoints, micro: Mapping[int, tuple[float, float, float]] | None = None
) -> list[DeviceSample]:
    """The store's per-interval points (already aggregated over hosts, §6.1) as the core's samples.

    *micro* is :func:`basil.store.samples.disk_read_latency_us` for the datastore's disks: an
    interval whose disks all report ``readLatencyUS`` and account for the hosts' read IOPS gets it
    as ``latency_us``. Write-side points come along for the write-cache transient filter.
    Sequentiality is not measured per datastore; the §4.1 sequential filter is left to the IO-size one.
    """
    micro = micro or {}
    out: list[DeviceSample] = []
    writes = points.write_latency_ms or (0.0,) * len(points.ts)
    write_iops = points.write_iops or (0.0,) * len(points.ts)
    for ts, oio, lat, iops, size, weight, w_lat, w_iops in zip(
        points.ts,
        points.read_oio,
        points.read_latency_ms,
        points.read_iops,
        points.read_io_size_kb,
        points.weight,
        writes,
        write_iops,
        strict=True,
    ):
        latency_us = None
        found = micro.get(ts) if weight == 1.0 else None
        if found is not None:
            disk_iops, us, us_iops = found
            covered = us_iops >= disk_iops * (1 - 1e-9) and us_iops > 0
            if covered and abs(disk_iops - iops) <= COVERAGE_REL * iops + COVERAGE_ABS_IOPS:
                latency_us = us
        out.append(DeviceSample("all-hosts", oio, lat, iops, size, 0.0, float(ts), latency_us=latency_us))
        if w_iops > 0:
            out.append(DeviceSample("all-hosts", 0.0, w_lat, w_iops, 0.0, 0.0, float(ts), op=OP_WRITE))
    return out


def destage_intervals(
    kept: Sequence[AggregatedInterval],
    writes: Mapping[int, CachedWrites],
    *,
    write_cost: float = DESTAGE_WRITE_COST,
) -> list[ReadInterval]:
    """The device model's kept intervals as :func:`separate_destage`'s input (module doc).

    *writes* are the datastore's disks' cached writes per raw sample time
    (:func:`basil.store.samples.cached_random_writes`). An interval enters with D = k × Σ cached
    write IOPS × random share over its disks; one without the disks' samples (a rollup point, a
    gap) or with a cached writer without a random % is left out, its D unknown.
    """
    out: list[ReadInterval] = []
    for interval in kept:
        found = writes.get(int(interval.time)) if interval.time is not None else None
        if found is None or found.unknown:
            continue
        destaged = found.random_iops * write_cost
        out.append(ReadInterval(oio=interval.oio, latency_ms=interval.latency_ms, destaged_ops=destaged))
    return out


def separation_errors(intervals: Sequence[ReadInterval], fit: SeparatedFit) -> tuple[float, float | None]:
    """The relative standard errors of the separated fit's b and c (least squares, from its residuals)."""
    points = [i for i in intervals if i.oio > 0 and i.latency_ms > 0 and i.destaged_ops >= 0]
    latency = np.array([p.latency_ms for p in points], dtype=np.float64)
    columns = [np.ones(len(points)), np.array([p.oio for p in points], dtype=np.float64)]
    coef = [fit.intercept_ms, fit.slope_ms]
    if fit.destage_ms is not None:
        columns.append(np.array([p.destaged_ops * p.latency_ms / 1000.0 for p in points], dtype=np.float64))
        coef.append(fit.destage_ms)
    design = np.column_stack(columns)
    residual = latency - design @ np.array(coef)
    dof = len(points) - design.shape[1]
    if dof <= 0:
        return math.inf, None if fit.destage_ms is None else math.inf
    variance = float(residual @ residual) / dof
    cov = variance * np.linalg.pinv(design.T @ design)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    b_err = float(se[1]) / fit.slope_ms
    c_err = float(se[2]) / fit.destage_ms if fit.destage_ms is not None else None
    return b_err, c_err


@dataclass(frozen=True)
class DatastoreFit:
    """One window's fit of a datastore: the device model's line, its points, and the reads' line with
    the destaging separated (None, and why, where it could not be fitted)."""

    fit: DeviceFit
    points: DevicePoints
    separated: SeparatedFit | None = None
    separation_note: str = ""
    errors: tuple[float, float | None] = (0.0, None)  # relative standard errors of b and c


def fit_datastore(
    store: Store,
    vcenter: str,
    datastore: str,
    *,
    since: int,
    until: int,
    params: DeviceModelParams,
    disks: DatastoreDisks | None = None,
    excluded: Sequence[tuple[float, float]] = (),
) -> DatastoreFit:
    """This window's fit of one datastore; *disks* are the disks on it (for µs latency and the
    destaging of their cached writes)."""
    with store.read_session() as session:
        points = device_points(session, vcenter, datastore, since, until)
        micro = {}
        writes: dict[int, CachedWrites] = {}
        if disks is not None:
            micro = disk_read_latency_us(session, vcenter, disks.disks, since, until, timed=disks.timed)
            writes = cached_random_writes(
                session,
                vcenter,
                disks.disks,
                since,
                until,
                write_cache_ms=DEFAULT_WRITE_CACHE_MS,
                timed=disks.timed,
            )
    samples = device_samples(points, micro)
    fit = fit_device_model(samples, params, excluded=excluded)
    if not fit.credible:
        return DatastoreFit(fit, points, separation_note="the device model's fit is not credible")
    separated, note, errors = separation(fitted_intervals(samples, params, excluded=excluded), writes)
    return DatastoreFit(fit, points, separated, note, errors)


def separation(
    kept: Sequence[AggregatedInterval], writes: Mapping[int, CachedWrites]
) -> tuple[SeparatedFit | None, str, tuple[float, float | None]]:
    """The reads' line with the destaging separated over the device model's kept intervals, where
    b and c are determined (module doc); else None and why. Also the relative errors of b and c."""
    intervals = destage_intervals(kept, writes)
    separated = separate_destage(intervals)
    if separated is None:
        note = (
            f"only {len(intervals)} intervals with the disks' samples"
            if len(intervals) < MIN_SEPARATION_POINTS
            else f"{len(intervals)} intervals: a, b or c not positive"
        )
        return None, note, (0.0, None)
    b_err, c_err = separation_errors(intervals, separated)
    if b_err > MAX_SEPARATION_ERROR or (c_err is not None and c_err > MAX_SEPARATION_ERROR):
        shown = "" if c_err is None else f", c ±{c_err:.0%}"
        note = f"slope and destaging not told apart (b ±{b_err:.0%}{shown}: writes in step with reads)"
        return None, note, (b_err, c_err)
    return separated, "", (b_err, c_err)


def separation_details(sep: SeparatedFit, errors: tuple[float, float | None]) -> dict[str, Any]:
    """The separated line as a model's details keep it (``destage_separation``, read by the what-if)."""
    return {
        "intercept_ms": sep.intercept_ms,
        "slope_ms": sep.slope_ms,
        "destage_ms": sep.destage_ms,
        "points": sep.points,
        "slope_rel_error": errors[0],
        "destage_rel_error": errors[1],
        "write_cost": DESTAGE_WRITE_COST,
        "write_cache_ms": DEFAULT_WRITE_CACHE_MS,
    }


def kept_separation(
    window: DatastoreFit, settled: DeviceFit, before: DatastoreModel | None
) -> tuple[dict[str, Any] | None, str]:
    """What the model keeps of the separated fit: this window's where its fit is the one settled,
    the previous model's where that was carried forward; and a note where there is none."""
    if settled.source == SOURCE_CARRIED and before is not None:
        kept = before.details.get("destage_separation")
        if isinstance(kept, dict):
            return {**kept, "carried": True}, ""
        return None, "carried forward without one"
    if settled.source != SOURCE_FIT:
        return None, f"no fit of this window (source {settled.source})"
    if window.separated is None:
        return None, window.separation_note
    return separation_details(window.separated, window.errors), ""


def copy_windows(
    relocations: Sequence[Relocation],
    own: Mapping[str, tuple[str, str, str]],
    vm_datastores: Mapping[str, Iterable[str]],
    now_ts: float,
) -> list[CopyWindow]:
    """Copy windows of recent relocations: Basil's own (task -> instance, source, target) name both
    ends; another's the datastores its VM's disks are on now. A running one extends to *now_ts*."""
    out = []
    for r in relocations:
        stores = set(own[r.task][1:] if r.task in own else ()) | set(vm_datastores.get(r.vm, ()))
        if stores:
            end = epoch(r.end) if r.end is not None else now_ts
            out.append(CopyWindow(frozenset(stores), float(epoch(r.start)), float(end)))
    return out


def previous_fit(model: DatastoreModel | None) -> DeviceFit | None:
    """The settled model saved last time, as the core's DeviceFit (for :func:`settle_performance`)."""
    if model is None:
        return None
    d = model.details
    usable = model.quality == "ok" and model.p is not None
    return DeviceFit(
        FitStatus.OK if usable else FitStatus.NO_DATA,
        performance=model.p if usable else None,
        slope=model.slope,
        intercept=model.intercept,
        performance_low=d.get("p_low"),
        performance_high=d.get("p_high"),
        credible=bool(d.get("credible", usable)),
        # Models saved before sources were recorded were fits.
        source=str(d.get("source", SOURCE_FIT if usable else SOURCE_NONE)),
    )


def _details(
    fit: DeviceFit,
    disks: DatastoreDisks | None = None,
    separation: tuple[dict[str, Any] | None, str] = (None, ""),
) -> dict[str, Any]:
    memory: dict[str, Any] = {}
    if disks is not None:
        memory = {"disks": disks.current(), "moves_out": {t: list(m) for t, m in disks.moves_out.items()}}
    return {
        **memory,
        "intervals": fit.intervals,
        "dropped": dict(fit.dropped),
        "summary": fit.describe(),
        "fit_status": fit.status.value,
        "source": fit.source,
        "credible": fit.credible,
        "p_low": fit.performance_low,
        "p_high": fit.performance_high,
        "fitted_p": fit.fitted_performance,
        "latency_resolution": fit.latency_resolution,
        "reason": fit.reason,
        "oio_range": list(fit.oio_range) if fit.oio_range is not None else None,
        "destage_separation": separation[0],
        "destage_separation_note": separation[1],
    }


def fit_datastore_models(
    store: Store,
    vcenter: str,
    datastores: Iterable[str],
    *,
    now_ts: int,
    wparams: WorkloadModelParams,
    dparams: DeviceModelParams,
    fitted_at: datetime | None = None,
    placement: Mapping[str, DatastoreDisks] | None = None,
    copies: Sequence[CopyWindow] = (),
    priors: Mapping[str, DevicePrior] | None = None,
) -> tuple[int, int]:
    """Fit, settle and save the device model of each datastore; returns (with a P, without).

    *placement* maps a datastore to the disks on it (for µs latency), *copies* are Storage vMotion
    windows, *priors* what is configured of a datastore's device.
    """
    since, until = window(now_ts, wparams)
    at = fitted_at or datetime.now(UTC)
    with store.read_session() as session:
        before = current_datastore_models(session, vcenter)
    models: list[DatastoreModel] = []
    ok = 0
    for ds in sorted(set(datastores)):
        excluded = [(c.start, c.end) for c in copies if ds in c.datastores]
        window_fit = fit_datastore(
            store,
            vcenter,
            ds,
            since=since,
            until=until,
            params=dparams,
            disks=(placement or {}).get(ds),
            excluded=excluded,
        )
        previous = before.get((vcenter, ds))
        settled = settle_performance(window_fit.fit, previous_fit(previous), (priors or {}).get(ds), dparams)
        ok += settled.ok
        models.append(
            DatastoreModel(
                vcenter=vcenter,
                datastore=ds,
                fitted_at=at,
                window_start=from_epoch(since),
                window_end=from_epoch(until),
                p=settled.performance,
                slope=settled.slope,
                intercept=settled.intercept,
                r_squared=settled.r_squared,
                points_used=settled.points_used,
                points_filtered=sum(settled.dropped.values()),
                quality="ok" if settled.ok else _QUALITY.get(settled.status, settled.status.value),
                details=_details(
                    settled, (placement or {}).get(ds), kept_separation(window_fit, settled, previous)
                ),
            )
        )
    if models:
        with store.session() as session:
            save_datastore_models(session, models)
    return ok, len(models) - ok


@dataclass(frozen=True)
class DeviceInputs:
    """What the device model needs beyond the samples: where disks are, copies, configured devices."""

    placement: Mapping[str, DatastoreDisks]
    copies: Sequence[CopyWindow]
    priors: Mapping[str, DevicePrior]


def known_moves(
    own: Mapping[str, tuple[str, str, str]],
    before: Mapping[tuple[str, str], DatastoreModel],
    relocations: Sequence[Relocation],
    where: Mapping[tuple[str, str], str],
) -> dict[str, tuple[str, str, str]]:
    """Finished relocations with their disk, source and target: task -> (instance, source, target).

    Basil's own moves are in the store. Another's relocation names only its VM; its source is where
    the last fit saw the disk (a model's details keep the disks it was fitted with), or what an
    earlier fit learned that way (``moves_out``).
    """
    finished = {r.task: r for r in relocations if r.end is not None}
    moves = {task: m for task, m in own.items() if task in finished}
    for (_vc, ds), model in before.items():
        for task, (_vm, instance, target) in (model.details.get("moves_out") or {}).items():
            if task in finished and task not in moves:
                moves[task] = (instance, ds, target)
        for ident in model.details.get("disks") or ():
            vm, _sep, instance = str(ident).partition("/")
            now_on = where.get((vm, instance))
            if now_on is None or now_on == ds:
                continue
            for task, r in finished.items():
                if r.vm == vm and task not in moves:
                    moves[task] = (instance, ds, now_on)
    return moves


def disk_placement(
    inventory: Inventory, relocations: Sequence[Relocation], moves: Mapping[str, tuple[str, str, str]]
) -> dict[str, DatastoreDisks]:
    """Per datastore the disks whose µs latency stands for it, and when.

    A disk that finished a relocation counts on its datastore from the first interval after the move
    and on its source until the move; a VM whose moved disk is not known has all its disks treated
    as moved in (their earlier intervals then fall back to milliseconds).
    """
    finished = {r.task: r for r in relocations if r.end is not None}
    moved: dict[tuple[str, str | None], int] = {}  # (VM, instance or None: every disk) -> end
    for task, r in finished.items():
        key = (r.vm, moves[task][0] if task in moves else None)
        moved[key] = max(moved.get(key, 0), epoch(r.end or r.start))
    static: dict[str, list[tuple[str, str]]] = {}
    timed: dict[str, list[tuple[str, str, int, int]]] = {}
    for vm in inventory.vms.values():
        for d in vm.disks:
            end = max(moved.get((vm.moid, d.instance), 0), moved.get((vm.moid, None), 0))
            if end:
                timed.setdefault(d.datastore, []).append((vm.moid, d.instance, end + INTERVAL_S, 2**62))
            else:
                static.setdefault(d.datastore, []).append((vm.moid, d.instance))
    moves_out: dict[str, dict[str, tuple[str, str, str]]] = {}
    for task, (instance, source, target) in moves.items():
        r = finished[task]
        timed.setdefault(source, []).append((r.vm, instance, 0, epoch(r.end or r.start) + 1))
        moves_out.setdefault(source, {})[task] = (r.vm, instance, target)
    return {
        ds: DatastoreDisks(tuple(static.get(ds, ())), tuple(timed.get(ds, ())), moves_out.get(ds, {}))
        for ds in set(static) | set(timed)
    }


def device_inputs(
    store: Store,
    vcenter: str,
    inventory: Inventory,
    *,
    relocations: Sequence[Relocation],
    devices: Callable[[str], DeviceConfig | None],
    now_ts: float,
) -> DeviceInputs:
    """The device model's inputs from the inventory, vCenter's recent relocations and the configuration.

    *devices* gives the configured device of a datastore by name (``BasilConfig.device_of``).
    """
    with store.read_session() as session:
        own = own_relocations(session, vcenter)
        before = current_datastore_models(session, vcenter)
    where = {(vm.moid, d.instance): d.datastore for vm in inventory.vms.values() for d in vm.disks}
    moves = known_moves(own, before, relocations, where)
    vm_datastores: dict[str, set[str]] = {}
    for (vm, _inst), ds in where.items():
        vm_datastores.setdefault(vm, set()).add(ds)
    priors: dict[str, DevicePrior] = {}
    for moid, datastore in inventory.datastores.items():
        device = devices(datastore.name)
        prior = None
        if device is not None:
            prior = device_prior(device.kind or None, device.spindles or None, device.performance or None)
        if prior is not None:
            priors[moid] = prior
    return DeviceInputs(
        disk_placement(inventory, relocations, moves),
        copy_windows(relocations, moves, vm_datastores, now_ts),
        priors,
    )


def run_modelling(
    store: Store,
    vcenter: str,
    datastores: Iterable[str],
    *,
    now_ts: int,
    wparams: WorkloadModelParams,
    dparams: DeviceModelParams,
    placement: Mapping[str, DatastoreDisks] | None = None,
    copies: Sequence[CopyWindow] = (),
    priors: Mapping[str, DevicePrior] | None = None,
) -> ModellingOutcome:
    at = datetime.now(UTC)
    modelled, incomplete = fit_disk_models(store, vcenter, now_ts, wparams, at)
    ok, without = fit_datastore_models(
        store,
        vcenter,
        datastores,
        now_ts=now_ts,
        wparams=wparams,
        dparams=dparams,
        fitted_at=at,
        placement=placement,
        copies=copies,
        priors=priors,
    )
    return ModellingOutcome(vcenter, modelled, incomplete, ok, without)
