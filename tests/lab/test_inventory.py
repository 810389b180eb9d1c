"""The lab's inventory, read with pyVmomi as the service reads it: ContainerView and the
PropertyCollector, hosts, datastores, datastore clusters, VMs and their disks; tags over the
Automation API."""

from __future__ import annotations

import ssl
from typing import Any

import pytest
import requests
from pyVim.connect import SmartStubAdapter
from pyVmomi import vim, vmodl

from tests.lab.helpers import disk, objects
from tests.lab_vcenter import LabInstance


def test_container_view_and_property_collector_see_the_scenario(lab: LabInstance, si: Any) -> None:
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    traversal = vmodl.query.PropertyCollector.TraversalSpec(
        name="view", path="view", skip=False, type=vim.view.ContainerView
    )
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])],
        propSet=[
            vmodl.query.PropertyCollector.PropertySpec(
                type=vim.VirtualMachine, pathSet=["name", "runtime.host", "runtime.powerState", "datastore"]
            )
        ],
    )
    result = content.propertyCollector.RetrievePropertiesEx(
        [spec], vmodl.query.PropertyCollector.RetrieveOptions()
    )
    rows = {o.obj: {p.name: p.val for p in o.propSet} for o in result.objects}
    by_name = {r["name"]: r for r in rows.values()}
    assert set(by_name) == {"db-1", "db-2", "web-1", "web-2"}
    assert by_name["db-1"]["runtime.host"].name == "esx-01"
    assert by_name["web-2"]["runtime.host"].name == "esx-02"
    assert all(r["runtime.powerState"] == "poweredOn" for r in rows.values())
    assert [d.name for d in by_name["web-2"]["datastore"]] == ["ds-nfs"]
    assert content.about.apiType == "VirtualCenter"


def test_disks_have_controller_units_backings_and_io_allocation(si: Any) -> None:
    vms = objects(si, vim.VirtualMachine)
    db1 = vms["db-1"]
    d0, d1 = disk(db1, "scsi0:0"), disk(db1, "scsi0:1")
    assert d0.backing.fileName == "[ds-busy] db-1/db-1.vmdk"
    assert d1.backing.fileName == "[ds-busy] db-1/db-1_1.vmdk"
    assert d1.capacityInKB == 10 * 1024 * 1024
    assert d1.backing.datastore.name == "ds-busy"
    assert d1.storageIOAllocation.limit == -1
    assert d1.storageIOAllocation.shares.level == "normal"
    assert d1.storageIOAllocation.shares.shares == 1000
    files = {f.name: f for f in db1.layoutEx.file}
    assert files["[ds-busy] db-1/db-1_1-flat.vmdk"].size == 10 * 1024**3
    assert {d.key for d in db1.layoutEx.disk} == {d0.key, d1.key}


def test_datastores_clusters_and_mounts(si: Any) -> None:
    stores = objects(si, vim.Datastore)
    busy, nfs = stores["ds-busy"], stores["ds-nfs"]
    assert busy.summary.type == "VMFS"
    assert busy.summary.url.startswith("ds:///vmfs/volumes/")
    assert busy.summary.url.endswith("/")
    assert busy.info.vmfs.uuid == busy.summary.url.rstrip("/").rsplit("/", 1)[1]
    assert busy.summary.capacity == 2000 * 1024**3
    used = (20 + 10 + 20 + 10) * 1024**3  # the disks on ds-busy
    assert busy.summary.capacity - busy.summary.freeSpace > used
    assert busy.summary.accessible
    assert busy.summary.maintenanceMode == "normal"
    assert busy.iormConfiguration.enabled
    assert busy.iormConfiguration.congestionThreshold == 30
    assert nfs.summary.type == "NFS"
    assert [m.key.name for m in nfs.host] == ["esx-02"]
    assert {m.key.name for m in busy.host} == {"esx-01", "esx-02"}
    pods = objects(si, vim.StoragePod)
    pod = pods["pod-1"]
    assert {c.name for c in pod.childEntity} == {"ds-busy", "ds-idle"}
    assert pod.summary.capacity == busy.summary.capacity + stores["ds-idle"].summary.capacity


def test_tags_over_the_automation_api(lab: LabInstance, si: Any) -> None:
    http = requests.Session()
    http.trust_env = False  # else REQUESTS_CA_BUNDLE overrides the session's verify
    http.verify = str(lab.ca_pem)
    res = http.post(lab.base_url + "/api/session", auth=(lab.user, lab.password))
    assert res.status_code == 201
    http.headers["vmware-api-session-id"] = res.json()

    def get(path: str) -> Any:
        res = http.get(lab.base_url + path)
        res.raise_for_status()
        return res.json()

    categories = {get(f"/api/cis/tagging/category/{c}")["name"] for c in get("/api/cis/tagging/category")}
    assert categories == {"basil-tier", "app", "basil"}
    vms = objects(si, vim.VirtualMachine)
    res = http.post(
        lab.base_url + "/api/cis/tagging/tag-association?action=list-attached-tags-on-objects",
        json={"object_ids": [{"type": "VirtualMachine", "id": vms["web-1"]._moId}]},
    )
    res.raise_for_status()
    names = {get(f"/api/cis/tagging/tag/{t}")["name"] for t in res.json()[0]["tag_ids"]}
    assert names == {"web", "exclude"}


def test_only_the_configured_user_logs_in(lab: LabInstance) -> None:
    stub = SmartStubAdapter(
        host=lab.host, port=lab.port, sslContext=ssl.create_default_context(cafile=str(lab.ca_pem))
    )
    try:
        sessions = vim.ServiceInstance("ServiceInstance", stub).RetrieveContent().sessionManager
        with pytest.raises(vim.fault.InvalidLogin):
            sessions.Login(lab.user, "wrong")
        with pytest.raises(vim.fault.InvalidLogin):
            sessions.Login("someone-else", lab.password)
        assert sessions.Login(lab.user, lab.password).userName == lab.user
        sessions.Logout()
    finally:
        stub.DropConnections()
