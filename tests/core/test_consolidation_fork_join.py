"""A large IO split over several devices waits for the slowest of them (docs/whatif.md, task wif7)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from basil.core.consolidation import (
    DEFAULT_STRIPE_KB,
    STRIPE_ASSUMED,
    DeviceParams,
    WorkloadMeasurement,
    fork_join,
    harmonic,
    isolate,
    predict_consolidation,
    predict_departure,
    whatif_from_mapping,
)
from basil.errors import ValidationError

M = 8.0  # parallelism: eight servers
DEVICE = DeviceParams(max_conn=32, parallelism=M)


def reader(name: str, iops: float, ms: float, oio: float, io_kb: float | None) -> WorkloadMeasurement:
    """A random reader (no sequential share, no writes: neither interleaving nor destaging moves it)."""
    return WorkloadMeasurement(
        name, iops, 0.0, ms, 0.0, read_oio=oio, write_oio=0.0, random_pct=100.0, read_io_kb=io_kb
    )


DSS = reader("dss", 400.0, 20.0, 8.0, 256.0)  # 256 KB reads: four 64 KB stripe units
OLTP = reader("oltp", 800.0, 15.0, 12.0, 8.0)


@pytest.mark.parametrize(
    ("w", "expected"),
    [(0.5, 1.0), (1.0, 1.0), (2.0, 1.5), (4.0, 25 / 12), (1.5, 1.25), (2.5, 1.5 + 0.5 / 3)],
)
def test_harmonic_numbers_extended_between_the_integers(w: float, expected: float) -> None:
    assert harmonic(w) == pytest.approx(expected)


def test_an_io_is_split_into_stripe_units_at_most_the_servers() -> None:
    assert DEVICE.stripe_kb == DEFAULT_STRIPE_KB == 64.0
    assert DEVICE.stripe_source == STRIPE_ASSUMED
    assert fork_join(None, DEVICE) == 1.0  # size unknown
    assert fork_join(8.0, DEVICE) == 1.0  # within one stripe unit
    assert fork_join(64.0, DEVICE) == 1.0
    assert fork_join(128.0, DEVICE) == pytest.approx(1.5)
    assert fork_join(256.0, DEVICE) == pytest.approx(25 / 12)
    # never over more devices than the servers the device model sees
    assert fork_join(256.0, replace(DEVICE, parallelism=2.0)) == pytest.approx(1.5)
    assert fork_join(256.0, replace(DEVICE, parallelism=1.0)) == 1.0
    assert fork_join(256.0, replace(DEVICE, stripe_kb=128.0)) == pytest.approx(1.5)
    assert fork_join(256.0, replace(DEVICE, stripe_kb=None)) == 1.0  # the rule off


def test_the_split_disk_waits_h_of_w_times_what_a_one_unit_io_waits() -> None:
    small = predict_consolidation([replace(DSS, read_io_kb=None), OLTP], DEVICE)
    large = predict_consolidation([DSS, OLTP], DEVICE)
    added = small.workloads[0].read_latency_ms - DSS.read_latency_ms
    assert added > 0
    assert large.workloads[0].read_latency_ms == pytest.approx(DSS.read_latency_ms + 25 / 12 * added)
    assert large.workloads[0].fork_join == pytest.approx(25 / 12)
    assert small.workloads[0].fork_join == 1.0
    # its closed loop: fewer IOPS for the longer wait
    assert large.workloads[0].read_iops < small.workloads[0].read_iops
    # the neighbour's figures do not move: what the split disk puts ahead of it was measured
    assert large.workloads[1] == small.workloads[1]
    assert large.workloads[1].fork_join == 1.0


def test_a_split_disk_alone_keeps_its_figures() -> None:
    (w,) = predict_consolidation([DSS], DEVICE).workloads
    assert (w.read_iops, w.read_latency_ms) == pytest.approx((DSS.read_iops, DSS.read_latency_ms))


def test_leaving_a_datastore_the_split_disk_gains_h_of_w_times_as_much() -> None:
    together = [replace(DSS, group="g"), replace(OLTP, group="g")]
    small = predict_departure([replace(together[0], read_io_kb=None), together[1]], {"oltp"}, DEVICE)
    large = predict_departure(together, {"oltp"}, DEVICE)
    gained = DSS.read_latency_ms - small[0].read_latency_ms
    assert gained > 0
    assert DSS.read_latency_ms - large[0].read_latency_ms == pytest.approx(25 / 12 * gained)
    assert large[0].fork_join == pytest.approx(25 / 12)


def test_a_disk_taken_from_its_group_keeps_its_io_sizes() -> None:
    together = [replace(DSS, group="g", write_io_kb=64.0), replace(OLTP, group="g")]
    (moved,) = isolate(together, {"dss"}, DEVICE)
    assert (moved.read_io_kb, moved.write_io_kb) == (256.0, 64.0)
    assert moved.read_latency_ms < DSS.read_latency_ms  # without the batches it leaves behind


def test_writes_split_too_where_they_reach_the_devices() -> None:
    # an uncached (device) writer of 256 KB beside a random reader
    writer = WorkloadMeasurement(
        "ingest", 0.0, 200.0, 0.0, 12.0, read_oio=0.0, write_oio=2.4, random_pct=100.0, write_io_kb=256.0
    )
    small = predict_consolidation([replace(writer, write_io_kb=None), OLTP], DEVICE)
    large = predict_consolidation([writer, OLTP], DEVICE)
    added = small.workloads[0].write_latency_ms - writer.write_latency_ms
    assert added > 0
    assert large.workloads[0].write_latency_ms == pytest.approx(writer.write_latency_ms + 25 / 12 * added)


def document(**datastore: object) -> dict[str, object]:
    disks = [
        {"name": "dss", "read_iops": 400, "write_iops": 0, "read_latency_ms": 20, "write_latency_ms": 0,
         "read_oio": 8, "random_pct": 100, "read_io_kb": 256},
        {"name": "oltp", "read_iops": 800, "write_iops": 0, "read_latency_ms": 15, "write_latency_ms": 0,
         "read_oio": 12, "random_pct": 100, "read_io_kb": 8, "write_io_kb": 8},
    ]  # fmt: skip
    return {"datastore": {"queue_depth": 32, "parallelism": 8, **datastore}, "disks": disks}


def test_the_document_takes_io_sizes_and_the_stripe_unit() -> None:
    answer = whatif_from_mapping(document()).to_dict()
    assert (answer["stripe_kb"], answer["stripe_source"]) == (64.0, STRIPE_ASSUMED)
    inputs = answer["inputs"]
    assert isinstance(inputs, list)
    assert (inputs[0]["read_io_kb"], inputs[0]["write_io_kb"]) == (256.0, None)
    workloads = answer["workloads"]
    assert isinstance(workloads, list)
    assert workloads[0]["fork_join"] == pytest.approx(25 / 12)
    given = whatif_from_mapping(document(stripe_kb=128)).to_dict()
    assert given["stripe_source"] == "given"
    assert given["workloads"][0]["fork_join"] == pytest.approx(1.5)  # type: ignore[index]
    off = whatif_from_mapping(document(stripe_kb=None)).to_dict()
    assert (off["stripe_kb"], off["stripe_source"]) == (None, "none")
    assert off["workloads"][0]["fork_join"] == 1.0  # type: ignore[index]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"stripe_kb": 0}, "datastore.stripe_kb", "must be positive"),
        ({"stripe_kb": "64"}, "datastore.stripe_kb", "must be a number"),
        ({"read_io_kb": 0}, "disks[0].read_io_kb", "must be positive"),
        ({"read_io_kb": -4}, "disks[0].read_io_kb", "must not be negative"),
        ({"write_io_kb": "big"}, "disks[0].write_io_kb", "must be a number"),
    ],
)
def test_bad_sizes_are_named(change: dict[str, object], field: str, message: str) -> None:
    doc = document()
    if "stripe_kb" in change:
        doc["datastore"] = {**doc["datastore"], **change}  # type: ignore[dict-item]
    else:
        doc["disks"][0] = {**doc["disks"][0], **change}  # type: ignore[index]
    with pytest.raises(ValidationError) as raised:
        whatif_from_mapping(doc)
    problems = {(p.field, p.message.split(",")[0]) for p in raised.value.problems}
    assert any(f == field and m.startswith(message) for f, m in problems), problems
