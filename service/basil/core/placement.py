"""Initial placement of a new virtual disk (BASIL §5 "Initial Placement").

The eligible datastores are ranked by the normalized load N = (ΣL + L_new) / P each would have with
the new disk on it, lowest first, so each placement works against imbalance instead of creating it.
Eligibility uses the balancer's hard constraints (maintenance, space headroom, host visibility,
anti-affinity) plus "keep together": a disk of an existing VM whose disks may not be split goes
where that VM's disks already are. Every excluded datastore comes with all the reasons it was.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from basil.core.constraints import KEEP_TOGETHER, PlacementState, Unit, Violation, conflicting_vms
from basil.core.normalized_load import MODEL_NEW, Models, imbalance, resolve_models
from basil.core.params import BalancerParams
from basil.core.snapshot import Snapshot
from basil.core.workload_model import FLAG_TEXT, WorkloadParams, load_metric, number_problems, workload_flags
from basil.errors import Problem, raise_if_problems

POD_MISMATCH = "pod"


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A new disk: its size, its load L or the workload L is computed from, and who will use it."""

    size_gb: float
    workload: WorkloadParams | None = None
    load: float | None = None
    vm: str | None = None  # an existing VM's name keeps its disks together; a new name is free
    hosts: frozenset[str] = field(default_factory=frozenset)
    pod: str | None = None  # limit the choice to one pod

    def validate(self, snapshot: Snapshot | None = None) -> list[Problem]:
        found = number_problems(self.size_gb, "size_gb", minimum=0)
        if self.workload is not None:
            found += [
                Problem(p.field.removeprefix("workload."), p.message)
                for p in self.workload.problems("workload")
            ]
        if self.load is not None:
            found += number_problems(self.load, "load", minimum=0)
        if self.workload is None and self.load is None:
            found.append(Problem("workload", "give the workload parameters or the load L of the new disk"))
        if self.vm is not None and not self.vm:
            found.append(Problem("vm", "must not be empty"))
        if (
            snapshot is not None
            and self.pod is not None
            and self.pod not in {d.pod for d in snapshot.datastores}
        ):
            found.append(Problem("pod", f"unknown pod {self.pod!r}"))
        return found


@dataclass(frozen=True, slots=True)
class RankedDatastore:
    """An eligible datastore and what placing the disk there would do to N and the pod's imbalance."""

    rank: int
    datastore: str
    pod: str
    model: str
    performance: float  # the P N is computed with (a stand-in for a new datastore)
    n_before: float
    n_after: float
    imbalance_before: float
    imbalance_after: float
    free_after_gb: float
    reason: str


@dataclass(frozen=True, slots=True)
class ExcludedDatastore:
    datastore: str
    pod: str
    reasons: tuple[Violation, ...]


@dataclass(frozen=True, slots=True)
class PlacementResult:
    """The ranking for one new disk; ``ranked[0]`` is the recommendation when any is eligible."""

    load: float
    flags: tuple[str, ...]
    ranked: tuple[RankedDatastore, ...]
    excluded: tuple[ExcludedDatastore, ...]

    @property
    def recommended(self) -> RankedDatastore | None:
        return self.ranked[0] if self.ranked else None


def _request_load(request: PlacementRequest, params: BalancerParams) -> tuple[float, tuple[str, ...]]:
    flags = workload_flags(request.workload, params.workload_model) if request.workload is not None else ()
    if request.load is not None:
        return request.load, flags
    assert request.workload is not None  # validate() requires one of them
    load = load_metric(request.workload, params.workload_model.constants)  # BASIL eq. 1, numerator
    if not load >= 0:
        raise_if_problems([Problem("workload", f"load metric L = {load:g} with these constants: not a load")])
    return load, flags


def _pod_loads(snapshot: Snapshot, models: Models) -> dict[str, dict[str, float]]:
    """N per balanced (not in maintenance) datastore, per pod (BASIL eq. 5)."""
    sums: dict[str, float] = defaultdict(float)
    for disk in snapshot.disks:
        sums[disk.datastore] += models.disks[disk.id].load
    loads: dict[str, dict[str, float]] = {}
    for pod, members in snapshot.pods().items():
        loads[pod] = {
            ds.name: sums[ds.name] / models.datastores[ds.name].effective_performance
            for ds in members
            if not ds.maintenance
        }
    return loads


def place(
    snapshot: Snapshot, request: PlacementRequest, params: BalancerParams | None = None
) -> PlacementResult:
    """Rank the datastores for a new disk by the normalized load it would give them (BASIL §5)."""
    params = params or BalancerParams()
    raise_if_problems(
        [*params.validate(), *snapshot.validate(), *request.validate(snapshot)], "placement input"
    )
    models = resolve_models(snapshot, params)
    load, flags = _request_load(request, params)
    state = PlacementState(snapshot, models, params)
    vm = request.vm or ""
    unit = Unit(
        index=-1,
        vm=vm,
        disks=(),
        datastore="",
        load=load,
        size_gb=request.size_gb,
        hosts=request.hosts,
        iops=None,
        conflicts=conflicting_vms(vm, snapshot.rules.anti_affinity) if vm else frozenset(),
    )
    together: set[str] = set()
    if vm and vm not in snapshot.rules.splittable_vms:
        together = {d.datastore for d in snapshot.disks if d.vm == vm}
    loads = _pod_loads(snapshot, models)

    ranked: list[RankedDatastore] = []
    excluded: list[ExcludedDatastore] = []
    for ds in sorted(snapshot.datastores, key=lambda d: d.name):
        reasons = state.violations(unit, ds.name, new_limit=False)
        if request.pod is not None and ds.pod != request.pod:
            reasons.insert(0, Violation(POD_MISMATCH, f"{ds.name} is in pod {ds.pod}, not {request.pod}"))
        if together and ds.name not in together:
            reasons.append(
                Violation(
                    KEEP_TOGETHER,
                    f"VM {vm}'s disks are kept together on {', '.join(sorted(together))}",
                )
            )
        if reasons:
            excluded.append(ExcludedDatastore(ds.name, ds.pod, tuple(reasons)))
            continue
        model = models.datastores[ds.name]
        pod_loads = loads[ds.pod]
        names = list(pod_loads)
        before = np.array([pod_loads[n] for n in names], dtype=np.float64)
        after = before.copy()
        at = names.index(ds.name)
        after[at] += load / model.effective_performance  # BASIL eq. 5 with the new disk's L added
        ranked.append(
            RankedDatastore(
                rank=0,
                datastore=ds.name,
                pod=ds.pod,
                model=model.source,
                performance=model.effective_performance,
                n_before=float(before[at]),
                n_after=float(after[at]),
                imbalance_before=imbalance(before),
                imbalance_after=imbalance(after),
                free_after_gb=state.free[ds.name] - request.size_gb,
                reason="",
            )
        )
    ranked.sort(key=lambda r: (r.n_after, r.imbalance_after, r.datastore))
    final = tuple(_with_reason(r, i + 1, ranked, load, flags) for i, r in enumerate(ranked))
    return PlacementResult(load=load, flags=flags, ranked=final, excluded=tuple(excluded))


def _with_reason(
    r: RankedDatastore, rank: int, ranked: Sequence[RankedDatastore], load: float, flags: tuple[str, ...]
) -> RankedDatastore:
    words = (
        f"N {r.n_before:.4g} → {r.n_after:.4g} with the new disk's L = {load:.4g} "
        f"on P = {r.performance:.3g}; "
        f"pod {r.pod}'s imbalance {r.imbalance_before:.3f} → {r.imbalance_after:.3f}"
    )
    if rank == 1:
        words = f"lowest resulting normalized load of {len(ranked)} eligible datastore(s): " + words
    if r.model == MODEL_NEW:
        words += "; no device model yet, P is the pod's stand-in (BASIL §6.3)"
    for flag in flags:
        words += f"; note: {FLAG_TEXT[flag]}"
    return RankedDatastore(
        rank=rank,
        datastore=r.datastore,
        pod=r.pod,
        model=r.model,
        performance=r.performance,
        n_before=r.n_before,
        n_after=r.n_after,
        imbalance_before=r.imbalance_before,
        imbalance_after=r.imbalance_after,
        free_after_gb=r.free_after_gb,
        reason=words,
    )


def placement_to_dict(result: PlacementResult) -> dict[str, Any]:
    """The JSON form of a placement (``basil place --json``)."""
    best = result.recommended
    return {
        "load": result.load,
        "flags": list(result.flags),
        "recommended": best.datastore if best is not None else None,
        "ranked": [
            {
                "rank": r.rank,
                "datastore": r.datastore,
                "pod": r.pod,
                "model": r.model,
                "performance": r.performance,
                "n_before": r.n_before,
                "n_after": r.n_after,
                "imbalance_before": r.imbalance_before,
                "imbalance_after": r.imbalance_after,
                "free_after_gb": r.free_after_gb,
                "reason": r.reason,
            }
            for r in result.ranked
        ],
        "excluded": [
            {
                "datastore": e.datastore,
                "pod": e.pod,
                "reasons": [{"code": v.code, "message": v.message} for v in e.reasons],
            }
            for e in result.excluded
        ],
    }
