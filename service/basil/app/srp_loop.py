"""The Storage Resource Pools control loop: measured demand → ``basil.srp`` step → per-disk settings.

One pool tree per datastore, as in the paper's prototype (SRP §5: one array, its VMs in one tree).
Every run, for each tree with a new measurement:

1. demand per VM and disk from the newest 20 s sample of each disk on the tree's datastore: IOPS,
   latency and IO size, turned into outstanding IOs by Little's law (SRP eq. 1–3, in ``basil.srp``);
2. the array: Q(t) the queue depth the controller set last time (the measured outstanding IOs on
   the datastore at first), Lat(t) the datastore's latency measured from all hosts (IOPS-weighted);
   eq. 4 gives Q(t+1) and eq. 5 the IOPS to divide (:func:`basil.srp.engine.control_step`);
3. the result mapped onto ``storageIOAllocation`` with hysteresis
   (:mod:`basil.srp.vsphere_allocation`) against what vCenter has now, at most
   ``max_changes_per_run`` changes per run (the largest changes first), issued through the
   actuator's QoS backend; what was issued is recorded per disk, and the run is audited;
4. when the tree asks for it (``sioc: true``), SIOC on the datastore with L_c as its congestion
   threshold, so the array queue is divided among hosts the way eq. 6 says.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from basil.app.pools import PoolDocument
from basil.app.vcenters import VCenterLink
from basil.config import SrpConfig
from basil.srp.capacity import ArrayState
from basil.srp.demand import DemandSnapshot, DiskStats, VmStats
from basil.srp.engine import SrpResult, control_step
from basil.srp.params import SrpParams
from basil.srp.vsphere_allocation import (
    VSPHERE_UNLIMITED,
    DiskChange,
    DiskKey,
    StorageIOAllocation,
    VSphereAllocationParams,
    changes,
    vsphere_allocations,
)
from basil.store import Store
from basil.store.applied import DatastoreSetting, DiskSetting, record_datastore_settings, record_disk_settings
from basil.store.audit import record_system
from basil.vcenter.actions import ConfigureSIOC
from basil.vcenter.actuator import ActuatorParams, StorageIOAllocationBackend
from basil.vcenter.types import DiskSample, HostDatastoreSample, Inventory, IOAllocation, IORMConfig

log = logging.getLogger(__name__)


def srp_params(cfg: SrpConfig) -> SrpParams:
    return SrpParams(
        latency_threshold_ms=cfg.latency_threshold_ms,
        gamma=cfg.gamma,
        queue_depth_min=cfg.queue_depth_min,
        queue_depth_max=cfg.queue_depth_max,
        io_size_charging=cfg.io_size_charging,
        charge_chunk_kb=cfg.charge_chunk_kb,
    )


def allocation_params(cfg: SrpConfig) -> VSphereAllocationParams:
    return VSphereAllocationParams(hysteresis=min(cfg.hysteresis_pct / 100.0, 0.99))


@dataclass(frozen=True)
class Measurement:
    """What the newest samples say about one datastore and the disks on it."""

    at: datetime | None
    demand: DemandSnapshot
    queue_depth: float  # measured outstanding IOs on the datastore, all hosts
    latency_ms: float  # IOPS-weighted over hosts (0 when idle)
    disks: int


def measure(
    doc: PoolDocument,
    inventory: Inventory,
    disks: Mapping[tuple[str, str], DiskSample],
    hosts: Mapping[tuple[str, str], HostDatastoreSample],
) -> Measurement:
    """Demand per VM (its disks on the tree's datastore) and the datastore's queue and latency."""
    vms: dict[str, VmStats] = {}
    times: list[datetime] = []
    for moid in sorted(doc.tree.vm_names()):
        vm = inventory.vms.get(moid)
        if vm is None:
            continue
        stats: list[DiskStats] = []
        for d in vm.disks:
            if d.datastore != doc.datastore:
                continue
            s = disks.get((moid, d.instance))
            if s is None or s.iops is None:
                continue
            times.append(s.timestamp)
            stats.append(
                DiskStats(
                    name=d.instance,
                    iops=max(s.iops, 0.0),
                    latency_ms=max(s.latency_ms or 0.0, 0.0),
                    io_size_kb=s.io_size_kb if s.io_size_kb and s.io_size_kb > 0 else None,
                    datastore=d.datastore,
                )
            )
        if stats:
            vms[moid] = VmStats(host=vm.host, disks=tuple(stats))
    oio = lat_iops = iops = 0.0
    for (_host, ds), h in hosts.items():
        if ds != doc.datastore:
            continue
        times.append(h.timestamp)
        oio += h.oio or 0.0
        if h.iops and h.latency_ms is not None:
            lat_iops += h.latency_ms * h.iops
            iops += h.iops
    if iops <= 0:  # no host view: the disks' own figures
        for stats_of_vm in vms.values():
            for ds_stats in stats_of_vm.disks:
                lat_iops += ds_stats.latency_ms * ds_stats.iops
                iops += ds_stats.iops
                oio += ds_stats.iops * ds_stats.latency_ms / 1000.0  # Little's law (SRP eq. 1)
    return Measurement(
        at=max(times) if times else None,
        demand=DemandSnapshot(vms),
        queue_depth=oio,
        latency_ms=lat_iops / iops if iops > 0 else 0.0,
        disks=sum(len(v.disks) for v in vms.values()),
    )


@dataclass
class TreeState:
    """What the loop remembers of a tree between runs."""

    queue_depth: float | None = None  # Q(t) set by the last step
    measured_at: datetime | None = None
    result: SrpResult | None = None
    computed_at: datetime | None = None
    issued: int = 0
    failed: int = 0
    deferred: int = 0


@dataclass
class SrpRunOutcome:
    trees: int = 0
    stepped: int = 0
    changes: int = 0  # settings issued
    failed: int = 0
    deferred: int = 0  # changes left for the next run by the rate limit
    sioc: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "trees": self.trees,
            "stepped": self.stepped,
            "changes": self.changes,
            "failed": self.failed,
            "deferred": self.deferred,
            "sioc": self.sioc,
            "notes": self.notes,
        }


def _change_size(c: DiskChange) -> float:
    """How far a setting moves (relative), so the rate limit issues the biggest changes first."""
    if c.current is None:
        return math.inf
    size = 0.0
    for old, new in ((c.current.reservation, c.desired.reservation), (c.current.limit, c.desired.limit)):
        if (old == VSPHERE_UNLIMITED) != (new == VSPHERE_UNLIMITED):
            return math.inf
        if new != VSPHERE_UNLIMITED:
            size = max(size, abs(new - old) / max(abs(old), 1))
    return max(size, abs(c.desired.shares - c.current.shares) / max(c.current.shares, 1))


def audit_disk_setting(session: Session, row: DiskSetting, vm_name: str) -> None:
    """The audit entry of one disk's IO allocation as issued to vCenter."""
    limit = "unlimited" if row.limit == VSPHERE_UNLIMITED else f"{row.limit} IOPS"
    task = f" (vCenter task {row.task_id})" if row.task_id else ""
    what = (
        f"disk {row.instance} of {vm_name} ({row.vm}), pool tree {row.pool}: reservation "
        f"{row.reservation} IOPS, limit {limit}, {row.shares} shares{task}"
    )
    record_system(
        session,
        "srp.disk_settings",
        f"disk {row.vm}:{row.instance}",
        outcome="ok" if row.outcome == "ok" else "failed",
        message=what if row.outcome == "ok" else f"{what}: {row.message}",
        details={
            "pool_tree": row.pool, "vm": row.vm, "vm_name": vm_name, "disk": row.instance,
            "reservation": row.reservation, "limit": row.limit, "shares": row.shares,
            "task": row.task_id,
        },
        at=row.issued_at,
    )  # fmt: skip


class SrpController:
    """Runs the control loop over every tree; keeps Q(t) and the last result of each tree."""

    def __init__(self, store: Store, config: SrpConfig) -> None:
        self.store = store
        self.config = config
        self.params = srp_params(config)
        self.params.validate()
        self.alloc_params = allocation_params(config)
        self.states: dict[str, TreeState] = {}
        self._lock = threading.Lock()

    def forget(self, name: str) -> None:
        with self._lock:
            self.states.pop(name, None)

    def run(
        self,
        docs: list[PoolDocument],
        links: Mapping[str, VCenterLink],
        disks: Mapping[str, Mapping[tuple[str, str], DiskSample]],
        hosts: Mapping[str, Mapping[tuple[str, str], HostDatastoreSample]],
        *,
        force: bool = False,
    ) -> SrpRunOutcome:
        """One run over *docs*; *disks* / *hosts* are the newest samples per vCenter."""
        out = SrpRunOutcome(trees=len(docs))
        budget = int(self.config.max_changes_per_run)
        with self._lock:
            for doc in docs:
                link = links.get(doc.vcenter)
                if link is None:
                    out.notes.append(f"{doc.name}: vCenter {doc.vcenter} is not configured")
                    continue
                inventory = link.inventory()
                state = self.states.setdefault(doc.name, TreeState())
                m = measure(doc, inventory, disks.get(doc.vcenter, {}), hosts.get(doc.vcenter, {}))
                if doc.sioc and self.config.manage_sioc:
                    out.sioc += self._sioc(doc, link, inventory, out)
                if m.at is None:
                    out.notes.append(f"{doc.name}: no samples yet")
                    continue
                if not force and state.measured_at is not None and m.at <= state.measured_at:
                    continue  # nothing new measured: another step would only repeat the last one
                q = (
                    state.queue_depth
                    if state.queue_depth is not None
                    else max(m.queue_depth, self.params.queue_depth_min)
                )
                result = control_step(doc.tree, m.demand, ArrayState(q, m.latency_ms), self.params)
                state.queue_depth, state.measured_at = result.queue_depth, m.at
                state.result, state.computed_at = result, datetime.now(UTC)
                out.stepped += 1
                issued, failed, deferred = self._apply(doc, link, inventory, result, budget)
                budget -= issued + failed
                state.issued += issued
                state.failed += failed
                state.deferred = deferred
                out.changes += issued
                out.failed += failed
                out.deferred += deferred
        return out

    def _apply(
        self, doc: PoolDocument, link: VCenterLink, inventory: Inventory, result: SrpResult, budget: int
    ) -> tuple[int, int, int]:
        desired = vsphere_allocations(result.disks, self.alloc_params)
        current: dict[DiskKey, StorageIOAllocation] = {}
        datastores: dict[DiskKey, str] = {}
        keys: dict[DiskKey, int] = {}
        for key in desired:
            vm = inventory.vms.get(key.vm)
            disk = next((d for d in vm.disks if d.instance == key.disk), None) if vm else None
            if disk is None:
                continue
            current[key] = StorageIOAllocation(disk.io.reservation, disk.io.limit, disk.io.shares)
            datastores[key] = disk.datastore
            keys[key] = disk.key
        wanted = [c for c in changes(desired, current, self.alloc_params, datastores) if c.key in keys]
        wanted.sort(key=_change_size, reverse=True)
        now_issue = wanted[: max(budget, 0)]
        deferred = len(wanted) - len(now_issue)
        if not now_issue:
            return 0, 0, deferred
        settings = {
            (c.key.vm, c.key.disk): IOAllocation.with_shares(
                c.desired.reservation, c.desired.limit, c.desired.shares
            )
            for c in now_issue
        }
        report = link.call(
            lambda _c: link.actuator(ActuatorParams()).apply_qos(
                settings, inventory, StorageIOAllocationBackend()
            )
        )
        at = datetime.now(UTC)
        rows: list[DiskSetting] = []
        issued = failed = 0
        for c, r in zip(now_issue, report.results, strict=True):
            ok = r.state == "succeeded"
            issued += ok
            failed += not ok
            io = settings[(c.key.vm, c.key.disk)]
            rows.append(
                DiskSetting(
                    vcenter=doc.vcenter,
                    vm=c.key.vm,
                    disk_key=keys[c.key],
                    instance=c.key.disk,
                    pool=doc.name,
                    reservation=io.reservation,
                    limit=io.limit,
                    shares=io.shares,
                    shares_level=io.shares_level,
                    issued_at=at,
                    task_id=r.task or None,
                    outcome="ok" if ok else "failed",
                    message=r.message[:2000],
                )
            )
        vm_names = {v.moid: v.name for v in inventory.vms.values()}
        with self.store.session() as session:
            record_disk_settings(session, rows)
            for row in rows:  # one audit entry per setting issued, with its vCenter task
                audit_disk_setting(session, row, vm_names.get(row.vm, row.vm))
        log.info("SRP %s: %d settings issued, %d failed, %d deferred", doc.name, issued, failed, deferred)
        return issued, failed, deferred

    def _sioc(self, doc: PoolDocument, link: VCenterLink, inventory: Inventory, out: SrpRunOutcome) -> int:
        ds = inventory.datastores.get(doc.datastore)
        if ds is None:
            return 0
        threshold = round(min(max(self.params.latency_threshold_ms, 5), 100))
        if ds.iorm.enabled and ds.iorm.threshold_mode == "manual" and ds.iorm.threshold_ms == threshold:
            return 0
        action = ConfigureSIOC(
            doc.datastore, IORMConfig(enabled=True, threshold_mode="manual", threshold_ms=threshold)
        )
        report = link.call(lambda _c: link.actuator(ActuatorParams()).run([action], inventory))
        r = report.results[0]
        ok = r.state == "succeeded"
        with self.store.session() as session:
            task = f" (vCenter task {r.task})" if r.task else ""
            record_system(
                session,
                "srp.sioc",
                f"datastore {ds.name} ({ds.moid})",
                outcome="ok" if ok else "failed",
                message=f"SIOC on {ds.name} for pool tree {doc.name}: manual, {threshold} ms{task}"
                + ("" if ok else f": {r.message}"),
                details={"pool_tree": doc.name, "datastore": ds.moid, "datastore_name": ds.name,
                         "threshold_ms": threshold, "task": r.task or None},
            )  # fmt: skip
            record_datastore_settings(
                session,
                [
                    DatastoreSetting(
                        vcenter=doc.vcenter,
                        datastore=doc.datastore,
                        sioc_enabled=True,
                        congestion_threshold_ms=float(threshold),
                        issued_at=datetime.now(UTC),
                        task_id=r.task or None,
                        outcome="ok" if ok else "failed",
                        message=r.message[:2000],
                    )
                ],
            )
        if not ok:
            out.notes.append(f"{doc.name}: SIOC on {ds.name}: {r.message}")
        return 1 if ok else 0
