"""Sequential streams interleaved with other disks' IO (docs/whatif.md): the what-if's positioning rule."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core.consolidation import (
    DeviceParams,
    WorkloadMeasurement,
    WorkloadPrediction,
    interleaved_share,
    isolate,
    positioning_from_fit,
    predict_consolidation,
    predict_departure,
    whatif_from_mapping,
)
from basil.errors import ValidationError

M = 4.0  # parallelism
T_POS = 6.0  # a lone random IO's latency on the device, ms
DEVICE = DeviceParams(max_conn=32, parallelism=M, positioning_ms=T_POS, positioning_source="given")
NO_POSITIONING = DeviceParams(max_conn=32, parallelism=M)


def disk(
    name: str,
    reads: float,
    read_ms: float,
    read_oio: float,
    random_pct: float | None,
    *,
    group: str = "",
    writes: float = 0.0,
    write_ms: float = 0.0,
    write_oio: float = 0.0,
) -> WorkloadMeasurement:
    return WorkloadMeasurement(
        name,
        reads,
        writes,
        read_ms,
        write_ms,
        read_oio=read_oio,
        write_oio=write_oio,
        group=group,
        random_pct=random_pct,
    )


SEQ = disk("seq", 4000.0, 1.0, 4.0, 0.0)  # 64 KB stream near media rate
OLTP = disk("oltp", 800.0, 15.0, 12.0, 100.0)


def test_a_sequential_stream_alone_keeps_its_isolation_figures() -> None:
    (w,) = predict_consolidation([SEQ], DEVICE).workloads
    assert w.sequential
    assert w.positioning_added_ms == 0.0
    assert (w.read_iops, w.read_latency_ms) == pytest.approx((4000.0, 1.0))


def others_share(name: str, workloads: list[WorkloadPrediction]) -> float:
    """f¹ at the predicted rates: the other disks' share of the IO rate."""
    mine = next(w.read_iops + w.write_iops for w in workloads if w.name == name)
    return interleaved_share(mine, sum(w.read_iops + w.write_iops for w in workloads))


def test_with_a_random_neighbour_its_reads_pay_the_interleaved_positioning() -> None:
    with_rule = predict_consolidation([SEQ, OLTP], DEVICE)
    without = predict_consolidation([SEQ, OLTP], NO_POSITIONING)
    seq, oltp = with_rule.workloads
    # Δ = s (f¹ − f⁰) t_pos: all of its IO is sequential, f⁰ = 0 alone, f¹ the neighbour's share of
    # the IO rate once together (a fixed point: Δ lowers its rate, which raises f¹).
    delta = seq.positioning_added_ms
    assert delta == pytest.approx(1.0 * (others_share("seq", with_rule.workloads) - 0.0) * T_POS, rel=1e-5)
    assert 0.5 * T_POS < delta < T_POS  # its 4000 IO/s alone would give f¹ = 800/4800; slowed, far more
    assert oltp.positioning_added_ms == 0.0  # a random disk has nothing to lose
    # Its own IO costs Δ more (its own sequential IOs in flight lie on other devices), and each of its
    # 4 reads in flight costs Δ more for the neighbour's requests behind them.
    assert seq.read_latency_ms == pytest.approx(without.workloads[0].read_latency_ms + delta)
    assert oltp.read_latency_ms == pytest.approx(without.workloads[1].read_latency_ms + delta * 4.0 / M)
    # Closed loop: its IOPS fall with its latency (Little's law), its outstanding IOs kept.
    assert seq.read_iops * seq.read_latency_ms / 1000.0 == pytest.approx(4.0)
    assert seq.read_iops < without.workloads[0].read_iops
    assert with_rule.to_dict()["positioning_ms"] == T_POS


def test_a_partly_random_disk_pays_for_its_sequential_share_only() -> None:
    mixed = disk("mixed", 1000.0, 4.0, 4.0, 40.0)
    p = predict_consolidation([mixed, OLTP], DEVICE)
    assert not p.workloads[0].sequential  # over 25 % random: not the class, but its 60 % still blends
    share = others_share("mixed", p.workloads)
    assert p.workloads[0].positioning_added_ms == pytest.approx(0.6 * share * T_POS, rel=1e-5)


def test_without_a_positioning_cost_or_a_random_pct_nothing_is_added() -> None:
    unknown = disk("seq", 4000.0, 1.0, 4.0, None)
    for workloads, device in (([SEQ, OLTP], NO_POSITIONING), ([unknown, OLTP], DEVICE)):
        p = predict_consolidation(workloads, device)
        assert [w.positioning_added_ms for w in p.workloads] == [0.0, 0.0]
    assert predict_consolidation([SEQ], NO_POSITIONING).to_dict()["positioning_ms"] is None


def test_cached_writes_keep_their_latency() -> None:
    log = disk("log", 20.0, 2.0, 0.04, 10.0, writes=400.0, write_ms=0.4, write_oio=0.16)
    p = predict_consolidation([log, OLTP], DEVICE)
    assert p.workloads[0].write_cached
    assert p.workloads[0].write_latency_ms == pytest.approx(0.4)
    assert p.workloads[0].positioning_added_ms > 0


def test_among_the_disks_it_was_measured_with_nothing_changes() -> None:
    seq = disk("seq", 900.0, 4.4, 4.0, 0.0, group="ds1")
    oltp = disk("oltp", 700.0, 17.0, 12.0, 100.0, group="ds1")
    p = predict_consolidation([seq, oltp], DEVICE)
    assert p.workloads[0].positioning_added_ms == 0.0
    assert [w.read_latency_ms for w in p.workloads] == pytest.approx([4.4, 17.0])


def test_n_disks_two_neighbours_measured_together_act_as_one_with_their_sum() -> None:
    half = [disk(f"r{k}", 400.0, 15.0, 6.0, 100.0, group="target") for k in range(2)]
    whole = disk("r", 800.0, 15.0, 12.0, 100.0, group="target")
    split = predict_consolidation([SEQ, *half], DEVICE).workloads[0]
    merged = predict_consolidation([SEQ, whole], DEVICE).workloads[0]
    assert split.positioning_added_ms == pytest.approx(merged.positioning_added_ms)
    assert split.read_latency_ms == pytest.approx(merged.read_latency_ms)
    assert split.read_iops == pytest.approx(merged.read_iops)


def test_n_disks_order_does_not_matter_and_every_neighbour_adds() -> None:
    web = disk("web", 300.0, 8.0, 2.4, 75.0)
    mail = disk("mail", 200.0, 10.0, 2.0, 99.0)
    base = {
        w.name: w.read_latency_ms for w in predict_consolidation([SEQ, OLTP, web, mail], DEVICE).workloads
    }
    for order in itertools.permutations([SEQ, OLTP, web, mail]):
        got = {w.name: w.read_latency_ms for w in predict_consolidation(list(order), DEVICE).workloads}
        assert got == pytest.approx(base)
    added = [
        predict_consolidation(ws, DEVICE).workloads[0].positioning_added_ms
        for ws in ([SEQ], [SEQ, web], [SEQ, web, mail], [SEQ, web, mail, OLTP])
    ]
    assert added == sorted(added)
    assert added[0] == 0.0
    every = predict_consolidation([SEQ, web, mail, OLTP], DEVICE).workloads
    assert added[-1] == pytest.approx(others_share("seq", every) * T_POS, rel=1e-5)


def test_leaving_neighbours_give_a_stream_its_sequentiality_back() -> None:
    seq = disk("seq", 900.0, 4.4, 4.0, 0.0, group="ds1")
    oltp = disk("oltp", 700.0, 17.0, 12.0, 100.0, group="ds1")
    (after,) = predict_departure([seq, oltp], {"oltp"}, DEVICE)
    (without,) = predict_departure([seq, oltp], {"oltp"}, NO_POSITIONING)
    # f⁰ = 700 / 1600 of the IO rate was the neighbour's; alone again, f¹ = 0.
    assert after.positioning_added_ms == pytest.approx(-700.0 / 1600.0 * T_POS)
    assert after.read_latency_ms < without.read_latency_ms
    assert after.read_latency_ms >= 4.4 / (1 + 16.0 / M) / 10.0  # the guard: a tenth of its service time
    # Moved away alone, it enters an empty datastore with its sequentiality back.
    (moved,) = isolate([seq, oltp], {"seq"}, DEVICE)
    assert moved.random_pct == 0.0
    assert moved.read_latency_ms == pytest.approx(after.read_latency_ms)


def test_positioning_from_a_device_line() -> None:
    assert positioning_from_fit(0.5, 4.0) == pytest.approx(4.0)
    assert positioning_from_fit(None, 4.0) is None
    assert positioning_from_fit(0.5, -1.0) is None


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"disks": [{**SEQ.__dict__, "random_pct": 150}]}, "disks[0].random_pct"),
        ({"disks": [{**SEQ.__dict__, "random_pct": "all"}]}, "disks[0].random_pct"),
        ({"datastore": {"positioning_ms": -1}, "disks": [SEQ.__dict__]}, "datastore.positioning_ms"),
        ({"datastore": {"positioning_ms": "x"}, "disks": [SEQ.__dict__]}, "datastore.positioning_ms"),
    ],
)
def test_bad_inputs_name_the_field(document: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        whatif_from_mapping(document)
    assert field in [p.field for p in caught.value.problems]


def test_a_document_carries_random_pct_and_the_positioning_cost() -> None:
    oltp = {k: v for k, v in OLTP.__dict__.items() if k != "group"}
    p = whatif_from_mapping(
        {"datastore": {"parallelism": M, "positioning_ms": T_POS}, "disks": [SEQ.__dict__, oltp]}
    )
    assert p.device.positioning_source == "given"
    assert p.workloads[0].positioning_added_ms == pytest.approx(
        others_share("seq", p.workloads) * T_POS, rel=1e-5
    )
    assert p.to_dict()["inputs"][0]["random_pct"] == 0.0  # type: ignore[index]


measurements = st.builds(
    WorkloadMeasurement,
    name=st.uuids().map(str),
    read_iops=st.floats(1, 5000),
    write_iops=st.floats(0, 5000),
    read_latency_ms=st.floats(0.1, 100),
    write_latency_ms=st.floats(0.1, 100),
    read_oio=st.one_of(st.none(), st.floats(0, 64)),
    write_oio=st.one_of(st.none(), st.floats(0, 64)),
    random_pct=st.one_of(st.none(), st.floats(0, 100)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(measurements, min_size=1, max_size=5, unique_by=lambda m: m.name), measurements)
def test_n_way_properties_with_interleaving(
    group: list[WorkloadMeasurement], newcomer: WorkloadMeasurement
) -> None:
    before = predict_consolidation(group, DEVICE)
    for w in before.workloads:  # the fixed point: Δ from the predicted rates' shares
        s = next(g.sequential_share for g in group if g.name == w.name)
        assert w.positioning_added_ms == pytest.approx(
            s * others_share(w.name, before.workloads) * T_POS, rel=1e-4, abs=1e-6
        )
    reversed_order = predict_consolidation(group[::-1], DEVICE)
    by_name = {w.name: w.read_latency_ms for w in reversed_order.workloads}
    assert [by_name[w.name] for w in before.workloads] == pytest.approx(
        [w.read_latency_ms for w in before.workloads], rel=1e-5
    )
    if newcomer.name not in {m.name for m in group}:
        # Interleaving alone never makes a newcomer speed anyone up. The destage rule can: a
        # newcomer slows a cached writer, whose destaging then loads the devices less
        # (docs/whatif.md), so this property is of the interleaving rule, destaging off.
        alone = replace(DEVICE, write_cost=None)
        first = predict_consolidation(group, alone)
        after = predict_consolidation([*group, newcomer], alone)
        for b, a in zip(first.workloads, after.workloads, strict=False):
            assert a.read_latency_ms >= b.read_latency_ms * (1 - 1e-5)
