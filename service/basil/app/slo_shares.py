"""SIOC shares from the SLO goal's priority groups (``goal: slo`` with ``priority_queues: true``).

The M/M/1-with-priorities model of :mod:`basil.core.slo` assumes each datastore serves higher groups
first; vSphere's closest mechanism is SIOC shares. For every pod that asks for it, each disk on the
pod's datastores gets the shares of its group (:func:`basil.core.slo.group_shares`), its reservation
and limit kept. Disks of VMs in an SRP pool tree are left to the SRP loop, which owns their settings
(give the pool its shares in the tree instead); VMs in groups by SRP pool are therefore not set here.
Run by the SRP job, after the SRP step, within the same per-run change budget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from basil.app.pods import ResolvedPod
from basil.app.pools import PoolDocument, vm_tags
from basil.app.vcenters import VCenterLink
from basil.core.slo import PriorityGroup, SloParams, group_shares
from basil.vcenter.actuator import ActuatorParams, RunReport, StorageIOAllocationBackend
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.types import Inventory, IOAllocation

log = logging.getLogger(__name__)


@dataclass
class SharesOutcome:
    issued: int = 0
    failed: int = 0
    deferred: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return {"issued": self.issued, "failed": self.failed, "deferred": self.deferred, "notes": self.notes}


def desired_shares(
    pod: ResolvedPod, inventory: Inventory, srp_vms: set[str]
) -> tuple[dict[tuple[str, str], IOAllocation], list[str]]:
    """The settings to change on the pod's disks (only those whose shares differ), and notes."""
    cfg = pod.config.slo
    params = SloParams(
        groups=tuple(PriorityGroup(g.name, g.drt_ms, g.tag) for g in cfg.groups),
        tag_category=cfg.tag_category,
    )
    shares, ungrouped = group_shares(params)
    group_of: dict[str, str] = {}
    for path, moids in vm_tags(inventory).items():
        for g in params.groups:
            if params.group_tag(g) == path:
                for moid in moids:
                    group_of.setdefault(moid, g.name)
    members = set(pod.datastores)
    settings: dict[tuple[str, str], IOAllocation] = {}
    for vm in sorted(inventory.vms.values(), key=lambda v: v.moid):
        if vm.template or vm.moid in srp_vms:
            continue
        want = shares[group_of[vm.moid]] if vm.moid in group_of else ungrouped
        for d in vm.disks:
            if d.datastore in members and d.io.shares != want:
                settings[(vm.moid, d.instance)] = IOAllocation.with_shares(d.io.reservation, d.io.limit, want)
    off = sorted(inventory.datastores[ds].name for ds in members if not inventory.datastores[ds].iorm.enabled)
    notes = [f"pod {pod.name}: SIOC is off on {', '.join(off)}: shares have no effect there"] if off else []
    return settings, notes


def _apply(
    link: VCenterLink, settings: Mapping[tuple[str, str], IOAllocation], inventory: Inventory
) -> Callable[[VCenterConnection], RunReport]:
    def run(_conn: VCenterConnection) -> RunReport:
        return link.actuator(ActuatorParams()).apply_qos(settings, inventory, StorageIOAllocationBackend())

    return run


def apply_group_shares(
    pods: Sequence[ResolvedPod],
    links: Mapping[str, VCenterLink],
    docs: Sequence[PoolDocument],
    budget: int,
) -> SharesOutcome:
    """Set the groups' shares on every pod with ``goal: slo`` and ``priority_queues: true``."""
    out = SharesOutcome()
    srp_vms = {vm for doc in docs for vm in doc.vm_names}
    for pod in pods:
        if pod.config.goal != "slo" or not pod.config.slo.priority_queues:
            continue
        link = links.get(pod.vcenter)
        if link is None:
            continue
        inventory = link.inventory()
        settings, notes = desired_shares(pod, inventory, srp_vms)
        out.notes += notes
        now = dict(sorted(settings.items())[: max(budget, 0)])
        out.deferred += len(settings) - len(now)
        if not now:
            continue
        report = link.call(_apply(link, now, inventory))
        ok = sum(r.state == "succeeded" for r in report.results)
        out.issued += ok
        out.failed += len(report.results) - ok
        budget -= len(report.results)
        log.info("SLO shares, pod %s: %d set, %d failed", pod.name, ok, len(report.results) - ok)
    return out
