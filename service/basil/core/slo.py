"""Basil's second goal: latency targets per priority group across storage tiers (Lipetz et al.).

``result = recommend_slo(snapshot, params, spec)``: a strategy over plain data, like
:func:`basil.core.balancer.recommend`. Disks belong to priority groups, each with a desired response
time (DRT, ms). The goal is the paper's damage (§IV-B), summed over the disks above their DRT::

    damage = Σ_j (RT_j − DRT_j)² / DRT_j

Response times are predicted per datastore with an M/M/1 queue with non-preemptive priorities
(§IV-C eq. 2-5, Kleinrock/Cobham) from coarse per-interval counters: each disk's IOPS, read share,
IO size and random share. Placement sorts units by activity × priority and fills the fastest tier
first up to a utilisation cap (30 %, §IV-C), within the round's move and GB budgets (the cost-limited
variant, §IV-D); priorities come from the paper's gradient descent on the expected damage.

Mapping onto vSphere, and the choices where the paper is silent (docs/slo.md has the long form):

- An LU is a virtual disk, an extent exchange a Storage vMotion of a unit (one VM's disks on one
  datastore, :mod:`basil.core.constraints`); a disk lives wholly on one datastore, so eq. 5's sum
  over device types has one term. The cost limit is the round's ``max_moves``/``max_gb``.
- A tier is a datastore. Its per-IO service time follows Table I for its device kind (overhead per
  random/sequential IO plus transfer time) and its parallelism is its device count (data striped
  over its devices, §IV-C). Where Basil has a credible device fit ``latency = a + OIO/P``, an M/M/1
  queue over n striped devices has ``a = S`` and ``1/P = S/n``: the fit gives the service time
  (Table I's shape, scaled to ``a``) and ``n = a·P``. A datastore with neither a usable fit nor a
  device kind is an error naming its ``device_kind``.
- Queue priority. eq. 4 assumes the device serves higher groups first; vSphere's closest mechanism
  is SIOC shares. With ``priority_queues`` (SIOC managed by Basil, shares set from the groups) the
  Cobham formula is used; without, plain M/M/1 (FCFS), as the paper allows. Disks without a group
  are a last class below every group and count for load only (no DRT, no damage).
- eq. 4 as printed scales the waiting term by the disk's own work; the exact M/M/1 priority formula
  uses the mean residual work of all classes, ``W0 = Σ_m λ_m E[S_m²]/2 = Σ_m ρ_m S_m`` for
  exponential service. They agree when service times are equal; the exact form is used here.
- Writes load the queue (eq. 2 counts them) at their own service time; response time is for reads
  (the paper's, and vCenter's ``virtualDisk.readLatencyUS``). Idle disks have no response time and
  no damage. Utilisation at or above 1 is clamped just below it, so an overloaded datastore predicts
  a very large but finite response time.
- Activity is the disk's current IOPS (the service's latest window); priorities start at 1/DRT
  every round (stateless), as the paper starts each slice.
- A round recommends moves only when they lower the predicted damage by ``min_gain_pct`` of the
  damage on the datastores they touch; a
  pod whose groups cannot all be met says which group misses and by how much instead of moving
  disks back and forth.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from basil.core.constraints import Budget, PlacementState, Unit, build_units
from basil.core.device_model import ASSUMED_DEVICES
from basil.core.normalized_load import Models, imbalance, resolve_models
from basil.core.params import BalancerParams
from basil.core.plan import (
    STOP_BUDGET_GB,
    STOP_BUDGET_MOVES,
    STOP_NOTHING_TO_BALANCE,
    DatastoreEffect,
    Move,
    Pinned,
    Plan,
    PodOutcome,
    PodState,
)
from basil.core.snapshot import Datastore, Snapshot
from basil.core.workload_model import WorkloadParams, number_problems
from basil.errors import Problem, ValidationError, raise_if_problems

Array = npt.NDArray[np.float64]

GOAL_BALANCE = "balance"
GOAL_SLO = "slo"
GOALS = (GOAL_BALANCE, GOAL_SLO)
OBJECTIVE_SLO = "slo"
REASON_SLO = "meetResponseTimeTargets"  # reason code of SLO moves, in Storage DRS's style

# Why an SLO round stopped.
STOP_SLO_MET = "slo_met"  # every group predicted within its DRT without (more) moves
STOP_SLO_NO_GAIN = "slo_no_gain"  # no placement found lowers the predicted damage enough
STOP_SLO_PLACED = "slo_placed"  # the best placement found is recommended in full

DEFAULT_TAG_CATEGORY = "basil-slo"
DEFAULT_UTILISATION_CAP = 0.30  # §IV-C: "a maximal estimated utilization allowed, 30 percent"
MAX_UTILISATION = 0.995  # clamp for an overloaded queue (finite, very large response time)
NO_GROUP_PRIORITY_FACTOR = 0.1  # ungrouped disks sort as 1/(10 · the largest DRT)
_REFERENCE_MIX = WorkloadParams(oio=1.0, io_size_kb=8.0, read_pct=100.0, random_pct=100.0)
_DEFAULT_MIX = WorkloadParams(oio=1.0, io_size_kb=8.0, read_pct=70.0, random_pct=100.0)
_SHAPE_KIND = "fc15k"  # Table I row whose shape scales a fitted datastore of unknown kind


@dataclass(frozen=True, slots=True)
class DeviceCharacteristics:
    """A row of Table I: overhead per sequential and per random IO (ms), read and write rates (MB/s)."""

    overhead_seq_ms: float
    overhead_random_ms: float
    read_mb_s: float
    write_mb_s: float

    def service_ms(self, io_size_kb: float, random_share: float, write: bool) -> float:
        """eq. 3 per IO: overhead (random and sequential mixed by share) plus the transfer."""
        r = min(max(random_share, 0.0), 1.0)
        overhead = r * self.overhead_random_ms + (1.0 - r) * self.overhead_seq_ms
        rate = self.write_mb_s if write else self.read_mb_s
        return overhead + (max(io_size_kb, 0.0) / 1024.0) / rate * 1000.0


# Table I (SSD, FC, SATA), per Basil device kind. Table I has no 10k row: sas10k is FC's with the
# longer rotation (6 ms random, 1.5 ms sequential) and a slower media rate, our extrapolation.
DEVICE_TABLE: Mapping[str, DeviceCharacteristics] = {
    "ssd": DeviceCharacteristics(0.025, 0.1, 160.0, 120.0),
    "fc15k": DeviceCharacteristics(1.0, 4.0, 60.0, 60.0),
    "sas15k": DeviceCharacteristics(1.0, 4.0, 60.0, 60.0),
    "sas10k": DeviceCharacteristics(1.5, 6.0, 55.0, 55.0),
    "sata7k": DeviceCharacteristics(2.5, 10.0, 50.0, 50.0),
    "nlsas7k": DeviceCharacteristics(2.5, 10.0, 50.0, 50.0),
}


# --- groups and parameters ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PriorityGroup:
    """A priority group: its name, desired response time (ms), and who is in it."""

    name: str
    drt_ms: float
    tag: str = ""  # vSphere tag "category/name" whose VMs are in the group ("" = category/name)
    pools: tuple[str, ...] = ()  # SRP pools whose VMs are in the group
    vms: tuple[str, ...] = ()  # VMs named directly (snapshot files)
    disks: tuple[str, ...] = ()  # disks named directly (snapshot files)


@dataclass(frozen=True, slots=True)
class SloParams:
    """The SLO goal's parameters; budgets, headroom and ping-pong come from :class:`BalancerParams`.

    - ``utilisation_cap``: the highest predicted utilisation a placement target may reach (§IV-C).
    - ``priority_queues``: queues serve groups in priority order (SIOC shares managed from the
      groups); False is plain M/M/1.
    - ``iterations``: gradient steps per round (``Iternum``).
    - ``calibrate``: scale each datastore's model to the read latency its disks measured (when the
      round is given measurements); beyond the paper, which had no per-volume latency.
    - ``min_gain_pct``: moves only for a predicted damage cut of at least this share of the damage
      of the disks on the datastores the moves touch.
    """

    groups: tuple[PriorityGroup, ...]
    utilisation_cap: float = DEFAULT_UTILISATION_CAP
    priority_queues: bool = False
    iterations: int = 8
    min_gain_pct: float = 5.0
    tag_category: str = DEFAULT_TAG_CATEGORY
    calibrate: bool = True

    def validate(self, path: str = "slo") -> list[Problem]:
        found: list[Problem] = []
        if not self.groups:
            found.append(Problem(f"{path}.groups", "give at least one priority group"))
        seen: dict[str, int] = {}
        for i, g in enumerate(self.groups):
            at = f"{path}.groups[{i}]"
            if not g.name:
                found.append(Problem(f"{at}.name", "must not be empty"))
            elif g.name in seen:
                found.append(
                    Problem(f"{at}.name", f"duplicate group {g.name!r} (also groups[{seen[g.name]}])")
                )
            else:
                seen[g.name] = i
            if (
                isinstance(g.drt_ms, bool)
                or not isinstance(g.drt_ms, int | float)
                or not math.isfinite(g.drt_ms)
            ):
                found.append(Problem(f"{at}.drt_ms", f"must be a finite number of ms, got {g.drt_ms!r}"))
            elif g.drt_ms <= 0:
                found.append(Problem(f"{at}.drt_ms", f"must be greater than 0 ms, got {g.drt_ms:g}"))
        found += number_problems(
            self.utilisation_cap, f"{path}.utilisation_cap_pct", minimum=0, exclusive_minimum=True, maximum=1
        )
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or self.iterations < 1:
            found.append(
                Problem(f"{path}.iterations", f"must be a whole number ≥ 1, got {self.iterations!r}")
            )
        found += number_problems(self.min_gain_pct, f"{path}.min_gain_pct", minimum=0, maximum=100)
        return found

    def ranked(self) -> list[PriorityGroup]:
        """Groups from the highest priority (lowest DRT) down; ties keep the configured order."""
        return sorted(self.groups, key=lambda g: g.drt_ms)

    def group_tag(self, group: PriorityGroup) -> str:
        return group.tag or f"{self.tag_category}/{group.name}"


SHARES_TOP = 4000  # SIOC shares of the highest group (vSphere's "high" is 2000, custom up to 4000)
SHARES_FLOOR = 250


def group_shares(params: SloParams) -> tuple[dict[str, int], int]:
    """SIOC shares per group, so that SIOC serves the groups about in the order the priority model
    assumes: the highest group ``SHARES_TOP``, each next one half of the one above (SIOC's own high,
    normal and low levels are in that ratio), never below ``SHARES_FLOOR``; and the shares of disks
    without a group, one step below the lowest group. Shares are proportional, not a strict priority:
    under contention the model is optimistic for the high group (docs/slo.md)."""
    ranked = params.ranked()
    shares = {g.name: max(SHARES_TOP >> r, SHARES_FLOOR) for r, g in enumerate(ranked)}
    return shares, max(SHARES_TOP >> len(ranked), SHARES_FLOOR)


def assign_groups(
    params: SloParams,
    snapshot: Snapshot,
    *,
    vm_tags: Mapping[str, Sequence[str]] | None = None,
    pool_vms: Mapping[str, Sequence[str]] | None = None,
    path: str = "slo",
) -> dict[str, str]:
    """Every grouped disk's group, from the groups' disks, VMs, tags and pools.

    A tag of the groups' category that names no group, a pool or VM or disk that is not there, and a
    disk that lands in two groups are errors naming the field; raises :class:`ValidationError`.
    """
    problems: list[Problem] = []
    disks_of: dict[str, list[str]] = defaultdict(list)
    for d in snapshot.disks:
        disks_of[d.vm].append(d.id)
    disk_ids = {d.id for d in snapshot.disks}
    sources: dict[str, list[tuple[str, str]]] = defaultdict(list)  # disk -> [(group, why)]
    for i, g in enumerate(params.groups):
        at = f"{path}.groups[{i}]"
        for k, disk in enumerate(g.disks):
            if disk not in disk_ids:
                problems.append(Problem(f"{at}.disks[{k}]", f"unknown disk {disk!r}"))
            sources[disk].append((g.name, f"{at}.disks[{k}]"))
        for k, vm in enumerate(g.vms):
            if vm not in disks_of:
                problems.append(Problem(f"{at}.vms[{k}]", f"unknown VM {vm!r}"))
            for disk in disks_of.get(vm, []):
                sources[disk].append((g.name, f"{at}.vms[{k}]"))
        for k, pool in enumerate(g.pools):
            if pool_vms is None or pool not in pool_vms:
                problems.append(Problem(f"{at}.pools[{k}]", f"unknown SRP pool {pool!r}"))
                continue
            for vm in pool_vms[pool]:
                for disk in disks_of.get(vm, []):
                    sources[disk].append((g.name, f"{at}.pools[{k}] (VM {vm})"))
    problems += _tag_sources(params, vm_tags or {}, disks_of, sources, path)
    membership, twice = _resolve(sources, disk_ids, path)
    raise_if_problems([*problems, *twice], "SLO groups")
    return membership


def _resolve(
    sources: Mapping[str, Sequence[tuple[str, str]]], disk_ids: set[str], path: str
) -> tuple[dict[str, str], list[Problem]]:
    """One group per disk; a disk put in two groups is a problem naming both and why."""
    membership: dict[str, str] = {}
    problems: list[Problem] = []
    for disk in sorted(sources):
        groups = sorted({g for g, _ in sources[disk]})
        if len(groups) > 1:
            whys = "; ".join(f"{g} by {w}" for g, w in sources[disk])
            problems.append(Problem(f"{path}.groups", f"disk {disk} is in two groups: {whys}"))
        elif disk in disk_ids:
            membership[disk] = groups[0]
    return membership, problems


def _tag_sources(
    params: SloParams,
    vm_tags: Mapping[str, Sequence[str]],
    disks_of: Mapping[str, Sequence[str]],
    sources: dict[str, list[tuple[str, str]]],
    path: str,
) -> list[Problem]:
    """Add the groups that VM tags of the groups' category put disks in; a tag naming no group is a
    problem at ``<path>.vm_tags.<vm>``."""
    problems: list[Problem] = []
    by_tag = {params.group_tag(g): g.name for g in params.groups}
    for vm, tags in sorted(vm_tags.items()):
        for tag in tags:
            group = by_tag.get(tag)
            if group is None and tag.partition("/")[0] != params.tag_category:
                continue  # another category's tag, and no group's
            if group is None:
                known = ", ".join(sorted(by_tag)) or "none"
                problems.append(
                    Problem(f"{path}.vm_tags.{vm}", f"tag {tag!r} names no group (groups: {known})")
                )
                continue
            for disk in disks_of.get(vm, []):
                sources[disk].append((group, f"tag {tag} on VM {vm}"))
    return problems


# --- the queueing model -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TierModel:
    """A datastore's service: Table I row (scaled), its parallelism, and where that came from."""

    datastore: str
    kind: str  # the Table I row used for the shape
    scale: float  # multiplies the row's service times (1 unless a fit gave the intercept)
    devices: float  # n: devices the data is striped over
    reference_ms: float  # the Table I row's service time of an 8 KB random read (times scale: the model's)
    source: str  # "table" (kind and device count), "fit" (Basil's device model), "table+P"
    calibration: float = 1.0  # factor on the service times that matches the measured latency now
    tier_ms: float = 0.0  # what orders the tiers, fastest first


def tier_models(
    snapshot: Snapshot,
    models: Models,
    lines: Mapping[str, tuple[float, float]] | None = None,
    path: str = "datastores",
) -> dict[str, TierModel]:
    """Every datastore's service model: Basil's device fit where credible (from the snapshot's
    samples, or *lines*: datastore → (intercept ms, P) of the service's stored fits), else Table I by
    device kind."""
    problems: list[Problem] = []
    out: dict[str, TierModel] = {}
    for i, ds in enumerate(snapshot.datastores):
        model = models.datastores[ds.name]
        fit = model.fit
        intercept = fit.intercept if fit is not None and fit.ok and fit.credible else None
        p = model.performance
        given = (lines or {}).get(ds.name)
        if given is not None and given[0] > 0 and given[1] > 0:
            intercept, p = given
        kind = ds.device_kind if ds.device_kind in DEVICE_TABLE else None
        row = DEVICE_TABLE[kind or _SHAPE_KIND]
        ref = row.service_ms(_REFERENCE_MIX.io_size_kb, 1.0, write=False)
        if intercept is not None and intercept > 0 and p is not None and p > 0:
            # A device kind orders the tiers by what the device is; a fit alone by its intercept
            # (a fit is bent by caches and sequential streams, the kind is not).
            out[ds.name] = TierModel(
                ds.name,
                kind or _SHAPE_KIND,
                intercept / ref,
                max(intercept * p, 1.0),
                ref,
                "fit",
                tier_ms=ref if kind is not None else intercept,
            )
        elif kind is not None and ds.spindles is not None:
            out[ds.name] = TierModel(ds.name, kind, 1.0, float(ds.spindles), ref, "table", tier_ms=ref)
        elif kind is not None and p is not None and p > 0:
            out[ds.name] = TierModel(ds.name, kind, 1.0, max(ref * p, 1.0), ref, "table+P", tier_ms=ref)
        elif kind is not None:
            out[ds.name] = TierModel(ds.name, kind, 1.0, float(ASSUMED_DEVICES), ref, "table", tier_ms=ref)
        else:
            problems.append(
                Problem(
                    f"{path}[{i}].device_kind",
                    f"datastore {ds.name} has no device model and no device kind: the SLO goal needs "
                    f"one (kinds: {', '.join(sorted(DEVICE_TABLE))})",
                )
            )
    raise_if_problems(problems, "snapshot")
    return out


@dataclass(slots=True)
class _Demand:
    """Per disk arrays: read and write IOPS, and per Table I row the read and write service times."""

    ids: list[str]
    reads: Array
    writes: Array
    read_ms: dict[str, Array]  # kind -> per disk
    write_ms: dict[str, Array]


def _demand(snapshot: Snapshot, models: Models, kinds: set[str]) -> _Demand:
    ids = [d.id for d in snapshot.disks]
    n = len(ids)
    reads = np.zeros(n)
    writes = np.zeros(n)
    size = np.zeros(n)
    rnd = np.zeros(n)
    for i, d in enumerate(snapshot.disks):
        w = models.disks[d.id].workload or _DEFAULT_MIX
        iops = d.iops if d.iops is not None else 0.0
        share = min(max(w.read_pct / 100.0, 0.0), 1.0)
        reads[i] = iops * share
        writes[i] = iops * (1.0 - share)
        size[i] = w.io_size_kb
        rnd[i] = w.random_pct / 100.0
    read_ms: dict[str, Array] = {}
    write_ms: dict[str, Array] = {}
    for kind in kinds:
        row = DEVICE_TABLE[kind]
        r = np.clip(rnd, 0.0, 1.0)
        overhead = r * row.overhead_random_ms + (1.0 - r) * row.overhead_seq_ms
        transfer = np.maximum(size, 0.0) / 1024.0 * 1000.0
        read_ms[kind] = overhead + transfer / row.read_mb_s
        write_ms[kind] = overhead + transfer / row.write_mb_s
    return _Demand(ids, reads, writes, read_ms, write_ms)


def mm1_priority_response(
    service_ms: Sequence[float],
    arrivals_per_s: Sequence[float],
    classes: Sequence[int],
    *,
    devices: float = 1.0,
    priority: bool = True,
) -> list[float]:
    """Mean response time (ms) of each stream on one datastore: an M/M/1 queue per device, the
    streams striped over *devices*, served in class order (0 first, non-preemptive) or FCFS.

    Cobham's formula: ``W_k = W0 / ((1 − σ_{k−1})(1 − σ_k))`` with ``W0 = Σ ρ_m S_m`` and ``σ_k``
    the utilisation of classes 0…k; the response time is ``S + W``. Plain M/M/1 is ``W0 / (1 − ρ)``.
    A scalar reference of what :func:`_evaluate` computes with arrays (the tests check both).
    """
    rho = [lam / 1000.0 * s / devices for s, lam in zip(service_ms, arrivals_per_s, strict=True)]
    w0 = sum(r * s for r, s in zip(rho, service_ms, strict=True))
    total = min(sum(rho), MAX_UTILISATION)
    out = []
    for s, k in zip(service_ms, classes, strict=True):
        if priority:
            above = min(sum(r for r, c in zip(rho, classes, strict=True) if c < k), MAX_UTILISATION)
            upto = min(sum(r for r, c in zip(rho, classes, strict=True) if c <= k), MAX_UTILISATION)
            wait = w0 / ((1.0 - above) * (1.0 - upto))
        else:
            wait = w0 / (1.0 - total)
        out.append(s + wait)
    return out


def gradient_step(priority: Array, rt_ms: Array, drt_ms: Array) -> Array:
    """One step of the paper's priority descent (§IV-C): ``priority_j ← priority_j · ERT_j / DRT_j``.

    A disk above its DRT gains priority, one below it yields it to others. Disks without a DRT
    (nan) or without a predicted response time (nan: idle) keep theirs; the ratio is capped at 10⁶
    so a saturated queue cannot overflow the priorities.
    """
    use = ~np.isnan(rt_ms) & ~np.isnan(drt_ms)
    ratio = np.where(use, np.nan_to_num(rt_ms, nan=1.0) / np.where(use, drt_ms, 1.0), 1.0)
    result: Array = priority * np.minimum(ratio, 1e6)
    return result


def damage_of(rt_ms: float, drt_ms: float) -> float:
    """The paper's damage of one volume (§IV-B): 0 within the DRT, (RT − DRT)²/DRT above it."""
    return 0.0 if rt_ms <= drt_ms else (rt_ms - drt_ms) ** 2 / drt_ms


@dataclass(slots=True)
class _Prediction:
    rt: Array  # per disk, read response time (ms); nan for idle disks
    utilisation: Array  # per datastore
    damage: float
    disk_damage: Array


class _PodModel:
    """The arrays of one pod: disks, their groups and classes, the datastores' service models."""

    def __init__(
        self,
        *,
        names: list[str],
        tiers: Mapping[str, TierModel],
        demand: _Demand,
        disk_index: list[int],
        drt: Array,
        klass: npt.NDArray[np.int64],
        classes: int,
        priority_queues: bool,
    ) -> None:
        self.names = names
        self.position = {n: j for j, n in enumerate(names)}
        self.scale = np.array([tiers[n].scale for n in names])
        self.devices = np.array([tiers[n].devices for n in names])
        self.kind = [tiers[n].kind for n in names]
        self.idx = np.array(disk_index, dtype=np.int64)
        self.reads = demand.reads[self.idx]
        self.writes = demand.writes[self.idx]
        kinds = sorted(set(self.kind))
        self.kind_index = np.array([kinds.index(k) for k in self.kind], dtype=np.int64)
        self.read_ms = np.stack([demand.read_ms[k][self.idx] for k in kinds])  # kinds × disks
        self.write_ms = np.stack([demand.write_ms[k][self.idx] for k in kinds])
        self.drt = drt  # nan for ungrouped disks
        self.klass = klass
        self.classes = classes
        self.priority = priority_queues
        self.active = self.reads > 0

    def service(self, where: npt.NDArray[np.int64]) -> tuple[Array, Array]:
        """Per disk read and write service time (ms) on datastore *where*."""
        cols = np.arange(len(where))
        k = self.kind_index[where]
        sc = self.scale[where]
        return self.read_ms[k, cols] * sc, self.write_ms[k, cols] * sc

    def predict(self, where: npt.NDArray[np.int64]) -> _Prediction:
        d = len(self.names)
        s_read, s_write = self.service(where)
        # Per device: arrivals λ/n, utilisation ρ = λ S / n, residual work W0 = Σ ρ S (exponential).
        rho_disk = (self.reads * s_read + self.writes * s_write) / 1000.0 / self.devices[where]
        w0_disk = (
            (self.reads * s_read * s_read + self.writes * s_write * s_write) / 1000.0 / self.devices[where]
        )
        w0 = np.bincount(where, weights=w0_disk, minlength=d)
        flat = where * self.classes + self.klass
        per_class = np.bincount(flat, weights=rho_disk, minlength=d * self.classes).reshape(d, self.classes)
        upto = np.minimum(np.cumsum(per_class, axis=1), MAX_UTILISATION)
        total = upto[:, -1]
        if self.priority:
            above = np.concatenate([np.zeros((d, 1)), upto[:, :-1]], axis=1)
            wait = w0[:, None] / ((1.0 - above) * (1.0 - upto))
            w = wait[where, self.klass]
        else:
            w = (w0 / (1.0 - total))[where]
        rt = np.where(self.active, s_read + w, np.nan)
        over = np.where(self.active & ~np.isnan(self.drt), rt - self.drt, 0.0)
        over = np.maximum(np.nan_to_num(over, nan=0.0), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            disk_damage = np.where(over > 0, over * over / self.drt, 0.0)
        return _Prediction(rt, total, float(disk_damage.sum()), disk_damage)

    def calibrate(self, where: npt.NDArray[np.int64], measured: Array) -> Array:
        """Per datastore the factor on its service times that makes its predicted read response time
        at *where* (IOPS-weighted over its active disks) equal the measured one (nan: not measured);
        1 where nothing is measured. The response time grows with the factor, so bisection on its
        logarithm in [10⁻³, 10³] finds it, for every datastore at once."""
        d = len(self.names)
        w = np.where(self.active & ~np.isnan(measured), self.reads, 0.0)
        wsum = np.bincount(where, weights=w, minlength=d)
        has = wsum > 0
        target = np.bincount(where, weights=w * np.nan_to_num(measured), minlength=d) / np.where(
            has, wsum, 1.0
        )
        lo, hi = np.full(d, math.log(1e-3)), np.full(d, math.log(1e3))
        base = self.scale.copy()
        for _ in range(32):
            mid = (lo + hi) / 2.0
            self.scale = base * np.where(has, np.exp(mid), 1.0)
            rt = np.nan_to_num(self.predict(where).rt)
            predicted = np.bincount(where, weights=w * rt, minlength=d) / np.where(has, wsum, 1.0)
            high = predicted > target
            hi = np.where(high, mid, hi)
            lo = np.where(high, lo, mid)
        factor: Array = np.where(has, np.exp((lo + hi) / 2.0), 1.0)
        self.scale = base * factor
        return factor


def _pod_model(
    names: list[str],
    tiers: Mapping[str, TierModel],
    demand: _Demand,
    *,
    disk_index: list[int],
    slo: SloParams,
    group_of: Sequence[str | None],
) -> _PodModel:
    """The queueing model of a pod's datastores *names* and its disks (rows *disk_index* of
    *demand*, each in group ``group_of[k]`` or none): queue classes in DRT order, ungrouped last."""
    groups = slo.ranked()
    rank = {g.name: r for r, g in enumerate(groups)}
    drt_of = {g.name: g.drt_ms for g in groups}
    return _PodModel(
        names=names,
        tiers=tiers,
        demand=demand,
        disk_index=disk_index,
        drt=np.array([drt_of[g] if g is not None else math.nan for g in group_of]),
        klass=np.array([rank[g] if g is not None else len(groups) for g in group_of], dtype=np.int64),
        classes=len(groups) + 1,
        priority_queues=slo.priority_queues,
    )


@dataclass(frozen=True, slots=True)
class DamageCheck:
    """A pod's predicted damage on the placement given and after some moves (:func:`damage_with_moves`)."""

    before: float
    after: float
    calibration: Mapping[str, float]  # the factor used per datastore (1: Table I or the fit as is)
    utilisation: Mapping[str, float]  # per datastore, predicted per device on the placement given
    utilisation_after: Mapping[str, float]  # the same after the moves


def damage_with_moves(
    snapshot: Snapshot,
    params: BalancerParams,
    slo: SloParams,
    *,
    membership: Mapping[str, str],
    pod: str,
    moves: Sequence[tuple[Sequence[str], str]],
    calibration: Mapping[str, float] | None = None,
    measured_ms: Mapping[str, float] | None = None,
    lines: Mapping[str, tuple[float, float]] | None = None,
) -> DamageCheck:
    """Pod *pod*'s predicted damage at the snapshot's placement, and after *moves* (each: disk ids and
    the datastore they go to), with the model of a round: the apply-time check of an SLO move.

    Each datastore's service times are scaled by *calibration* (datastore → factor; a round's
    ``calibration``) where given, else calibrated on *measured_ms* as a round does (``slo.calibrate``).
    Disks not on the pod's datastores, or moves to a datastore outside it, are ignored.
    """
    members = snapshot.pods().get(pod, [])
    names = [ds.name for ds in members]
    position = {n: j for j, n in enumerate(names)}
    models = resolve_models(snapshot, params)
    tiers = tier_models(snapshot, models, lines)
    demand = _demand(snapshot, models, {tiers[n].kind for n in names})
    rows = [(i, d) for i, d in enumerate(snapshot.disks) if d.datastore in position]
    m = _pod_model(
        names,
        tiers,
        demand,
        disk_index=[i for i, _ in rows],
        slo=slo,
        group_of=[membership.get(d.id) for _, d in rows],
    )
    where = np.array([position[d.datastore] for _, d in rows], dtype=np.int64)
    factor = np.ones(len(names))
    if calibration is not None:
        factor = np.array([calibration.get(n, 1.0) for n in names])
        m.scale = m.scale * factor
    elif slo.calibrate and measured_ms:
        factor = m.calibrate(where, np.array([measured_ms.get(d.id, math.nan) for _, d in rows]))
    after = where.copy()
    k_of = {d.id: k for k, (_, d) in enumerate(rows)}
    for disks, target in moves:
        if target not in position:
            continue
        for disk in disks:
            k = k_of.get(disk)
            if k is not None:
                after[k] = position[target]
    now, moved = m.predict(where), m.predict(after)
    return DamageCheck(
        now.damage,
        moved.damage,
        {n: float(f) for n, f in zip(names, factor.tolist(), strict=True)},
        {n: float(u) for n, u in zip(names, now.utilisation.tolist(), strict=True)},
        {n: float(u) for n, u in zip(names, moved.utilisation.tolist(), strict=True)},
    )


# --- results ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupState:
    """One group in one pod: DRT, response times (IOPS-weighted over its active disks) and damage."""

    name: str
    drt_ms: float
    disks: int
    iops: float
    measured_ms: float | None
    predicted_ms_before: float | None  # at the current placement
    predicted_ms_after: float | None  # after the recommended moves
    damage_before: float
    damage_after: float
    measured_damage: float | None = None  # the damage of the measured response times, where known
    measured_within_drt: float | None = None  # share of its measured active disks within the DRT

    @property
    def miss_ms(self) -> float:
        """By how much the predicted response time after the moves misses the DRT (0 when met)."""
        after = self.predicted_ms_after
        return 0.0 if after is None or after <= self.drt_ms else after - self.drt_ms


@dataclass(frozen=True, slots=True)
class GroupEffect:
    group: str
    rt_ms_before: float | None
    rt_ms_after: float | None


@dataclass(frozen=True, slots=True)
class SloMoveEffect:
    """A move's predicted effect: the affected groups' response times and the pod's damage."""

    move: int
    groups: tuple[GroupEffect, ...]
    damage_before: float
    damage_after: float


@dataclass(frozen=True, slots=True)
class SloPodReport:
    pod: str
    queue_model: str  # "priority" (SIOC shares) or "fcfs" (plain M/M/1)
    utilisation_cap: float
    groups: tuple[GroupState, ...]
    damage_before: float
    damage_after: float
    unmet: tuple[str, ...]  # one sentence per group predicted above its DRT after the moves
    tiers: Mapping[str, TierModel]
    utilisation_before: Mapping[str, float]
    utilisation_after: Mapping[str, float]
    priorities: Mapping[str, float]  # the chosen priority per group (IOPS-weighted mean)


@dataclass(frozen=True, slots=True)
class SloResult:
    plan: Plan
    pods: tuple[SloPodReport, ...]
    effects: Mapping[int, SloMoveEffect] = field(default_factory=dict)  # by move number

    def pod(self, name: str) -> SloPodReport:
        for p in self.pods:
            if p.pod == name:
                return p
        raise KeyError(name)


# --- the round ----------------------------------------------------------------------------------------


def recommend_slo(
    snapshot: Snapshot,
    params: BalancerParams,
    slo: SloParams,
    membership: Mapping[str, str],
    *,
    measured_ms: Mapping[str, float] | None = None,
    lines: Mapping[str, tuple[float, float]] | None = None,
) -> SloResult:
    """Recommend Storage vMotions that lower each pod's predicted damage, within the round's budgets.

    *membership* maps disk ids to group names (:func:`assign_groups`); *measured_ms* is each disk's
    measured read latency, when known, for the report; *lines* are device fits (intercept ms, P) by
    datastore that the snapshot's samples do not carry (the service's stored models).
    """
    problems = [*params.validate("options"), *slo.validate("slo")]
    names = {g.name for g in slo.groups}
    disk_ids = {d.id for d in snapshot.disks}
    for disk, group in sorted(membership.items()):
        if group not in names:
            problems.append(Problem(f"slo.membership.{disk}", f"group {group!r} is not defined"))
        if disk not in disk_ids:
            problems.append(Problem(f"slo.membership.{disk}", "unknown disk"))
    raise_if_problems(problems, "SLO round")
    models = resolve_models(snapshot, params)
    tiers = tier_models(snapshot, models, lines)
    demand = _demand(snapshot, models, {t.kind for t in tiers.values()})
    units = build_units(snapshot, models, params)
    state = PlacementState(snapshot, models, params)
    budget = Budget(params.max_moves, params.max_gb)
    moves: list[Move] = []
    outcomes: list[PodOutcome] = []
    reports: list[SloPodReport] = []
    effects: dict[int, SloMoveEffect] = {}
    for pod, members in snapshot.pods().items():
        round_ = _PodRound(
            pod=pod,
            members=members,
            snapshot=snapshot,
            models=models,
            tiers=tiers,
            demand=demand,
            units=units,
            state=state,
            budget=budget,
            slo=slo,
            membership=membership,
            measured=measured_ms or {},
        )
        pod_moves, outcome, report, pod_effects = round_.run(len(moves) + 1)
        moves += pod_moves
        outcomes.append(outcome)
        reports.append(report)
        effects.update(pod_effects)
    idle = sum(1 for d in snapshot.disks if d.iops is None)
    plan = Plan(
        moves=tuple(moves),
        pods=tuple(outcomes),
        datastores=models.datastores,
        flagged_disks={d: m.flags for d, m in models.disks.items() if m.flags},
        pinned=tuple(
            Pinned(u.vm, u.disks, u.datastore, u.pinned, u.pinned_reason)
            for u in units
            if u.pinned is not None
        ),
        notes=(f"{idle} disk(s) without IOPS count as idle",) if idle else (),
    )
    return SloResult(plan, tuple(reports), effects)


class _PodRound:
    """One pod's SLO round: the gradient descent over priorities, each step a cost-limited placement."""

    def __init__(
        self,
        *,
        pod: str,
        members: Sequence[Datastore],
        snapshot: Snapshot,
        models: Models,
        tiers: Mapping[str, TierModel],
        demand: _Demand,
        units: Sequence[Unit],
        state: PlacementState,
        budget: Budget,
        slo: SloParams,
        membership: Mapping[str, str],
        measured: Mapping[str, float],
    ) -> None:
        self.pod = pod
        self.slo = slo
        self.state = state
        self.budget = budget
        self.models = models
        self.measured = measured
        self.tiers = tiers
        self.sizes = {d.id: d.size_gb for d in snapshot.disks}
        self.names = [ds.name for ds in members]
        self.usable = [ds.name for ds in members if not ds.maintenance]
        self.excluded = tuple(ds.name for ds in members if ds.maintenance)
        position = {n: j for j, n in enumerate(self.names)}
        row_of = {d: i for i, d in enumerate(demand.ids)}
        self.units = [u for u in units if u.datastore in position]
        self.disk_ids = [d for u in self.units for d in u.disks]
        disk_pos = {d: k for k, d in enumerate(self.disk_ids)}
        self.groups = slo.ranked()
        self.group_of = [membership.get(d) for d in self.disk_ids]
        self.model = _pod_model(
            self.names,
            tiers,
            demand,
            disk_index=[row_of[d] for d in self.disk_ids],
            slo=slo,
            group_of=self.group_of,
        )
        m = self.model
        self.where0 = np.array([position[u.datastore] for u in self.units for _ in u.disks], dtype=np.int64)
        # Beyond the paper: vCenter measures each disk's read latency, so each datastore's model is
        # scaled to what its disks measured now (cache hits, RAID, firmware Table I cannot know).
        self.calibration = np.ones(len(self.names))
        if slo.calibrate and measured:
            seen = np.array([measured.get(d, math.nan) for d in self.disk_ids])
            self.calibration = m.calibrate(self.where0, seen)
        self.unit_disks = [[disk_pos[d] for d in u.disks] for u in self.units]
        self.unit_of_disk = np.array([u for u, ks in enumerate(self.unit_disks) for _ in ks], dtype=np.int64)
        self.group_masks = {
            g.name: np.array([x == g.name for x in self.group_of], dtype=bool) for g in self.groups
        }
        # Per unit and Table I row, the work (ms per s) its IO brings, before a datastore's scale.
        nu = len(self.units)
        work = m.reads[None, :] * m.read_ms + m.writes[None, :] * m.write_ms  # kinds × disks
        self.unit_work: list[list[float]] = [
            np.bincount(self.unit_of_disk, weights=row, minlength=nu).tolist() for row in work
        ]
        self.per_util = [float(m.scale[j] / 1000.0 / m.devices[j]) for j in range(len(self.names))]
        self.kind_of = m.kind_index.tolist()
        # Tiers, fastest first: datastores grouped by their reference service time.
        self.tier_order = sorted({round(tiers[n].tier_ms, 6) for n in self.usable})
        self.tier_of = {n: self.tier_order.index(round(tiers[n].tier_ms, 6)) for n in self.usable}
        self.no_group_priority = NO_GROUP_PRIORITY_FACTOR / max((g.drt_ms for g in self.groups), default=1.0)
        self.load = {d: models.disks[d].load for d in self.disk_ids}

    def _adds(self, u: int, j: int) -> float:
        """What unit *u* adds to datastore j's per-device utilisation."""
        return float(self.unit_work[self.kind_of[j]][u] * self.per_util[j])

    def _place(self, priority: Array) -> list[tuple[int, int, int]]:
        """The paper's "sort and place" (§IV-C), cost limited (§IV-D): units by activity × priority,
        each to the least utilised datastore of the fastest tier that stays under the cap (its own
        datastore when that is in the tier and has room, which is no exchange); when the budget is
        spent or no tier has room, it stays. Returns the moves (unit, source, target)."""
        m = self.model
        activity = (m.reads + m.writes) * priority
        key = np.bincount(self.unit_of_disk, weights=activity, minlength=len(self.units))
        order = np.argsort(-key, kind="stable").tolist()
        keys = key.tolist()
        util = [0.0] * len(self.names)
        moves: list[tuple[int, int, int]] = []
        budget_moves, budget_gb = self.budget.moves, self.budget.gb
        free = {n: self.state.room(n) for n in self.names}
        received: dict[str, int] = defaultdict(int)
        heaps: list[list[tuple[float, int]]] = [[] for _ in self.tier_order]
        for n in self.usable:
            heaps[self.tier_of[n]].append((0.0, m.position[n]))
        cap = self.slo.utilisation_cap
        src_of = self.where0[[ks[0] for ks in self.unit_disks]].tolist() if self.units else []
        for u in order:
            if budget_moves is not None and budget_moves < 1:
                break  # the rest stay where they are: no decision is left to make (§IV-D)
            unit = self.units[u]
            src = src_of[u]
            target = src
            can_move = (
                unit.pinned is None
                and keys[u] > 0
                and (budget_moves is None or budget_moves >= 1)
                and (budget_gb is None or unit.size_gb <= budget_gb + 1e-9)
            )
            if can_move:
                src_tier = self.tier_of.get(self.names[src])
                for t, heap in enumerate(heaps):
                    if t == src_tier and util[src] + self._adds(u, src) <= cap:
                        break  # its own tier, with room where it is: no exchange (§IV-D)
                    chosen = self._pick(
                        heap=heap, util=util, u=u, unit=unit, cap=cap, free=free, received=received
                    )
                    if chosen is not None:
                        target = chosen
                        break
            if target != src:
                moves.append((u, src, target))
                free[self.names[target]] -= unit.size_gb
                free[self.names[src]] += unit.size_gb
                received[self.names[target]] += 1
                if budget_moves is not None:
                    budget_moves -= 1
                if budget_gb is not None:
                    budget_gb -= unit.size_gb
            util[target] += self._adds(u, target)
            tier = self.tier_of.get(self.names[target])
            if tier is not None:
                heapq.heappush(heaps[tier], (util[target], target))
        return moves

    def _pick(
        self,
        *,
        heap: list[tuple[float, int]],
        util: list[float],
        u: int,
        unit: Unit,
        cap: float,
        free: Mapping[str, float],
        received: Mapping[str, int],
    ) -> int | None:
        """The least utilised datastore of a tier that takes unit *u* under the cap and the hard
        constraints (a few candidates are tried), or None."""
        tried: list[tuple[float, int]] = []
        chosen: int | None = None
        while heap and len(tried) < 16:
            entry = heapq.heappop(heap)
            u_j, j = entry
            if u_j != util[j]:
                continue  # stale: a newer entry for j is in the heap
            tried.append(entry)
            if u_j + self._adds(u, j) > cap:
                continue
            name = self.names[j]
            if name == unit.datastore:
                chosen = j
                break
            if unit.size_gb > free[name] or not self.state.allows(unit, name, new_limit=False):
                continue
            if name in self.state.new and received.get(name, 0) >= 1:
                continue
            chosen = j
            break
        for entry in tried:
            heapq.heappush(heap, entry)
        return chosen

    def _priorities0(self) -> Array:
        """Each disk's initial priority 1/DRT (§IV-C); ungrouped disks a fixed low one."""
        drt = self.model.drt
        grouped = ~np.isnan(drt)
        return np.where(grouped, 1.0 / np.where(grouped, drt, 1.0), self.no_group_priority)

    def _apply(self, moves: Sequence[tuple[int, int, int]]) -> npt.NDArray[np.int64]:
        where = self.where0.copy()
        for u, _, t in moves:
            where[self.unit_disks[u]] = t
        return where

    def run(self, first_number: int) -> tuple[list[Move], PodOutcome, SloPodReport, dict[int, SloMoveEffect]]:
        m = self.model
        now = m.predict(self.where0)
        best_moves: list[tuple[int, int, int]] = []
        best_pred = now
        priority = self._priorities0()
        best_priority = priority
        if len(self.usable) >= 2 and self.units and now.damage > 0:
            for _ in range(self.slo.iterations):
                moves = self._place(priority)
                pred = m.predict(self._apply(moves))
                if pred.damage < best_pred.damage - 1e-12:
                    best_moves, best_pred, best_priority = moves, pred, priority
                if pred.damage == 0.0:
                    break
                priority = gradient_step(priority, np.where(m.active, pred.rt, np.nan), m.drt)
        ordered = self._order(best_moves, now)
        final = ordered[-1][4] if ordered else now
        if ordered and not now.damage - final.damage > max(
            self._local_damage(ordered, now) * self.slo.min_gain_pct / 100.0, 1e-12
        ):
            ordered, final = [], now
        return self._emit(first_number, now, ordered, final, best_priority)

    def _local_damage(
        self, ordered: Sequence[tuple[int, int, int, _Prediction, _Prediction]], now: _Prediction
    ) -> float:
        """The damage now of the disks on the datastores the moves touch: what ``min_gain_pct`` is a
        share of, so the rule means the same in a pod of ten disks and in one of forty thousand."""
        touched = np.zeros(len(self.names), dtype=bool)
        for _, s, t, _, _ in ordered:
            touched[s] = touched[t] = True
        return float(now.disk_damage[touched[self.where0]].sum())

    def _order(
        self, chosen: Sequence[tuple[int, int, int]], now: _Prediction
    ) -> list[tuple[int, int, int, _Prediction, _Prediction]]:
        """The moves in apply order, each with the predictions before and after it: greedily the move
        that leaves the lowest damage (the placement order beyond 32 moves); trailing moves that do
        not lower the damage any more are dropped, unless they move units off a datastore over the cap."""
        m = self.model
        current = self.where0.copy()
        remaining = list(chosen)
        ordered: list[tuple[int, int, int, _Prediction, _Prediction]] = []
        before = now
        while remaining:
            candidates = remaining if len(remaining) <= 32 else remaining[:1]
            best_i, best_p = 0, None
            for i, (u, _, t) in enumerate(candidates):
                trial = current.copy()
                trial[self.unit_disks[u]] = t
                p = m.predict(trial)
                if best_p is None or p.damage < best_p.damage:
                    best_i, best_p = i, p
            assert best_p is not None
            if best_p.damage >= before.damage - 1e-12:
                rest = current.copy()
                for u, _, t in remaining:
                    rest[self.unit_disks[u]] = t
                evicts = any(
                    before.utilisation[s] > self.slo.utilisation_cap + 1e-12 for _, s, _ in remaining
                )
                if m.predict(rest).damage >= before.damage - 1e-12 and not evicts:
                    break  # what is left does not help, alone or together, nor relieves one over the cap
            u, s, t = remaining.pop(best_i)
            current[self.unit_disks[u]] = t
            ordered.append((u, s, t, before, best_p))
            before = best_p
        return ordered

    # --- reporting --------------------------------------------------------------------------------------

    def _group_rt(self, pred: _Prediction) -> dict[str, float | None]:
        m = self.model
        out: dict[str, float | None] = {}
        for name, mask in self.group_masks.items():
            use = mask & m.active
            w = m.reads[use]
            out[name] = float((pred.rt[use] * w).sum() / w.sum()) if use.any() else None
        return out

    def _group_damage(self, pred: _Prediction) -> dict[str, float]:
        return {name: float(pred.disk_damage[mask].sum()) for name, mask in self.group_masks.items()}

    def _n_now(self) -> dict[str, float]:
        sums = dict.fromkeys(self.names, 0.0)
        for k, d in enumerate(self.disk_ids):
            sums[self.names[int(self.where0[k])]] += self.load[d]
        return {n: sums[n] / self.models.datastores[n].effective_performance for n in self.names}

    def _emit(
        self,
        first_number: int,
        now: _Prediction,
        ordered: Sequence[tuple[int, int, int, _Prediction, _Prediction]],
        final: _Prediction,
        priority: Array,
    ) -> tuple[list[Move], PodOutcome, SloPodReport, dict[int, SloMoveEffect]]:
        m = self.model
        moves: list[Move] = []
        effects: dict[int, SloMoveEffect] = {}
        n_now = self._n_now()
        n_step = dict(n_now)
        where = self.where0.copy()
        balanced = [n for n in self.names if n not in self.excluded]
        for offset, (u, s, t, p_before, p_after) in enumerate(ordered):
            number = first_number + offset
            unit = self.units[u]
            src, tgt = self.names[s], self.names[t]
            n_before = dict(n_step)
            where_before = where.copy()
            where[self.unit_disks[u]] = t
            n_step[src] -= unit.load / self.models.datastores[src].effective_performance
            n_step[tgt] += unit.load / self.models.datastores[tgt].effective_performance
            on = (where == s) | (where == t) | (where_before == s)
            affected = {g for g, mask in self.group_masks.items() if (mask & on & m.active).any()}
            rt_b, rt_a = self._group_rt(p_before), self._group_rt(p_after)
            geffects = tuple(
                GroupEffect(g.name, rt_b[g.name], rt_a[g.name]) for g in self.groups if g.name in affected
            )
            effects[number] = SloMoveEffect(number, geffects, p_before.damage, p_after.damage)
            mine = sorted({self.group_of[k] or "no group" for k in self.unit_disks[u]})
            words = ", ".join(f"{e.group} {_ms(e.rt_ms_before)} → {_ms(e.rt_ms_after)}" for e in geffects)
            reason = (
                f"{unit.vm} ({', '.join(mine)}) from {src} (tier {self.tier_of.get(src, 0) + 1}, "
                f"utilisation {p_before.utilisation[s]:.0%} → {p_after.utilisation[s]:.0%}) to {tgt} "
                f"(tier {self.tier_of[tgt] + 1}, "
                f"{p_before.utilisation[t]:.0%} → {p_after.utilisation[t]:.0%}); "
                f"predicted response times {words or 'unchanged'}; "
                f"damage {p_before.damage:.4g} → {p_after.damage:.4g}"
            )
            self.state.apply(unit, src, tgt)
            self.budget.spend(unit)
            moves.append(
                Move(
                    number=number,
                    pod=self.pod,
                    vm=unit.vm,
                    disks=unit.disks,
                    disk_sizes_gb=tuple(self.sizes[d] for d in unit.disks),
                    disk_loads=tuple(self.load[d] for d in unit.disks),
                    source=src,
                    target=tgt,
                    size_gb=unit.size_gb,
                    load=unit.load,
                    source_n_before=n_before[src],
                    source_n_after=n_step[src],
                    target_n_before=n_before[tgt],
                    target_n_after=n_step[tgt],
                    imbalance_before=imbalance([n_before[n] for n in balanced]),
                    imbalance_after=imbalance([n_step[n] for n in balanced]),
                    target_new=self.models.datastores[tgt].new,
                    reason_code=REASON_SLO,
                    reason=reason,
                    objective=OBJECTIVE_SLO,
                    datastore_effects=(
                        _ds_effect(
                            name=src,
                            j=s,
                            n_before=n_before,
                            n_after=n_step,
                            p_before=p_before,
                            p_after=p_after,
                            m=m,
                            where_before=where_before,
                            where_after=where,
                        ),
                        _ds_effect(
                            name=tgt,
                            j=t,
                            n_before=n_before,
                            n_after=n_step,
                            p_before=p_before,
                            p_after=p_after,
                            m=m,
                            where_before=where_before,
                            where_after=where,
                        ),
                    ),
                )
            )
        groups = self._group_states(now, final)
        unmet = tuple(
            f"group {g.name} misses its DRT of {g.drt_ms:g} ms by {g.miss_ms:.3g} ms "
            f"(predicted {_ms(g.predicted_ms_after)}" + (" after the recommended moves)" if moves else ")")
            for g in groups
            if g.miss_ms > 0
        )
        stop, why = self._stop(moves, now, final, unmet)
        outcome = PodOutcome(
            pod=self.pod,
            threshold=0.0,
            before=PodState(imbalance([n_now[n] for n in balanced]), n_now),
            after=PodState(imbalance([n_step[n] for n in balanced]), n_step),
            moves=len(moves),
            gb=sum(mv.size_gb for mv in moves),
            stop=stop,
            stop_reason=why,
            excluded=self.excluded,
            objective=OBJECTIVE_SLO,
        )
        group_priority: dict[str, float] = {}
        for name, mask in self.group_masks.items():
            w = m.reads[mask]
            if mask.any():
                group_priority[name] = (
                    float((priority[mask] * w).sum() / w.sum()) if w.sum() > 0 else float(priority[mask][0])
                )
        report = SloPodReport(
            pod=self.pod,
            queue_model="priority" if self.slo.priority_queues else "fcfs",
            utilisation_cap=self.slo.utilisation_cap,
            groups=groups,
            damage_before=now.damage,
            damage_after=final.damage,
            unmet=unmet,
            tiers={
                n: dataclasses.replace(self.tiers[n], calibration=float(self.calibration[j]))
                for j, n in enumerate(self.names)
            },
            utilisation_before={n: float(now.utilisation[j]) for j, n in enumerate(self.names)},
            utilisation_after={n: float(final.utilisation[j]) for j, n in enumerate(self.names)},
            priorities=group_priority,
        )
        return moves, outcome, report, effects

    def _group_states(self, now: _Prediction, final: _Prediction) -> tuple[GroupState, ...]:
        m = self.model
        rt_now, rt_after = self._group_rt(now), self._group_rt(final)
        dmg_now, dmg_after = self._group_damage(now), self._group_damage(final)
        out = []
        measured = (
            np.array([self.measured.get(d, math.nan) for d in self.disk_ids]) if self.measured else None
        )
        for g in self.groups:
            mask = self.group_masks[g.name]
            measured_ms = measured_damage = within = None
            if measured is not None:
                seen = mask & ~np.isnan(measured) & (m.reads > 0)
                if seen.any():
                    measured_ms = float((measured[seen] * m.reads[seen]).sum() / m.reads[seen].sum())
                    measured_damage = sum(damage_of(float(v), g.drt_ms) for v in measured[seen])
                    within = float((measured[seen] <= g.drt_ms).mean())
            out.append(
                GroupState(
                    name=g.name,
                    drt_ms=g.drt_ms,
                    disks=int(mask.sum()),
                    iops=float((m.reads[mask] + m.writes[mask]).sum()),
                    measured_ms=measured_ms,
                    predicted_ms_before=rt_now[g.name],
                    predicted_ms_after=rt_after[g.name],
                    damage_before=dmg_now[g.name],
                    damage_after=dmg_after[g.name],
                    measured_damage=measured_damage,
                    measured_within_drt=within,
                )
            )
        return tuple(out)

    def _stop(
        self, moves: Sequence[Move], now: _Prediction, final: _Prediction, unmet: Sequence[str]
    ) -> tuple[str, str]:
        misses = "; ".join(unmet)
        if len(self.usable) < 2:
            return STOP_NOTHING_TO_BALANCE, "fewer than two datastores take part" + (
                f"; {misses}" if misses else ""
            )
        if moves:
            if self.budget.out_of_moves:
                code, words = STOP_BUDGET_MOVES, "the round's move budget is spent"
            elif self.budget.gb is not None and self.budget.gb <= 1e-9:
                code, words = STOP_BUDGET_GB, "the round's GB budget is spent"
            else:
                code, words = STOP_SLO_PLACED, "the best placement found is recommended"
            text = f"{words}; predicted damage {now.damage:.4g} → {final.damage:.4g}"
            return code, text + (f"; {misses}" if misses else "")
        if now.damage == 0.0:
            return STOP_SLO_MET, "every group is predicted within its DRT"
        return (
            STOP_SLO_NO_GAIN,
            f"no placement within the budget and the {self.slo.utilisation_cap:.0%} utilisation cap lowers "
            f"the predicted damage ({now.damage:.4g}) by {self.slo.min_gain_pct:g} %"
            + (f"; {misses}" if misses else ""),
        )


def _ms(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3g} ms"


def _ds_effect(
    *,
    name: str,
    j: int,
    n_before: Mapping[str, float],
    n_after: Mapping[str, float],
    p_before: _Prediction,
    p_after: _Prediction,
    m: _PodModel,
    where_before: npt.NDArray[np.int64],
    where_after: npt.NDArray[np.int64],
) -> DatastoreEffect:
    """The datastore's predicted read response time (IOPS-weighted over its disks) and IOPS."""

    def mean_rt(p: _Prediction, where: npt.NDArray[np.int64]) -> float:
        mask = (where == j) & m.active
        return float((p.rt[mask] * m.reads[mask]).sum() / m.reads[mask].sum()) if mask.any() else 0.0

    iops = m.reads + m.writes
    return DatastoreEffect(
        datastore=name,
        normalized_load_before=n_before[name],
        normalized_load_after=n_after[name],
        latency_ms_before=mean_rt(p_before, where_before),
        latency_ms_after=mean_rt(p_after, where_after),
        iops_before=float(iops[where_before == j].sum()),
        iops_after=float(iops[where_after == j].sum()),
        disks_after=int((where_after == j).sum()),
    )


# --- the snapshot file's "slo" section ----------------------------------------------------------------

_SECTION_KEYS = (
    "groups",
    "tag_category",
    "utilisation_cap_pct",
    "priority_queues",
    "iterations",
    "min_gain_pct",
    "vm_tags",
    "pool_vms",
    "measured_ms",
    "calibrate",
)
_GROUP_KEYS = ("name", "drt_ms", "tag", "pools", "vms", "disks")


@dataclass(frozen=True, slots=True)
class SloSpec:
    """What a round of the SLO goal needs beyond the snapshot: parameters, groups per disk, and each
    disk's measured read latency where known."""

    params: SloParams
    membership: Mapping[str, str]
    measured_ms: Mapping[str, float]


def _strings(value: object, path: str, problems: list[Problem]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.append(Problem(path, "must be a list of names"))
        return ()
    return tuple(value)


def _section_number(obj: Mapping[str, Any], key: str, default: float, problems: list[Problem]) -> float:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append(Problem(f"slo.{key}", f"must be a number, got {value!r}"))
        return default
    return float(value)


def _flag(obj: Mapping[str, Any], key: str, default: bool, problems: list[Problem]) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        problems.append(Problem(f"slo.{key}", f"must be true or false, got {value!r}"))
        return default
    return value


def _group(raw: object, path: str, problems: list[Problem]) -> PriorityGroup | None:
    if not isinstance(raw, dict):
        problems.append(Problem(path, "must be a mapping with name and drt_ms"))
        return None
    unknown = sorted(set(raw) - set(_GROUP_KEYS))
    problems += [Problem(f"{path}.{k}", f"unknown field (known: {', '.join(_GROUP_KEYS)})") for k in unknown]
    name, drt = raw.get("name"), raw.get("drt_ms")
    if not isinstance(name, str) or not name:
        problems.append(Problem(f"{path}.name", "must be a non-empty string"))
        name = ""
    if drt is None:
        problems.append(Problem(f"{path}.drt_ms", "must be set (desired response time, ms)"))
        drt = 1.0
    tag = raw.get("tag", "")
    if not isinstance(tag, str):
        problems.append(Problem(f"{path}.tag", "must be a tag written category/name"))
        tag = ""
    lists = {
        k: _strings(raw[k], f"{path}.{k}", problems) if k in raw else () for k in ("pools", "vms", "disks")
    }
    return PriorityGroup(name, drt, tag, lists["pools"], lists["vms"], lists["disks"])


def _name_lists(value: object, path: str, problems: list[Problem]) -> dict[str, tuple[str, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem(path, "must be a mapping of names to lists of names"))
        return {}
    return {str(k): _strings(v, f"{path}.{k}", problems) for k, v in value.items()}


def parse_slo(section: object, snapshot: Snapshot) -> SloSpec:
    """Read a snapshot file's ``slo`` section; raise :class:`ValidationError` naming every bad field::

    "slo": {
      "groups": [{"name": "gold", "drt_ms": 2, "vms"*: [vm], "disks"*: [disk], "pools"*: [pool],
                  "tag"*: "basil-slo/gold"}],
      "tag_category"*: "basil-slo", "utilisation_cap_pct"*: 30, "priority_queues"*: false,
      "iterations"*: 8, "min_gain_pct"*: 5, "calibrate"*: true,
      "vm_tags"*: {vm: ["basil-slo/gold"]},     # tags as vCenter has them
      "pool_vms"*: {pool: [vm]},                 # SRP pools' VMs
      "measured_ms"*: {disk: 1.7}                # measured read latency, for the report
    }
    """
    problems: list[Problem] = []
    if not isinstance(section, dict):
        raise ValidationError([Problem("slo", "must be a mapping with at least groups")], "snapshot")
    problems += [
        Problem(f"slo.{k}", f"unknown field (known: {', '.join(_SECTION_KEYS)})")
        for k in sorted(set(section) - set(_SECTION_KEYS))
    ]
    raw_groups = section.get("groups")
    found: list[PriorityGroup] = []
    if not isinstance(raw_groups, list):
        problems.append(Problem("slo.groups", "must be a list of groups"))
    else:
        found = [
            g
            for i, raw in enumerate(raw_groups)
            if (g := _group(raw, f"slo.groups[{i}]", problems)) is not None
        ]
    category = section.get("tag_category", DEFAULT_TAG_CATEGORY)
    if not isinstance(category, str) or not category:
        problems.append(Problem("slo.tag_category", "must be a non-empty string"))
        category = DEFAULT_TAG_CATEGORY
    queues = _flag(section, "priority_queues", False, problems)
    calibrate = _flag(section, "calibrate", True, problems)
    iterations = section.get("iterations", 8)
    if isinstance(iterations, bool) or not isinstance(iterations, int):
        problems.append(Problem("slo.iterations", f"must be a whole number ≥ 1, got {iterations!r}"))
        iterations = 8
    params = SloParams(
        groups=tuple(found),
        utilisation_cap=_section_number(
            section, "utilisation_cap_pct", DEFAULT_UTILISATION_CAP * 100, problems
        )
        / 100.0,
        priority_queues=queues,
        iterations=iterations,
        min_gain_pct=_section_number(section, "min_gain_pct", 5.0, problems),
        tag_category=category,
        calibrate=calibrate,
    )
    problems += params.validate("slo")
    measured: dict[str, float] = {}
    raw_measured = section.get("measured_ms", {})
    if not isinstance(raw_measured, dict):
        problems.append(Problem("slo.measured_ms", "must be a mapping of disk ids to ms"))
    else:
        ids = {d.id for d in snapshot.disks}
        for disk, value in raw_measured.items():
            if disk not in ids:
                problems.append(Problem(f"slo.measured_ms.{disk}", "unknown disk"))
            elif isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                problems.append(
                    Problem(f"slo.measured_ms.{disk}", f"must be a number of ms ≥ 0, got {value!r}")
                )
            else:
                measured[disk] = float(value)
    vm_tags = _name_lists(section.get("vm_tags"), "slo.vm_tags", problems)
    pool_vms = _name_lists(section.get("pool_vms"), "slo.pool_vms", problems)
    raise_if_problems(problems, "snapshot")
    membership = assign_groups(params, snapshot, vm_tags=vm_tags, pool_vms=pool_vms)
    return SloSpec(params, membership, measured)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def group_dict(g: GroupState) -> dict[str, Any]:
    return {
        "name": g.name,
        "drt_ms": g.drt_ms,
        "disks": g.disks,
        "iops": g.iops,
        "measured_ms": _finite(g.measured_ms),
        "predicted_ms_before": _finite(g.predicted_ms_before),
        "predicted_ms_after": _finite(g.predicted_ms_after),
        "damage_before": g.damage_before,
        "damage_after": g.damage_after,
        "measured_damage": g.measured_damage,
        "measured_within_drt": g.measured_within_drt,
        "within_drt_after": g.miss_ms == 0.0,
        "miss_ms": g.miss_ms,
    }


def effect_dict(e: SloMoveEffect) -> dict[str, Any]:
    return {
        "damage_before": e.damage_before,
        "damage_after": e.damage_after,
        "groups": [
            {"group": x.group, "rt_ms_before": _finite(x.rt_ms_before), "rt_ms_after": _finite(x.rt_ms_after)}
            for x in e.groups
        ],
    }


def pod_report_dict(p: SloPodReport) -> dict[str, Any]:
    """The JSON form of one pod's SLO section (the API's ``slo`` and ``basil recommend --json``)."""
    return {
        "goal": GOAL_SLO,
        "queue_model": p.queue_model,
        "utilisation_cap_pct": p.utilisation_cap * 100.0,
        "damage_before": p.damage_before,
        "damage_after": p.damage_after,
        "groups": [group_dict(g) for g in p.groups],
        "unmet": list(p.unmet),
        "priorities": dict(p.priorities),
        "datastores": {
            name: {
                "tier_model": t.source,
                "device_kind": t.kind,
                "devices": t.devices,
                "service_ms": t.reference_ms * t.scale,
                "calibration": t.calibration,
                "utilisation_before": p.utilisation_before[name],
                "utilisation_after": p.utilisation_after[name],
            }
            for name, t in sorted(p.tiers.items())
        },
    }


def slo_to_dict(result: SloResult) -> dict[str, Any]:
    """The SLO sections of a result: per pod, and per move number its effect."""
    return {
        "pods": {p.pod: pod_report_dict(p) for p in result.pods},
        "moves": {str(n): effect_dict(e) for n, e in sorted(result.effects.items())},
    }
