"""A recommendation plan: the Storage vMotions to make, why, and the pods' state before and after.

Plain data, so the service can store it and the command line print it; :func:`plan_to_dict` gives
the JSON shape of ``basil recommend --json`` (one entry per disk; disks of one Storage vMotion share
the ``move`` number).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from basil.core.device_model import DeviceFit
from basil.core.normalized_load import DatastoreModel

# Why a pod's round ended.
STOP_BALANCED = "balanced"  # f at or below the threshold
STOP_NO_IMPROVING_MOVE = "no_improving_move"  # no eligible unit lowers f any further
STOP_SEARCH_LIMIT = "search_limit"  # max_pair_attempts pairs tried in one step without success
STOP_BUDGET_MOVES = "budget_moves"
STOP_BUDGET_GB = "budget_gb"
STOP_NOTHING_TO_BALANCE = "nothing_to_balance"  # fewer than two datastores take part
STOP_LATENCY_BELOW_THRESHOLD = "latency_below_threshold"  # no datastore above the I/O latency threshold
STOP_NO_GAIN = "no_gain"  # throughput objective: no fair move gains min_gain_pct of the pod's IOPS
STOP_PREDICTED_LOSS = "predicted_loss"  # objective auto: the next move would predict the pod below its start

# How a move was found (Move.kind).
KIND_MOVE = "move"  # the best single move of its step
KIND_SWAP = "swap"  # one half of a swap (two moves that exchange units between two datastores)


@dataclass(frozen=True, slots=True)
class DatastoreEffect:
    """A datastore's predicted state before and after one move; every disk on it sees its latency."""

    datastore: str
    normalized_load_before: float  # N = ΣL/P (BASIL eq. 5)
    normalized_load_after: float
    latency_ms_before: float  # predicted (basil.core.predictive)
    latency_ms_after: float
    iops_before: float
    iops_after: float
    disks_after: int


@dataclass(frozen=True, slots=True)
class DiskEffect:
    """A moved disk's predicted latency and IOPS before and after its move (Little's law)."""

    disk: str
    latency_ms_before: float
    latency_ms_after: float
    iops_before: float
    iops_after: float


@dataclass(frozen=True, slots=True)
class Move:
    """One Storage vMotion: a unit (one VM's disks on one datastore) from source to target."""

    number: int  # 1-based position in the plan; moves are meant to be applied in this order
    pod: str
    vm: str
    disks: tuple[str, ...]
    disk_sizes_gb: tuple[float, ...]
    disk_loads: tuple[float, ...]
    source: str
    target: str
    size_gb: float
    load: float  # ΣL of the moved disks (eq. 1 numerator)
    source_n_before: float
    source_n_after: float
    target_n_before: float
    target_n_after: float
    imbalance_before: float  # the pod's f = σ/μ, recomputed from all its N
    imbalance_after: float
    target_new: bool
    reason_code: str
    reason: str
    objective: str = "normalized_load"
    kind: str = KIND_MOVE
    datastore_effects: tuple[DatastoreEffect, ...] = ()  # source, then target
    disk_effects: tuple[DiskEffect, ...] = ()  # the moved disks
    pod_iops_before: float | None = None  # predicted total IOPS of the pod
    pod_iops_after: float | None = None
    pod_latency_ms_before: float | None = None  # predicted IOPS-weighted latency of the pod
    pod_latency_ms_after: float | None = None


@dataclass(frozen=True, slots=True)
class PodState:
    """A pod's imbalance and normalized loads at one moment (before or after the plan)."""

    imbalance: float
    normalized_load: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """What the round did in one pod and why it stopped there."""

    pod: str
    threshold: float
    before: PodState
    after: PodState
    moves: int
    gb: float
    stop: str
    stop_reason: str
    excluded: tuple[str, ...]  # datastores left out of the balance (maintenance)
    objective: str = "normalized_load"
    iops_before: float | None = None  # predicted total IOPS (basil.core.predictive)
    iops_after: float | None = None
    latency_ms_before: float | None = None  # predicted IOPS-weighted latency
    latency_ms_after: float | None = None
    swaps: int = 0  # swaps among the moves (each counts two moves)


@dataclass(frozen=True, slots=True)
class Pinned:
    """A unit that could not move at all this round, and why."""

    vm: str
    disks: tuple[str, ...]
    datastore: str
    code: str
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    """The outcome of one balancing round over every pod of a snapshot."""

    moves: tuple[Move, ...]
    pods: tuple[PodOutcome, ...]
    datastores: Mapping[str, DatastoreModel]
    flagged_disks: Mapping[str, tuple[str, ...]]
    pinned: tuple[Pinned, ...]
    notes: tuple[str, ...]

    @property
    def total_gb(self) -> float:
        return sum(m.size_gb for m in self.moves)

    def pod(self, name: str) -> PodOutcome:
        for outcome in self.pods:
            if outcome.pod == name:
                return outcome
        raise KeyError(name)


def swap_groups(moves: Sequence[Move]) -> dict[int, int]:
    """Which swap each half belongs to: move number → the number of its swap's first half.

    The search emits a swap's two halves as consecutive moves of one pod with ``kind == "swap"``; plain
    moves are not in the result. A swap move without its partner (a plan cut short) is its own group.
    """
    groups: dict[int, int] = {}
    open_half: Move | None = None
    for m in moves:
        if m.kind != KIND_SWAP:
            open_half = None
            continue
        if open_half is not None and open_half.pod == m.pod and m.number == open_half.number + 1:
            groups[m.number] = open_half.number
            open_half = None
        else:
            groups[m.number] = m.number
            open_half = m
    return groups


def _fit_dict(fit: DeviceFit | None) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {
        "status": fit.status.value,
        "performance": fit.performance,
        "slope": fit.slope,
        "intercept": fit.intercept,
        "r_squared": fit.r_squared,
        "points_used": fit.points_used,
        "intervals": fit.intervals,
        "dropped": dict(sorted(fit.dropped.items())),
        "summary": fit.describe(),
    }


def datastore_model_dict(model: DatastoreModel) -> dict[str, Any]:
    return {
        "pod": model.pod,
        "model": model.source,
        "performance": model.performance,
        "effective_performance": model.effective_performance,
        "fit": _fit_dict(model.fit),
    }


def _state(plan: Plan, which: str) -> dict[str, Any]:
    pods = {o.pod: getattr(o, which) for o in plan.pods}
    loads: dict[str, float] = {}
    for state in pods.values():
        loads.update(state.normalized_load)
    return {
        # With several pods the headline imbalance is the worst pod's; each pod's is under "pods".
        "imbalance": max((s.imbalance for s in pods.values()), default=0.0),
        "normalized_load": dict(sorted(loads.items())),
        "pods": {
            name: {"imbalance": s.imbalance, "normalized_load": dict(s.normalized_load)}
            for name, s in pods.items()
        },
    }


def _effect_dict(e: DatastoreEffect) -> dict[str, Any]:
    return {
        "datastore": e.datastore,
        "n_before": e.normalized_load_before,
        "n_after": e.normalized_load_after,
        "latency_ms_before": e.latency_ms_before,
        "latency_ms_after": e.latency_ms_after,
        "iops_before": e.iops_before,
        "iops_after": e.iops_after,
        "disks_after": e.disks_after,
    }


def _disk_effect_dict(e: DiskEffect) -> dict[str, Any]:
    return {
        "latency_ms_before": e.latency_ms_before,
        "latency_ms_after": e.latency_ms_after,
        "iops_before": e.iops_before,
        "iops_after": e.iops_after,
    }


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The JSON form of a plan (``basil recommend --json``)."""
    moves: list[dict[str, Any]] = []
    groups = swap_groups(plan.moves)
    for m in plan.moves:
        for disk, size, load in zip(m.disks, m.disk_sizes_gb, m.disk_loads, strict=True):
            moves.append(
                {
                    "move": m.number,
                    "pod": m.pod,
                    "disk": disk,
                    "vm": m.vm,
                    "from": m.source,
                    "to": m.target,
                    "size_gb": size,
                    "load": load,
                    "reason_code": m.reason_code,
                    "reason": m.reason,
                    "effect": {
                        "disks_in_move": list(m.disks),
                        "move_size_gb": m.size_gb,
                        "move_load": m.load,
                        "source_n_before": m.source_n_before,
                        "source_n_after": m.source_n_after,
                        "target_n_before": m.target_n_before,
                        "target_n_after": m.target_n_after,
                        "imbalance_before": m.imbalance_before,
                        "imbalance_after": m.imbalance_after,
                        "target_new": m.target_new,
                        "objective": m.objective,
                        "kind": m.kind,
                        "swap_group": groups.get(m.number),
                        "pod_iops_before": m.pod_iops_before,
                        "pod_iops_after": m.pod_iops_after,
                        "pod_latency_ms_before": m.pod_latency_ms_before,
                        "pod_latency_ms_after": m.pod_latency_ms_after,
                        "datastores": [_effect_dict(e) for e in m.datastore_effects],
                        "disk": next((_disk_effect_dict(e) for e in m.disk_effects if e.disk == disk), None),
                    },
                }
            )
    return {
        "moves": moves,
        "before": _state(plan, "before"),
        "after": _state(plan, "after"),
        "summary": {
            "moves": len(plan.moves),
            "disks": sum(len(m.disks) for m in plan.moves),
            "gb": plan.total_gb,
            "pods": {
                o.pod: {
                    "threshold": o.threshold,
                    "moves": o.moves,
                    "gb": o.gb,
                    "stop": o.stop,
                    "stop_reason": o.stop_reason,
                    "excluded": list(o.excluded),
                    "objective": o.objective,
                    "iops_before": o.iops_before,
                    "iops_after": o.iops_after,
                    "latency_ms_before": o.latency_ms_before,
                    "latency_ms_after": o.latency_ms_after,
                    "swaps": o.swaps,
                }
                for o in plan.pods
            },
        },
        "datastores": {name: datastore_model_dict(m) for name, m in sorted(plan.datastores.items())},
        "flagged_disks": {disk: list(flags) for disk, flags in sorted(plan.flagged_disks.items())},
        "pinned": [
            {"vm": p.vm, "disks": list(p.disks), "datastore": p.datastore, "code": p.code, "reason": p.reason}
            for p in plan.pinned
        ],
        "notes": list(plan.notes),
    }
