"""Real-time (20 s) performance collection: per-disk workload samples and per-host datastore samples.

Datastores have no real-time counters of their own, so device samples come from the host-level
``datastore.*`` counters (instance = the datastore's UUID) and workload samples from the VM-level
``virtualDisk.*`` counters (instance = ``scsi0:1``). Counter ids are resolved by name once; queries
are packed so that entities × counters × instances stay within vCenter's
``config.vpxd.stats.maxQueryMetrics``, and several are in flight at once. Each entity is asked only
for samples newer than the last one it delivered, so a cycle fetches each 20 s sample exactly once.
A counter or instance vCenter does not deliver is reported, never fatal.

Memory stays bounded whatever the backlog (after an outage vCenter still holds up to an hour of
samples per entity): an entity that is behind is asked for one window of at most
``window_samples`` samples per query, in rounds, until it has caught up or the cycle's rounds run
out (the next cycle goes on); samples are handed to the caller's sink in chunks as the answers come
in, and an entity's bookmark moves only once the sink has taken its samples.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from basil.errors import Problem, raise_if_problems
from basil.vcenter._vmomi import vim, vmodl
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import VCenterError
from basil.vcenter.perf_wire import WireQuery, metric_ids_xml, query_perf_csv
from basil.vcenter.types import (
    CollectionReport,
    DiskSample,
    HostDatastoreSample,
    Inventory,
    Missing,
    SampleChunk,
)

log = logging.getLogger(__name__)

# A virtual disk's performance instance: controller type, bus and unit ("scsi0:1", "nvme0:0").
_DISK_INSTANCE = re.compile(r"(scsi|ide|sata|nvme)\d+:\d+")

REALTIME_INTERVAL_S = 20
#: vCenter keeps real-time samples for an hour: nothing older is asked for.
REALTIME_RETENTION_S = 3600
#: A window is closed (``endTime`` set) only when it ends this long before vCenter's clock, so that a
#: window that comes back empty means "no sample there", never "not published yet".
PUBLICATION_GRACE_S = 3 * REALTIME_INTERVAL_S
MAX_QUERY_METRICS_OPTION = "config.vpxd.stats.maxQueryMetrics"
#: Used when vCenter does not have the option set: the lower of the two defaults seen in the field.
DEFAULT_MAX_QUERY_METRICS = 64
#: Batch size used when vCenter sets no limit (a negative option value), so queries still run in parallel.
UNLIMITED_BATCH_METRICS = 4096

# counter name -> DiskSample field; sizes are converted from bytes to KB, seeks make random_pct.
DISK_COUNTERS: Mapping[str, str] = {
    "virtualDisk.numberReadAveraged.average": "read_iops",
    "virtualDisk.numberWriteAveraged.average": "write_iops",
    "virtualDisk.totalReadLatency.average": "read_latency_ms",
    "virtualDisk.totalWriteLatency.average": "write_latency_ms",
    "virtualDisk.readOIO.latest": "read_oio",
    "virtualDisk.writeOIO.latest": "write_oio",
    "virtualDisk.readIOSize.latest": "read_io_size_kb",
    "virtualDisk.writeIOSize.latest": "write_io_size_kb",
    "virtualDisk.smallSeeks.latest": "small_seeks",
    "virtualDisk.mediumSeeks.latest": "medium_seeks",
    "virtualDisk.largeSeeks.latest": "large_seeks",
    "virtualDisk.read.average": "read_kbps",
    "virtualDisk.write.average": "write_kbps",
    # Microsecond latencies (real-time, per disk): totalRead/WriteLatency are whole ms, which
    # flash reads as 0 or 1; the device model prefers these (per datastore, weighted by read IOPS).
    "virtualDisk.readLatencyUS.latest": "read_latency_us",
    "virtualDisk.writeLatencyUS.latest": "write_latency_us",
}

HOST_DATASTORE_COUNTERS: Mapping[str, str] = {
    "datastore.numberReadAveraged.average": "read_iops",
    "datastore.numberWriteAveraged.average": "write_iops",
    "datastore.datastoreReadOIO.latest": "read_oio",
    "datastore.datastoreWriteOIO.latest": "write_oio",
    "datastore.totalReadLatency.average": "read_latency_ms",
    "datastore.totalWriteLatency.average": "write_latency_ms",
    "datastore.read.average": "read_kbps",
    "datastore.write.average": "write_kbps",
    "datastore.sizeNormalizedDatastoreLatency.average": "size_normalized_latency_us",
    "datastore.datastoreMaxQueueDepth.latest": "max_queue_depth",
}

_BYTES_TO_KB = frozenset({"read_io_size_kb", "write_io_size_kb"})


@dataclass(frozen=True)
class CollectorParams:
    """How a collection cycle is run."""

    workers: int = 4  # QueryPerf requests in flight
    max_query_metrics: int | None = None  # None: read it from vCenter's OptionManager
    csv: bool = True  # ask for PerfEntityMetricCSV: far fewer XML elements to parse
    fast_parse: bool = True  # read CSV answers with ElementTree instead of pyVmomi (perf_wire)
    vms: bool = True
    hosts: bool = True
    window_samples: int = 60  # at most this many samples per entity and query while catching up (20 min)
    max_rounds: int = 8  # query rounds per cycle; an entity still behind after them goes on next cycle
    # Samples handed to the sink at once (an entity's window is never split): the service stores each
    # chunk in one transaction, so this bounds how long a catch-up holds the store's write lock.
    chunk_samples: int = 4_000
    # Metrics × expected samples per query: a catch-up query answers about as much as 256 metrics
    # of one window, however high vCenter's metric limit (or none) lets a regular query go.
    max_query_values: int = 256 * 60

    def validate(self) -> list[Problem]:
        problems = []
        if not 1 <= self.workers <= 32:
            problems.append(Problem("workers", f"must be between 1 and 32, got {self.workers}"))
        retained = REALTIME_RETENTION_S // REALTIME_INTERVAL_S
        if not 1 <= self.window_samples <= retained:
            problems.append(
                Problem("window_samples", f"must be between 1 and {retained}, got {self.window_samples}")
            )
        if not 1 <= self.max_rounds <= 1000:
            problems.append(Problem("max_rounds", f"must be between 1 and 1000, got {self.max_rounds}"))
        if self.chunk_samples < 1:
            problems.append(Problem("chunk_samples", f"must be positive, got {self.chunk_samples}"))
        if self.max_query_values < 1:
            problems.append(Problem("max_query_values", f"must be positive, got {self.max_query_values}"))
        if self.max_query_metrics is not None and self.max_query_metrics == 0:
            problems.append(Problem("max_query_metrics", "must be positive, negative (no limit) or unset"))
        return problems


@dataclass(frozen=True)
class QueryUnit:
    """Part of one entity's query: some counters for all its instances, and what that costs."""

    entity: str  # moid
    kind: str  # "vm" or "host"
    counters: tuple[int, ...]
    cost: int


@dataclass(frozen=True, slots=True)
class Window:
    """What one entity is asked for in a query round."""

    start: datetime | None  # exclusive; None: the newest sample only (the entity's first look)
    end: datetime | None = None  # inclusive; None: up to vCenter's newest sample


FIRST_LOOK = Window(None)


def expected_samples(window: Window, now: datetime | None, most: int) -> int:
    """How many samples per metric *window* should bring (for packing; at most *most*)."""
    if window.start is None:
        return 1
    end = window.end if window.end is not None else now
    if end is None:
        return 1
    return max(1, min(most, int((end - window.start).total_seconds()) // REALTIME_INTERVAL_S))


@dataclass
class _EntityResult:
    timestamps: list[tuple[datetime, int]] = field(default_factory=list)
    # instance -> counter id -> values aligned with timestamps (None where vCenter had -1)
    series: dict[str, dict[int, list[float | None]]] = field(default_factory=dict)


def pack_queries(
    units: Iterable[QueryUnit],
    budget: int,
    samples: Mapping[str, int] | None = None,
    value_budget: int | None = None,
) -> list[list[QueryUnit]]:
    """Units packed in order into batches whose cost stays within *budget* (first fit, in order).

    With *samples* (entity -> samples expected per metric) and *value_budget*, a batch also stays
    within *value_budget* metrics × samples, so that a query catching up a backlog answers about
    as many values as a regular one, whatever vCenter's metric limit.
    """
    batches: list[list[QueryUnit]] = []
    current: list[QueryUnit] = []
    used = weight = 0
    for unit in units:
        unit_weight = unit.cost * (samples.get(unit.entity, 1) if samples else 1)
        if current and (
            used + unit.cost > budget or (value_budget is not None and weight + unit_weight > value_budget)
        ):
            batches.append(current)
            current, used, weight = [], 0, 0
        current.append(unit)
        used += unit.cost
        weight += unit_weight
    if current:
        batches.append(current)
    return batches


def split_entity(entity: str, kind: str, counters: Sequence[int], budget: int) -> list[QueryUnit]:
    """One unit for an entity, or several when its counters alone exceed *budget*.

    vCenter counts a query's metrics as the sum over its specs of their metric ids (entity ×
    counter); a wildcard instance is one metric id however many disks or datastores it expands to.
    """
    chunk = max(1, budget)
    return [
        QueryUnit(entity, kind, tuple(counters[i : i + chunk]), len(counters[i : i + chunk]))
        for i in range(0, len(counters), chunk)
    ]


def random_pct(small: float | None, medium: float | None, large: float | None) -> float | None:
    """Share of non-sequential IOs from vCenter's seek-distance histogram.

    Seeks under 64 LBNs ("small") are sequential for the array; medium and large ones are random.
    """
    if small is None or medium is None or large is None:
        return None
    total = small + medium + large
    if total <= 0:
        return None
    return 100.0 * (medium + large) / total


def _parse_ts(text: str) -> datetime:
    ts = datetime.fromisoformat(text.strip())
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def _as_utc(ts: datetime) -> datetime:
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


#: Counter lists already read, by vCenter (instance UUID, API version, build): reading one through pyVmomi
#: parses every counter's description (several hundred objects, 0.1-0.2 s of CPU alone and most of a second
#: in a busy serving process), while the list only changes with vCenter's software.
_counter_lists: dict[tuple[str, str, str], dict[str, int]] = {}
_counter_lists_lock = threading.Lock()


def counter_list(conn: VCenterConnection) -> dict[str, int]:
    """``group.name.rollup`` -> counter id of *conn*'s vCenter, read once per process and vCenter build.

    A vCenter without an instance UUID (nothing to key on) is read every time.
    """
    about = conn.content.about
    key = (
        str(getattr(about, "instanceUuid", None) or ""),
        str(getattr(about, "apiVersion", None) or ""),
        str(getattr(about, "build", None) or ""),
    )
    with _counter_lists_lock:
        known = _counter_lists.get(key)
    if known is not None and key[0]:
        return dict(known)
    with conn.translate("reading the performance counters"):
        counters = conn.content.perfManager.perfCounter
    found = {f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}": int(c.key) for c in counters or ()}
    if key[0]:
        with _counter_lists_lock:
            _counter_lists[key] = dict(found)
    return found


class PerfCollector:
    """Collects real-time samples cycle after cycle, remembering the last sample time per entity.

    Thread-safe for one cycle at a time (cycles are serialised by a lock).

    A cycle keeps ``params.workers`` queries in flight, but only one of its threads does Python work at
    a time: writing a request, parsing an answer and turning it into samples hold the collector's CPU
    lock, waiting for vCenter does not. Queries still overlap on the network, while the process's other
    threads (the API's) compete with one collection thread for the interpreter instead of several:
    with four parsing at once, every request thread of ``basil serve`` queued behind them for the GIL
    at each of its own I/O waits, and the whole API stalled for the length of a cycle.
    """

    def __init__(self, conn: VCenterConnection, params: CollectorParams | None = None) -> None:
        self._conn = conn
        self.params = params or CollectorParams()
        raise_if_problems(self.params.validate(), "collector parameters")
        self._counter_ids: dict[str, int] | None = None
        self._max_query_metrics: int | None = self.params.max_query_metrics
        self._last: dict[str, datetime] = {}
        self._cycle = threading.Lock()
        self._cycle_budget_lock = threading.Lock()
        self._cpu = threading.Lock()  # the cycle's Python work, one thread at a time (see above)
        self._metric_id_cache: dict[tuple[int, ...], list[Any]] = {}
        self._metric_xml_cache: dict[tuple[int, ...], str] = {}
        self._resumed = False

    # --- set-up, once -------------------------------------------------------------------------

    def counter_ids(self) -> dict[str, int]:
        """``group.name.rollup`` -> counter id, read from ``PerformanceManager.perfCounter`` once per vCenter
        build (:func:`counter_list`): a new connection to the same vCenter does not read it again."""
        if self._counter_ids is None:
            self._counter_ids = counter_list(self._conn)
        return self._counter_ids

    def max_query_metrics(self) -> int:
        """vCenter's ``config.vpxd.stats.maxQueryMetrics``, or the default when it is not set."""
        if self._max_query_metrics is None:
            value: int | None = None
            try:
                opts = self._conn.content.setting.QueryOptions(name=MAX_QUERY_METRICS_OPTION)
                for opt in opts or ():
                    if opt.key == MAX_QUERY_METRICS_OPTION:
                        value = int(str(opt.value).strip())
            except vim.fault.InvalidName:
                value = None
            except (ValueError, TypeError):
                log.warning(
                    "%s on %s is not a number; using %d",
                    MAX_QUERY_METRICS_OPTION,
                    self._conn.server,
                    DEFAULT_MAX_QUERY_METRICS,
                )
                value = None
            except vmodl.MethodFault as fault:
                log.warning(
                    "reading %s on %s: %s; using %d",
                    MAX_QUERY_METRICS_OPTION,
                    self._conn.server,
                    type(fault).__name__,
                    DEFAULT_MAX_QUERY_METRICS,
                )
            self._max_query_metrics = value if value not in (None, 0) else DEFAULT_MAX_QUERY_METRICS
        return self._max_query_metrics

    def forget(self, entity: str | None = None) -> None:
        """Drop the remembered last sample time (of one entity, or all): the next cycle starts fresh."""
        if entity is None:
            self._last.clear()
        else:
            self._last.pop(entity, None)

    @property
    def last_sample_times(self) -> Mapping[str, datetime]:
        return dict(self._last)

    @property
    def resumed(self) -> bool:
        """Whether :meth:`resume` has been called (a service calls it once, before the first cycle)."""
        return self._resumed

    def resume(self, bookmarks: Mapping[str, datetime]) -> int:
        """Go on after *bookmarks* (entity -> time of its newest sample kept elsewhere, e.g. the store).

        After a restart the service hands in what it had stored, so the first cycles catch up the
        samples vCenter still holds (an hour) instead of starting from the newest one. An entity
        this collector already has a bookmark for keeps its own. Returns how many were taken.
        """
        with self._cycle:
            taken = 0
            for entity, moment in bookmarks.items():
                if entity not in self._last:
                    self._last[entity] = _as_utc(moment)
                    taken += 1
            self._resumed = True
            return taken

    # --- one cycle ----------------------------------------------------------------------------

    def plan(self, inventory: Inventory) -> tuple[list[list[QueryUnit]], list[Missing]]:
        """The batches of one cycle's first round, and the counters vCenter does not have at all."""
        units, missing = self._units(inventory)
        return pack_queries(units, self._budget()), missing

    def _budget(self) -> int:
        limit = self.max_query_metrics()
        return limit if limit > 0 else UNLIMITED_BATCH_METRICS

    def _units(self, inventory: Inventory) -> tuple[list[QueryUnit], list[Missing]]:
        """Every entity's query units within the current budget, and the counters vCenter lacks."""
        ids = self.counter_ids()
        missing: list[Missing] = []
        disk_ids = []
        for name in DISK_COUNTERS:
            if name in ids:
                disk_ids.append(ids[name])
            elif self.params.vms:
                missing.append(Missing("*", "counter", name, "vCenter has no such counter"))
        host_ids = []
        for name in HOST_DATASTORE_COUNTERS:
            if name in ids:
                host_ids.append(ids[name])
            elif self.params.hosts:
                missing.append(Missing("*", "counter", name, "vCenter has no such counter"))
        budget = self._budget()
        units: list[QueryUnit] = []
        if self.params.vms and disk_ids:
            for vm in sorted(inventory.vms.values(), key=lambda v: v.moid):
                # Real-time statistics exist only for running VMs.
                if vm.powered_on and vm.disks and not vm.template:
                    units.extend(split_entity(vm.moid, "vm", disk_ids, budget))
        if self.params.hosts and host_ids:
            for host in sorted(inventory.hosts.values(), key=lambda h: h.moid):
                if host.connection_state == "connected" and host.datastores:
                    units.extend(split_entity(host.moid, "host", host_ids, budget))
        return units, missing

    def collect(
        self, inventory: Inventory, sink: Callable[[SampleChunk], None] | None = None
    ) -> CollectionReport:
        """One cycle: every running VM's disks and every connected host's datastores.

        With a *sink*, samples are handed to it chunk by chunk (at most about
        ``params.chunk_samples`` at once) and the report only counts them; without one they are
        gathered into the report (fine for a cycle or two, not for catching up a large backlog).
        If the sink raises, the cycle stops there: what it had taken is bookmarked, the rest is
        fetched again next cycle.
        """
        with self._cycle:
            if sink is not None:
                return _Cycle(self, inventory, sink).run()
            disks: list[DiskSample] = []
            hosts: list[HostDatastoreSample] = []

            def gather(chunk: SampleChunk) -> None:
                disks.extend(chunk.disk_samples)
                hosts.extend(chunk.host_datastore_samples)

            report = _Cycle(self, inventory, gather).run()
            return dataclasses.replace(report, disk_samples=tuple(disks), host_datastore_samples=tuple(hosts))

    def vcenter_time(self) -> datetime:
        """vCenter's clock (``ServiceInstance.CurrentTime``), the reference for windows and retention."""
        with self._conn.translate("reading vCenter's time"):
            now = vim.ServiceInstance("ServiceInstance", self._conn.stub).CurrentTime()
        return _as_utc(now)

    def window(self, entity: str, now: datetime | None) -> Window:
        """What *entity* is asked for next, given vCenter's time *now* (None: not read this cycle).

        An entity seen for the first time gets its newest sample only. One that is behind by more
        than a window (plus the publication grace) gets a closed window of ``window_samples``
        samples after its bookmark; otherwise everything after the bookmark. Nothing older than
        vCenter's real-time retention is asked for: it is gone.
        """
        last = self._last.get(entity)
        if last is None:
            return FIRST_LOOK
        if now is None:
            return Window(last)
        start = max(last, now - timedelta(seconds=REALTIME_RETENTION_S))
        end = start + timedelta(seconds=self.params.window_samples * REALTIME_INTERVAL_S)
        if end <= now - timedelta(seconds=PUBLICATION_GRACE_S):
            return Window(start, end)
        return Window(start)

    def _fetch(
        self, batch: list[QueryUnit], windows: Mapping[str, Window]
    ) -> list[tuple[str, _EntityResult]]:
        """One QueryPerf: written and read (CSV) on the wire when possible, else through pyVmomi."""
        if self.params.csv and self.params.fast_parse:
            with self._cpu:
                queries = self._wire_queries(batch, windows)
            wire = query_perf_csv(self._conn, queries, cpu=self._cpu)
            if wire is not None:
                return [(m.entity, _EntityResult(m.timestamps, m.series)) for m in wire]
        # pyVmomi writes and parses within the call: the slow path holds the CPU lock throughout.
        with self._cpu, self._conn.translate(f"querying performance of {len(batch)} entities"):
            specs = self._specs(batch, windows)
            metrics = self._conn.content.perfManager.QueryPerf(querySpec=specs)
            return [(m.entity._moId, self._parse(m)) for m in metrics or ()]

    def _query_within_limit(
        self, batch: list[QueryUnit], windows: Mapping[str, Window]
    ) -> list[tuple[str, _EntityResult]]:
        """QueryPerf for *batch*; if vCenter says the query is too large, halve it and lower the budget.

        The option can be changed while Basil runs, and a vCenter may count differently from
        :func:`split_entity`; refusing outright would lose the cycle.
        """
        try:
            return self._fetch(batch, windows)
        except VCenterError as err:
            if err.fault != "RestrictedByAdministrator" or sum(u.cost for u in batch) <= 1:
                raise
        cost = sum(u.cost for u in batch)
        with self._cycle_budget_lock:
            self._max_query_metrics = max(1, min(self.max_query_metrics(), cost // 2))
        log.warning(
            "%s refused a query of %d metrics; budget lowered to %d",
            self._conn.server,
            cost,
            self._max_query_metrics,
        )
        if len(batch) > 1:
            half = len(batch) // 2
            return self._query_within_limit(batch[:half], windows) + self._query_within_limit(
                batch[half:], windows
            )
        unit = batch[0]
        half = max(1, len(unit.counters) // 2)
        parts = [
            QueryUnit(unit.entity, unit.kind, unit.counters[:half], half),
            QueryUnit(unit.entity, unit.kind, unit.counters[half:], len(unit.counters) - half),
        ]
        return self._query_within_limit(parts[:1], windows) + self._query_within_limit(parts[1:], windows)

    def _stream(
        self, batches: list[list[QueryUnit]], windows: Mapping[str, Window]
    ) -> Generator[tuple[list[QueryUnit], list[tuple[str, _EntityResult]] | VCenterError], None, None]:
        """Each batch with its answer (or its error), in the order they complete.

        At most two queries per worker are submitted ahead, so answers never pile up faster than
        the caller turns them into samples and hands them on.
        """
        if not batches:
            return
        workers = min(self.params.workers, len(batches))
        pool = ThreadPoolExecutor(max_workers=workers)
        todo = iter(batches)
        inflight: dict[Future[list[tuple[str, _EntityResult]]], list[QueryUnit]] = {}
        try:
            while True:
                while len(inflight) < 2 * workers:
                    batch = next(todo, None)
                    if batch is None:
                        break
                    inflight[pool.submit(self._query_within_limit, batch, windows)] = batch
                if not inflight:
                    return
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = inflight.pop(future)
                    answer: list[tuple[str, _EntityResult]] | VCenterError
                    try:
                        answer = future.result()
                    except VCenterError as err:
                        answer = err
                    yield batch, answer
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _metric_ids(self, counters: tuple[int, ...]) -> list[Any]:
        """The metric id list for *counters* (every instance), built once and shared by all specs."""
        ids = self._metric_id_cache.get(counters)
        if ids is None:
            ids = [vim.PerformanceManager.MetricId(counterId=c, instance="*") for c in counters]
            self._metric_id_cache[counters] = ids
        return ids

    def _wire_queries(self, batch: list[QueryUnit], windows: Mapping[str, Window]) -> list[WireQuery]:
        """The specs of :meth:`_specs` as plain values, for :func:`~basil.vcenter.perf_wire.request_body`."""
        queries = []
        fmt = "csv" if self.params.csv else "normal"
        for unit in batch:
            metric_ids = self._metric_xml_cache.get(unit.counters)
            if metric_ids is None:
                metric_ids = self._metric_xml_cache[unit.counters] = metric_ids_xml(unit.counters)
            window = windows.get(unit.entity, FIRST_LOOK)
            queries.append(
                WireQuery(
                    entity_type="VirtualMachine" if unit.kind == "vm" else "HostSystem",
                    entity=unit.entity,
                    metric_ids=metric_ids,
                    interval_s=REALTIME_INTERVAL_S,
                    # first look at this entity: its newest sample only; else after the last one we have
                    start=window.start,
                    end=window.end if window.start is not None else None,
                    max_sample=1 if window.start is None else None,
                    format=fmt,
                )
            )
        return queries

    def _specs(self, batch: list[QueryUnit], windows: Mapping[str, Window]) -> list[Any]:
        specs = []
        stub = self._conn.stub
        for unit in batch:
            ref = (vim.VirtualMachine if unit.kind == "vm" else vim.HostSystem)(unit.entity, stub)
            spec = vim.PerformanceManager.QuerySpec(
                entity=ref,
                metricId=self._metric_ids(unit.counters),
                intervalId=REALTIME_INTERVAL_S,
                format="csv" if self.params.csv else "normal",
            )
            window = windows.get(unit.entity, FIRST_LOOK)
            if window.start is None:
                spec.maxSample = 1  # first look at this entity: its newest sample only
            else:
                spec.startTime = window.start  # exclusive: only samples after the last one we have
                if window.end is not None:
                    spec.endTime = window.end  # inclusive
            specs.append(spec)
        return specs

    def _parse(self, metric: Any) -> _EntityResult:
        res = _EntityResult()
        if isinstance(metric, vim.PerformanceManager.EntityMetricCSV):
            parts = (metric.sampleInfoCSV or "").split(",")
            res.timestamps = [
                (_parse_ts(parts[i + 1]), int(parts[i])) for i in range(0, len(parts) - 1, 2) if parts[i + 1]
            ]
            for series in metric.value or ():
                values: list[float | None] = []
                for raw_text in (series.value or "").split(","):
                    text = raw_text.strip()
                    v = float(text) if text else -1.0
                    values.append(None if v < 0 else v)
                res.series.setdefault(series.id.instance or "", {})[series.id.counterId] = values
        else:
            res.timestamps = [(_as_utc(s.timestamp), int(s.interval)) for s in metric.sampleInfo or ()]
            for series in metric.value or ():
                vals = [None if v < 0 else float(v) for v in series.value or ()]
                res.series.setdefault(series.id.instance or "", {})[series.id.counterId] = vals
        return res


class _Cycle:
    """One collection cycle: query rounds, answers turned into samples, chunks handed to the sink.

    Round 0 asks every entity (its newest sample on first look, else everything after its
    bookmark, within a window if it is far behind); each later round asks again only the entities
    whose closed window was answered, from the new bookmark, until none is behind or the rounds
    run out. Bookmarks move only when the sink has taken a chunk (see :meth:`flush`).
    """

    def __init__(
        self, collector: PerfCollector, inventory: Inventory, sink: Callable[[SampleChunk], None]
    ) -> None:
        self.collector = collector
        self.params = collector.params
        self.inventory = inventory
        self.sink = sink
        self.out = _Samples(inventory, {v: k for k, v in collector.counter_ids().items()})
        self.kinds: dict[str, str] = {}
        self.asked: dict[str, set[int]] = defaultdict(set)
        self.bookmarks: dict[str, datetime] = {}  # moved by the chunk being filled, once it is taken
        self.errors: list[str] = []
        self.failures: list[VCenterError] = []
        self.failed: set[str] = set()
        self.newest: datetime | None = None
        self.round = 0
        self.requests = self.chunks = self.disk_count = self.host_count = 0

    def run(self) -> CollectionReport:
        started = datetime.now(UTC)
        collector = self.collector
        units, missing = collector._units(self.inventory)
        for unit in units:
            self.kinds[unit.entity] = unit.kind
            self.asked[unit.entity].update(unit.counters)
        pending = set(self.kinds)
        known = [collector._last[e] for e in pending if e in collector._last]
        now = collector.vcenter_time() if known else None
        if now is not None:
            oldest = now - timedelta(seconds=REALTIME_RETENTION_S)
            expired = sum(1 for t in known if t < oldest)
            if expired:
                log.warning(
                    "%s: %d entities were last collected more than an hour ago; vCenter no longer has "
                    "their real-time samples before %s",
                    collector._conn.server,
                    expired,
                    oldest.isoformat(),
                )
        while pending and self.round < self.params.max_rounds:
            if self.round > 0:  # the budget may have been lowered by a refused query
                units = [u for u in collector._units(self.inventory)[0] if u.entity in pending]
            windows = {e: collector.window(e, now) for e in pending}
            pending = self._round(units, windows, now)
            self.round += 1
        for entity in self.failed:
            self._catch_up_later(entity)
        return CollectionReport(
            started_at=started,
            finished_at=datetime.now(UTC),
            missing=tuple(
                dict.fromkeys(missing + self.out.missing + self.out.absent_counter_report(self.kinds))
            ),
            requests=self.requests,
            entities=len(self.kinds),
            errors=tuple(self.errors),
            disk_sample_count=self.disk_count,
            host_sample_count=self.host_count,
            rounds=self.round,
            chunks=self.chunks,
            behind=len(pending),
        )

    def _round(self, units: list[QueryUnit], windows: Mapping[str, Window], now: datetime | None) -> set[str]:
        """Query *units* within the budgets and stream their samples; the entities to ask again."""
        most = self.params.window_samples
        samples = {e: expected_samples(w, now, most) for e, w in windows.items()}
        batches = pack_queries(units, self.collector._budget(), samples, self.params.max_query_values)
        self.requests += len(batches)
        remaining = Counter(u.entity for u in units)
        partial: dict[str, _EntityResult] = {}
        again: set[str] = set()
        failed_batches = 0
        with closing(self.collector._stream(batches, windows)) as answers:
            for batch, answer in answers:
                if isinstance(answer, VCenterError):
                    failed_batches += 1
                    self.errors.append(f"{len(batch)} entities ({batch[0].entity}..): {answer.message}")
                    self.failures.append(answer)
                    for unit in batch:
                        self.failed.add(unit.entity)
                        partial.pop(unit.entity, None)
                    continue
                # Never held while waiting for an answer (the generator waits outside this block).
                with self.collector._cpu:
                    again |= self._take(batch, answer, windows, remaining, partial)
        if self.round == 0 and batches and failed_batches == len(batches):
            raise self.failures[0]
        self.flush()
        return again

    def _take(
        self,
        batch: list[QueryUnit],
        answer: list[tuple[str, _EntityResult]],
        windows: Mapping[str, Window],
        remaining: Counter[str],
        partial: dict[str, _EntityResult],
    ) -> set[str]:
        """One batch's answer into samples (handed on by the chunk); the entities still behind."""
        again: set[str] = set()
        for moid, res in answer:
            if moid not in self.failed:
                merge_into(partial.setdefault(moid, _EntityResult()), res)
        for unit in batch:
            remaining[unit.entity] -= 1
            entity = unit.entity
            if remaining[entity] == 0 and entity not in self.failed:
                if self._entity(entity, partial.pop(entity, None), windows[entity]):
                    again.add(entity)
                if self.out.count() >= self.params.chunk_samples:
                    self.flush()
        return again

    def _entity(self, entity: str, res: _EntityResult | None, window: Window) -> bool:
        """Turn one entity's answer into samples and its next bookmark; True if it is still behind."""
        previous = self.collector._last.get(entity)
        newest: datetime | None = None
        if res is not None and res.timestamps:
            self.out.entity(entity, self.kinds[entity], self.asked[entity], res, previous)
            newest = max(ts for ts, _ in res.timestamps)
            self.newest = newest if self.newest is None else max(self.newest, newest)
        bookmark = newest
        if window.end is not None:
            # A closed window lies before vCenter's clock by more than the publication grace: all it
            # will ever hold has been answered, even where that was nothing (the VM was off, the
            # host disconnected), so the next window starts after it.
            bookmark = window.end if newest is None else max(newest, window.end)
        if bookmark is not None and (previous is None or bookmark > previous):
            self.bookmarks[entity] = bookmark
        return window.end is not None

    def flush(self) -> None:
        """Hand the samples gathered so far to the sink, then move their entities' bookmarks."""
        disks, hosts = self.out.take()
        if disks or hosts:
            self.sink(SampleChunk(tuple(disks), tuple(hosts), self.round))
            self.chunks += 1
            self.disk_count += len(disks)
            self.host_count += len(hosts)
        self.collector._last.update(self.bookmarks)
        self.bookmarks.clear()

    def _catch_up_later(self, entity: str) -> None:
        """An entity whose query failed before it ever delivered starts from this cycle's newest sample.

        Without this, an entity seen for the first time asks for its newest sample only, and the
        sample its failed query should have brought would be lost.
        """
        if self.newest is not None:
            self.collector._last.setdefault(entity, self.newest - timedelta(seconds=REALTIME_INTERVAL_S))


class _Samples:
    """Turns parsed QueryPerf results into typed samples and notes what was missing."""

    def __init__(self, inventory: Inventory, by_id: Mapping[int, str]) -> None:
        self.inventory = inventory
        self.by_id = by_id
        # counter id -> (sample field, whether bytes become KB), per table of counters: resolved once a cycle
        self._fields: dict[str, dict[int, tuple[str, bool]]] = {
            kind: {
                cid: (fields[name], fields[name] in _BYTES_TO_KB)
                for cid, name in by_id.items()
                if name in fields
            }
            for kind, fields in (("vm", DISK_COUNTERS), ("host", HOST_DATASTORE_COUNTERS))
        }
        self.uuids = inventory.datastores_by_uuid()
        self.names = {ds.name: ds.moid for ds in inventory.datastores.values()}
        self.disks: list[DiskSample] = []
        self.hosts: list[HostDatastoreSample] = []
        # Ordered sets: a later round of the same cycle reports the same gaps again.
        self.gaps: dict[Missing, None] = {}
        self.absent: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)

    @property
    def missing(self) -> list[Missing]:
        return list(self.gaps)

    def count(self) -> int:
        return len(self.disks) + len(self.hosts)

    def take(self) -> tuple[list[DiskSample], list[HostDatastoreSample]]:
        """The samples made so far; the next ones start afresh."""
        disks, hosts = self.disks, self.hosts
        self.disks, self.hosts = [], []
        return disks, hosts

    def entity(
        self, entity: str, kind: str, counters: set[int], res: _EntityResult, previous: datetime | None
    ) -> None:
        seen_counters = {c for per in res.series.values() for c in per}
        for c in sorted(counters - seen_counters):
            self.absent[(kind, self.by_id.get(c, str(c)))][entity] = None
        if kind == "vm":
            expected = {d.instance for d in self.inventory.vms[entity].disks}
        else:
            expected = set(self.inventory.hosts[entity].datastores)
        delivered: set[str] = set()
        # A server that treats startTime inclusively repeats the bookmarked sample: it is dropped.
        keep = [i for i, (ts, _) in enumerate(res.timestamps) if previous is None or ts > previous]
        for instance, per in res.series.items():
            if instance == "":
                continue  # the entity-wide aggregate; Basil works per disk / per datastore
            target = self._target(entity, kind, instance, expected)
            if target is None:
                continue
            delivered.add(target)
            if kind == "vm":
                self._disk_samples(entity, instance, res.timestamps, per, keep)
            else:
                self._host_samples(entity, target, res.timestamps, per, keep)
        for inst in sorted(expected - delivered):
            self.gaps[Missing(entity, "instance", inst, "no data from vCenter")] = None

    def _target(self, entity: str, kind: str, instance: str, expected: set[str]) -> str | None:
        """The disk instance or datastore moid a series is about (None: unknown, reported)."""
        if kind == "vm":
            if instance not in expected:
                self.gaps[Missing(entity, "unknown_instance", instance, "not a disk in the inventory")] = None
                if not _DISK_INSTANCE.fullmatch(instance):
                    return None  # "*" (the simulator echoes the wildcard), a NIC, ...: not a disk
            return instance
        resolved = self.uuids.get(instance) or self.names.get(instance)
        if resolved is None and instance in self.inventory.datastores:
            resolved = instance
        if resolved is None:
            self.gaps[Missing(entity, "unknown_instance", instance, "no such datastore")] = None
        return resolved

    def _columns(
        self, kind: str, per: Mapping[int, list[float | None]], n: int
    ) -> dict[str, list[float | None]]:
        """Sample field -> its *n* values (None where vCenter had none), resolved once per instance."""
        columns: dict[str, list[float | None]] = {}
        known = self._fields[kind]
        for cid, series in per.items():
            field_of = known.get(cid)
            if field_of is None:
                continue
            fname, to_kb = field_of
            column = series if len(series) == n else series[:n] + [None] * (n - len(series))
            if to_kb:
                column = [None if v is None else v / 1024.0 for v in column]
            columns[fname] = column
        return columns

    def _disk_samples(
        self,
        vm: str,
        instance: str,
        timestamps: Sequence[tuple[datetime, int]],
        per: Mapping[int, list[float | None]],
        keep: Sequence[int],
    ) -> None:
        n = len(timestamps)
        columns = self._columns("vm", per, n)
        present = list(columns.values())
        nothing: list[float | None] = [None] * n
        c = {f: columns.get(f, nothing) for f in DISK_COUNTERS.values()}
        small, medium, large = c["small_seeks"], c["medium_seeks"], c["large_seeks"]
        append = self.disks.append
        for i in keep:
            if not any(column[i] is not None for column in present):
                continue  # no counter had a value: not a sample
            ts, interval = timestamps[i]
            append(
                DiskSample(
                    vm=vm,
                    instance=instance,
                    timestamp=ts,
                    interval_s=interval,
                    read_iops=c["read_iops"][i],
                    write_iops=c["write_iops"][i],
                    read_latency_ms=c["read_latency_ms"][i],
                    write_latency_ms=c["write_latency_ms"][i],
                    read_oio=c["read_oio"][i],
                    write_oio=c["write_oio"][i],
                    read_io_size_kb=c["read_io_size_kb"][i],
                    write_io_size_kb=c["write_io_size_kb"][i],
                    random_pct=random_pct(small[i], medium[i], large[i]),
                    read_kbps=c["read_kbps"][i],
                    write_kbps=c["write_kbps"][i],
                    read_latency_us=c["read_latency_us"][i],
                    write_latency_us=c["write_latency_us"][i],
                )
            )

    def _host_samples(
        self,
        host: str,
        datastore: str,
        timestamps: Sequence[tuple[datetime, int]],
        per: Mapping[int, list[float | None]],
        keep: Sequence[int],
    ) -> None:
        n = len(timestamps)
        columns = self._columns("host", per, n)
        present = list(columns.values())
        nothing: list[float | None] = [None] * n
        c = {f: columns.get(f, nothing) for f in HOST_DATASTORE_COUNTERS.values()}
        append = self.hosts.append
        for i in keep:
            if not any(column[i] is not None for column in present):
                continue
            ts, interval = timestamps[i]
            append(
                HostDatastoreSample(
                    host=host,
                    datastore=datastore,
                    timestamp=ts,
                    interval_s=interval,
                    read_iops=c["read_iops"][i],
                    write_iops=c["write_iops"][i],
                    read_oio=c["read_oio"][i],
                    write_oio=c["write_oio"][i],
                    read_latency_ms=c["read_latency_ms"][i],
                    write_latency_ms=c["write_latency_ms"][i],
                    read_kbps=c["read_kbps"][i],
                    write_kbps=c["write_kbps"][i],
                    size_normalized_latency_us=c["size_normalized_latency_us"][i],
                    max_queue_depth=c["max_queue_depth"][i],
                )
            )

    def absent_counter_report(self, kinds: Mapping[str, str]) -> list[Missing]:
        """Counters some entities did not deliver: one line when all entities of a kind lacked it."""
        totals: dict[str, int] = defaultdict(int)
        for kind in kinds.values():
            totals[kind] += 1
        out: list[Missing] = []
        for (kind, name), entities in sorted(self.absent.items()):
            if len(entities) == totals[kind]:
                out.append(Missing("*", "counter", name, f"absent for all {len(entities)} {kind}s"))
            else:
                out.extend(Missing(e, "counter", name, "absent") for e in entities)
        return out


def merge_into(target: _EntityResult, other: _EntityResult) -> None:
    """Merge the result of another unit of the same entity (a split query) into *target*.

    Split queries answered a moment apart can straddle a new sample; only the sample times both
    answered are kept, so every sample has every counter.
    """
    if not target.series:
        target.timestamps, target.series = other.timestamps, dict(other.series)
        return
    if other.timestamps == target.timestamps:
        for instance, per in other.series.items():
            target.series.setdefault(instance, {}).update(per)
        return
    common = [t for t in target.timestamps if t in set(other.timestamps)]
    t_idx = {t: i for i, t in enumerate(target.timestamps)}
    o_idx = {t: i for i, t in enumerate(other.timestamps)}

    def pick(values: list[float | None], index: Mapping[tuple[datetime, int], int]) -> list[float | None]:
        return [values[index[t]] if index[t] < len(values) else None for t in common]

    series: dict[str, dict[int, list[float | None]]] = {}
    for instance, per in target.series.items():
        series[instance] = {c: pick(v, t_idx) for c, v in per.items()}
    for instance, per in other.series.items():
        series.setdefault(instance, {}).update({c: pick(v, o_idx) for c, v in per.items()})
    target.timestamps, target.series = common, series
