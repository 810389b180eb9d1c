"""Reading a QueryPerf CSV answer without pyVmomi: the wire format as vCenter writes it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from basil.vcenter.perf_wire import parse_answer, parse_sample_info, parse_values

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


def test_a_normal_format_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="not a CSV answer"):
        parse_answer(ANSWER.replace(b"PerfEntityMetricCSV", b"PerfEntityMetric"))
