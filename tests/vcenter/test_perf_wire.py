"""Reading a QueryPerf CSV answer without pyVmomi: the wire format as vCenter writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from basil.vcenter._vmomi import SoapAdapter, vim
from basil.vcenter.perf_wire import (
    WireQuery,
    metric_ids_xml,
    parse_answer,
    parse_answer_flat,
    parse_answer_tree,
    parse_sample_info,
    parse_values,
    request_body,
    xml_time,
)

ANSWER = b"""<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/"
 xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>
<QueryPerfResponse xmlns="urn:vim25">
<returnval xsi:type="PerfEntityMetricCSV"><entity type="VirtualMachine">vm-17</entity>
<sampleInfoCSV>20,2026-11-22T02:00:20Z,20,2026-11-22T02:00:40Z</sampleInfoCSV>
<value><id><counterId>171</counterId><instance>scsi0:1</instance></id><value>120,-1</value></value>
<value><id><counterId>172</counterId><instance>scsi0:1</instance></id><value>30,31</value></value>
<value><id><counterId>171</counterId><instance></instance></id><value>150,160</value></value>
</returnval>
<returnval xsi:type="PerfEntityMetricCSV"><entity type="HostSystem">host-9</entity>
<sampleInfoCSV></sampleInfoCSV></returnval>
</QueryPerfResponse></soapenv:Body></soapenv:Envelope>"""


def test_answer_is_read_per_entity_instance_and_counter() -> None:
    vm, host = parse_answer(ANSWER)
    assert vm.entity == "vm-17"
    assert vm.timestamps == [
        (datetime(2026, 11, 22, 2, 0, 20, tzinfo=UTC), 20),
        (datetime(2026, 11, 22, 2, 0, 40, tzinfo=UTC), 20),
    ]
    assert vm.series == {"scsi0:1": {171: [120.0, None], 172: [30.0, 31.0]}, "": {171: [150.0, 160.0]}}
    assert (host.entity, host.timestamps, host.series) == ("host-9", [], {})


def test_values_and_sample_info() -> None:
    assert parse_values("1,-1,,2.5") == [1.0, None, None, 2.5]
    assert parse_sample_info("") == []


def test_the_expressions_read_what_the_xml_parser_reads() -> None:
    flat = parse_answer_flat(ANSWER)
    assert flat is not None
    assert flat == parse_answer_tree(ANSWER)
    assert flat[0].series["scsi0:1"][171] == [120.0, None]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"<instance></instance>", b"<instance/>"),  # an empty element written short
        (b">vm-17<", b">vm-&#49;7<"),  # a character reference
        (b"<value>30,31</value>", b"<value><![CDATA[30,31]]></value>"),
        (b"<value>30,31</value>", b"<value>30,31</value><!-- note -->"),
        (b"<entity type", b"<entity  type"),
        (b"<value><id>", b"<value>\n<id>"),  # blanks between elements
        (
            b"<counterId>172",
            b"<vim:counterId xmlns:vim='urn:vim25'>172</vim:counterId><counterId hidden='1'>9",
        ),
    ],
)
def test_an_answer_written_otherwise_is_read_by_the_xml_parser(before: bytes, after: bytes) -> None:
    assert before in ANSWER
    answer = ANSWER.replace(before, after, 1)
    if parse_answer_flat(answer) is not None:  # the expressions may read it only if they read it right
        assert parse_answer_flat(answer) == parse_answer_tree(answer)
    assert parse_answer(answer) == parse_answer_tree(answer)


def test_an_answer_in_another_encoding_is_left_to_the_xml_parser() -> None:
    latin = ANSWER.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"').replace(b"vm-17", b"vm-\xe9")
    assert parse_answer_flat(latin) is None
    assert parse_answer(latin)[0].entity == "vm-\u00e9"


def test_a_normal_format_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="not a CSV answer"):
        parse_answer(ANSWER.replace(b"PerfEntityMetricCSV", b"PerfEntityMetric"))


def test_values_with_blanks_negative_and_empty_fields() -> None:
    assert parse_values(" 3 ,0,-1, 4.25") == [3.0, 0.0, None, 4.25]
    assert parse_values("") == [None]
    assert parse_values("7,") == [7.0, None]
    with pytest.raises(ValueError, match="could not convert"):
        parse_values("7,x")


STUB = SoapAdapter.SoapStubAdapter(host="localhost", port=443, version="vim.version.version13")


def _pyvmomi_spec(query: WireQuery, counters: tuple[int, ...]) -> Any:
    kind = vim.VirtualMachine if query.entity_type == "VirtualMachine" else vim.HostSystem
    spec = vim.PerformanceManager.QuerySpec(
        entity=kind(query.entity, STUB),
        metricId=[vim.PerformanceManager.MetricId(counterId=c, instance="*") for c in counters],
        intervalId=query.interval_s,
        format=query.format,
    )
    if query.start is not None:
        spec.startTime = query.start
    if query.end is not None:
        spec.endTime = query.end
    if query.max_sample is not None:
        spec.maxSample = query.max_sample
    return spec


def test_the_request_is_byte_for_byte_what_pyvmomi_writes() -> None:
    counters = (2, 171, 65536)
    ids = metric_ids_xml(counters)
    start = datetime(2026, 11, 22, 2, 0, 20, tzinfo=UTC)
    queries = [
        WireQuery("VirtualMachine", "vm-17", ids, 20, max_sample=1),
        WireQuery("VirtualMachine", "vm-1024", ids, 20, start=start),
        WireQuery("HostSystem", "host-9", ids, 20, start=start, end=start + timedelta(minutes=20)),
        WireQuery("HostSystem", "host-9", ids, 20, start=start.replace(microsecond=120_500), format="normal"),
        WireQuery("VirtualMachine", "vm-2", ids, 20, start=start.astimezone(timezone(timedelta(hours=-5)))),
    ]
    perf_manager = vim.PerformanceManager("PerfMgr", STUB)
    info = vim.PerformanceManager.QueryPerf.info
    for some in ([queries[0]], queries):
        ours = request_body(STUB, perf_manager, some)
        theirs = STUB.SerializeRequest(perf_manager, info, ([_pyvmomi_spec(q, counters) for q in some],))
        assert ours == (theirs if isinstance(theirs, bytes) else theirs.encode("utf-8"))
    # Where pyVmomi would write markup characters of a moid as they are (no moid has them), they are escaped.
    odd = request_body(STUB, perf_manager, [WireQuery("VirtualMachine", "vm-<&>", ids, 20, max_sample=1)])
    assert odd is not None
    assert b'<entity type="VirtualMachine">vm-&lt;&amp;&gt;</entity>' in odd


def test_a_spec_time_must_be_aware() -> None:
    with pytest.raises(ValueError, match="naive"):
        xml_time(datetime(2026, 11, 22, 2, 0, 20))
    assert xml_time(datetime(2026, 11, 22, 2, 0, 20, 500_000, tzinfo=UTC)) == "2026-11-22T02:00:20.5Z"
