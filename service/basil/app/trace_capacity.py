"""A request trace and a latency target, planned: the capacity it needs (Lu's RTT and capacity search).

One path from a request body (``trace``, ``format``, ``fraction``, ``bound_ms``, ``extra_capacity``,
``rel_tol``; the schema ``CAPACITY_QUESTION`` of the API) to the plan, shared by the stateless
``POST /capacity`` and a VM's trace upload (:mod:`basil.app.vm_capacity`), which keeps the answer.
Everything is checked before the trace is planned: a bad target is a ValidationError naming the
field, an unreadable trace line one naming the line.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from basil.core.shaping import (
    DEFAULT_EXTRA_CAPACITY,
    DEFAULT_REL_TOL,
    CapacityParams,
    CapacityReport,
    plan_capacity,
)
from basil.core.trace import Trace, read_trace
from basil.errors import raise_if_problems


@dataclass(frozen=True)
class PlannedTrace:
    """The target asked for, the trace as read and its capacity plan."""

    params: CapacityParams
    trace: Trace
    plan: CapacityReport

    def report(self) -> dict[str, Any]:
        """The answer as the API gives it: the plan and the trace's summary (no NaN: undefined is None)."""
        return {**self.plan.to_dict(), "trace": self.trace.summary()}


def capacity_params(body: Mapping[str, Any]) -> CapacityParams:
    """The target of a capacity question (defaults for the optional Miser and search settings)."""
    return CapacityParams(
        fraction=float(body["fraction"]),
        bound_ms=float(body["bound_ms"]),
        extra_capacity=float(body.get("extra_capacity", DEFAULT_EXTRA_CAPACITY)),
        rel_tol=float(body.get("rel_tol", DEFAULT_REL_TOL)),
    )


def plan_trace(body: Mapping[str, Any], what: str) -> PlannedTrace:
    """Check the target, read the trace and plan its capacity; *what* names the request in the
    error (``capacity question``, ``trace upload``)."""
    params = capacity_params(body)
    raise_if_problems(params.problems(), what)
    trace = read_trace(io.StringIO(body["trace"]), body.get("format"))
    return PlannedTrace(params=params, trace=trace, plan=plan_capacity(trace.arrivals, params))
