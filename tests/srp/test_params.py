"""SRP parameters: defaults are valid, and every bad field is named at once."""

from __future__ import annotations

import math

import pytest

from basil.errors import ValidationError
from basil.srp.params import SrpParams


def test_defaults_are_valid() -> None:
    SrpParams().validate()


def test_every_bad_field_is_reported_at_once() -> None:
    params = SrpParams(
        latency_threshold_ms=0,
        gamma=1.5,
        queue_depth_min=-1,
        queue_depth_max=-2,
        charge_chunk_kb=math.inf,
    )
    with pytest.raises(ValidationError) as caught:
        params.validate()
    assert [p.field for p in caught.value.problems] == [
        "latency_threshold_ms",
        "gamma",
        "queue_depth_min",
        "queue_depth_max",
        "charge_chunk_kb",
    ]
