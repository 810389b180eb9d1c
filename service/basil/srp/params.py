"""Tuning parameters of the SRP control loop, checked all at once by :meth:`SrpParams.validate`.

Units: IOPS for rates, milliseconds for latencies, outstanding IOs for queue depths. Little's law
mixes them (OIO = IOPS × latency in seconds), so every conversion goes through :func:`ms_to_s`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from basil.errors import Problem, raise_if_problems


def ms_to_s(milliseconds: float) -> float:
    return milliseconds / 1000.0


@dataclass(frozen=True)
class SrpParams:
    """How one SRP control step turns measurements into allocations.

    - ``latency_threshold_ms`` is L_c, the congestion threshold the array is operated at (§3.1:
      20–30 ms suits disk arrays, about 5 ms SSDs). 30 ms is also SIOC's default congestion
      threshold, which Basil sets to L_c on each datastore.
    - ``gamma`` is γ of eq. 4, the smoothing of the array queue depth controller.
    - ``queue_depth_min`` and ``queue_depth_max`` bound Q(t) (outstanding IOs) so that one noisy
      latency sample can neither starve the array nor flood it.
    - ``io_size_charging`` turns on §4's step function: an IO costs one more IO for every full
      ``charge_chunk_kb`` of its size (32 KB in the paper and in vSphere's own IO reservation).
    """

    latency_threshold_ms: float = 30.0
    gamma: float = 0.2
    queue_depth_min: float = 4.0
    queue_depth_max: float = 1024.0
    io_size_charging: bool = True
    charge_chunk_kb: float = 32.0

    def problems(self) -> list[Problem]:
        found: list[Problem] = []

        def finite(name: str, value: float) -> bool:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                found.append(Problem(name, f"must be a finite number, not {value!r}"))
                return False
            return True

        if finite("latency_threshold_ms", self.latency_threshold_ms) and self.latency_threshold_ms <= 0:
            found.append(Problem("latency_threshold_ms", "must be positive (milliseconds)"))
        if finite("gamma", self.gamma) and not 0 <= self.gamma <= 1:
            found.append(Problem("gamma", f"must lie in [0, 1] (eq. 4), got {self.gamma:g}"))
        low_ok = finite("queue_depth_min", self.queue_depth_min)
        high_ok = finite("queue_depth_max", self.queue_depth_max)
        if low_ok and self.queue_depth_min <= 0:
            found.append(Problem("queue_depth_min", "must be positive"))
        if low_ok and high_ok and self.queue_depth_max < self.queue_depth_min:
            found.append(
                Problem(
                    "queue_depth_max",
                    f"must not be below queue_depth_min "
                    f"({self.queue_depth_max:g} < {self.queue_depth_min:g})",
                )
            )
        if finite("charge_chunk_kb", self.charge_chunk_kb) and self.charge_chunk_kb <= 0:
            found.append(Problem("charge_chunk_kb", "must be positive (KB)"))
        return found

    def validate(self) -> None:
        """Raise one ValidationError naming every bad field."""
        raise_if_problems(self.problems(), "SRP parameters")
