"""Unit tests of the application layer's pure pieces: ids, sample mapping, budgets, metrics, job registry."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from basil.app.collection import disk_record, host_datastore_record
from basil.app.ids import IdSpace
from basil.app.jobs import JOBS, triggers
from basil.app.metrics import Metrics
from basil.app.planner import Budget
from basil.app.recommendation import balancer_params
from basil.config import BalanceConfig, BasilConfig
from basil.core.params import CANDIDATE_ORDERS
from basil.errors import NotFoundError
from basil.vcenter.types import DiskSample, HostDatastoreSample

T = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("names", "text", "expected"),
    [
        (["lab"], "vm-17:scsi0:1", ("lab", "vm-17", "scsi0:1")),
        (["lab"], "lab:vm-17:scsi0:1", ("lab", "vm-17", "scsi0:1")),
        (["a", "b"], "b:vm-3:scsi1:0", ("b", "vm-3", "scsi1:0")),
    ],
    ids=["plain", "prefixed-single", "two-vcenters"],
)
def test_disk_ids_parse(names: list[str], text: str, expected: tuple[str, str, str]) -> None:
    assert IdSpace(names).parse_disk(text) == expected


def test_ids_are_prefixed_only_with_several_vcenters() -> None:
    assert IdSpace(["lab"]).object_id("lab", "datastore-1") == "datastore-1"
    assert IdSpace(["a", "b"]).disk_id("a", "vm-1", "scsi0:0") == "a:vm-1:scsi0:0"
    with pytest.raises(NotFoundError):
        IdSpace(["a", "b"]).parse_object("c:vm-1")
    with pytest.raises(NotFoundError):
        IdSpace(["a"]).parse_disk("vm-1")


def test_disk_sample_maps_onto_the_store_row() -> None:
    s = DiskSample(
        "vm-1",
        "scsi0:1",
        T,
        20,
        read_iops=100,
        write_iops=0,
        read_latency_ms=5,
        write_latency_ms=None,
        read_oio=0.5,
        write_oio=0,
        read_io_size_kb=8,
        write_io_size_kb=None,
        random_pct=80,
    )
    row = disk_record("lab", s)
    assert row is not None
    assert (row.ts, row.read_io_size_kb, row.write_io_size_kb, row.write_latency_ms) == (
        int(T.timestamp()),
        8,
        0,
        0,
    )
    assert (row.small_seeks, row.medium_seeks, row.large_seeks) == (20, 80, 0)


def test_sample_missing_a_needed_counter_is_left_out() -> None:
    no_size = DiskSample(
        "vm-1",
        "scsi0:1",
        T,
        20,
        read_iops=100,
        write_iops=0,
        read_latency_ms=5,
        write_latency_ms=0,
        read_oio=0.5,
        write_oio=0,
        read_io_size_kb=None,
        write_io_size_kb=None,
    )
    assert disk_record("lab", no_size) is None
    no_oio = HostDatastoreSample("host-1", "ds-1", T, 20, read_iops=10, write_iops=0, read_latency_ms=3)
    assert host_datastore_record("lab", no_oio) is None


def test_budget_counts_moves_and_gb() -> None:
    b = Budget(moves=2, gb=15.0)
    assert b.allows(10 * 2**30) == ""
    b.spend(10 * 2**30)
    assert "GB" in b.allows(10 * 2**30)
    assert b.allows(5 * 2**30) == ""
    b.spend(5 * 2**30)
    assert "moves" in b.allows(1)


@pytest.mark.parametrize("order", CANDIDATE_ORDERS)
def test_the_configured_candidate_order_is_the_balancers(order: str) -> None:
    assert balancer_params(BalanceConfig(candidate_order=order)).candidate_order == order


def test_metrics_text_is_prometheus_exposition() -> None:
    m = Metrics()
    m.inc("basil_moves_total", outcome="succeeded")
    m.inc("basil_moves_total", outcome="succeeded")
    m.observe_job("collect", "succeeded", 0.5)
    text = m.render([("basil_plans", {"state": "running"}, 1.0)])
    assert 'basil_moves_total{outcome="succeeded"} 2' in text
    assert "# TYPE basil_job_duration_seconds summary" in text
    assert text.index("# TYPE basil_job_duration_seconds summary") < text.index(
        "basil_job_duration_seconds_count"
    )
    assert 'basil_plans{state="running"} 1' in text
    m.inc("basil_vcenter_errors_total", vcenter='we"ird\\')
    assert 'vcenter="we\\"ird\\\\"' in m.render()


def test_every_configured_job_is_known_and_the_window_uses_day_names() -> None:
    found = triggers(BasilConfig())
    assert set(found) <= set(JOBS)
    assert {"collect", "model", "recommend", "srp", "maintenance", "rebalance"} <= set(found)
    assert "day_of_week='sat'" in str(found["rebalance"])
