"""Snapshot format: parsing, validation with field paths (every problem at once), round trip."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from basil.core.device_model import DeviceSample
from basil.core.params import BalancerParams
from basil.core.snapshot import (
    DEFAULT_POD,
    Rules,
    Snapshot,
    load_snapshot_json,
    parse_snapshot,
    snapshot_to_document,
)
from basil.core.workload_model import WorkloadParams, WorkloadSample
from basil.errors import ValidationError

from .builders import EXAMPLES, datastore, disk, snapshot


def minimal() -> dict[str, Any]:
    return {
        "datastores": [
            {"name": "ds1", "capacity_gb": 100, "free_gb": 50, "hosts": ["h1"], "performance": 1.0},
            {"name": "ds2", "capacity_gb": 100, "free_gb": 100, "hosts": ["h1"], "performance": 2.0},
        ],
        "disks": [
            {"id": "vm1/d0", "vm": "vm1", "datastore": "ds1", "size_gb": 50, "hosts": ["h1"], "load": 10},
        ],
    }


def problems_of(document: object, **kwargs: Any) -> dict[str, str]:
    with pytest.raises(ValidationError) as err:
        parse_snapshot(document, **kwargs)
    return {p.field: p.message for p in err.value.problems}


def test_minimal_document_parses_with_defaults() -> None:
    doc = parse_snapshot(minimal())
    ds1 = doc.snapshot.datastores[0]
    assert ds1.name == "ds1"
    assert ds1.hosts == frozenset({"h1"})
    assert ds1.maintenance is False
    assert ds1.pod == DEFAULT_POD
    assert doc.snapshot.disks[0].load == 10
    assert doc.params == BalancerParams()
    assert doc.snapshot.rules == Rules()


@pytest.mark.parametrize("name", ["basil-table2.json", "basil-table4.json"])
def test_bundled_examples_parse(name: str) -> None:
    doc = load_snapshot_json((EXAMPLES / name).read_text(encoding="utf-8"))
    assert len(doc.snapshot.disks) == 8
    assert len(doc.snapshot.datastores) == 3
    assert doc.snapshot.description


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            lambda d: d["datastores"][0].pop("capacity_gb"), "datastores[0].capacity_gb", id="missing-field"
        ),
        pytest.param(lambda d: d["disks"][0].pop("hosts"), "disks[0].hosts", id="missing-disk-hosts"),
        pytest.param(lambda d: d["disks"][0].update(colour="red"), "disks[0].colour", id="unknown-field"),
        pytest.param(lambda d: d.update(extra=1), "extra", id="unknown-top-level-field"),
        pytest.param(
            lambda d: d["disks"][0].update(datastore="ds9"), "disks[0].datastore", id="unknown-datastore"
        ),
        pytest.param(lambda d: d["disks"][0].update(size_gb=-1), "disks[0].size_gb", id="negative-size"),
        pytest.param(
            lambda d: d["datastores"][1].update(performance=0), "datastores[1].performance", id="p-zero"
        ),
        pytest.param(
            lambda d: d["datastores"][1].update(performance=-2), "datastores[1].performance", id="p-negative"
        ),
        pytest.param(lambda d: d["disks"][0].update(load=math.nan), "disks[0].load", id="nan-load"),
        pytest.param(
            lambda d: d["datastores"][0].update(free_gb=math.inf), "datastores[0].free_gb", id="inf"
        ),
        pytest.param(
            lambda d: d["datastores"][0].update(free_gb=101), "datastores[0].free_gb", id="free-over-cap"
        ),
        pytest.param(
            lambda d: d["datastores"][0].update(hosts="h1"), "datastores[0].hosts", id="hosts-not-list"
        ),
        pytest.param(lambda d: d["disks"][0].update(size_gb="10"), "disks[0].size_gb", id="string-number"),
        pytest.param(lambda d: d["disks"][0].update(size_gb=True), "disks[0].size_gb", id="bool-number"),
        pytest.param(lambda d: d["disks"][0].pop("load"), "disks[0]", id="no-load-source"),
        pytest.param(lambda d: d["disks"].append(dict(d["disks"][0])), "disks[1].id", id="duplicate-disk"),
        pytest.param(
            lambda d: d["datastores"][1].update(name="ds1"), "datastores[1].name", id="duplicate-ds"
        ),
        pytest.param(
            lambda d: d.update(options={"max_moves": -1}), "options.max_moves", id="negative-budget"
        ),
        pytest.param(
            lambda d: d.update(options={"candidate_order": "x"}), "options.candidate_order", id="bad-order"
        ),
        pytest.param(lambda d: d.update(options={"treshold": 0.1}), "options.treshold", id="typo-option"),
        pytest.param(
            lambda d: d.update(options={"excluded_vms": ["vm9"]}), "options.excluded_vms", id="unknown-vm"
        ),
        pytest.param(
            lambda d: d.update(options={"anti_affinity": [["vm1"]]}),
            "options.anti_affinity[0]",
            id="lonely-group",
        ),
        pytest.param(
            lambda d: d.update(options={"workload_model": {"k5": 1}}),
            "options.workload_model.k5",
            id="no-k5-option",
        ),
        pytest.param(
            lambda d: d["disks"][0].update(last_moved="yesterday"), "disks[0].last_moved", id="bad-time"
        ),
        pytest.param(lambda d: d["disks"][0].update(last_moved=0), "options.now", id="last-moved-needs-now"),
        pytest.param(
            lambda d: d["disks"][0].update(
                workload={"oio": 1, "io_size_kb": 8, "read_pct": 120, "random_pct": 1}
            ),
            "disks[0].workload.read_pct",
            id="read-pct-over-100",
        ),
        pytest.param(
            lambda d: d["datastores"][0].update(samples=[{"host": "h1", "oio": 1}]),
            "datastores[0].samples[0].latency_ms",
            id="sample-missing-field",
        ),
    ],
)
def test_bad_input_names_the_field(mutate: Any, field: str) -> None:
    document = minimal()
    mutate(document)
    problems = problems_of(document)
    assert field in problems, problems


def test_every_problem_is_reported_at_once() -> None:
    document = minimal()
    document["datastores"][0]["capacity_gb"] = -5
    document["datastores"][1]["performance"] = 0
    document["disks"][0]["size_gb"] = math.nan
    document["disks"].append({"id": "vm2/d0", "vm": "vm2", "datastore": "nowhere", "size_gb": 1, "hosts": []})
    problems = problems_of(document)
    assert {
        "datastores[0].capacity_gb",
        "datastores[1].performance",
        "disks[0].size_gb",
        "disks[1].datastore",
        "disks[1]",
    } <= set(problems)


def test_a_malformed_entry_does_not_hide_problems_of_others() -> None:
    document = minimal()
    document["datastores"][0]["capacity_gb"] = "big"  # type problem: entry skipped
    document["disks"][0]["size_gb"] = -3  # range problem in another entry
    problems = problems_of(document)
    assert "datastores[0].capacity_gb" in problems
    assert "disks[0].size_gb" in problems
    # The disk refers to the malformed datastore by name; that is not reported a second time.
    assert "disks[0].datastore" not in problems


def test_not_an_object() -> None:
    assert "snapshot" in problems_of([1, 2])


def test_invalid_json_text_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as err:
        load_snapshot_json("{not json")
    assert err.value.problems[0].field == "snapshot"


def test_options_become_params_and_rules() -> None:
    document = minimal()
    document["disks"].append(
        {"id": "vm2/d0", "vm": "vm2", "datastore": "ds2", "size_gb": 1, "hosts": [], "load": 1}
    )
    document["options"] = {
        "imbalance_threshold": 0.2,
        "max_moves": 3,
        "max_gb": 100,
        "space_headroom_pct": 15,
        "candidate_order": "least_disturbance",
        "ping_pong_hours": 8,
        "now": "2024-05-01T00:00:00Z",
        "seed": 9,
        "splittable_vms": ["vm1"],
        "anti_affinity": [["vm1", "vm2"]],
        "excluded_vms": ["vm2"],
        "workload_model": {"k1": 0.5, "percentile": 95},
        "device_model": {"min_points": 10},
    }
    doc = parse_snapshot(document)
    p = doc.params
    assert (p.imbalance_threshold, p.max_moves, p.max_gb, p.space_headroom_pct) == (0.2, 3, 100, 15)
    assert (p.candidate_order, p.ping_pong_hours, p.seed) == ("least_disturbance", 8, 9)
    assert p.workload_model.constants.k1 == 0.5
    assert p.workload_model.constants.k2 == BalancerParams().workload_model.constants.k2
    assert p.workload_model.percentile == 95
    assert p.device_model.min_points == 10
    assert doc.snapshot.now == pytest.approx(1714521600.0)
    assert doc.snapshot.rules == Rules(frozenset({"vm1"}), (frozenset({"vm1", "vm2"}),), frozenset({"vm2"}))


def test_times_accept_epoch_seconds_and_iso_8601() -> None:
    document = minimal()
    document["disks"][0]["last_moved"] = "2024-05-01T02:00:00"  # naive: read as UTC
    document["options"] = {"now": 1714528800}
    doc = parse_snapshot(document)
    assert doc.snapshot.disks[0].last_moved == pytest.approx(1714528800.0)


def test_default_now_stands_in_for_a_missing_now() -> None:
    document = minimal()
    document["disks"][0]["last_moved"] = 100.0
    assert parse_snapshot(document, default_now=500.0).snapshot.now == 500.0


def test_samples_are_read() -> None:
    document = minimal()
    document["datastores"][0]["samples"] = [
        {"host": "h1", "oio": 4, "latency_ms": 5, "iops": 100, "io_size_kb": 8, "seq_pct": 10, "time": 1},
        {
            "host": "h1",
            "oio": 8,
            "latency_ms": 9,
            "iops": 100,
            "io_size_kb": 8,
            "seq_pct": 10,
            "time": 2,
            "op": "write",
        },
    ]
    document["disks"][0]["samples"] = [
        {"oio": 4, "io_size_kb": 8, "read_pct": 70, "random_pct": 100, "time": 1}
    ]
    doc = parse_snapshot(document)
    assert doc.snapshot.datastores[0].samples[1] == DeviceSample("h1", 8, 9, 100, 8, 10, 2.0, "write")
    assert doc.snapshot.disks[0].samples == (WorkloadSample(4, 8, 70, 100, 1.0),)


def test_sample_times_all_or_none() -> None:
    document = minimal()
    document["datastores"][0]["samples"] = [
        {"host": "h1", "oio": 4, "latency_ms": 5, "iops": 100, "io_size_kb": 8, "seq_pct": 10, "time": 1},
        {"host": "h1", "oio": 8, "latency_ms": 9, "iops": 100, "io_size_kb": 8, "seq_pct": 10},
    ]
    assert "datastores[0].samples" in problems_of(document)


def test_duplicate_host_sample_in_one_interval() -> None:
    document = minimal()
    sample = {"host": "h1", "oio": 4, "latency_ms": 5, "iops": 100, "io_size_kb": 8, "seq_pct": 10, "time": 1}
    document["datastores"][0]["samples"] = [sample, dict(sample)]
    assert "datastores[0].samples[1]" in problems_of(document)


def test_python_built_snapshot_is_validated_too() -> None:
    snap = snapshot(
        [datastore("a", performance=math.nan), datastore("b")],
        [disk("vm1/d0", "a", size_gb=-1), disk("vm2/d0", "c")],
        rules=Rules(excluded_vms=frozenset({"ghost"})),
    )
    fields = {p.field for p in snap.validate()}
    assert {
        "datastores[0].performance",
        "disks[0].size_gb",
        "disks[1].datastore",
        "rules.excluded_vms",
    } <= fields


def test_round_trip_through_json() -> None:
    doc = load_snapshot_json((EXAMPLES / "basil-table2.json").read_text(encoding="utf-8"))
    params = BalancerParams(max_moves=4, max_gb=30.0, candidate_order="least_disturbance", seed=3)
    text = json.dumps(snapshot_to_document(doc.snapshot, params))
    again = load_snapshot_json(text)
    assert again.snapshot == doc.snapshot
    assert again.params == params


def test_round_trip_keeps_samples_rules_and_time() -> None:
    document = minimal()
    document["datastores"][0]["pod"] = "gold"
    document["datastores"][1]["pod"] = "gold"
    document["datastores"][0]["maintenance"] = True
    document["datastores"][1]["samples"] = [
        {"host": "h1", "oio": 4, "latency_ms": 5, "iops": 100, "io_size_kb": 8, "seq_pct": 10, "op": "write"},
    ]
    document["disks"][0].update(
        iops=5, last_moved=10, samples=[{"oio": 1, "io_size_kb": 4, "read_pct": 1, "random_pct": 2}]
    )
    document["options"] = {"now": 100, "splittable_vms": ["vm1"]}
    doc = parse_snapshot(copy.deepcopy(document))
    assert parse_snapshot(snapshot_to_document(doc.snapshot)).snapshot == doc.snapshot
    assert isinstance(doc.snapshot, Snapshot)


def test_device_description_and_microsecond_latency_round_trip() -> None:
    document = minimal()
    document["datastores"][1].update(device_kind="ssd", spindles=4)
    document["datastores"][1]["samples"] = [
        {
            "host": "h1",
            "oio": 4,
            "latency_ms": 0,
            "latency_us": 412,
            "iops": 900,
            "io_size_kb": 8,
            "seq_pct": 0,
        }
    ]
    doc = parse_snapshot(copy.deepcopy(document))
    ds = doc.snapshot.datastores[1]
    assert (ds.device_kind, ds.spindles) == ("ssd", 4)
    assert ds.samples[0].latency_us == 412
    assert ds.samples[0].latency == pytest.approx(0.412)
    assert parse_snapshot(snapshot_to_document(doc.snapshot)).snapshot == doc.snapshot
    # Documents without the new fields read as before.
    assert parse_snapshot(minimal()).snapshot.datastores[1].device_kind is None


def test_bad_device_description_names_the_fields() -> None:
    document = minimal()
    document["datastores"][0].update(device_kind="tape", spindles=0)
    document["datastores"][1]["samples"] = [
        {"host": "h1", "oio": 4, "latency_ms": 0, "latency_us": -1, "iops": 9, "io_size_kb": 8, "seq_pct": 0}
    ]
    found = problems_of(document)
    assert "unknown device kind 'tape'" in found["datastores[0].device_kind"]
    assert "positive" in found["datastores[0].spindles"]
    assert "datastores[1].samples[0].latency_us" in found


def test_model_options_of_credibility_and_classes() -> None:
    document = minimal()
    document["options"] = {
        "device_model": {"max_ci_ratio": 2.5, "max_step": 0.25, "min_oio_spread": 0.2},
        "workload_model": {"burst_ratio": 3, "sequential_class_random_pct": 10},
    }
    params = parse_snapshot(copy.deepcopy(document)).params
    assert (params.device_model.max_ci_ratio, params.device_model.max_step) == (2.5, 0.25)
    assert params.device_model.min_points == 5  # not given: the default
    assert (params.workload_model.burst_ratio, params.workload_model.sequential_class_random_pct) == (3, 10)
    document["options"] = {
        "device_model": {"max_ci_ratio": 1.0, "max_step": 0},
        "workload_model": {"burst_ratio": 0.5},
    }
    found = problems_of(document)
    assert {"options.device_model.max_ci_ratio", "options.device_model.max_step"} <= set(found)
    assert "options.workload_model.burst_ratio" in found


def test_the_quick_disk_check_never_passes_a_disk_with_a_problem() -> None:
    """validate_parts skips Disk.problems for a disk plainly_valid accepts: it must accept the
    common disk and reject every disk problems() would report on."""
    good = [
        disk("vm1/d0", "ds1"),
        disk("vm1/d1", "ds1", load=0, size_gb=0, iops=5, last_moved=-3.0),
        disk("vm1/d2", "ds1", workload=WorkloadParams(2.0, 8.0, 100.0, 0.0), iops=1.5),
    ]
    bad = [
        disk("vm1/d0", "ds1", load=-1.0),
        disk("vm1/d0", "ds1", load=math.nan),
        disk("vm1/d0", "ds1", size_gb=math.inf),
        disk("vm1/d0", "ds1", load=None),
        disk("vm1/d0", "", load=1.0),
        disk("vm1/d0", "ds1", iops=-2.0),
        disk("vm1/d0", "ds1", last_moved=math.nan),
        disk("vm1/d0", "ds1", workload=WorkloadParams(2.0, 8.0, 101.0, 0.0)),
        disk("vm1/d0", "ds1", workload=WorkloadParams(-1.0, 8.0, 50.0, 0.0)),
        disk("vm1/d0", "ds1", workload=WorkloadParams(1.0, 8.0, 50.0, True)),
    ]
    for d in good:
        assert d.plainly_valid()
        assert d.problems("disks[0]") == []
    for d in bad:
        assert d.problems("disks[0]"), d
        assert not d.plainly_valid(), d
