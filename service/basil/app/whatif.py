"""A consolidation what-if from what the service holds: disks moved to a datastore, predicted.

The figures of each disk are its newest sample where it runs now (the disk's history on its
current datastore stands in for the paper's isolation run); a disk that shares its datastore with
other active disks never ran alone, and the answer says so. The disks already on the target form
one group (measured together), the moved disks one group per source datastore. ``max_conn`` is
the target's ``datastoreMaxQueueDepth`` from the hosts' newest samples (32 when no host reported
it); the parallelism m is read from the target's device model (``intercept / slope`` of its
credible fit), else 1, the paper's single server; the positioning cost of a random IO (which
interleaved sequential streams pay, docs/whatif.md) is the same fit's intercept, and each disk's
random % its newest sample's (vscsiStats' seek histogram). The RAID write cost k of the destaged
cached writes (docs/whatif.md) is 1, a lower bound: vCenter does not report RAID levels, and the
answer's ``write_cost_source`` says so. Nothing is stored or changed.

Where the target's model keeps the reads' line with its disks' own destaging separated
(``destage_separation`` in its details, fitted by :mod:`basil.app.modelling`), m = a / b and
t_pos = a come from that line and c, the devices' time of one destaged operation, is its third
coefficient; the sources say "device model, destaging separated (n intervals)". That c was fitted
with k = 1, so it is k · c, the product the destage load needs: the RAID level is in it. Without a
separated line (too few intervals with the disks' samples, a coefficient not positive or not
determined, no credible fit), the plain line as before, and c = t_pos / m; without cached writes
to separate, the plain line too (its robust fit), and the sources say which. A datastore without a
credible model takes the medians of the vCenter's other lines (c: of their separated ones).

A moved disk's figures were measured on its source: its service times are those of that device,
which the estimator carries to the target as they are (the paper measured isolation on the same
device); the answer's confidence says so.

:func:`move_effects` gives every recommended move the predicted figures of the disks on its source
(the moved disks' batches taken away, :func:`basil.core.consolidation.predict_departure`) and on its
target (the moved disks added), each move on the placement before the round.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from basil.core.consolidation import (
    DESTAGE_FROM_READS,
    PARALLELISM_PAPER,
    POSITIONING_NONE,
    WRITE_COST_LOWER_BOUND,
    DeviceParams,
    SeparatedFit,
    WorkloadMeasurement,
    isolate,
    parallelism_from_fit,
    positioning_from_fit,
    predict_consolidation,
    predict_departure,
)
from basil.errors import BasilError, NotFoundError, Problem, raise_if_problems

if TYPE_CHECKING:
    from basil.app.service import Service
    from basil.store.fits import DatastoreModel
    from basil.vcenter.types import DiskSample, HostDatastoreSample, Inventory

DEFAULT_MAX_CONN = 32.0
# A disk doing less than this many IO/s is idle: it does not spoil another disk's "alone".
ACTIVE_IOPS = 1.0
# k where c was separated with k = 1 (module doc): the product k · c is what the destage load needs.
SEPARATED_WRITE_COST = "1: the separated c was fitted with k = 1, so it carries the RAID write cost"


def _io_size(kb: float | None) -> float | None:
    """A disk's mean IO size from vCenter (``virtualDisk.readIOSize``/``writeIOSize``); None where the
    counter is missing, not finite or not positive (no IO of that kind: unknown, not a size)."""
    return kb if kb is not None and math.isfinite(kb) and kb > 0 else None


def _measurement(name: str, sample: DiskSample, group: str, alone: bool) -> WorkloadMeasurement:
    return WorkloadMeasurement(
        name=name,
        read_iops=sample.read_iops or 0.0,
        write_iops=sample.write_iops or 0.0,
        read_latency_ms=sample.read_latency_ms or 0.0,
        write_latency_ms=sample.write_latency_ms or 0.0,
        read_oio=sample.read_oio,
        write_oio=sample.write_oio,
        group=group,
        alone=alone,
        random_pct=sample.random_pct,
        read_io_kb=_io_size(sample.read_io_size_kb),
        write_io_kb=_io_size(sample.write_io_size_kb),
    )


@dataclass(frozen=True)
class _Line:
    """m, t_pos and c read from one datastore's model, and how (for the answer's sources)."""

    parallelism: float
    positioning_ms: float
    destage_ms: float | None  # None: t_pos / m
    separated: int | None  # the separated fit's intervals; None: the plain line
    note: str  # why the plain line, where it is


def _number(value: Any) -> float | None:
    """A finite JSON number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def separated_line(model: DatastoreModel) -> SeparatedFit | None:
    """The reads' line with the destaging separated kept with *model*, if usable: a and b positive
    and finite (m = a / b readable), c positive and finite or None (no cached writes seen)."""
    kept = model.details.get("destage_separation")
    if not isinstance(kept, dict):
        return None
    a, b, n = _number(kept.get("intercept_ms")), _number(kept.get("slope_ms")), _number(kept.get("points"))
    c = _number(kept.get("destage_ms"))
    if n is None or parallelism_from_fit(b, a) is None or a is None or b is None:
        return None
    if (c is None) != (kept.get("destage_ms") is None) or (c is not None and c <= 0):
        return None
    return SeparatedFit(intercept_ms=a, slope_ms=b, destage_ms=c, points=int(n))


def _line(model: DatastoreModel) -> _Line | None:
    """The datastore's line for the estimator: the separated one where it separated cached writes,
    else the stored plain line; None without a credible model."""
    if model.quality != "ok":
        return None
    sep = separated_line(model)
    if sep is not None and sep.destage_ms is not None:
        m = parallelism_from_fit(sep.slope_ms, sep.intercept_ms)
        if m is not None:
            return _Line(m, sep.intercept_ms, sep.destage_ms, sep.points, "")
    m = parallelism_from_fit(model.slope, model.intercept)
    t_pos = positioning_from_fit(model.slope, model.intercept)
    if m is None or t_pos is None:
        return None
    if sep is not None:
        note = "no cached writes to separate"
    else:
        note = str(model.details.get("destage_separation_note") or "no separated fit kept")
    return _Line(m, t_pos, None, None, note)


def device_params(
    vcenter: str,
    datastore: str,
    host_samples: Mapping[tuple[str, str], HostDatastoreSample],
    models: Mapping[tuple[str, str], DatastoreModel],
) -> tuple[DeviceParams, str]:
    """The datastore as the estimator sees it, and where ``max_conn`` came from."""
    depths = [
        s.max_queue_depth for (_h, ds), s in host_samples.items() if ds == datastore and s.max_queue_depth
    ]
    fitted = {
        ds: line for (vc, ds), model in models.items() if vc == vcenter and (line := _line(model)) is not None
    }
    own = fitted.get(datastore)
    lines = {"m": "", "t_pos": "", "c": ""}
    m = t_pos = c = None
    if own is not None and own.separated is not None:
        m, t_pos, c = own.parallelism, own.positioning_ms, own.destage_ms
        source = f"device model, destaging separated ({own.separated} intervals)"
        lines = {"m": f"{source} (a / b)", "t_pos": f"{source} (a)", "c": f"{source} (c)"}
    elif own is not None:
        m, t_pos = own.parallelism, own.positioning_ms
        lines = {
            "m": "device model (intercept / slope)",
            "t_pos": "device model (intercept)",
            "c": f"{DESTAGE_FROM_READS} (device model, destaging not separated: {own.note})",
        }
    elif fitted:  # as the device-model prediction's stand-in: the median of the fits
        m = float(statistics.median(f.parallelism for f in fitted.values()))
        t_pos = float(statistics.median(f.positioning_ms for f in fitted.values()))
        costs = [f.destage_ms for f in fitted.values() if f.destage_ms is not None]
        c = float(statistics.median(costs)) if costs else None
        stand_in = "stand-in: median of the vCenter's fits"
        lines = {
            "m": f"{stand_in} (intercept / slope)",
            "t_pos": f"{stand_in} (intercept)",
            "c": f"stand-in: median of the vCenter's {len(costs)} separated fits (c)"
            if costs
            else f"{DESTAGE_FROM_READS} ({stand_in})",
        }
    device = DeviceParams(
        max_conn=max(depths) if depths else DEFAULT_MAX_CONN,
        parallelism=m if m is not None else 1.0,
        parallelism_source=lines["m"] if m is not None else PARALLELISM_PAPER,
        positioning_ms=t_pos,
        positioning_source=lines["t_pos"] if t_pos is not None else POSITIONING_NONE,
        destage_ms=c,
        destage_source=lines["c"] if t_pos is not None else DESTAGE_FROM_READS,
        write_cost_source=SEPARATED_WRITE_COST if c is not None else WRITE_COST_LOWER_BOUND,
    )
    source = "datastoreMaxQueueDepth" if depths else "default (no host reported a queue depth)"
    return device, source


def _disks_by_datastore(inv: Inventory) -> dict[str, list[tuple[str, str]]]:
    where: dict[str, list[tuple[str, str]]] = {}
    for vm in inv.vms.values():
        for disk in vm.disks:
            where.setdefault(disk.datastore, []).append((vm.moid, disk.instance))
    return where


def datastore_whatif(svc: Service, datastore_ident: str, disk_idents: list[str]) -> dict[str, Any]:
    """Predict every disk on *datastore_ident* once *disk_idents* are moved there."""
    vcenter, moid = svc.ids.parse_object(datastore_ident, "datastore")
    inv = svc.inventory(vcenter, refresh=False)
    target = inv.datastores.get(moid) or next((d for d in inv.datastores.values() if d.name == moid), None)
    if target is None:
        raise NotFoundError(f"no datastore {datastore_ident!r}")
    latest = svc.newest_disk_samples(vcenter)
    by_datastore = _disks_by_datastore(inv)

    def active(key: tuple[str, str]) -> bool:
        s = latest.get(key)
        return s is not None and (s.iops or 0.0) >= ACTIVE_IOPS

    def alone(key: tuple[str, str], datastore: str) -> bool:
        return not any(other != key and active(other) for other in by_datastore.get(datastore, []))

    problems: list[Problem] = []
    moved: list[tuple[tuple[str, str], str]] = []
    for k, ident in enumerate(disk_idents):
        field = f"disks[{k}]"
        try:
            vc, vm_moid, instance = svc.ids.parse_disk(ident)
        except BasilError as err:  # the id parser's own error names what is wrong
            problems.append(Problem(field, err.message))
            continue
        vm = inv.vms.get(vm_moid)
        disk = next((d for d in vm.disks if d.instance == instance), None) if vm is not None else None
        if vc != vcenter or disk is None:
            problems.append(Problem(field, f"no disk {ident!r} in vCenter {vcenter!r}"))
        elif disk.datastore == target.moid:
            problems.append(Problem(field, f"{ident!r} is already on {target.name}"))
        elif (vm_moid, instance) not in latest:
            problems.append(Problem(field, f"{ident!r} has no sample yet: collect first"))
        elif any(key == (vm_moid, instance) for key, _ in moved):
            problems.append(Problem(field, f"{ident!r} appears more than once"))
        else:
            moved.append(((vm_moid, instance), disk.datastore))
    raise_if_problems(problems, "what-if")

    moved_keys = {key for key, _ in moved}
    workloads: list[WorkloadMeasurement] = []
    for key in by_datastore.get(target.moid, []):
        sample = latest.get(key)
        if sample is not None and key not in moved_keys:
            name = svc.ids.disk_id(vcenter, *key)
            workloads.append(_measurement(name, sample, f"on {target.name}", alone(key, target.moid)))
    hosts, models = svc.newest_host_samples(vcenter), svc.datastore_models(vcenter)
    for source in dict.fromkeys(src for _key, src in moved):
        source_name = inv.datastores[source].name if source in inv.datastores else source
        group = f"from {source_name}"
        leaving = {svc.ids.disk_id(vcenter, *key) for key, src in moved if src == source}
        together = [
            _measurement(svc.ids.disk_id(vcenter, *key), latest[key], group, alone(key, source))
            for key in by_datastore.get(source, [])
            if key in latest and (active(key) or svc.ids.disk_id(vcenter, *key) in leaving)
        ]
        # Without the batches of the disks they leave behind (eq. 5-6 backwards, on the source).
        workloads += isolate(together, leaving, device_params(vcenter, source, hosts, models)[0])

    device, max_conn_source = device_params(vcenter, target.moid, hosts, models)
    prediction = predict_consolidation(workloads, device)
    return {
        "datastore": svc.ids.object_id(vcenter, target.moid),
        "datastore_name": target.name,
        "moved": [svc.ids.disk_id(vcenter, *key) for key, _ in moved],
        "max_conn_source": max_conn_source,
        **prediction.to_dict(),
    }


# Disks listed per datastore in a move's effect (the moved ones first, then the slowest readers);
# the totals cover all of them. Every move of a round is stored with its effect: keep it small.
MAX_LISTED_DISKS = 10


def _summary(
    datastore: str, names: Mapping[str, str], disks: Sequence[dict[str, Any]], first: Set[str] = frozenset()
) -> dict[str, Any]:
    """A datastore's predicted IOPS and IOPS-weighted latencies over *disks* (workload dicts); the
    disks named in *first*, then the slowest readers, are listed."""
    listed = sorted(disks, key=lambda d: (d["name"] not in first, -float(d["read_latency_ms"])))
    reads = sum(float(d["read_iops"]) for d in disks)
    writes = sum(float(d["write_iops"]) for d in disks)
    read_ms = sum(float(d["read_iops"]) * float(d["read_latency_ms"]) for d in disks)
    write_ms = sum(float(d["write_iops"]) * float(d["write_latency_ms"]) for d in disks)
    return {
        "datastore": datastore,
        "datastore_name": names.get(datastore, datastore),
        "read_iops": reads,
        "write_iops": writes,
        "read_latency_ms": read_ms / reads if reads > 0 else None,
        "write_latency_ms": write_ms / writes if writes > 0 else None,
        "disks_total": len(disks),
        "disks": [
            {
                "disk": d["name"],
                "iops": d["iops"],
                "read_latency_ms": d["read_latency_ms"],
                "write_latency_ms": d["write_latency_ms"],
            }
            for d in listed[:MAX_LISTED_DISKS]
        ],
    }


def move_effects(
    *,
    vcenter: str,
    inventory: Inventory,
    disk_samples: Mapping[tuple[str, str], DiskSample],
    host_samples: Mapping[tuple[str, str], HostDatastoreSample],
    models: Mapping[tuple[str, str], DatastoreModel],
    disk_keys: Mapping[str, tuple[str, str, int]],
    disk_id: Callable[[str, str], str],
) -> Callable[[str, str, Sequence[str]], dict[str, Any] | None]:
    """A function giving one move's predicted effect: (source, target, snapshot disk ids) -> the
    predicted IOPS and latencies of the disks on the source after they leave and on the target after
    they arrive (the consolidation estimator), or None when a moved disk has no sample."""
    by_datastore = _disks_by_datastore(inventory)
    names = {ds.moid: ds.name for ds in inventory.datastores.values()}

    def measured(key: tuple[str, str], group: str) -> WorkloadMeasurement | None:
        sample = disk_samples.get(key)
        if sample is None or (sample.iops or 0.0) < ACTIVE_IOPS:
            return None
        return _measurement(disk_id(*key), sample, group, True)

    def effect(source: str, target: str, disks: Sequence[str]) -> dict[str, Any] | None:
        moving = [(disk_keys[d][0], disk_keys[d][1]) for d in disks if d in disk_keys]
        if len(moving) != len(disks) or any(k not in disk_samples for k in moving):
            return None
        on_source = [w for k in by_datastore.get(source, []) if (w := measured(k, "stayed")) is not None]
        leaving = {disk_id(*k) for k in moving}
        on_target = [
            w for k in by_datastore.get(target, []) if (w := measured(k, f"on {target}")) is not None
        ]
        source_device, _ = device_params(vcenter, source, host_samples, models)
        target_device, _ = device_params(vcenter, target, host_samples, models)
        group = [w for k in by_datastore.get(source, []) if (w := measured(k, f"from {source}")) is not None]
        arriving = isolate(group, leaving, source_device)
        out: dict[str, Any] = {"estimator": "Casale et al. eq. 1-6, n disks (docs/whatif.md)"}
        staying = [w for w in on_source if w.name not in leaving]
        after_source = predict_departure(on_source, leaving, source_device) if staying else []
        out["source"] = _summary(source, names, [w.to_dict() for w in after_source])
        if on_target or arriving:
            after_target = predict_consolidation([*on_target, *arriving], target_device)
            out["target"] = _summary(
                target, names, [w.to_dict() for w in after_target.workloads], first=leaving
            )
            out["target"]["parallelism"] = target_device.parallelism
        else:
            out["target"] = _summary(target, names, [])
        out["source"]["parallelism"] = source_device.parallelism
        return out

    return effect
