"""Real-time (20 s) performance collection: per-disk workload samples and per-host datastore samples.

Datastores have no real-time counters of their own, so device samples come from the host-level
``datastore.*`` counters (instance = the datastore's UUID) and workload samples from the VM-level
``virtualDisk.*`` counters (instance = ``scsi0:1``). Counter ids are resolved by name once; queries
are packed so that entities × counters × instances stay within vCenter's
``config.vpxd.stats.maxQueryMetrics``, and several are in flight at once. Each entity is asked only
for samples newer than the last one it delivered, so a cycle fetches each 20 s sample exactly once.
A counter or instance vCenter does not deliver is reported, never fatal.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from basil.errors import Problem, raise_if_problems
from basil.vcenter._vmomi import vim, vmodl
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import VCenterError
from basil.vcenter.perf_wire import query_perf_csv
from basil.vcenter.types import CollectionReport, DiskSample, HostDatastoreSample, Inventory, Missing

log = logging.getLogger(__name__)

REALTIME_INTERVAL_S = 20
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
_SEEKS = ("small_seeks", "medium_seeks", "large_seeks")


@dataclass(frozen=True)
class CollectorParams:
    """How a collection cycle is run."""

    workers: int = 4  # QueryPerf requests in flight
    max_query_metrics: int | None = None  # None: read it from vCenter's OptionManager
    csv: bool = True  # ask for PerfEntityMetricCSV: far fewer XML elements to parse
    fast_parse: bool = True  # read CSV answers with ElementTree instead of pyVmomi (perf_wire)
    vms: bool = True
    hosts: bool = True

    def validate(self) -> list[Problem]:
        problems = []
        if not 1 <= self.workers <= 32:
            problems.append(Problem("workers", f"must be between 1 and 32, got {self.workers}"))
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


@dataclass
class _EntityResult:
    timestamps: list[tuple[datetime, int]] = field(default_factory=list)
    # instance -> counter id -> values aligned with timestamps (None where vCenter had -1)
    series: dict[str, dict[int, list[float | None]]] = field(default_factory=dict)


def pack_queries(units: Iterable[QueryUnit], budget: int) -> list[list[QueryUnit]]:
    """Units packed in order into batches whose cost stays within *budget* (first fit, in order)."""
    batches: list[list[QueryUnit]] = []
    current: list[QueryUnit] = []
    used = 0
    for unit in units:
        if current and used + unit.cost > budget:
            batches.append(current)
            current, used = [], 0
        current.append(unit)
        used += unit.cost
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


class PerfCollector:
    """Collects real-time samples cycle after cycle, remembering the last sample time per entity.

    Thread-safe for one cycle at a time (cycles are serialised by a lock).
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
        self._metric_id_cache: dict[tuple[int, ...], list[Any]] = {}

    # --- set-up, once -------------------------------------------------------------------------

    def counter_ids(self) -> dict[str, int]:
        """``group.name.rollup`` -> counter id, read once from ``PerformanceManager.perfCounter``."""
        if self._counter_ids is None:
            with self._conn.translate("reading the performance counters"):
                counters = self._conn.content.perfManager.perfCounter
            self._counter_ids = {
                f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}": int(c.key) for c in counters or ()
            }
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

    # --- one cycle ----------------------------------------------------------------------------

    def plan(self, inventory: Inventory) -> tuple[list[list[QueryUnit]], list[Missing]]:
        """The batches of one cycle, and the counters vCenter does not have at all."""
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
        limit = self.max_query_metrics()
        budget = limit if limit > 0 else UNLIMITED_BATCH_METRICS
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
        return pack_queries(units, budget), missing

    def collect(self, inventory: Inventory) -> CollectionReport:
        """One cycle: every running VM's disks and every connected host's datastores."""
        with self._cycle:
            return self._collect(inventory)

    def _collect(self, inventory: Inventory) -> CollectionReport:
        started = datetime.now(UTC)
        batches, missing = self.plan(inventory)
        by_id = {v: k for k, v in self.counter_ids().items()}
        results: dict[str, _EntityResult] = {}
        errors: list[str] = []
        failures: list[VCenterError] = []
        failed_entities: set[str] = set()
        lock = threading.Lock()

        def run(batch: list[QueryUnit]) -> None:
            try:
                metrics = self._query_within_limit(batch)
            except VCenterError as err:
                with lock:
                    errors.append(f"{len(batch)} entities ({batch[0].entity}..): {err.message}")
                    failures.append(err)
                    failed_entities.update(u.entity for u in batch)
                return
            parsed = metrics
            with lock:
                for moid, res in parsed:
                    merge_into(results.setdefault(moid, _EntityResult()), res)

        if batches:
            with ThreadPoolExecutor(max_workers=min(self.params.workers, len(batches))) as pool:
                list(pool.map(run, batches))
        if batches and len(failures) == len(batches):
            raise failures[0]

        disks, host_samples, found_missing = self._samples(inventory, batches, results, by_id)
        self._catch_up_later(failed_entities, disks, host_samples)
        entities = len({u.entity for b in batches for u in b})
        return CollectionReport(
            started_at=started,
            finished_at=datetime.now(UTC),
            disk_samples=tuple(disks),
            host_datastore_samples=tuple(host_samples),
            missing=tuple(missing + found_missing),
            requests=len(batches),
            entities=entities,
            errors=tuple(errors),
        )

    def _catch_up_later(
        self, failed: set[str], disks: list[DiskSample], host_samples: list[HostDatastoreSample]
    ) -> None:
        """Entities whose query failed before they ever delivered start from this cycle's newest sample.

        Without this, an entity seen for the first time asks for its newest sample only, and the
        sample its failed query should have brought would be lost.
        """
        times = [s.timestamp for s in disks] + [s.timestamp for s in host_samples]
        if not times:
            return
        since = max(times) - timedelta(seconds=REALTIME_INTERVAL_S)
        for entity in failed:
            self._last.setdefault(entity, since)

    def _fetch(self, batch: list[QueryUnit]) -> list[tuple[str, _EntityResult]]:
        """One QueryPerf: CSV read off the wire when possible, else through pyVmomi."""
        specs = self._specs(batch)
        if self.params.csv and self.params.fast_parse:
            wire = query_perf_csv(self._conn, specs)
            if wire is not None:
                return [(m.entity, _EntityResult(m.timestamps, m.series)) for m in wire]
        with self._conn.translate(f"querying performance of {len(batch)} entities"):
            metrics = self._conn.content.perfManager.QueryPerf(querySpec=specs)
        return [(m.entity._moId, self._parse(m)) for m in metrics or ()]

    def _query_within_limit(self, batch: list[QueryUnit]) -> list[tuple[str, _EntityResult]]:
        """QueryPerf for *batch*; if vCenter says the query is too large, halve it and lower the budget.

        The option can be changed while Basil runs, and a vCenter may count differently from
        :func:`split_entity`; refusing outright would lose the cycle.
        """
        try:
            return self._fetch(batch)
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
            return self._query_within_limit(batch[:half]) + self._query_within_limit(batch[half:])
        unit = batch[0]
        half = max(1, len(unit.counters) // 2)
        parts = [
            QueryUnit(unit.entity, unit.kind, unit.counters[:half], half),
            QueryUnit(unit.entity, unit.kind, unit.counters[half:], len(unit.counters) - half),
        ]
        return self._query_within_limit(parts[:1]) + self._query_within_limit(parts[1:])

    def _metric_ids(self, counters: tuple[int, ...]) -> list[Any]:
        """The metric id list for *counters* (every instance), built once and shared by all specs."""
        ids = self._metric_id_cache.get(counters)
        if ids is None:
            ids = [vim.PerformanceManager.MetricId(counterId=c, instance="*") for c in counters]
            self._metric_id_cache[counters] = ids
        return ids

    def _specs(self, batch: list[QueryUnit]) -> list[Any]:
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
            last = self._last.get(unit.entity)
            if last is None:
                spec.maxSample = 1  # first look at this entity: its newest sample only
            else:
                spec.startTime = last  # exclusive: only samples after the last one we have
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

    def _samples(
        self,
        inventory: Inventory,
        batches: list[list[QueryUnit]],
        results: Mapping[str, _EntityResult],
        by_id: Mapping[int, str],
    ) -> tuple[list[DiskSample], list[HostDatastoreSample], list[Missing]]:
        out = _Samples(inventory, by_id)
        asked: dict[str, set[int]] = defaultdict(set)
        kinds: dict[str, str] = {}
        for batch in batches:
            for unit in batch:
                asked[unit.entity].update(unit.counters)
                kinds[unit.entity] = unit.kind
        for entity, counters in asked.items():
            res = results.get(entity)
            if res is None or not res.timestamps:
                continue  # nothing new since the last cycle (or the query failed: see errors)
            previous = self._last.get(entity)
            out.entity(entity, kinds[entity], counters, res, previous)
            latest = max(ts for ts, _ in res.timestamps)
            if previous is None or latest > previous:
                self._last[entity] = latest
        return out.disks, out.hosts, out.missing + out.absent_counter_report(kinds)


class _Samples:
    """Turns parsed QueryPerf results into typed samples and notes what was missing."""

    def __init__(self, inventory: Inventory, by_id: Mapping[int, str]) -> None:
        self.inventory = inventory
        self.by_id = by_id
        self.uuids = inventory.datastores_by_uuid()
        self.names = {ds.name: ds.moid for ds in inventory.datastores.values()}
        self.disks: list[DiskSample] = []
        self.hosts: list[HostDatastoreSample] = []
        self.missing: list[Missing] = []
        self.absent: dict[tuple[str, str], list[str]] = defaultdict(list)

    def entity(
        self, entity: str, kind: str, counters: set[int], res: _EntityResult, previous: datetime | None
    ) -> None:
        seen_counters = {c for per in res.series.values() for c in per}
        for c in sorted(counters - seen_counters):
            self.absent[(kind, self.by_id.get(c, str(c)))].append(entity)
        if kind == "vm":
            expected = {d.instance for d in self.inventory.vms[entity].disks}
        else:
            expected = set(self.inventory.hosts[entity].datastores)
        delivered: set[str] = set()
        for instance, per in res.series.items():
            if instance == "":
                continue  # the entity-wide aggregate; Basil works per disk / per datastore
            target = self._target(entity, kind, instance, expected)
            if target is None:
                continue
            delivered.add(target)
            for i, (ts, interval) in enumerate(res.timestamps):
                if previous is not None and ts <= previous:
                    continue  # a server that treats startTime inclusively: drop the repeat
                values = self._values(kind, per, i)
                if values is not None:
                    self._add(
                        entity=entity,
                        kind=kind,
                        instance=instance,
                        target=target,
                        ts=ts,
                        interval=interval,
                        values=values,
                    )
        for inst in sorted(expected - delivered):
            self.missing.append(Missing(entity, "instance", inst, "no data from vCenter"))

    def _target(self, entity: str, kind: str, instance: str, expected: set[str]) -> str | None:
        """The disk instance or datastore moid a series is about (None: unknown, reported)."""
        if kind == "vm":
            if instance not in expected:
                self.missing.append(
                    Missing(entity, "unknown_instance", instance, "not a disk in the inventory")
                )
            return instance
        resolved = self.uuids.get(instance) or self.names.get(instance)
        if resolved is None and instance in self.inventory.datastores:
            resolved = instance
        if resolved is None:
            self.missing.append(Missing(entity, "unknown_instance", instance, "no such datastore"))
        return resolved

    def _values(
        self, kind: str, per: Mapping[int, list[float | None]], i: int
    ) -> dict[str, float | None] | None:
        fields = DISK_COUNTERS if kind == "vm" else HOST_DATASTORE_COUNTERS
        values: dict[str, float | None] = {}
        for cid, series in per.items():
            name = self.by_id.get(cid)
            if name is None or name not in fields or i >= len(series):
                continue
            v = series[i]
            fname = fields[name]
            values[fname] = v / 1024.0 if (v is not None and fname in _BYTES_TO_KB) else v
        if all(v is None for v in values.values()):
            return None
        return values

    def _add(
        self,
        *,
        entity: str,
        kind: str,
        instance: str,
        target: str,
        ts: datetime,
        interval: int,
        values: dict[str, float | None],
    ) -> None:
        if kind == "vm":
            seeks = [values.pop(s, None) for s in _SEEKS]
            self.disks.append(
                DiskSample(
                    vm=entity,
                    instance=instance,
                    timestamp=ts,
                    interval_s=interval,
                    random_pct=random_pct(*seeks),
                    **values,
                )
            )
        else:
            self.hosts.append(
                HostDatastoreSample(
                    host=entity,
                    datastore=target,
                    timestamp=ts,
                    interval_s=interval,
                    **values,
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
