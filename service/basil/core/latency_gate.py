"""Storage DRS's I/O latency threshold as a gate on IO load balancing: a pod's moves are recommended only
while at least one of its datastores is observed above the threshold.

BASIL balances normalized load whether or not anyone suffers; an administrator used to Storage DRS
expects no Storage vMotion for IO reasons while every datastore answers faster than the threshold
(15 ms by default), because a move costs IO of its own and buys nothing then. The latency a datastore
is judged by is the one its hosts observe, aggregated as BASIL §6.1 aggregates device samples:
weighted by each host's IOPS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from basil.core.plan import STOP_LATENCY_BELOW_THRESHOLD, Plan


@dataclass(frozen=True, slots=True)
class HostLatency:
    """One host's view of one datastore over a sample interval."""

    datastore: str
    iops: float
    latency_ms: float


def datastore_latency(samples: Iterable[HostLatency]) -> dict[str, float]:
    """The IOPS-weighted mean latency of each datastore over its hosts (BASIL §6.1).

    A host without IO on a datastore says nothing about its latency, so it weighs 0; a datastore no
    host does IO on is absent from the result (its latency is unknown, not zero).
    """
    weighted: dict[str, float] = {}
    total: dict[str, float] = {}
    for s in samples:
        if not (s.iops > 0 and math.isfinite(s.iops) and math.isfinite(s.latency_ms) and s.latency_ms >= 0):
            continue
        weighted[s.datastore] = weighted.get(s.datastore, 0.0) + s.iops * s.latency_ms
        total[s.datastore] = total.get(s.datastore, 0.0) + s.iops
    return {ds: weighted[ds] / total[ds] for ds in total}


@dataclass(frozen=True, slots=True)
class LatencyGate:
    """Whether a pod may be balanced now: open when some datastore's latency is above the threshold."""

    threshold_ms: float
    latency_ms: Mapping[str, float]  # observed per datastore of the pod (only those with IO)

    @property
    def hottest(self) -> tuple[str, float] | None:
        """The datastore with the highest observed latency (ties by name), or None when none has IO."""
        if not self.latency_ms:
            return None
        return max(self.latency_ms.items(), key=lambda item: (item[1], item[0]))

    @property
    def open(self) -> bool:
        hottest = self.hottest
        return hottest is not None and hottest[1] > self.threshold_ms

    def reason(self, names: Mapping[str, str] | None = None) -> str:
        """Why the gate is open or closed, naming the hottest datastore (by *names* when given)."""
        hottest = self.hottest
        if hottest is None:
            return (
                f"no datastore latency observed yet: IO load balancing waits until a datastore is seen "
                f"above the I/O latency threshold of {self.threshold_ms:g} ms"
            )
        name = (names or {}).get(hottest[0], hottest[0])
        if self.open:
            return (
                f"{name} is at {hottest[1]:.1f} ms, "
                f"above the I/O latency threshold of {self.threshold_ms:g} ms"
            )
        return (
            f"no datastore is above the I/O latency threshold of {self.threshold_ms:g} ms "
            f"(highest: {name} at {hottest[1]:.1f} ms, IOPS-weighted over its hosts): IO load balancing "
            "is skipped"
        )


def latency_gate(
    threshold_ms: float, latency_ms: Mapping[str, float], datastores: Iterable[str]
) -> LatencyGate:
    """The gate of a pod made of *datastores*, from the observed latency of every datastore."""
    members = set(datastores)
    return LatencyGate(threshold_ms, {ds: v for ds, v in latency_ms.items() if ds in members})


def without_moves(plan: Plan, pod: str, reason: str) -> Plan:
    """*plan* with no move in *pod*: its outcome keeps the imbalance found before, stops with
    ``latency_below_threshold`` and *reason*, and the notes say so."""
    pods = tuple(
        replace(
            o,
            after=o.before,
            moves=0,
            gb=0.0,
            stop=STOP_LATENCY_BELOW_THRESHOLD,
            stop_reason=reason,
        )
        if o.pod == pod
        else o
        for o in plan.pods
    )
    moves = tuple(m for m in plan.moves if m.pod != pod)
    return replace(plan, moves=moves, pods=pods, notes=(*plan.notes, f"pod {pod}: {reason}"))
