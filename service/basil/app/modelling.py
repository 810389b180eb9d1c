"""Modelling: per disk BASIL's workload model from the store's sketches, per datastore its device model.

Workload model (BASIL §3, §6.1): the 90th percentile of OIO, IO size, read % and random % over the
window, read from the store's mergeable sketches, and L, the numerator of eq. 1. Device model (§4,
§6.1): the read ⟨OIO, latency⟩ points of a datastore, each interval aggregated over every host that
uses it (OIO summed, latency IOPS-weighted, done by the store's query), fitted by
:func:`basil.core.device_model.fit_device_model` with its §4.1 filters. Both are saved with their
quality and kept as history. "Now" is vCenter's newest sample time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from basil.core.device_model import DeviceFit, DeviceModelParams, DeviceSample, fit_device_model
from basil.core.workload_model import WorkloadModelParams, WorkloadParams, load_metric, workload_flags
from basil.store import Store
from basil.store.fits import DatastoreModel, DiskModel, save_datastore_models, save_disk_models
from basil.store.samples import DevicePoints, device_points, from_epoch, workload_percentiles


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
    at = fitted_at or datetime.now(UTC)
    models: list[DiskModel] = []
    incomplete = 0
    for ref, p in percentiles.items():
        if not p.complete:
            incomplete += 1
            continue
        w = WorkloadParams(p.oio or 0.0, p.io_size_kb or 0.0, p.read_pct or 0.0, p.random_pct or 0.0)
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
                quality={"percentile": params.percentile, "samples": list(p.counts)},
            )
        )
    if models:
        with store.session() as session:
            save_disk_models(session, models)
    return len(models), incomplete


def device_samples(points: DevicePoints) -> list[DeviceSample]:
    """The store's per-interval points (already aggregated over hosts, §6.1) as the core's samples.

    Sequentiality is not measured per datastore; the §4.1 sequential filter is left to the IO-size one.
    """
    return [
        DeviceSample("all-hosts", oio, lat, iops, size, 0.0, float(ts))
        for ts, oio, lat, iops, size in zip(
            points.ts,
            points.read_oio,
            points.read_latency_ms,
            points.read_iops,
            points.read_io_size_kb,
            strict=True,
        )
    ]


def fit_datastore(
    store: Store, vcenter: str, datastore: str, *, since: int, until: int, params: DeviceModelParams
) -> tuple[DeviceFit, DevicePoints]:
    with store.read_session() as session:
        points = device_points(session, vcenter, datastore, since, until)
    return fit_device_model(device_samples(points), params), points


def fit_datastore_models(
    store: Store,
    vcenter: str,
    datastores: Iterable[str],
    *,
    now_ts: int,
    wparams: WorkloadModelParams,
    dparams: DeviceModelParams,
    fitted_at: datetime | None = None,
) -> tuple[int, int]:
    """Fit and save the device model of each datastore; returns (with a P, without)."""
    since, until = window(now_ts, wparams)
    at = fitted_at or datetime.now(UTC)
    models: list[DatastoreModel] = []
    ok = 0
    for ds in sorted(set(datastores)):
        fit, _points = fit_datastore(store, vcenter, ds, since=since, until=until, params=dparams)
        ok += fit.ok
        models.append(
            DatastoreModel(
                vcenter=vcenter,
                datastore=ds,
                fitted_at=at,
                window_start=from_epoch(since),
                window_end=from_epoch(until),
                p=fit.performance,
                slope=fit.slope,
                intercept=fit.intercept,
                r_squared=fit.r_squared,
                points_used=fit.points_used,
                points_filtered=sum(fit.dropped.values()),
                quality=fit.status.value,
                details={
                    "intervals": fit.intervals,
                    "dropped": dict(fit.dropped),
                    "summary": fit.describe(),
                },
            )
        )
    if models:
        with store.session() as session:
            save_datastore_models(session, models)
    return ok, len(models) - ok


def run_modelling(
    store: Store,
    vcenter: str,
    datastores: Iterable[str],
    *,
    now_ts: int,
    wparams: WorkloadModelParams,
    dparams: DeviceModelParams,
) -> ModellingOutcome:
    at = datetime.now(UTC)
    modelled, incomplete = fit_disk_models(store, vcenter, now_ts, wparams, at)
    ok, without = fit_datastore_models(
        store, vcenter, datastores, now_ts=now_ts, wparams=wparams, dparams=dparams, fitted_at=at
    )
    return ModellingOutcome(vcenter, modelled, incomplete, ok, without)
