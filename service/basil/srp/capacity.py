"""Array capacity for SRP (eq. 4–6): the array queue depth controller, its IOPS, and the hosts' share.

The array queue depth Q is steered, PARDA-like, so that the measured latency stays near the
congestion threshold L_c; Little's law turns Q into the IOPS the divvy hands out as entitlements,
and each host's issue queue depth Q_h follows its VMs' entitlements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from basil.errors import Problem, raise_if_problems
from basil.srp.params import SrpParams, ms_to_s


@dataclass(frozen=True)
class ArrayState:
    """What the last interval measured at the array: its queue depth Q(t) and average latency Lat(t)."""

    queue_depth: float
    latency_ms: float

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        if not math.isfinite(self.queue_depth) or self.queue_depth <= 0:
            found.append(Problem("queue_depth", f"must be a positive number, got {self.queue_depth!r}"))
        if not math.isfinite(self.latency_ms) or self.latency_ms < 0:
            found.append(Problem("latency_ms", f"must be a non-negative number, got {self.latency_ms!r}"))
        return found


def bound_queue_depth(queue_depth: float, params: SrpParams) -> float:
    return min(max(queue_depth, params.queue_depth_min), params.queue_depth_max)


def next_queue_depth(state: ArrayState, params: SrpParams) -> float:
    """SRP eq. 4: Q(t+1) = (1 − γ)Q(t) + γ (L_c / Lat(t)) Q(t), kept within the configured bounds.

    An interval with no IO completed measures no latency (0 here); it says nothing about
    congestion, so Q is kept (within bounds) rather than driven to its maximum by L_c / 0.
    """
    raise_if_problems(state.problems(), "array state")
    q = state.queue_depth
    if state.latency_ms <= 0:
        return bound_queue_depth(q, params)
    gamma = params.gamma
    q_next = (1.0 - gamma) * q + gamma * (params.latency_threshold_ms / state.latency_ms) * q
    return bound_queue_depth(q_next, params)


def array_iops(queue_depth: float, latency_threshold_ms: float) -> float:
    """SRP eq. 5: arrayIOPS = Q(t+1) / L_c, Little's law with L_c in seconds."""
    return queue_depth / ms_to_s(latency_threshold_ms)


def queue_depth_for_iops(iops: float, latency_threshold_ms: float) -> float:
    """Eq. 5 solved for Q: the outstanding IOs that sustain ``iops`` at latency L_c."""
    return iops * ms_to_s(latency_threshold_ms)


def host_queue_depths(queue_depth: float, entitlement_by_host: Mapping[str, float]) -> dict[str, float]:
    """SRP eq. 6: Q_h = Q × Σ_{VMs on h} E_i / Σ E_i.

    The paper divides by arrayIOPS, which equals Σ E_i when the entitlements use all of the array's
    IOPS. When they do not (every VM at its limit) or exceed it (reservations above a degraded
    array), dividing by Σ E_i still hands out exactly Q: the array queue stays as full as the
    controller decided, and the dynamic limits, enforced on each host, still cap the VMs. With no
    entitlement at all, the hosts share Q equally.
    """
    if not entitlement_by_host:
        return {}
    total = math.fsum(entitlement_by_host.values())
    if total <= 0:
        equal = queue_depth / len(entitlement_by_host)
        return dict.fromkeys(entitlement_by_host, equal)
    return {host: queue_depth * (e / total) for host, e in entitlement_by_host.items()}
