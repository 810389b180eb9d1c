"""QueryPerf straight on the wire: the request written from a template, the CSV answer read by ElementTree.

pyVmomi turns every XML element of an answer into Python objects through per-element callbacks;
for a full real-time cycle of 2,000 VMs that is about 200,000 objects and most of the cycle's CPU
time. The CSV form of the answer (``PerfEntityMetricCSV``) needs only entity, sample times, counter,
instance and a value string per series, which the C XML parser delivers for a small fraction of
that. Anything other than a plain successful answer (a fault, an expired session, a broken
connection) is left to the ordinary pyVmomi call, which knows how to log in again, retry and type
the fault: the caller falls back to it when :func:`query_perf_csv` returns ``None``.

The request is written the same way (:func:`request_body`): pyVmomi's serializer walks every
``QuerySpec`` and each of its ``MetricId`` objects through its type checks (a query of 40 VMs × 15
counters is some 3,000 serializer calls), which was the largest part of a cycle's CPU once the answers
were read off the wire. Only the envelope (namespaces, ``_this``, any request context) still comes
from pyVmomi, for a one-spec query; the specs in between are formatted as strings, byte for byte what
pyVmomi writes for them.
"""

from __future__ import annotations

import gzip
import http.client
import logging
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from basil.vcenter._vmomi import vim
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import VCenterError

log = logging.getLogger(__name__)

_NS = "{urn:vim25}"
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
_RETURNVAL = f"{_NS}returnval"
_VALUE = f"{_NS}value"
_ID = f"{_NS}id"
_COUNTER_ID = f"{_NS}counterId"
_INSTANCE = f"{_NS}instance"
_ENTITY = f"{_NS}entity"
_SAMPLE_INFO = f"{_NS}sampleInfoCSV"


@dataclass
class WireEntityMetric:
    """One entity's part of a CSV answer: sample times and, per instance and counter, its values."""

    entity: str
    timestamps: list[tuple[datetime, int]] = field(default_factory=list)
    series: dict[str, dict[int, list[float | None]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WireQuery:
    """One ``PerfQuerySpec`` of a QueryPerf request, as plain values.

    ``metric_ids`` is the spec's ``metricId`` elements already written (:func:`metric_ids_xml`), so that
    the many specs sharing one counter list share the string.
    """

    entity_type: str  # the managed object's WSDL type: "VirtualMachine", "HostSystem"
    entity: str  # its moid
    metric_ids: str
    interval_s: int
    start: datetime | None = None  # exclusive (aware)
    end: datetime | None = None  # inclusive (aware)
    max_sample: int | None = None
    format: str = "csv"


def metric_ids_xml(counters: Sequence[int], instance: str = "*") -> str:
    """The ``metricId`` elements for *counters*, each for *instance*, as pyVmomi writes them."""
    inst = escape(instance)
    return "".join(
        f"<metricId><counterId>{int(c)}</counterId><instance>{inst}</instance></metricId>" for c in counters
    )


def xml_time(moment: datetime) -> str:
    """An aware datetime as pyVmomi writes an ``xsd:dateTime`` (no trailing zeros in a fraction, UTC: Z)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("naive datetime in a QueryPerf spec; use an aware one")
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    tz = moment.strftime("%z")
    if tz == "+0000":
        return text + "Z"
    return f"{text}{tz[:3]}:{tz[3:]}"


def spec_xml(query: WireQuery) -> str:
    """One ``querySpec`` element, its children in the WSDL's order (entity, startTime, endTime,
    maxSample, metricId, intervalId, format), as pyVmomi's serializer writes them."""
    parts = [f'<querySpec><entity type="{query.entity_type}">{escape(query.entity)}</entity>']
    if query.start is not None:
        parts.append(f"<startTime>{xml_time(query.start)}</startTime>")
    if query.end is not None:
        parts.append(f"<endTime>{xml_time(query.end)}</endTime>")
    if query.max_sample is not None:
        parts.append(f"<maxSample>{int(query.max_sample)}</maxSample>")
    parts.append(query.metric_ids)
    parts.append(f"<intervalId>{int(query.interval_s)}</intervalId><format>{escape(query.format)}</format>")
    parts.append("</querySpec>")
    return "".join(parts)


_SPEC_OPEN = "<querySpec>"
_SPEC_CLOSE = "</querySpec>"


def request_body(soap: Any, perf_manager: Any, queries: Sequence[WireQuery]) -> bytes | None:
    """The SOAP body of ``QueryPerf(queries)``, or None when pyVmomi's envelope has not the expected shape.

    pyVmomi serializes a one-spec query (a placeholder spec of a few elements); its text before the spec
    and after it is the envelope, into which the specs are put.
    """
    if not queries:
        raise ValueError("a QueryPerf request needs at least one spec")
    placeholder = vim.PerformanceManager.QuerySpec(
        entity=vim.HostSystem("basil-placeholder", soap), intervalId=20, format="csv"
    )
    envelope = soap.SerializeRequest(perf_manager, vim.PerformanceManager.QueryPerf.info, ([placeholder],))
    text = envelope.decode("utf-8") if isinstance(envelope, bytes) else str(envelope)
    if text.count(_SPEC_OPEN) != 1 or text.count(_SPEC_CLOSE) != 1:
        return None
    head, rest = text.split(_SPEC_OPEN, 1)
    tail = rest.split(_SPEC_CLOSE, 1)[1]
    return "".join([head, *map(spec_xml, queries), tail]).encode("utf-8")


def parse_sample_info(text: str) -> list[tuple[datetime, int]]:
    """``"20,2026-01-01T00:00:20Z,20,..."`` -> [(time, interval), ...]."""
    parts = text.split(",")
    out = []
    for i in range(0, len(parts) - 1, 2):
        stamp = parts[i + 1].strip()
        if not stamp:
            continue
        ts = datetime.fromisoformat(stamp)
        out.append((ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC), int(parts[i])))
    return out


def parse_values(text: str) -> list[float | None]:
    """A CSV value string; vCenter's -1 (no value) and empty fields become None."""
    try:  # the common case, no empty field: float() takes surrounding blanks itself
        if "," not in text:  # one sample (a regular cycle)
            v = float(text)
            return [None if v < 0 else v]
        return [None if v < 0 else v for v in map(float, text.split(","))]
    except ValueError:
        pass
    out: list[float | None] = []
    for raw in text.split(","):
        raw = raw.strip()  # noqa: PLW2901 - the raw field, cleaned
        if not raw:
            out.append(None)
            continue
        v = float(raw)
        out.append(None if v < 0 else v)
    return out


def parse_answer(payload: bytes) -> list[WireEntityMetric]:
    """The entities of a QueryPerf SOAP answer in CSV form.

    An answer laid out as vCenter writes it is read by regular expressions over the bytes
    (:func:`parse_answer_flat`); anything else (entities or CDATA, other prefixes, empty elements written
    short, another encoding) by the XML parser (:func:`parse_answer_tree`). Both give the same result.
    """
    flat = parse_answer_flat(payload)
    return flat if flat is not None else parse_answer_tree(payload)


def parse_answer_tree(payload: bytes) -> list[WireEntityMetric]:
    """:func:`parse_answer` by the XML parser: the whole answer parsed by the C parser at once, then only
    the few elements per series visited from Python (no per-element events, no path searches)."""
    root = ET.fromstring(payload)
    out: list[WireEntityMetric] = []
    for rv in root.iter(_RETURNVAL):
        if not rv.get(_XSI_TYPE, "").endswith("PerfEntityMetricCSV"):
            raise ValueError(f"not a CSV answer: {rv.get(_XSI_TYPE)}")
        metric = WireEntityMetric(entity="")
        for child in rv:
            tag = child.tag
            if tag == _VALUE:
                counter, instance, values = 0, "", ""
                for part in child:
                    if part.tag == _ID:
                        for idp in part:
                            if idp.tag == _COUNTER_ID:
                                counter = int(idp.text or 0)
                            elif idp.tag == _INSTANCE:
                                instance = idp.text or ""
                    elif part.tag == _VALUE:
                        values = part.text or ""
                metric.series.setdefault(instance, {})[counter] = parse_values(values)
            elif tag == _ENTITY:
                metric.entity = (child.text or "").strip()
            elif tag == _SAMPLE_INFO:
                metric.timestamps = parse_sample_info(child.text or "")
        out.append(metric)
    return out


_FLAT_RETURNVAL = re.compile(r"<returnval\b([^>]*)>")
_FLAT_CSV_TYPE = re.compile(r':type="[^"]*PerfEntityMetricCSV"')
_FLAT_ENTITY = re.compile(r"<entity\b[^>]*>([^<]*)</entity>")
_FLAT_SAMPLE_INFO = re.compile(r"<sampleInfoCSV>([^<]*)</sampleInfoCSV>")
_FLAT_SERIES = re.compile(
    r"<value><id><counterId>([0-9]+)</counterId><instance>([^<]*)</instance></id><value>([^<]*)</value></value>"
)


def _flat_metric(body: str) -> WireEntityMetric | None:
    """One ``returnval``'s content, or None if any element of it is not where the expressions look."""
    entities = _FLAT_ENTITY.findall(body)
    infos = _FLAT_SAMPLE_INFO.findall(body)
    series = _FLAT_SERIES.findall(body)
    if (
        len(entities) != 1
        or body.count("<entity") != 1
        or body.count("<sampleInfoCSV") != len(infos)
        or len(infos) > 1
        or body.count("<value") != 2 * len(series)
        or body.count("<id") != len(series)
    ):
        return None
    metric = WireEntityMetric(entity=entities[0].strip())
    if infos:
        metric.timestamps = parse_sample_info(infos[0])
    by_instance = metric.series
    for counter, instance, values in series:
        per = by_instance.get(instance)
        if per is None:
            per = by_instance[instance] = {}
        per[int(counter)] = parse_values(values)
    return metric


def parse_answer_flat(payload: bytes) -> list[WireEntityMetric] | None:
    """:func:`parse_answer` for an answer laid out exactly as vCenter writes it, else None.

    Building the element tree of a cycle's answers was the largest part of the collection's remaining CPU
    (about 5,000 series of five elements each on 300 disks); the series are found here by one regular
    expression. Every element that the tree would see is accounted for (the counts of ``<value``,
    ``<id``, ``<entity`` and ``<sampleInfoCSV`` in each ``returnval`` must match what was read), so an
    answer written any other way is left to the XML parser rather than read wrongly.
    """
    if payload.startswith(b"<?xml"):
        declaration = payload[: payload.find(b"?>")].lower()
        if b"encoding" in declaration and b"utf-8" not in declaration:
            return None
    text = payload.decode("utf-8")
    # Entities, CDATA, comments, or not an answer at all: the XML parser's business.
    if "&" in text or "<!" in text or "<QueryPerfResponse" not in text:
        return None
    parts = _FLAT_RETURNVAL.split(text)
    out: list[WireEntityMetric] = []
    for i in range(1, len(parts), 2):
        rest = parts[i + 1]
        end = rest.find("</returnval>")
        if not _FLAT_CSV_TYPE.search(parts[i]) or end < 0:
            return None
        metric = _flat_metric(rest[:end])
        if metric is None:
            return None
        out.append(metric)
    return out if out else None


def query_perf_csv(
    conn: VCenterConnection, queries: Sequence[WireQuery], cpu: AbstractContextManager[Any] | None = None
) -> list[WireEntityMetric] | None:
    """QueryPerf for *queries* (format csv), written and parsed without pyVmomi; None when the fast path
    cannot answer.

    *cpu* (a lock shared by the queries in flight) is held while the request is written and while the
    answer is decompressed and parsed, never while waiting for vCenter: queries overlap on the network
    while at most one of them takes the interpreter (see :class:`basil.vcenter.perf.PerfCollector`).
    """
    cpu = cpu if cpu is not None else nullcontext()
    soap = conn.soap_adapter
    perf_manager = conn.content.perfManager
    with cpu:
        body = request_body(soap, perf_manager, queries)
    if body is None:
        log.debug("QueryPerf fast path: pyVmomi's envelope not understood; using pyVmomi")
        return None
    headers = {
        "Cookie": soap.cookie,
        "SOAPAction": soap.versionId,
        "Content-Type": "text/xml; charset=UTF-8",
        "Accept-Encoding": "gzip, deflate",
    }
    conn.count_request()
    try:
        http_conn = soap.GetConnection()
    except (OSError, http.client.HTTPException, VCenterError) as err:
        log.debug("QueryPerf fast path: no connection (%s); using pyVmomi", type(err).__name__)
        return None
    try:
        http_conn.request("POST", soap.path, body, headers)
        resp = http_conn.getresponse()
        payload = resp.read()
    except (OSError, http.client.HTTPException) as err:
        http_conn.close()
        log.debug("QueryPerf fast path: %s; using pyVmomi", type(err).__name__)
        return None
    soap.ReturnConnection(http_conn)
    if resp.status != 200:
        # A fault (NotAuthenticated, RestrictedByAdministrator, ...): pyVmomi's path handles it.
        return None
    encoding = (resp.getheader("Content-Encoding") or "identity").lower()
    with cpu:
        if encoding == "gzip":
            payload = gzip.decompress(payload)
        elif encoding == "deflate":
            payload = zlib.decompress(payload)
        try:
            return parse_answer(payload)
        except (ET.ParseError, ValueError) as err:
            log.warning("QueryPerf answer from %s not understood (%s); using pyVmomi", conn.server, err)
            return None
