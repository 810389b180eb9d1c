"""The vCenter inventory in a few round trips, and kept current from vCenter's change feed.

One PropertyCollector request over a ContainerView of the whole tree fetches every datacenter,
cluster, host, datastore, datastore cluster and VM with just the properties Basil needs
(``RetrievePropertiesEx``, paged with ``ContinueRetrievePropertiesEx``). :class:`InventoryWatcher`
keeps a private PropertyCollector with a filter over the same view and applies the property changes
``WaitForUpdatesEx`` reports, so a relocation or an IO-setting change is seen without refetching.
Raw property values are kept per object; typed objects are rebuilt from them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from basil.vcenter._vmomi import vim, vmodl
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import VCenterError, VCenterNotFoundError
from basil.vcenter.tags import read_tags
from basil.vcenter.types import (
    ComputeCluster,
    Datacenter,
    Datastore,
    Host,
    Inventory,
    IOAllocation,
    IORMConfig,
    StoragePod,
    VirtualDisk,
    VirtualMachine,
)

log = logging.getLogger(__name__)

PAGE_SIZE = 1000

# The properties Basil reads, per managed object type. Subtypes are covered by their base type's
# entry (ClusterComputeResource by ComputeResource, StoragePod also by Folder).
PROPERTIES: Mapping[str, tuple[str, ...]] = {
    "Folder": ("name", "parent"),
    "Datacenter": ("name", "parent"),
    "ComputeResource": ("name", "parent", "host"),
    "HostSystem": (
        "name",
        "parent",
        "runtime.connectionState",
        "runtime.inMaintenanceMode",
        "datastore",
    ),
    "StoragePod": ("name", "parent", "childEntity"),
    "Datastore": (
        "name",
        "parent",
        "summary.url",
        "summary.capacity",
        "summary.freeSpace",
        "summary.accessible",
        "summary.maintenanceMode",
        "summary.type",
        "host",
        "iormConfiguration",
    ),
    "VirtualMachine": (
        "name",
        "parent",
        "runtime.host",
        "runtime.powerState",
        "config.template",
        "config.hardware.device",
        "config.files.vmPathName",
    ),
}

_VIEW_TYPES = ("Folder", "Datacenter", "ComputeResource", "HostSystem", "Datastore", "VirtualMachine")

# Controller class -> prefix of the performance instance id ("scsi0:1", "ide0:0", "nvme0:1").
_CONTROLLER_PREFIX: tuple[tuple[type[Any], str], ...] = (
    (vim.vm.device.VirtualSCSIController, "scsi"),
    (vim.vm.device.VirtualIDEController, "ide"),
    (vim.vm.device.VirtualSATAController, "sata"),
    (vim.vm.device.VirtualNVMEController, "nvme"),
)


class RawObject:
    """The properties of one managed object as vCenter sent them (pyVmomi values)."""

    __slots__ = ("kind", "moid", "props")

    def __init__(self, kind: str, moid: str) -> None:
        self.kind = kind
        self.moid = moid
        self.props: dict[str, Any] = {}


RawStore = dict[str, RawObject]


def _moid(ref: Any) -> str | None:
    return None if ref is None else str(ref._moId)


def _vim_type(name: str) -> Any:
    return getattr(vim, name)


def filter_spec(view: Any) -> Any:
    """The PropertyFilterSpec: every object in *view* with the properties in :data:`PROPERTIES`."""
    traversal = vmodl.query.PropertyCollector.TraversalSpec(
        name="view", type=vim.view.ContainerView, path="view", skip=False
    )
    obj_spec = vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])
    prop_specs = [
        vmodl.query.PropertyCollector.PropertySpec(type=_vim_type(kind), pathSet=list(paths), all=False)
        for kind, paths in PROPERTIES.items()
    ]
    return vmodl.query.PropertyCollector.FilterSpec(objectSet=[obj_spec], propSet=prop_specs)


def create_view(conn: VCenterConnection) -> Any:
    content = conn.content
    with conn.translate("creating a container view of the inventory"):
        return content.viewManager.CreateContainerView(
            container=content.rootFolder, type=[_vim_type(t) for t in _VIEW_TYPES], recursive=True
        )


def retrieve_raw(conn: VCenterConnection, page_size: int = PAGE_SIZE) -> RawStore:
    """Every object's properties via RetrievePropertiesEx, following continuation tokens."""
    view = create_view(conn)
    pc = conn.content.propertyCollector
    raw: RawStore = {}
    try:
        with conn.translate("reading the inventory"):
            options = vmodl.query.PropertyCollector.RetrieveOptions(maxObjects=page_size)
            result = pc.RetrievePropertiesEx(specSet=[filter_spec(view)], options=options)
            pages = 0
            while result is not None:
                pages += 1
                for oc in result.objects:
                    obj = raw.setdefault(oc.obj._moId, RawObject(oc.obj._wsdlName, oc.obj._moId))
                    for dp in oc.propSet or ():
                        obj.props[dp.name] = dp.val
                if not result.token:
                    break
                result = pc.ContinueRetrievePropertiesEx(token=result.token)
            log.debug("inventory of %s: %d objects in %d page(s)", conn.server, len(raw), pages)
    finally:
        with conn.translate("destroying the container view"):
            view.DestroyView()
    return raw


def fetch_inventory(
    conn: VCenterConnection, *, with_tags: bool = True, page_size: int = PAGE_SIZE
) -> Inventory:
    """The whole inventory of *conn*'s vCenter, tags included unless *with_tags* is false.

    Tags that cannot be read leave the inventory without tags and say why in ``tags_error``.
    """
    raw = retrieve_raw(conn, page_size)
    inv = build_inventory(conn.server, raw)
    if with_tags:
        try:
            categories, tags, assignments = read_tags(conn)
        except VCenterError as err:
            log.warning("tags of %s: %s", conn.server, err.message)
            return replace(inv, tags_error=err.message)
        inv = replace(inv, categories=categories, tags=tags, tag_assignments=assignments)
    return inv


# --- raw -> typed -------------------------------------------------------------------------------


def _datacenter_of(moid: str | None, raw: RawStore) -> str:
    seen = 0
    while moid is not None and seen < 64:  # a parent chain is never that deep; guards a cycle
        obj = raw.get(moid)
        if obj is None:
            return ""
        if obj.kind == "Datacenter":
            return moid
        moid = _moid(obj.props.get("parent"))
        seen += 1
    return ""


def _controller_names(devices: Iterable[Any]) -> dict[int, str]:
    names: dict[int, str] = {}
    for dev in devices:
        for cls, prefix in _CONTROLLER_PREFIX:
            if isinstance(dev, cls):
                names[dev.key] = f"{prefix}{dev.busNumber}"
                break
    return names


def io_allocation_of(disk: Any) -> IOAllocation:
    alloc = getattr(disk, "storageIOAllocation", None)
    if alloc is None:
        return IOAllocation()
    shares = getattr(alloc, "shares", None)
    level = str(getattr(shares, "level", None) or "normal")
    count = int(getattr(shares, "shares", None) or 0)
    limit = alloc.limit if alloc.limit is not None else -1
    return IOAllocation(
        reservation=int(alloc.reservation or 0),
        limit=int(limit),
        shares_level=level,
        shares=count if count > 0 else {"low": 500, "normal": 1000, "high": 2000}.get(level, 1000),
    )


def disks_of(devices: Iterable[Any]) -> tuple[VirtualDisk, ...]:
    """The VM's virtual disks with their ``scsiX:Y`` instance ids, in device-key order."""
    devices = list(devices or ())
    controllers = _controller_names(devices)
    disks = []
    for dev in devices:
        if not isinstance(dev, vim.vm.device.VirtualDisk):
            continue
        ctrl = controllers.get(dev.controllerKey, f"ctrl{dev.controllerKey}")
        backing = dev.backing
        capacity = dev.capacityInBytes or (dev.capacityInKB or 0) * 1024
        disks.append(
            VirtualDisk(
                key=int(dev.key),
                instance=f"{ctrl}:{dev.unitNumber}",
                label=str(dev.deviceInfo.label) if dev.deviceInfo is not None else f"disk {dev.key}",
                capacity_bytes=int(capacity),
                datastore=_moid(getattr(backing, "datastore", None)) or "",
                file_name=str(getattr(backing, "fileName", "") or ""),
                thin=bool(getattr(backing, "thinProvisioned", False)),
                io=io_allocation_of(dev),
            )
        )
    return tuple(sorted(disks, key=lambda d: d.key))


def _iorm(cfg: Any) -> IORMConfig:
    if cfg is None:
        return IORMConfig()
    return IORMConfig(
        enabled=bool(cfg.enabled),
        threshold_mode=str(cfg.congestionThresholdMode or "automatic"),
        threshold_ms=int(cfg.congestionThreshold or 30),
        peak_pct=int(cfg.percentOfPeakThroughput or 90),
    )


def _mounted_hosts(mounts: Iterable[Any]) -> tuple[str, ...]:
    hosts = []
    for m in mounts or ():
        info = getattr(m, "mountInfo", None)
        if info is not None and (info.mounted is False or info.accessible is False):
            continue
        moid = _moid(m.key)
        if moid:
            hosts.append(moid)
    return tuple(sorted(hosts))


def _home_datastore(path: str | None, names: Mapping[tuple[str, str], str], dc: str) -> str | None:
    if not path or not path.startswith("["):
        return None
    name = path[1 : path.find("]")]
    return names.get((dc, name))


def build_vm(obj: RawObject, raw: RawStore, ds_names: Mapping[tuple[str, str], str]) -> VirtualMachine:
    p = obj.props
    host = _moid(p.get("runtime.host"))
    dc = _datacenter_of(_moid(p.get("parent")), raw) or (
        _datacenter_of(_moid(raw[host].props.get("parent")), raw) if host in raw else ""
    )
    return VirtualMachine(
        moid=obj.moid,
        name=str(p.get("name", obj.moid)),
        datacenter=dc,
        host=host,
        power_state=str(p.get("runtime.powerState", "poweredOff")),
        template=bool(p.get("config.template", False)),
        disks=disks_of(p.get("config.hardware.device") or ()),
        home_datastore=_home_datastore(p.get("config.files.vmPathName"), ds_names, dc),
    )


def build_datastore(obj: RawObject, raw: RawStore) -> Datastore:
    p = obj.props
    parent = _moid(p.get("parent"))
    pod = parent if parent in raw and raw[parent].kind == "StoragePod" else None
    return Datastore(
        moid=obj.moid,
        name=str(p.get("name", obj.moid)),
        datacenter=_datacenter_of(parent, raw),
        url=str(p.get("summary.url") or ""),
        capacity_bytes=int(p.get("summary.capacity") or 0),
        free_bytes=int(p.get("summary.freeSpace") or 0),
        accessible=bool(p.get("summary.accessible", False)),
        maintenance_mode=str(p.get("summary.maintenanceMode") or "normal"),
        type=str(p.get("summary.type") or ""),
        hosts=_mounted_hosts(p.get("host") or ()),
        pod=pod,
        iorm=_iorm(p.get("iormConfiguration")),
    )


def build_host(obj: RawObject, raw: RawStore) -> Host:
    p = obj.props
    parent = _moid(p.get("parent"))
    cluster = parent if parent in raw and raw[parent].kind == "ClusterComputeResource" else None
    return Host(
        moid=obj.moid,
        name=str(p.get("name", obj.moid)),
        datacenter=_datacenter_of(parent, raw),
        cluster=cluster,
        connection_state=str(p.get("runtime.connectionState") or "connected"),
        maintenance_mode=bool(p.get("runtime.inMaintenanceMode", False)),
        datastores=tuple(sorted(m for m in (_moid(d) for d in p.get("datastore") or ()) if m)),
    )


def build_inventory(server: str, raw: RawStore, version: int = 0) -> Inventory:
    datacenters: dict[str, Datacenter] = {}
    clusters: dict[str, ComputeCluster] = {}
    hosts: dict[str, Host] = {}
    datastores: dict[str, Datastore] = {}
    pods: dict[str, StoragePod] = {}
    vms: dict[str, VirtualMachine] = {}
    for obj in raw.values():
        p = obj.props
        if obj.kind == "Datacenter":
            datacenters[obj.moid] = Datacenter(obj.moid, str(p.get("name", obj.moid)))
        elif obj.kind == "ClusterComputeResource":
            clusters[obj.moid] = ComputeCluster(
                moid=obj.moid,
                name=str(p.get("name", obj.moid)),
                datacenter=_datacenter_of(_moid(p.get("parent")), raw),
                hosts=tuple(sorted(m for m in (_moid(h) for h in p.get("host") or ()) if m)),
            )
        elif obj.kind == "HostSystem":
            hosts[obj.moid] = build_host(obj, raw)
        elif obj.kind == "Datastore":
            datastores[obj.moid] = build_datastore(obj, raw)
        elif obj.kind == "StoragePod":
            children = (_moid(c) for c in p.get("childEntity") or ())
            pods[obj.moid] = StoragePod(
                moid=obj.moid,
                name=str(p.get("name", obj.moid)),
                datacenter=_datacenter_of(_moid(p.get("parent")), raw),
                datastores=tuple(sorted(c for c in children if c and c.startswith("datastore"))),
            )
    ds_names = {(ds.datacenter, ds.name): ds.moid for ds in datastores.values()}
    for obj in raw.values():
        if obj.kind == "VirtualMachine":
            vms[obj.moid] = build_vm(obj, raw, ds_names)
    return Inventory(
        server=server,
        fetched_at=datetime.now(UTC),
        version=version,
        datacenters=datacenters,
        clusters=clusters,
        hosts=hosts,
        datastores=datastores,
        pods=pods,
        vms=vms,
    )


# --- the watcher --------------------------------------------------------------------------------

# Kinds whose change can alter other objects' typed form (datacenter, cluster or pod membership).
_STRUCTURAL = frozenset({"Folder", "Datacenter", "ClusterComputeResource", "ComputeResource", "StoragePod"})


class InventoryWatcher:
    """An inventory kept current by ``WaitForUpdatesEx`` on a private PropertyCollector.

    :meth:`start` makes the initial copy (the first ``WaitForUpdatesEx`` of a new filter reports
    every object, paged by ``max_object_updates``); each :meth:`poll` applies only what changed
    since and returns the new inventory (its ``version`` one higher when something changed). Tags
    are not part of vCenter's change feed: :meth:`refresh_tags` rereads them.

    The collector, its filter, the view and the update version belong to the session that made
    them. After the connection logged in again (its ``generation`` moved on) or when vCenter no
    longer knows the collector, :meth:`poll` builds them anew on the current session and reads the
    inventory in full (:meth:`rebuild`, also what a periodic full re-read calls).

    A failure to read tags is not fatal: the inventory keeps the tags read last (none at first) and
    ``tags_error`` says what went wrong until a read succeeds.
    """

    def __init__(
        self,
        conn: VCenterConnection,
        *,
        with_tags: bool = True,
        max_object_updates: int = PAGE_SIZE,
        on_change: Callable[[Inventory, frozenset[str]], None] | None = None,
    ) -> None:
        self._conn = conn
        self._with_tags = with_tags
        self._max_object_updates = max_object_updates
        self._on_change = on_change
        self._raw: RawStore = {}
        self._version = ""
        self._collector: Any = None
        self._view: Any = None
        self._inventory: Inventory | None = None
        self._generation = -1  # the connection's generation the collector and view were made under
        self.last_changed: frozenset[str] = frozenset()
        self.rebuilds = 0  # times the collector was built again (session lost or full re-read)
        self.tags_error = ""  # why the last tag read failed ("" when it succeeded or tags are off)

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            raise RuntimeError("InventoryWatcher.start() has not been called")
        return self._inventory

    def start(self) -> Inventory:
        self._open()
        inv = build_inventory(self._conn.server, self._raw, version=0)
        if self._with_tags:
            inv = self._with_fresh_tags(inv)
        self._inventory = inv
        return inv

    def _open(self) -> None:
        """A new collector, filter and view on the current session, and every object read afresh."""
        conn = self._conn
        self._generation = conn.generation
        self._raw = {}
        self._version = ""
        with conn.translate("starting the inventory watcher"):
            self._collector = conn.content.propertyCollector.CreatePropertyCollector()
            self._view = create_view(conn)
            self._collector.CreateFilter(spec=filter_spec(self._view), partialUpdates=False)
        self._drain(wait_s=0)

    def rebuild(self) -> Inventory:
        """Read the whole inventory again through a new collector (the old one destroyed when its
        session still lives); the result is one version higher and keeps the tags read last."""
        old = self.inventory
        self._discard()
        try:
            self._open()
        except VCenterError:
            self._discard()  # nothing half-built is polled; the next poll starts over
            raise
        self.rebuilds += 1
        inv = build_inventory(old.server, self._raw, version=old.version + 1)
        inv = replace(
            inv,
            categories=old.categories,
            tags=old.tags,
            tag_assignments=old.tag_assignments,
            tags_error=old.tags_error,
        )
        if replace(inv, version=old.version, fetched_at=old.fetched_at) == old:
            self.last_changed = frozenset()
            return old  # nothing differs: the same inventory, the same version
        self._inventory = inv
        self.last_changed = frozenset(self._raw) | _known(old)
        if self._on_change is not None:
            self._on_change(inv, self.last_changed)
        return inv

    def poll(self, wait_s: float = 0) -> Inventory:
        """Apply the changes vCenter reports within *wait_s* seconds (0: only what is pending).

        After a re-login the collector of the lost session is gone: the inventory is read again in
        full on the new one (see :meth:`rebuild`).
        """
        if self._collector is None:  # a re-read failed half-way: start over
            return self.rebuild()
        if self._conn.generation != self._generation:
            log.info("inventory of %s: the session was renewed; reading it again", self._conn.server)
            return self.rebuild()
        try:
            changed = self._drain(wait_s)
        except VCenterNotFoundError:
            if self._conn.generation == self._generation:
                raise  # not a lost session: vCenter lost the collector otherwise; reported
            log.info(
                "inventory of %s: the session was lost while waiting; reading it again", self._conn.server
            )
            return self.rebuild()
        self.last_changed = frozenset(changed)
        if not changed:
            return self.inventory
        inv = self._rebuild(changed)
        self._inventory = inv
        if self._on_change is not None:
            self._on_change(inv, self.last_changed)
        return inv

    def refresh_tags(self) -> Inventory:
        """Read the tags again; the inventory gets a new version only when they changed."""
        old = self.inventory
        inv = self._with_fresh_tags(old)
        if inv == old:
            return old
        self._inventory = replace(inv, version=inv.version + 1, fetched_at=datetime.now(UTC))
        return self._inventory

    def close(self) -> None:
        conn = self._conn
        try:
            if self._generation == conn.generation:  # else they died with their session
                with conn.translate("stopping the inventory watcher"):
                    if self._collector is not None:
                        self._collector.DestroyPropertyCollector()
                    if self._view is not None:
                        self._view.DestroyView()
        finally:
            self._collector = self._view = None

    def _discard(self) -> None:
        """Let go of the collector and view, destroying them when their session still lives."""
        try:
            self.close()
        except VCenterError as err:
            log.debug("inventory of %s: dropping the old collector: %s", self._conn.server, err.message)

    def __enter__(self) -> InventoryWatcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------------

    def _with_fresh_tags(self, inv: Inventory) -> Inventory:
        try:
            categories, tags, assignments = read_tags(self._conn)
        except VCenterError as err:
            if err.message != self.tags_error:
                log.warning("tags of %s: %s", self._conn.server, err.message)
            self.tags_error = err.message
            return replace(inv, tags_error=err.message)
        self.tags_error = ""
        return replace(inv, categories=categories, tags=tags, tag_assignments=assignments, tags_error="")

    def _drain(self, wait_s: float) -> set[str]:
        """Read update sets until vCenter has nothing more (following truncation); apply them."""
        changed: set[str] = set()
        options = vmodl.query.PropertyCollector.WaitOptions(
            maxWaitSeconds=max(0, round(wait_s)), maxObjectUpdates=self._max_object_updates
        )
        with self._conn.translate("waiting for inventory updates"):
            while True:
                update = self._collector.WaitForUpdatesEx(version=self._version, options=options)
                if update is None:
                    break
                self._version = update.version
                for fs in update.filterSet or ():
                    for ou in fs.objectSet or ():
                        changed.add(ou.obj._moId)
                        self._apply(ou)
                if not update.truncated:
                    # One more immediate round only if it was truncated; otherwise we are current.
                    break
                options.maxWaitSeconds = 0
        return changed

    def _apply(self, ou: Any) -> None:
        moid = ou.obj._moId
        if ou.kind == "leave":
            self._raw.pop(moid, None)
            return
        obj = self._raw.get(moid)
        if obj is None or ou.kind == "enter":
            obj = self._raw[moid] = RawObject(ou.obj._wsdlName, moid)
        for change in ou.changeSet or ():
            if change.op in ("remove", "indirectRemove"):
                obj.props.pop(change.name, None)
            else:  # assign, add
                obj.props[change.name] = change.val

    def _rebuild(self, changed: set[str]) -> Inventory:
        old = self.inventory
        raw = self._raw
        known = _known(old)
        structural = any(
            (moid not in raw) or raw[moid].kind in _STRUCTURAL or moid not in known for moid in changed
        )
        version = old.version + 1
        if structural:
            inv = build_inventory(old.server, raw, version=version)
            return replace(
                inv,
                categories=old.categories,
                tags=old.tags,
                tag_assignments=old.tag_assignments,
                tags_error=old.tags_error,
            )
        hosts = dict(old.hosts)
        datastores = dict(old.datastores)
        vms = dict(old.vms)
        ds_names = {(ds.datacenter, ds.name): ds.moid for ds in datastores.values()}
        for moid in changed:
            obj = raw[moid]
            if obj.kind == "VirtualMachine":
                vms[moid] = build_vm(obj, raw, ds_names)
            elif obj.kind == "Datastore":
                datastores[moid] = build_datastore(obj, raw)
            elif obj.kind == "HostSystem":
                hosts[moid] = build_host(obj, raw)
        return replace(
            old,
            version=version,
            fetched_at=datetime.now(UTC),
            hosts=hosts,
            datastores=datastores,
            vms=vms,
        )


def _known(inv: Inventory) -> set[str]:
    return set(inv.vms) | set(inv.datastores) | set(inv.hosts)
