"""BalancerParams: defaults are valid, and validate() reports every bad field with its path."""

from __future__ import annotations

import math

from basil.core.device_model import DeviceModelParams
from basil.core.params import BalancerParams
from basil.core.workload_model import WorkloadModelParams


def test_defaults_are_valid() -> None:
    assert BalancerParams().validate() == []


def test_every_bad_field_is_reported_at_once_with_a_prefix() -> None:
    params = BalancerParams(
        imbalance_threshold=math.nan,
        max_moves=-1,
        max_gb=-5.0,
        space_headroom_pct=100.0,
        candidate_order="random",
        ping_pong_hours=-1.0,
        seed=-3,
        subset_trials=0,
        subset_tolerance=2.0,
        max_pair_attempts=0,
        workload_model=WorkloadModelParams(percentile=101),
        device_model=DeviceModelParams(min_points=0),
    )
    fields = {p.field for p in params.validate("options")}
    assert fields == {
        "options.imbalance_threshold",
        "options.max_moves",
        "options.max_gb",
        "options.space_headroom_pct",
        "options.candidate_order",
        "options.ping_pong_hours",
        "options.seed",
        "options.subset_trials",
        "options.subset_tolerance",
        "options.max_pair_attempts",
        "options.workload_model.percentile",
        "options.device_model.min_points",
    }


def test_integers_must_be_integers() -> None:
    params = BalancerParams(max_moves=2.5, seed=True)  # type: ignore[arg-type]
    assert {p.field for p in params.validate()} == {"max_moves", "seed"}
