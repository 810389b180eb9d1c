"""Consolidation what-if (Casale et al. §V): the paper's two-VM estimators and their n-way generalisation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core.consolidation import (
    DeviceParams,
    WorkloadMeasurement,
    parallelism_from_fit,
    predict_consolidation,
    whatif_from_mapping,
)
from basil.errors import ValidationError


def vm(
    name: str, figures: tuple[float, float, float, float, float, float], group: str = ""
) -> WorkloadMeasurement:
    """A workload from (read IOPS, write IOPS, read ms, write ms, read OIO, write OIO)."""
    r, w, cr, cw, ar, aw = figures
    return WorkloadMeasurement(name, r, w, cr, cw, read_oio=ar, write_oio=aw, group=group)


FILE = vm("file", (150, 170, 30.0, 6.0, 4.0, 8.0))
MAIL = vm("mail", (140, 160, 35.0, 7.0, 6.0, 10.0))
WEB = vm("web", (300, 100, 25.0, 5.0, 3.0, 2.0))


def test_two_vms_follow_equations_1_to_6() -> None:
    p = predict_consolidation([FILE, MAIL], DeviceParams(max_conn=32, max_write_conn=16))
    t_file, t_mail = 320.0, 300.0
    share_file, share_mail = t_file / (t_file + t_mail), t_mail / (t_file + t_mail)
    # eq. 1-2: mix as the isolation mixes weighted by isolation throughput (reported beside)
    assert p.paper_read_mix == pytest.approx(150 / 320 * share_file + 140 / 300 * share_mail)
    assert p.paper_write_mix == pytest.approx(1 - p.paper_read_mix)
    # the answer's mix is that of the predicted throughputs
    assert p.read_mix == pytest.approx(p.read_iops / (p.read_iops + p.write_iops))
    assert p.write_mix == pytest.approx(1 - p.read_mix)
    # eq. 3-4, reported for comparison
    assert p.paper_read_iops == pytest.approx(150 * share_file + 140 * share_mail)
    assert p.paper_write_iops == pytest.approx(170 * share_file + 160 * share_mail)
    # eq. 5-6 with S = C / (1 + A), A all the VM's outstanding IOs, and max_write_conn / max_conn = 1/2
    from_mail = 35.0 / 17.0 * 6.0 + 0.5 * 7.0 / 17.0 * 10.0
    from_file = 30.0 / 13.0 * 4.0 + 0.5 * 6.0 / 13.0 * 8.0
    file_p, mail_p = p.workloads
    assert file_p.read_latency_ms == pytest.approx(30.0 + from_mail)
    assert file_p.write_latency_ms == pytest.approx(6.0 + from_mail)
    assert mail_p.read_latency_ms == pytest.approx(35.0 + from_file)
    assert mail_p.write_latency_ms == pytest.approx(7.0 + from_file)
    # per-VM throughputs follow Little's law (outstanding IOs kept), keep their mix and add up to X
    assert file_p.read_iops + mail_p.read_iops == pytest.approx(p.read_iops)
    mean_before = (150 * 30.0 + 170 * 6.0) / 320
    mean_after = (150 * file_p.read_latency_ms + 170 * file_p.write_latency_ms) / 320
    assert file_p.read_iops == pytest.approx(150 * mean_before / mean_after)
    assert file_p.write_iops / file_p.read_iops == pytest.approx(170 / 150)


def test_parallel_servers_divide_the_batches_ahead() -> None:
    """On m servers S = C / (1 + A/m) and a batch of A costs S·A/m; m = 1 is the paper."""
    m = 6.0
    p = predict_consolidation([FILE, MAIL], DeviceParams(max_conn=32, parallelism=m))
    from_mail = (35.0 / (1 + 16.0 / m) * 6.0 + 0.5 * 7.0 / (1 + 16.0 / m) * 10.0) / m
    assert p.workloads[0].read_latency_ms == pytest.approx(30.0 + from_mail)
    one = predict_consolidation([FILE, MAIL], DeviceParams(max_conn=32))
    assert p.workloads[0].read_latency_ms < one.workloads[0].read_latency_ms


def test_parallelism_from_a_device_line() -> None:
    assert parallelism_from_fit(0.5, 4.0) == pytest.approx(8.0)
    assert parallelism_from_fit(2.0, 1.0) == pytest.approx(1.0)  # never below one server
    assert parallelism_from_fit(None, 4.0) is None
    assert parallelism_from_fit(0.5, -1.0) is None
    assert parallelism_from_fit(0.0, 4.0) is None


def test_writes_acknowledged_by_a_cache_wait_for_no_one() -> None:
    cached = vm("cached", (100, 400, 12.0, 0.4, 1.2, 0.16))
    p = predict_consolidation([cached, MAIL], DeviceParams())
    c = p.workloads[0]
    assert c.write_cached
    assert c.write_latency_ms == pytest.approx(0.4)
    assert c.read_latency_ms > 12.0
    off = predict_consolidation([cached, MAIL], DeviceParams(write_cache_ms=None))
    assert not off.workloads[0].write_cached
    assert off.workloads[0].write_latency_ms == pytest.approx(c.read_latency_ms - 12.0 + 0.4)


def test_one_workload_is_unchanged() -> None:
    p = predict_consolidation([WEB], DeviceParams())
    assert p.overhead_factor == pytest.approx(1.0)
    (w,) = p.workloads
    assert (w.read_iops, w.write_iops, w.read_latency_ms, w.write_latency_ms) == pytest.approx(
        (300, 100, 25, 5)
    )


def test_workloads_measured_together_add_no_interference_to_each_other() -> None:
    together = [vm("a", (100, 50, 10, 4, 2, 1), group="ds1"), vm("b", (80, 20, 12, 5, 1, 1), group="ds1")]
    p = predict_consolidation(together, DeviceParams())
    assert [w.read_latency_ms for w in p.workloads] == pytest.approx([10, 12])
    assert p.overhead_factor == pytest.approx(1.0)
    moved = vm("c", (60, 60, 8, 3, 1.5, 2.0), group="ds2")
    q = predict_consolidation([*together, moved], DeviceParams())
    extra_from_c = 8 / 4.5 * 1.5 + 0.5 * 3 / 4.5 * 2.0
    assert [w.read_latency_ms for w in q.workloads[:2]] == pytest.approx(
        [10 + extra_from_c, 12 + extra_from_c]
    )


def test_oio_defaults_to_littles_law() -> None:
    w = WorkloadMeasurement("x", read_iops=200, write_iops=100, read_latency_ms=10, write_latency_ms=20)
    assert w.read_queue == pytest.approx(2.0)
    assert w.write_queue == pytest.approx(2.0)
    body = predict_consolidation([w], DeviceParams()).to_dict()
    assert body["inputs"][0]["oio_source"] == "Little's law"  # type: ignore[index]


measurements = st.builds(
    WorkloadMeasurement,
    name=st.uuids().map(str),
    read_iops=st.floats(0, 5000),
    write_iops=st.floats(0, 5000),
    read_latency_ms=st.floats(0.1, 100),
    write_latency_ms=st.floats(0.1, 100),
    read_oio=st.one_of(st.none(), st.floats(0, 64)),
    write_oio=st.one_of(st.none(), st.floats(0, 64)),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(measurements, min_size=1, max_size=6, unique_by=lambda m: m.name), measurements)
def test_n_way_properties(group: list[WorkloadMeasurement], newcomer: WorkloadMeasurement) -> None:
    device = DeviceParams(max_conn=64)
    before = predict_consolidation(group, device)
    assert 0 < before.overhead_factor <= 1 + 1e-12
    if before.read_iops + before.write_iops > 0:
        assert before.read_mix + before.write_mix == pytest.approx(1.0)
    # The order of the workloads does not matter.
    for order in itertools.islice(itertools.permutations(range(len(group))), 6):
        shuffled = predict_consolidation([group[k] for k in order], device)
        by_name = {w.name: w.read_latency_ms for w in shuffled.workloads}
        assert [by_name[w.name] for w in before.workloads] == pytest.approx(
            [w.read_latency_ms for w in before.workloads]
        )
    # Adding a workload never makes anyone's latency better.
    if newcomer.name not in {m.name for m in group}:
        after = predict_consolidation([*group, newcomer], device)
        for b, a in zip(before.workloads, after.workloads, strict=False):
            assert a.read_latency_ms >= b.read_latency_ms - 1e-9
            assert a.write_latency_ms >= b.write_latency_ms - 1e-9


@pytest.mark.parametrize(
    ("document", "fields"),
    [
        pytest.param({"disks": []}, ["disks"], id="no-disks"),
        pytest.param(
            {
                "disks": [
                    {
                        "name": "a",
                        "read_iops": -1,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    }
                ]
            },
            ["disks[0].read_iops"],
            id="negative-iops",
        ),
        pytest.param(
            {
                "datastore": {"queue_depth": 0},
                "disks": [
                    {
                        "name": "a",
                        "read_iops": 1,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    }
                ],
            },
            ["datastore.queue_depth"],
            id="zero-queue-depth",
        ),
        pytest.param(
            {
                "datastore": {"queue_depth": 32, "max_write_conn": 64},
                "disks": [
                    {
                        "name": "a",
                        "read_iops": 1,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    }
                ],
            },
            ["datastore.max_write_conn"],
            id="writes-above-depth",
        ),
        pytest.param(
            {
                "disks": [
                    {
                        "name": "a",
                        "read_iops": 1,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    },
                    {
                        "name": "a",
                        "read_iops": 2,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    },
                ]
            },
            ["disks"],
            id="duplicate-name",
        ),
        pytest.param(
            {
                "datastore": {"parallelism": 0.5, "write_cache_ms": "x"},
                "disks": [
                    {
                        "name": "a",
                        "read_iops": 1,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    }
                ],
            },
            ["datastore.write_cache_ms"],
            id="bad-cache",
        ),
        pytest.param(
            {
                "datastore": {"parallelism": 0.5},
                "disks": [
                    {
                        "name": "a",
                        "read_iops": 1,
                        "write_iops": 0,
                        "read_latency_ms": 1,
                        "write_latency_ms": 1,
                    }
                ],
            },
            ["datastore.parallelism"],
            id="parallelism-below-one",
        ),
        pytest.param([], [""], id="not-an-object"),
    ],
)
def test_bad_documents_name_every_field(document: object, fields: list[str]) -> None:
    with pytest.raises(ValidationError) as err:
        whatif_from_mapping(document)
    assert [p.field for p in err.value.problems] == fields
