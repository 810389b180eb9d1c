"""The inventory read from the lab matches the scenario the lab was started with."""

from __future__ import annotations

import pytest

from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory, retrieve_raw
from basil.vcenter.types import SHARES_BY_LEVEL, Inventory

from .labvc import LabVC

pytestmark = pytest.mark.lab

GB = 2**30


@pytest.fixture(scope="module")
def inv(lab_vc: LabVC) -> Inventory:
    with VCenterConnection(lab_vc.connection_params()) as c:
        return fetch_inventory(c)


def test_hosts_clusters_and_datacenter(inv: Inventory, lab_vc: LabVC) -> None:
    sc = lab_vc.scenario
    assert [dc.name for dc in inv.datacenters.values()] == [sc["datacenter"]]
    assert sorted(h.name for h in inv.hosts.values()) == ["esx-01", "esx-02", "esx-03"]
    (cluster,) = inv.clusters.values()
    assert cluster.name == "cluster-a"
    assert sorted(inv.hosts[h].name for h in cluster.hosts) == ["esx-01", "esx-02"]
    assert inv.host_by_name("esx-03").cluster is None
    assert all(h.datacenter in inv.datacenters for h in inv.hosts.values())


def test_datastores_match_the_scenario(inv: Inventory, lab_vc: LabVC) -> None:
    expected = {d["name"]: d for d in lab_vc.scenario["datastores"]}
    assert sorted(ds.name for ds in inv.datastores.values()) == sorted(expected)
    all_hosts = {h.name for h in inv.hosts.values()}
    for ds in inv.datastores.values():
        sc = expected[ds.name]
        assert ds.capacity_bytes == sc["capacity_gb"] * GB, ds.name
        holds_files = sc.get("used_gb", 0) > 0 or any(
            d["datastore"] == ds.name for v in lab_vc.scenario["vms"] for d in v["disks"]
        )
        assert 0 < ds.free_bytes <= ds.capacity_bytes, ds.name
        assert (ds.free_bytes < ds.capacity_bytes) == holds_files, ds.name
        assert ds.type == sc.get("type", "VMFS"), ds.name
        assert ds.accessible
        assert ds.in_maintenance == bool(sc.get("maintenance")), ds.name
        assert {inv.hosts[h].name for h in ds.hosts} == set(sc.get("hosts") or all_hosts), ds.name
        assert ds.uuid
        assert ds.url.endswith(f"/{ds.uuid}/")
    (pod,) = inv.pods.values()
    assert pod.name == "pod-a"
    assert sorted(inv.datastores[d].name for d in pod.datastores) == ["ds-fast", "ds-slow"]
    assert inv.datastore_by_name("ds-fast").pod == pod.moid
    assert inv.datastore_by_name("ds-nfs").pod is None


def test_free_space_accounts_for_the_disks_on_it(inv: Inventory, lab_vc: LabVC) -> None:
    # Thick disks and the scenario's used_gb take space; free space never exceeds what is left.
    ds = inv.datastore_by_name("ds-fast")
    on_it = sum(d.capacity_bytes for vm in inv.vms.values() for d in vm.disks if d.datastore == ds.moid)
    assert ds.free_bytes <= ds.capacity_bytes - 20 * GB - on_it + GB  # a GB of slack for VM home files


def test_vms_and_disks_match_the_scenario(inv: Inventory, lab_vc: LabVC) -> None:
    expected = {v["name"]: v for v in lab_vc.scenario["vms"]}
    assert sorted(vm.name for vm in inv.vms.values()) == sorted(expected)
    for vm in inv.vms.values():
        sc = expected[vm.name]
        assert vm.host is not None
        assert inv.hosts[vm.host].name == sc["host"]
        assert vm.power_state == ("poweredOff" if sc.get("powered_on") is False else "poweredOn")
        assert [d.instance for d in vm.disks] == [d["unit"] for d in sc["disks"]]
        for disk, sd in zip(vm.disks, sc["disks"], strict=True):
            assert disk.capacity_bytes == sd["size_gb"] * GB
            assert inv.datastores[disk.datastore].name == sd["datastore"]
            assert disk.file_name.startswith(f"[{sd['datastore']}] ")
            io = sd.get("io", {})
            assert disk.io.reservation == io.get("reservation", 0)
            assert disk.io.limit == io.get("limit", -1)
            shares = io.get("shares", "normal")
            if isinstance(shares, str):
                assert (disk.io.shares_level, disk.io.shares) == (shares, SHARES_BY_LEVEL[shares])
            else:
                assert (disk.io.shares_level, disk.io.shares) == ("custom", shares)
        assert vm.home_datastore == vm.disks[0].datastore


def test_tags_on_vms_and_datastores(inv: Inventory) -> None:
    vm = lambda name: inv.vm_by_name(name).moid  # noqa: E731
    ds = lambda name: inv.datastore_by_name(name).moid  # noqa: E731
    assert inv.tagged("app/web") == (vm("web-1"),)
    assert inv.tagged("basil/exclude") == (vm("db-1"),)
    assert inv.tagged("tier/gold") == (ds("ds-fast"),)
    assert sorted(t.path for t in inv.tags_of(vm("db-1"))) == ["app/db", "basil/exclude"]
    assert {c.name for c in inv.categories.values()} >= {"app", "basil", "tier"}


def test_inventory_takes_a_few_round_trips_and_pages(lab_vc: LabVC) -> None:
    with VCenterConnection(lab_vc.connection_params()) as c:
        before = c.requests_made
        raw = retrieve_raw(c, page_size=3)  # forces ContinueRetrievePropertiesEx
        used = c.requests_made - before
        objects = len(raw)
        before = c.requests_made
        retrieve_raw(c)
        one_page = c.requests_made - before
    # create view + retrieve + continue pages + destroy view
    assert used == 2 + -(-objects // 3)
    assert one_page == 3
    assert {o.kind for o in raw.values()} >= {
        "Datacenter",
        "HostSystem",
        "Datastore",
        "VirtualMachine",
        "StoragePod",
    }
