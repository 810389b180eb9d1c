"""The one path from a capacity question's body to its plan, shared by ``POST /capacity`` and a VM's
trace upload: defaults, the checks before any planning, and the answer's shape."""

from __future__ import annotations

import io

import numpy as np
import pytest

from basil.app.trace_capacity import capacity_params, plan_trace
from basil.core.shaping import DEFAULT_EXTRA_CAPACITY, DEFAULT_REL_TOL, plan_capacity
from basil.core.trace import read_trace
from basil.errors import ValidationError


def csv_trace(n: int, seed: int) -> str:
    """*n* arrivals of a bursty Poisson stream, one timestamp a line (the CSV format)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(0.002, n) * rng.choice([0.2, 5.0], n, p=[0.8, 0.2])
    return "".join(f"{t:.6f}\n" for t in np.cumsum(gaps))


def test_defaults_fill_what_the_body_leaves_out() -> None:
    params = capacity_params({"fraction": 0.9, "bound_ms": 5})
    assert (params.fraction, params.bound_ms) == (0.9, 5.0)
    assert (params.extra_capacity, params.rel_tol) == (DEFAULT_EXTRA_CAPACITY, DEFAULT_REL_TOL)
    given = capacity_params({"fraction": 1, "bound_ms": 2.5, "extra_capacity": 0.2, "rel_tol": 0.05})
    assert (given.extra_capacity, given.rel_tol) == (0.2, 0.05)


def test_plans_the_trace_as_the_core_does() -> None:
    text = csv_trace(400, seed=5)
    body = {"trace": text, "fraction": 0.95, "bound_ms": 10, "format": "csv"}
    planned = plan_trace(body, "capacity question")
    direct = plan_capacity(read_trace(io.StringIO(text), "csv").arrivals, capacity_params(body))
    assert planned.plan.capacity_iops == direct.capacity_iops
    report = planned.report()
    assert report["capacity_iops"] == direct.capacity_iops
    assert report["trace"] == planned.trace.summary()
    assert report["trace"]["requests"] == 400


@pytest.mark.parametrize("what", ["capacity question", "trace upload"])
def test_a_bad_target_names_the_field_and_the_request(what: str) -> None:
    with pytest.raises(ValidationError) as caught:
        plan_trace({"trace": "0.1\n0.2\n", "fraction": 1.5, "bound_ms": -1}, what)
    assert [p.field for p in caught.value.problems] == ["fraction", "bound_ms"]
    assert str(caught.value).startswith(f"invalid {what}: 2 problem(s)")


def test_an_unreadable_line_is_named_after_the_target_is_checked() -> None:
    with pytest.raises(ValidationError) as caught:
        plan_trace({"trace": "0.1\n0.2\nlate\n", "fraction": 0.9, "bound_ms": 10}, "trace upload")
    assert "line 3" in [p.field for p in caught.value.problems]
