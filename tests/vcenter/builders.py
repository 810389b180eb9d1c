"""Builders of small inventories for tests that do not need the lab (descheduler's BuildTestPod style)."""

from __future__ import annotations

from datetime import UTC, datetime

from basil.vcenter.types import (
    Datacenter,
    Datastore,
    Host,
    Inventory,
    IOAllocation,
    StoragePod,
    Tag,
    TagCategory,
    VirtualDisk,
    VirtualMachine,
)


def build_disk(
    unit: int = 0, datastore: str = "datastore-1", gb: float = 10, io: IOAllocation | None = None
) -> VirtualDisk:
    return VirtualDisk(
        key=2000 + unit,
        instance=f"scsi0:{unit}",
        label=f"Hard disk {unit + 1}",
        capacity_bytes=int(gb * 2**30),
        datastore=datastore,
        file_name=f"[ds] vm/vm_{unit}.vmdk",
        io=io or IOAllocation(),
    )


def build_datastore(
    moid: str = "datastore-1", name: str = "ds1", free_gb: float = 500, **kw: object
) -> Datastore:
    fields: dict[str, object] = {
        "moid": moid,
        "name": name,
        "datacenter": "datacenter-1",
        "url": f"ds:///vmfs/volumes/{moid}-uuid/",
        "capacity_bytes": 1000 * 2**30,
        "free_bytes": int(free_gb * 2**30),
        "accessible": True,
        "maintenance_mode": "normal",
        "type": "VMFS",
        "hosts": ("host-1", "host-2"),
    }
    fields.update(kw)
    return Datastore(**fields)  # type: ignore[arg-type]


def build_inventory(vms: int = 2, disks_per_vm: int = 2) -> Inventory:
    datastores = {
        d.moid: d
        for d in (
            build_datastore("datastore-1", "ds1", pod="group-p1"),
            build_datastore("datastore-2", "ds2", pod="group-p1"),
        )
    }
    hosts = {
        h: Host(moid=h, name=f"esx{i}", datacenter="datacenter-1", cluster=None, datastores=tuple(datastores))
        for i, h in enumerate(("host-1", "host-2"))
    }
    vm_map = {}
    for i in range(vms):
        moid = f"vm-{i + 1}"
        vm_map[moid] = VirtualMachine(
            moid=moid,
            name=f"vm{i + 1}",
            datacenter="datacenter-1",
            host="host-1",
            power_state="poweredOn",
            disks=tuple(build_disk(u) for u in range(disks_per_vm)),
            home_datastore="datastore-1",
        )
    cat = TagCategory(id="cat-1", name="basil")
    tag = Tag(id="tag-1", name="gold", category_id="cat-1", category="basil")
    return Inventory(
        server="vc.example:443",
        fetched_at=datetime(2026, 1, 1, tzinfo=UTC),
        version=3,
        datacenters={"datacenter-1": Datacenter("datacenter-1", "dc")},
        hosts=hosts,
        datastores=datastores,
        pods={"group-p1": StoragePod("group-p1", "pod1", "datacenter-1", tuple(datastores))},
        vms=vm_map,
        categories={cat.id: cat},
        tags={tag.id: tag},
        tag_assignments={"vm-1": ("tag-1",), "datastore-2": ("tag-1",)},
    )
