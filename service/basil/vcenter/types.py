"""Plain data that leaves the vCenter adapter: inventory objects, performance samples, reports.

Nothing here imports pyVmomi, so the store, the planner and the API can use these types without the
vSphere SDKs. Every type converts to and from plain JSON-able dicts (``to_dict`` / ``from_dict``) so
an inventory snapshot or a sample can be written to the store as a document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from basil.errors import NotFoundError, Problem

#: Share values vSphere uses for the named levels of virtual disk IO shares.
SHARES_BY_LEVEL: Mapping[str, int] = MappingProxyType({"low": 500, "normal": 1000, "high": 2000})
SHARES_LEVELS = (*SHARES_BY_LEVEL, "custom")


def _frozen_map(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class IOAllocation:
    """A virtual disk's ``storageIOAllocation``: reservation and limit in IOPS, shares."""

    reservation: int = 0
    limit: int = -1  # -1 means unlimited, as in vSphere
    shares_level: str = "normal"
    shares: int = 1000

    def validate(self, where: str = "io") -> list[Problem]:
        problems: list[Problem] = []
        if self.reservation < 0:
            problems.append(Problem(f"{where}.reservation", f"must be >= 0, got {self.reservation}"))
        if self.limit != -1 and self.limit <= 0:
            problems.append(Problem(f"{where}.limit", f"must be -1 (unlimited) or > 0, got {self.limit}"))
        if self.limit > 0 and self.reservation > self.limit:
            problems.append(
                Problem(f"{where}.reservation", f"{self.reservation} is above the limit {self.limit}")
            )
        if self.shares_level not in SHARES_LEVELS:
            problems.append(Problem(f"{where}.shares_level", f"must be one of {', '.join(SHARES_LEVELS)}"))
        elif self.shares_level != "custom" and self.shares != SHARES_BY_LEVEL[self.shares_level]:
            problems.append(
                Problem(
                    f"{where}.shares",
                    f"level {self.shares_level} means {SHARES_BY_LEVEL[self.shares_level]} shares, "
                    f"got {self.shares}; use level custom for other values",
                )
            )
        if self.shares <= 0:
            problems.append(Problem(f"{where}.shares", f"must be > 0, got {self.shares}"))
        return problems

    @classmethod
    def with_shares(cls, reservation: int, limit: int, shares: int | str) -> IOAllocation:
        """An allocation from a share count or a level name ("low", "normal", "high")."""
        if isinstance(shares, str):
            return cls(reservation, limit, shares, SHARES_BY_LEVEL.get(shares, 0))
        level = next((name for name, v in SHARES_BY_LEVEL.items() if v == shares), "custom")
        return cls(reservation, limit, level, shares)


@dataclass(frozen=True)
class VirtualDisk:
    """One virtual disk of a VM; ``instance`` ("scsi0:1") is its id in the performance counters."""

    key: int
    instance: str
    label: str
    capacity_bytes: int
    datastore: str  # moid of the datastore holding the disk's backing file
    file_name: str
    thin: bool = False
    io: IOAllocation = field(default_factory=IOAllocation)

    @property
    def capacity_gb(self) -> float:
        return self.capacity_bytes / 2**30


@dataclass(frozen=True)
class VirtualMachine:
    moid: str
    name: str
    datacenter: str
    host: str | None
    power_state: str  # poweredOn, poweredOff, suspended
    template: bool = False
    disks: tuple[VirtualDisk, ...] = ()
    home_datastore: str | None = None  # where the .vmx lives

    def disk(self, instance_or_key: str | int) -> VirtualDisk:
        for d in self.disks:
            if instance_or_key in (d.instance, d.key):
                return d
        raise NotFoundError(f"VM {self.name} ({self.moid}) has no disk {instance_or_key}")

    @property
    def powered_on(self) -> bool:
        return self.power_state == "poweredOn"


@dataclass(frozen=True)
class Datacenter:
    moid: str
    name: str


@dataclass(frozen=True)
class ComputeCluster:
    moid: str
    name: str
    datacenter: str
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Host:
    moid: str
    name: str
    datacenter: str
    cluster: str | None
    connection_state: str = "connected"
    maintenance_mode: bool = False
    datastores: tuple[str, ...] = ()


@dataclass(frozen=True)
class IORMConfig:
    """Storage I/O Control on a datastore: on/off and its congestion threshold."""

    enabled: bool = False
    threshold_mode: str = "automatic"  # "manual" (threshold_ms applies) or "automatic" (peak_pct)
    threshold_ms: int = 30
    peak_pct: int = 90


@dataclass(frozen=True)
class Datastore:
    moid: str
    name: str
    datacenter: str
    url: str
    capacity_bytes: int
    free_bytes: int
    accessible: bool
    maintenance_mode: str  # normal, enteringMaintenance, inMaintenance
    type: str  # VMFS, NFS, vsan, ...
    hosts: tuple[str, ...] = ()  # hosts that have it mounted and accessible
    pod: str | None = None
    iorm: IORMConfig = field(default_factory=IORMConfig)

    @property
    def uuid(self) -> str:
        """The id vCenter uses as the performance instance of this datastore on a host.

        It is the last element of the datastore URL (``ds:///vmfs/volumes/<uuid>/``), the same
        mapping Telegraf's vSphere input uses.
        """
        return datastore_uuid_from_url(self.url)

    @property
    def in_maintenance(self) -> bool:
        return self.maintenance_mode != "normal"


def datastore_uuid_from_url(url: str) -> str:
    parts = [p for p in url.split("/") if p]
    return parts[-1] if parts else ""


@dataclass(frozen=True)
class StoragePod:
    """A datastore cluster."""

    moid: str
    name: str
    datacenter: str
    datastores: tuple[str, ...] = ()


@dataclass(frozen=True)
class TagCategory:
    id: str
    name: str
    cardinality: str = "MULTIPLE"


@dataclass(frozen=True)
class Tag:
    id: str
    name: str
    category_id: str
    category: str = ""  # the category's name, for "category/name" lookups

    @property
    def path(self) -> str:
        return f"{self.category}/{self.name}"


@dataclass(frozen=True)
class Inventory:
    """Everything Basil needs to know about one vCenter, keyed by managed object id.

    ``version`` grows by one every time a watcher applies a batch of changes; ``fetched_at`` is
    when the last change was applied (UTC).
    """

    server: str
    fetched_at: datetime
    version: int = 0
    datacenters: Mapping[str, Datacenter] = field(default_factory=dict)
    clusters: Mapping[str, ComputeCluster] = field(default_factory=dict)
    hosts: Mapping[str, Host] = field(default_factory=dict)
    datastores: Mapping[str, Datastore] = field(default_factory=dict)
    pods: Mapping[str, StoragePod] = field(default_factory=dict)
    vms: Mapping[str, VirtualMachine] = field(default_factory=dict)
    categories: Mapping[str, TagCategory] = field(default_factory=dict)
    tags: Mapping[str, Tag] = field(default_factory=dict)
    # object moid -> ids of the tags attached to it (VMs and datastores)
    tag_assignments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # why tags could not be read ("" when they were, or were not asked for); the tags are then the
    # ones read last, or none
    tags_error: str = ""

    def vm(self, moid: str) -> VirtualMachine:
        try:
            return self.vms[moid]
        except KeyError:
            raise NotFoundError(f"no VM {moid} in the inventory of {self.server}") from None

    def datastore(self, moid: str) -> Datastore:
        try:
            return self.datastores[moid]
        except KeyError:
            raise NotFoundError(f"no datastore {moid} in the inventory of {self.server}") from None

    def host(self, moid: str) -> Host:
        try:
            return self.hosts[moid]
        except KeyError:
            raise NotFoundError(f"no host {moid} in the inventory of {self.server}") from None

    def datastore_by_name(self, name: str) -> Datastore:
        for ds in self.datastores.values():
            if ds.name == name:
                return ds
        raise NotFoundError(f"no datastore named {name!r} in the inventory of {self.server}")

    def vm_by_name(self, name: str) -> VirtualMachine:
        for vm in self.vms.values():
            if vm.name == name:
                return vm
        raise NotFoundError(f"no VM named {name!r} in the inventory of {self.server}")

    def host_by_name(self, name: str) -> Host:
        for h in self.hosts.values():
            if h.name == name:
                return h
        raise NotFoundError(f"no host named {name!r} in the inventory of {self.server}")

    def datastores_by_uuid(self) -> dict[str, str]:
        """Performance instance id (datastore UUID) -> datastore moid."""
        return {ds.uuid: ds.moid for ds in self.datastores.values() if ds.uuid}

    def tags_of(self, moid: str) -> tuple[Tag, ...]:
        return tuple(self.tags[t] for t in self.tag_assignments.get(moid, ()) if t in self.tags)

    def tagged(self, path: str) -> tuple[str, ...]:
        """Moids of the objects carrying the tag ``category/name``."""
        return tuple(
            sorted(
                moid
                for moid, ids in self.tag_assignments.items()
                if any(self.tags[t].path == path for t in ids if t in self.tags)
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "fetched_at": self.fetched_at.isoformat(),
            "version": self.version,
            "datacenters": [asdict(x) for x in self.datacenters.values()],
            "clusters": [asdict(x) for x in self.clusters.values()],
            "hosts": [asdict(x) for x in self.hosts.values()],
            "datastores": [{**asdict(x), "uuid": x.uuid} for x in self.datastores.values()],
            "pods": [asdict(x) for x in self.pods.values()],
            "vms": [asdict(x) for x in self.vms.values()],
            "categories": [asdict(x) for x in self.categories.values()],
            "tags": [asdict(x) for x in self.tags.values()],
            "tag_assignments": {k: list(v) for k, v in self.tag_assignments.items()},
            "tags_error": self.tags_error or None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Inventory:
        """The inverse of :meth:`to_dict` (for snapshots read back from the store)."""

        def tup(x: Any) -> tuple[Any, ...]:
            return tuple(x or ())

        vms = {}
        for v in d.get("vms", []):
            disks = tuple(
                VirtualDisk(**{**k, "io": IOAllocation(**k.get("io", {}))}) for k in v.get("disks", [])
            )
            vms[v["moid"]] = VirtualMachine(**{**v, "disks": disks})
        datastores = {}
        for x in d.get("datastores", []):
            fields = {k: v for k, v in x.items() if k != "uuid"}
            fields["hosts"] = tup(fields.get("hosts"))
            fields["iorm"] = IORMConfig(**fields.get("iorm", {}))
            datastores[x["moid"]] = Datastore(**fields)
        return cls(
            server=d["server"],
            fetched_at=datetime.fromisoformat(d["fetched_at"]),
            version=int(d.get("version", 0)),
            datacenters={x["moid"]: Datacenter(**x) for x in d.get("datacenters", [])},
            clusters={
                x["moid"]: ComputeCluster(**{**x, "hosts": tup(x.get("hosts"))})
                for x in d.get("clusters", [])
            },
            hosts={
                x["moid"]: Host(**{**x, "datastores": tup(x.get("datastores"))}) for x in d.get("hosts", [])
            },
            datastores=datastores,
            pods={
                x["moid"]: StoragePod(**{**x, "datastores": tup(x.get("datastores"))})
                for x in d.get("pods", [])
            },
            vms=vms,
            categories={x["id"]: TagCategory(**x) for x in d.get("categories", [])},
            tags={x["id"]: Tag(**x) for x in d.get("tags", [])},
            tag_assignments={k: tup(v) for k, v in d.get("tag_assignments", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class DiskSample:
    """One real-time sample of one virtual disk (VM-level ``virtualDisk.*`` counters, one instance).

    A field is ``None`` when vCenter had no value for its counter in this sample; the collection
    report says which counters were missing. Slotted: a catch-up cycle holds tens of thousands.
    """

    vm: str
    instance: str
    timestamp: datetime  # vCenter's sample time (end of the interval), UTC
    interval_s: int
    read_iops: float | None = None
    write_iops: float | None = None
    read_latency_ms: float | None = None
    write_latency_ms: float | None = None
    read_oio: float | None = None
    write_oio: float | None = None
    read_io_size_kb: float | None = None
    write_io_size_kb: float | None = None
    random_pct: float | None = None  # share of medium and large seeks among all seeks
    read_kbps: float | None = None
    write_kbps: float | None = None
    read_latency_us: float | None = None  # readLatencyUS: the read latency in microseconds
    write_latency_us: float | None = None

    @property
    def disk_id(self) -> str:
        return f"{self.vm}:{self.instance}"

    @property
    def iops(self) -> float | None:
        if self.read_iops is None or self.write_iops is None:
            return None
        return self.read_iops + self.write_iops

    @property
    def oio(self) -> float | None:
        if self.read_oio is None or self.write_oio is None:
            return None
        return self.read_oio + self.write_oio

    @property
    def read_pct(self) -> float | None:
        iops = self.iops
        if iops is None or self.read_iops is None:
            return None
        return 100.0 * self.read_iops / iops if iops > 0 else None

    @property
    def io_size_kb(self) -> float | None:
        """IOPS-weighted mean IO size of reads and writes."""
        if None in (self.read_iops, self.write_iops, self.read_io_size_kb, self.write_io_size_kb):
            return None
        r, w = self.read_iops or 0.0, self.write_iops or 0.0
        if r + w <= 0:
            return None
        return ((self.read_io_size_kb or 0.0) * r + (self.write_io_size_kb or 0.0) * w) / (r + w)

    @property
    def latency_ms(self) -> float | None:
        """IOPS-weighted mean latency of reads and writes."""
        if None in (self.read_iops, self.write_iops, self.read_latency_ms, self.write_latency_ms):
            return None
        r, w = self.read_iops or 0.0, self.write_iops or 0.0
        if r + w <= 0:
            return None
        return ((self.read_latency_ms or 0.0) * r + (self.write_latency_ms or 0.0) * w) / (r + w)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "timestamp": self.timestamp.isoformat()}


@dataclass(frozen=True, slots=True)
class HostDatastoreSample:
    """One real-time sample of one datastore as seen by one host (host-level ``datastore.*``)."""

    host: str
    datastore: str  # moid
    timestamp: datetime
    interval_s: int
    read_iops: float | None = None
    write_iops: float | None = None
    read_oio: float | None = None
    write_oio: float | None = None
    read_latency_ms: float | None = None
    write_latency_ms: float | None = None
    read_kbps: float | None = None
    write_kbps: float | None = None
    size_normalized_latency_us: float | None = None
    max_queue_depth: float | None = None

    @property
    def iops(self) -> float | None:
        if self.read_iops is None or self.write_iops is None:
            return None
        return self.read_iops + self.write_iops

    @property
    def oio(self) -> float | None:
        if self.read_oio is None or self.write_oio is None:
            return None
        return self.read_oio + self.write_oio

    @property
    def latency_ms(self) -> float | None:
        if None in (self.read_iops, self.write_iops, self.read_latency_ms, self.write_latency_ms):
            return None
        r, w = self.read_iops or 0.0, self.write_iops or 0.0
        if r + w <= 0:
            return None
        return ((self.read_latency_ms or 0.0) * r + (self.write_latency_ms or 0.0) * w) / (r + w)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "timestamp": self.timestamp.isoformat()}


@dataclass(frozen=True)
class Missing:
    """A counter or an instance that vCenter did not deliver for an entity (never fatal)."""

    entity: str  # moid of the VM or host
    what: str  # "counter" or "instance"
    name: str  # counter name or instance id
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SampleChunk:
    """Part of a collection cycle's samples, handed to the caller's sink as soon as it is complete.

    An entity's samples of one query round are never split between chunks; the collector moves its
    per-entity bookmark past them only once the sink has returned, so a sink that raises (a store
    that is down) makes the next cycle fetch them again.
    """

    disk_samples: tuple[DiskSample, ...]
    host_datastore_samples: tuple[HostDatastoreSample, ...]
    round: int  # the cycle's query round (0: the regular one; later ones catch up a backlog)

    def __len__(self) -> int:
        return len(self.disk_samples) + len(self.host_datastore_samples)


@dataclass(frozen=True)
class CollectionReport:
    """The outcome of one real-time collection cycle.

    When the samples went to a sink chunk by chunk, ``disk_samples`` and ``host_datastore_samples``
    are empty and the counts say how many there were.
    """

    started_at: datetime
    finished_at: datetime
    disk_samples: tuple[DiskSample, ...] = ()
    host_datastore_samples: tuple[HostDatastoreSample, ...] = ()
    missing: tuple[Missing, ...] = ()
    requests: int = 0  # QueryPerf calls made
    entities: int = 0  # VMs and hosts queried
    errors: tuple[str, ...] = ()  # batches that failed (their entities are retried next cycle)
    disk_sample_count: int = 0
    host_sample_count: int = 0
    rounds: int = 0  # query rounds: 1 when no entity was behind by more than a window
    chunks: int = 0  # chunks handed to the sink (or gathered into this report)
    behind: int = 0  # entities still behind when the cycle's rounds ran out (caught up next cycle)

    @property
    def missing_counters(self) -> tuple[str, ...]:
        return tuple(sorted({m.name for m in self.missing if m.what == "counter"}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "requests": self.requests,
            "entities": self.entities,
            "rounds": self.rounds,
            "behind": self.behind,
            "disk_samples": [s.to_dict() for s in self.disk_samples],
            "host_datastore_samples": [s.to_dict() for s in self.host_datastore_samples],
            "missing": [asdict(m) for m in self.missing],
            "errors": list(self.errors),
        }
