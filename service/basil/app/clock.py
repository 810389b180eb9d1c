"""One clock for everything Basil shows: vCenter's.

Samples, model points and measurements carry vCenter's time (the performance manager stamps them).
What Basil stamps itself (job runs, recommendations, plans and moves, audit entries, settings issued,
fits) is stamped with the service's own clock, and shown on vCenter's: :class:`VCenterClock` maps a
moment of the service's clock to vCenter's, from readings of ``ServiceInstance.CurrentTime`` taken at
each collection. Between two readings the mapping is the straight line through them; beyond the
newest it goes on at the rate of the newest two (the lab runs its clock faster than the wall; a real
vCenter runs at one second per second, and the mapping is then the offset between the two clocks);
before the oldest reading kept it goes back at the rate of the oldest two.

Decisions (the rebalance window, the ping-pong guard, token expiry, the scheduler) keep using the
service's clock; only what is shown is mapped. With no reading yet, a moment is shown as it is.

A reading that the mapping already predicts (within ``TOLERANCE_S``, or the reading's own uncertainty
if larger) changes nothing: the mapping stays exactly as it was and so does :attr:`VCenterClock.generation`,
which every cached answer of the API is built on (a vCenter whose clock runs at one second per second
is predicted at every 20 s collection, so a collection no longer makes every cached answer be built
again at once). The reading is kept aside; if a later one is not predicted (the lab's speed changed),
the one kept aside is added first, so the moments up to it keep the rate they had.
"""

from __future__ import annotations

import bisect
import threading
from datetime import UTC, datetime, timedelta

#: Readings kept per vCenter: one per collection cycle, so about two days at the default 20 s.
MAX_READINGS = 8640
#: How far (in seconds of vCenter's clock) a reading may lie from the mapping's prediction and still
#: leave the mapping as it is.
TOLERANCE_S = 0.1


class VCenterClock:
    """Readings (service time, vCenter time) of one vCenter and the mapping between the two clocks."""

    def __init__(self, max_readings: int = MAX_READINGS, tolerance_s: float = TOLERANCE_S) -> None:
        self._lock = threading.Lock()
        self._local: list[float] = []
        self._remote: list[float] = []
        self._aside: tuple[float, float] | None = None  # the newest reading that was predicted
        self.max_readings = max_readings
        self.tolerance_s = tolerance_s
        # Changes of the mapping so far: a reading it did not predict can change how recent moments are
        # shown (cached answers that show times are built again after it).
        self.generation = 0

    def note(self, local: datetime, remote: datetime, uncertainty_s: float = 0.0) -> bool:
        """A reading: vCenter's clock said *remote* at the service's *local* (both aware), give or take
        *uncertainty_s* (half the round trip). True if it changed the mapping."""
        lt, rt = local.timestamp(), remote.timestamp()
        with self._lock:
            newest = self._aside[0] if self._aside is not None else self._local[-1] if self._local else None
            if newest is not None and lt <= newest:
                return False  # readings come in order; a late one adds nothing
            if self._remote and rt < max(self._remote[-1], self._aside[1] if self._aside else rt):
                # vCenter's clock went back (the lab was reset): the old readings no longer hold.
                self._local.clear()
                self._remote.clear()
                self._aside = None
            if self._local and abs(self._at(lt) - rt) <= max(self.tolerance_s, uncertainty_s):
                self._aside = (lt, rt)
                return False
            if self._aside is not None:
                self._append(*self._aside)
                self._aside = None
            self._append(lt, rt)
            self.generation += 1
            return True

    def _append(self, lt: float, rt: float) -> None:
        self._local.append(lt)
        self._remote.append(rt)
        if len(self._local) > self.max_readings:
            del self._local[0], self._remote[0]

    @property
    def known(self) -> bool:
        with self._lock:
            return bool(self._local)

    def at(self, local: datetime) -> datetime:
        """vCenter's time at the service's moment *local* (the moment itself with no reading)."""
        with self._lock:
            if not self._local:
                return local.astimezone(UTC)
            return datetime.fromtimestamp(self._at(local.timestamp()), UTC)

    def _at(self, t: float) -> float:
        """:meth:`at` in seconds, with at least one reading (call with the lock held)."""
        n = len(self._local)
        if n == 1:
            return self._remote[0] + (t - self._local[0])
        i = bisect.bisect_right(self._local, t)
        j = min(max(i, 1), n - 1)  # the segment [j-1, j] that holds t, or the nearest end one
        l0, l1 = self._local[j - 1], self._local[j]
        r0, r1 = self._remote[j - 1], self._remote[j]
        rate = (r1 - r0) / (l1 - l0) if l1 > l0 else 1.0
        return r0 + max(rate, 0.0) * (t - l0)

    def local(self, remote: datetime) -> datetime:
        """The service's moment at which vCenter's clock showed *remote* (the inverse of :meth:`at`),
        for times given back by clients (an audit page's ``before``)."""
        t = remote.timestamp()
        with self._lock:
            n = len(self._local)
            if n == 0:
                return remote.astimezone(UTC)
            if n == 1:
                return datetime.fromtimestamp(self._local[0] + (t - self._remote[0]), UTC)
            i = bisect.bisect_right(self._remote, t)
            j = min(max(i, 1), n - 1)
            l0, l1 = self._local[j - 1], self._local[j]
            r0, r1 = self._remote[j - 1], self._remote[j]
        rate = (r1 - r0) / (l1 - l0) if l1 > l0 else 1.0
        return datetime.fromtimestamp(l0 + (t - r0) / rate if rate > 0 else l1, UTC)

    def now(self) -> datetime:
        return self.at(datetime.now(UTC))

    def offset(self) -> timedelta:
        """vCenter's clock minus the service's, now."""
        local = datetime.now(UTC)
        return self.at(local) - local
