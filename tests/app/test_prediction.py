"""The prediction's closed loop on plain figures: Little's law with the device model's latency, and the
errors against a measurement."""

from __future__ import annotations

import pytest

from basil.app.prediction import errors, solve_datastore, whatif_predict
from basil.core.consolidation import DeviceParams
from basil.store.predictions import DiskFigures, DiskLoadFigures


def test_reads_only_follow_the_device_model_and_littles_law() -> None:
    disks = [DiskLoadFigures(read_oio=8, write_oio=0, read_iops=400, write_iops=0)] * 2
    latency, iops, weighted = solve_datastore(disks, intercept=2.0, slope=1.5, write_ms=1.0) or (0, 0, 0)
    assert latency == pytest.approx(2.0 + 1.5 * 16)  # BASIL §4: L = intercept + slope · OIO
    assert iops == pytest.approx(16 / (latency / 1000))  # Little's law
    assert weighted == pytest.approx(latency)


def test_fast_writes_take_a_share_of_the_outstanding_ios_and_lower_the_read_latency() -> None:
    mixed = [DiskLoadFigures(read_oio=6, write_oio=2, read_iops=300, write_iops=100)]
    reads_only = [DiskLoadFigures(read_oio=8, write_oio=0, read_iops=400, write_iops=0)]
    l_mixed, x_mixed, w_mixed = solve_datastore(mixed, intercept=2.0, slope=1.5, write_ms=1.0) or (0, 0, 0)
    l_reads, x_reads, _ = solve_datastore(reads_only, intercept=2.0, slope=1.5, write_ms=1.0) or (0, 0, 0)
    assert l_mixed < l_reads
    assert x_mixed > x_reads
    # The loop's fixed point: the reads outstanding are what the device model's latency implies.
    rho = 0.75
    outstanding_reads = 8 * rho * l_mixed / (rho * l_mixed + (1 - rho) * 1.0)
    assert l_mixed == pytest.approx(2.0 + 1.5 * outstanding_reads, rel=1e-5)
    assert w_mixed == pytest.approx(1000 * 8 / x_mixed)


def test_an_empty_datastore_has_no_latency() -> None:
    assert solve_datastore([], intercept=2.0, slope=1.5, write_ms=1.0) is None


def test_errors_are_relative_to_the_measurement_and_skip_idle_datastores() -> None:
    predicted = {
        "datastores": {
            "a": {
                "latency_ms": 12.0,
                "read_latency_ms": 15.0,
                "iops": 900.0,
                "whatif": {"latency_ms": 15.0, "read_latency_ms": 18.0, "iops": 800.0},
            },
            "b": {"latency_ms": 5.0, "read_latency_ms": 5.0, "iops": 0.0},
            "c": {"latency_ms": 8.0, "read_latency_ms": 9.0, "iops": 500.0},
        },
        "imbalance": 0.2,
    }
    measured = {
        "datastores": {
            "a": {"latency_ms": 10.0, "read_latency_ms": 12.0, "iops": 1000.0},
            "b": {"latency_ms": None, "read_latency_ms": None, "iops": 0.0},
            "c": {"latency_ms": 10.0, "read_latency_ms": 10.0, "iops": 400.0},
        },
        "imbalance": 0.25,
    }
    e = errors(predicted, measured)
    assert e["datastores"]["a"] == pytest.approx(
        {
            "latency": 0.2,
            "read_latency": 0.25,
            "iops": -0.1,
            "whatif_latency": 0.5,
            "whatif_read_latency": 0.5,
            "whatif_iops": -0.2,
        }
    )
    assert e["datastores"]["b"] == dict.fromkeys(
        ("latency", "read_latency", "iops", "whatif_latency", "whatif_read_latency", "whatif_iops")
    )
    assert e["whatif_latency_median_abs"] == pytest.approx(0.5)  # only "a" has a what-if
    assert e["latency_median_abs"] == pytest.approx(0.2)  # median of 0.2 and 0.2
    assert e["iops_median_abs"] == pytest.approx((0.1 + 0.25) / 2)
    assert e["imbalance_rel"] == pytest.approx(-0.2)
    assert e["imbalance_abs"] == pytest.approx(0.05)


def test_whatif_of_a_plan_keeps_the_disks_that_stayed_together() -> None:
    """Disks that stayed were measured together: they lose the leavers' batches and gain nothing from
    each other; a disk moving to an empty datastore leaves its old neighbours' batches behind."""
    figures = {
        ("vm-1", "scsi0:1"): DiskFigures(200.0, 0.0, 50.0, 0.0, 10.0, 0.0),
        ("vm-2", "scsi0:1"): DiskFigures(200.0, 0.0, 50.0, 0.0, 10.0, 0.0),
        ("vm-3", "scsi0:1"): DiskFigures(200.0, 0.0, 50.0, 0.0, 10.0, 0.0),
    }
    before = dict.fromkeys(figures, "a")
    after = {**before, ("vm-3", "scsi0:1"): "b"}
    m = 10.0
    devices = {"a": DeviceParams(parallelism=m), "b": DeviceParams(parallelism=m)}
    out = whatif_predict(["a", "b"], before, after, figures, devices)
    # S = C / (1 + A/m) with A the 30 IOs all three kept in flight; a leaver's batch costs S·A_j/m.
    batch = 50.0 / (1 + 30.0 / m) * 10.0 / m
    assert out["a"]["read_latency_ms"] == pytest.approx(50.0 - batch)
    assert out["a"]["disks"] == 2
    assert out["a"]["iops"] == pytest.approx(400.0 * 50.0 / (50.0 - batch))  # Little's law, OIO kept
    assert out["b"]["read_latency_ms"] == pytest.approx(50.0 - 2 * batch)
    assert out["b"]["parallelism"] == m
    unchanged = whatif_predict(["a", "b"], before, before, figures, devices)
    assert unchanged["a"]["read_latency_ms"] == pytest.approx(50.0)
    assert unchanged["b"]["iops"] == 0.0
