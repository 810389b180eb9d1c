"""The pod's I/O latency gate from the service's newest host samples (no lab needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from basil.app.pods import ResolvedPod
from basil.app.recommendation import LATENCY_SAMPLE_AGE_S, pod_latency_gate
from basil.config import BalanceConfig, PodConfig
from basil.vcenter.types import HostDatastoreSample

T = datetime(2026, 1, 1, tzinfo=UTC)
POD = ResolvedPod(
    PodConfig(name="p", vcenter="lab", datastores=("a", "b"), balance=BalanceConfig(latency_threshold_ms=15)),
    ("ds-a", "ds-b"),
)


def sample(host: str, ds: str, iops: float, ms: float, age_s: float = 0.0) -> HostDatastoreSample:
    # Reads and writes at the same latency, split 70/30, as a host reports them.
    return HostDatastoreSample(
        host,
        ds,
        T - timedelta(seconds=age_s),
        20,
        read_iops=iops * 0.7,
        write_iops=iops * 0.3,
        read_latency_ms=ms,
        write_latency_ms=ms,
    )


def test_read_and_write_latency_weighted_by_iops_over_hosts() -> None:
    gate = pod_latency_gate(POD, [sample("h1", "ds-a", 300, 10), sample("h2", "ds-a", 100, 30)])
    assert gate.latency_ms == pytest.approx({"ds-a": 15.0})
    assert not gate.open  # 15 ms does not exceed 15 ms
    assert pod_latency_gate(POD, [sample("h1", "ds-a", 300, 10), sample("h2", "ds-a", 101, 30)]).open


def test_other_pods_datastores_and_stale_samples_do_not_count() -> None:
    samples = [
        sample("h1", "ds-a", 100, 5),
        sample("h1", "ds-elsewhere", 100, 80),  # not in the pod
        sample("h2", "ds-b", 100, 60, age_s=LATENCY_SAMPLE_AGE_S + 20),  # a host that stopped reporting
    ]
    gate = pod_latency_gate(POD, samples)
    assert gate.latency_ms == pytest.approx({"ds-a": 5.0})
    assert not gate.open
    fresh = [*samples, sample("h2", "ds-b", 100, 60, age_s=LATENCY_SAMPLE_AGE_S - 20)]
    assert pod_latency_gate(POD, fresh).open


def test_no_samples_keep_the_gate_closed() -> None:
    gate = pod_latency_gate(POD, [])
    assert not gate.open
    assert "no datastore latency observed yet" in gate.reason()
