"""Workload model: eq. 1's load metric, 90th percentiles over a window, flags for poor fits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basil.core.workload_model import (
    CLASS_BURSTY,
    CLASS_RANDOM,
    CLASS_SEQUENTIAL,
    CLASS_WRITE_HEAVY,
    FLAG_SEQUENTIAL,
    FLAG_WRITES,
    WorkloadConstants,
    WorkloadModelParams,
    WorkloadParams,
    WorkloadSample,
    classify_workload,
    load_metric,
    load_metric_array,
    model_workload,
    workload_flags,
)

HOUR = 3600.0


def test_load_metric_is_the_numerator_of_eq_1() -> None:
    k = WorkloadConstants(k1=2.0, k2=10.0, k3=0.5, k4=1.5)
    w = WorkloadParams(oio=8, io_size_kb=16, read_pct=70, random_pct=100)
    assert load_metric(w, k) == pytest.approx((2 + 8) * (10 + 16) * (0.5 + 0.7) * (1.5 + 1.0))


def test_load_metric_grows_with_every_parameter() -> None:
    k = WorkloadConstants()
    base = WorkloadParams(8, 8, 50, 50)
    assert load_metric(WorkloadParams(16, 8, 50, 50), k) > load_metric(base, k)
    assert load_metric(WorkloadParams(8, 64, 50, 50), k) > load_metric(base, k)
    assert load_metric(WorkloadParams(8, 8, 90, 50), k) > load_metric(base, k)
    assert load_metric(WorkloadParams(8, 8, 50, 90), k) > load_metric(base, k)


def test_array_form_matches_the_scalar_form() -> None:
    k = WorkloadConstants()
    params = [WorkloadParams(7, 8, 70, 100), WorkloadParams(1, 4, 95, 74), WorkloadParams(31, 121, 65, 100)]
    array = load_metric_array(
        [p.oio for p in params], [p.io_size_kb for p in params], [p.read_pct for p in params],
        [p.random_pct for p in params], k,
    )  # fmt: skip
    assert array.tolist() == pytest.approx([load_metric(p, k) for p in params])


def test_model_uses_the_90th_percentile_of_each_parameter() -> None:
    # OIO 1..10: the 90th percentile with linear interpolation is 9.1, while the mean is 5.5.
    samples = [
        WorkloadSample(oio=i, io_size_kb=8, read_pct=10 * i, random_pct=100 - i, time=i) for i in range(1, 11)
    ]
    model = model_workload(samples, WorkloadModelParams())
    assert model is not None
    assert model.params.oio == pytest.approx(9.1)
    assert model.params.io_size_kb == pytest.approx(8)
    assert model.params.read_pct == pytest.approx(91)
    assert model.params.random_pct == pytest.approx(98.1)  # 90..99
    assert model.samples_used == 10


def test_bursty_workload_is_modelled_above_its_mean() -> None:
    # §6.1: the 90th percentile, not the mean, so bursts count.
    oio = [2] * 85 + [40] * 15
    samples = [WorkloadSample(o, 8, 70, 100, time=float(t)) for t, o in enumerate(oio)]
    model = model_workload(samples, WorkloadModelParams())
    assert model is not None
    assert model.params.oio == pytest.approx(40)
    assert model.params.oio > float(np.mean(oio)) * 5


def test_percentile_is_configurable() -> None:
    samples = [WorkloadSample(i, 8, 70, 100, time=float(i)) for i in range(1, 101)]
    median = model_workload(samples, WorkloadModelParams(percentile=50))
    p90 = model_workload(samples, WorkloadModelParams())
    assert median is not None
    assert p90 is not None
    assert median.params.oio == pytest.approx(50.5)
    assert p90.params.oio == pytest.approx(90.1)


def test_window_keeps_only_recent_samples() -> None:
    now = 1000 * HOUR
    old = [WorkloadSample(64, 8, 70, 100, time=now - 30 * HOUR) for _ in range(5)]
    recent = [WorkloadSample(4, 8, 70, 100, time=now - h * HOUR) for h in range(1, 6)]
    model = model_workload(old + recent, WorkloadModelParams(window_hours=24), now)
    assert model is not None
    assert model.samples_used == 5
    assert model.params.oio == pytest.approx(4)


def test_window_ends_at_the_newest_sample_without_now() -> None:
    t = 500 * HOUR
    samples = [WorkloadSample(64, 8, 70, 100, time=t - 48 * HOUR), WorkloadSample(4, 8, 70, 100, time=t)]
    model = model_workload(samples, WorkloadModelParams(window_hours=24))
    assert model is not None
    assert model.samples_used == 1


def test_no_sample_in_window_gives_no_model() -> None:
    samples = [WorkloadSample(4, 8, 70, 100, time=0.0)]
    assert model_workload(samples, WorkloadModelParams(window_hours=1), now=10 * HOUR) is None
    assert model_workload([], WorkloadModelParams()) is None


def test_untimed_samples_are_all_used() -> None:
    samples = [WorkloadSample(o, 8, 70, 100) for o in (1, 2, 3)]
    model = model_workload(samples, WorkloadModelParams(window_hours=0.001), now=10 * HOUR)
    assert model is not None
    assert model.samples_used == 3


@pytest.mark.parametrize(
    ("read", "random", "expected"),
    [
        pytest.param(70, 100, (), id="oltp-like"),
        pytest.param(70, 0, (FLAG_SEQUENTIAL,), id="fully-sequential"),
        pytest.param(70, 5, (FLAG_SEQUENTIAL,), id="95pct-sequential"),
        pytest.param(0, 100, (FLAG_WRITES,), id="write-only"),
        pytest.param(2, 1, (FLAG_SEQUENTIAL, FLAG_WRITES), id="sequential-writer"),
    ],
)
def test_flags_for_workloads_the_linear_model_handles_poorly(
    read: float, random: float, expected: tuple[str, ...]
) -> None:
    assert workload_flags(WorkloadParams(8, 8, read, random), WorkloadModelParams()) == expected


def test_params_validate_reports_every_bad_field() -> None:
    params = WorkloadModelParams(
        constants=WorkloadConstants(k1=math.nan, k2=1.0, k3=math.inf, k4=0.0),
        percentile=120,
        window_hours=0,
    )
    fields = {p.field for p in params.validate()}
    assert fields == {
        "workload_model.k1",
        "workload_model.k3",
        "workload_model.percentile",
        "workload_model.window_hours",
    }


def test_workload_params_problems_name_the_field() -> None:
    problems = WorkloadParams(oio=-1, io_size_kb=8, read_pct=101, random_pct=math.nan).problems(
        "disks[2].workload"
    )
    assert {p.field for p in problems} == {
        "disks[2].workload.oio",
        "disks[2].workload.read_pct",
        "disks[2].workload.random_pct",
    }


@pytest.mark.parametrize(
    ("workload", "median_oio", "name", "traits"),
    [
        pytest.param(WorkloadParams(8, 8, 70, 100), 7.0, CLASS_RANDOM, (), id="oltp"),
        pytest.param(WorkloadParams(4, 64, 100, 5), 4.0, CLASS_SEQUENTIAL, (CLASS_SEQUENTIAL,), id="backup"),
        pytest.param(
            WorkloadParams(1, 8, 0, 5), 1.0, CLASS_SEQUENTIAL, (CLASS_SEQUENTIAL, CLASS_WRITE_HEAVY), id="log"
        ),
        pytest.param(
            WorkloadParams(16, 32, 20, 60), 12.0, CLASS_WRITE_HEAVY, (CLASS_WRITE_HEAVY,), id="batch"
        ),
        pytest.param(WorkloadParams(24, 32, 40, 60), 2.0, CLASS_BURSTY, (CLASS_BURSTY,), id="schedule"),
        pytest.param(
            WorkloadParams(4, 64, 100, 5), 0, CLASS_SEQUENTIAL, (CLASS_SEQUENTIAL, CLASS_BURSTY), id="on-off"
        ),
        pytest.param(WorkloadParams(8, 8, 70, 100), None, CLASS_RANDOM, (), id="no-median"),
    ],
)
def test_workload_classes(
    workload: WorkloadParams, median_oio: float | None, name: str, traits: tuple[str, ...]
) -> None:
    found = classify_workload(workload, WorkloadModelParams(), median_oio)
    assert found.name == name
    assert found.traits == traits
    assert found.sequential == (CLASS_SEQUENTIAL in traits)


def test_model_classifies_from_the_samples_spread() -> None:
    # A schedule that sits at 2 OIO and jumps to 24 a fifth of the time: bursty; steady, it is not.
    bursty = [WorkloadSample(24 if t % 5 == 0 else 2, 32, 40, 60, float(t)) for t in range(100)]
    steady = [WorkloadSample(8 + t % 3, 8, 70, 100, float(t)) for t in range(100)]
    params = WorkloadModelParams(percentile=90)
    a, b = model_workload(bursty, params), model_workload(steady, params)
    assert a is not None
    assert b is not None
    assert a.workload_class.name == CLASS_BURSTY
    assert a.workload_class.burst_ratio == pytest.approx(12.0)
    assert b.workload_class.name == CLASS_RANDOM
