"""The list endpoints (GET /datastores, /vms, /disks): filters, sorting, cursor paging that stays
stable while vCenter's inventory grows between pages, and bad parameters refused with 400.

Expected values come from the lab's scenario (lab/scenarios/basil-6.3.yaml) and from the lab itself
(VMs created in it with pyVmomi between two pages), not from the service's inventory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyVmomi import vim

from basil.api import create_app
from basil.app import Service
from basil.store.tokens import create_token
from basil.vcenter.connection import VCenterConnection
from tests.vcenter.labproc import LabProcess

from .conftest import PASSWORD_ENV, ROLES, SCENARIO, ApiEnv, lab_config

# The scenario: 8 VMs of 2 disks each, the OS disk on os-lun and the data disk on 6diskLUN; the
# three LUNs form the pod "basil" and carry the tag basil-tier/fc.
VMS = sorted(
    [
        "exchange-1",
        "exchange-2",
        "webserver-1",
        "webserver-2",
        "workstation-1",
        "workstation-2",
        "oltp-1",
        "oltp-2",
    ]
)
POD_DATASTORES = ["3diskLUN", "6diskLUN", "9diskLUN"]


@pytest.fixture(scope="module")
def api_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiEnv]:
    """The API on a lab of its own, paused (speed 0), started in a scratch directory: the simulator
    writes the files of the VMs the tests create relative to its working directory."""
    scratch = tmp_path_factory.mktemp("lists")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(scratch)
        lab = LabProcess.start(SCENARIO, speed=0)
    with lab:
        os.environ[PASSWORD_ENV] = lab.password
        service = Service.from_config(lab_config(lab, scratch / "basil.db"))
        service.start(periodic=False)
        tokens: dict[str, str] = {}
        with service.store.session() as session:
            for role in ROLES:
                tokens[role], _ = create_token(session, f"test-{role}", role, created_by="tests")
        try:
            yield ApiEnv(lab, service, create_app(service), tokens, service.config)
        finally:
            service.shutdown()


def walk(env: ApiEnv, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a list, page by page."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        resp = env.get(path, query_string=query)
        assert resp.status_code == 200, resp.get_data(as_text=True)
        body = resp.get_json()
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


def problem_fields(resp: Any) -> list[str]:
    assert resp.status_code == 400, resp.get_data(as_text=True)
    return [p["field"] for p in resp.get_json()["problems"]]


def create_vm(env: ApiEnv, name: str, datastore: str) -> str:
    """A new VM with one 1 GB disk on *datastore*, made in the lab through the vSphere API; its moid."""
    with VCenterConnection(env.lab.connection_params(keepalive_s=0)) as vc:
        content = vc.content
        view = content.viewManager.CreateContainerView(
            content.rootFolder, [vim.Datacenter, vim.ClusterComputeResource], True
        )
        try:
            dc = next(o for o in view.view if isinstance(o, vim.Datacenter))
            cluster = next(o for o in view.view if isinstance(o, vim.ClusterComputeResource))
        finally:
            view.DestroyView()
        controller = vim.vm.device.VirtualDeviceSpec(
            operation="add",
            device=vim.vm.device.ParaVirtualSCSIController(key=1000, busNumber=0, sharedBus="noSharing"),
        )
        disk = vim.vm.device.VirtualDeviceSpec(
            operation="add",
            fileOperation="create",
            device=vim.vm.device.VirtualDisk(
                key=2001,
                controllerKey=1000,
                unitNumber=1,
                capacityInKB=1024 * 1024,
                backing=vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
                    diskMode="persistent", fileName=f"[{datastore}]"
                ),
            ),
        )
        spec = vim.vm.ConfigSpec(
            name=name,
            numCPUs=1,
            memoryMB=128,
            guestId="otherGuest",
            files=vim.vm.FileInfo(vmPathName=f"[{datastore}]"),
            deviceChange=[controller, disk],
        )
        # The lab's datastores are directories only while the scenario is built: make the VM's one.
        content.fileManager.MakeDirectory(
            name=f"[{datastore}] {name}", datacenter=dc, createParentDirectories=True
        )
        task = dc.vmFolder.CreateVM_Task(config=spec, pool=cluster.resourcePool)
        deadline = time.monotonic() + 60
        while task.info.state not in ("success", "error"):
            assert time.monotonic() < deadline, "CreateVM_Task did not end"
            time.sleep(0.05)
        assert task.info.state == "success", task.info.error
        moid: str = task.info.result._moId
        return moid


def destroy_vm(env: ApiEnv, moid: str) -> None:
    with VCenterConnection(env.lab.connection_params(keepalive_s=0)) as vc:
        vm = vim.VirtualMachine(moid, vc.stub)
        task = vm.Destroy_Task()
        deadline = time.monotonic() + 60
        while task.info.state not in ("success", "error"):
            assert time.monotonic() < deadline, "Destroy_Task did not end"
            time.sleep(0.05)


@pytest.fixture
def added(api_env: ApiEnv) -> Iterator[list[str]]:
    """Moids of VMs a test creates in the lab, destroyed afterwards (the module's lab is shared)."""
    made: list[str] = []
    yield made
    for moid in made:
        destroy_vm(api_env, moid)
    api_env.service.inventory("lab", refresh=True)


def test_datastores_list_every_datastore_with_its_pod_and_capacity(api_env: ApiEnv) -> None:
    items = walk(api_env, "/api/v1/datastores")
    assert [d["name"] for d in items] == sorted(
        ["3diskLUN", "6diskLUN", "9diskLUN", "os-lun"], key=str.casefold
    )
    by_name = {d["name"]: d for d in items}
    assert {n: d["pod"] for n, d in by_name.items()} == {
        "3diskLUN": "basil",
        "6diskLUN": "basil",
        "9diskLUN": "basil",
        "os-lun": None,
    }
    assert by_name["os-lun"]["capacity_gb"] == pytest.approx(500)
    assert all(d["vcenter"] == "lab" for d in items)
    # The list's id is the one /datastores/{id} answers to.
    one = api_env.get(f"/api/v1/datastores/{by_name['6diskLUN']['id']}").get_json()
    assert one["name"] == "6diskLUN"


def test_datastore_filters(api_env: ApiEnv) -> None:
    assert [d["name"] for d in walk(api_env, "/api/v1/datastores", pod="basil")] == POD_DATASTORES
    assert [d["name"] for d in walk(api_env, "/api/v1/datastores", q="DISKlun")] == POD_DATASTORES
    assert [d["name"] for d in walk(api_env, "/api/v1/datastores", q="os-")] == ["os-lun"]
    assert [d["name"] for d in walk(api_env, "/api/v1/datastores", tag="basil-tier/fc")] == POD_DATASTORES
    assert [d["name"] for d in walk(api_env, "/api/v1/datastores", tag="fc")] == POD_DATASTORES
    assert walk(api_env, "/api/v1/datastores", tag="no-such/tag") == []
    assert [d["name"] for d in walk(api_env, "/api/v1/datastores", sort="-name")] == sorted(
        ["3diskLUN", "6diskLUN", "9diskLUN", "os-lun"], key=str.casefold, reverse=True
    )
    by_capacity = walk(api_env, "/api/v1/datastores", sort="-capacity_gb")
    assert by_capacity[0]["name"] == "os-lun"


def test_vms_list_with_their_datastores_and_disks(api_env: ApiEnv) -> None:
    items = walk(api_env, "/api/v1/vms", limit=3)
    assert [v["name"] for v in items] == VMS
    first = items[0]
    assert first["disks"] == 2
    assert sorted(d["name"] for d in first["datastores"]) == ["6diskLUN", "os-lun"]
    assert first["pod"] == "basil"
    vm = api_env.get(f"/api/v1/vms/{first['id']}").get_json()
    assert vm["name"] == first["name"]


def test_vm_filters(api_env: ApiEnv) -> None:
    assert [v["name"] for v in walk(api_env, "/api/v1/vms", q="EXCH")] == ["exchange-1", "exchange-2"]
    assert [v["name"] for v in walk(api_env, "/api/v1/vms", tag="workload/oltp")] == ["oltp-1", "oltp-2"]
    assert [v["name"] for v in walk(api_env, "/api/v1/vms", pod="basil")] == VMS
    assert [v["name"] for v in walk(api_env, "/api/v1/vms", datastore="6diskLUN")] == VMS
    assert walk(api_env, "/api/v1/vms", datastore="9diskLUN") == []
    assert [v["name"] for v in walk(api_env, "/api/v1/vms", sort="-name", limit=5)] == VMS[::-1]


def test_disks_list_and_filters(api_env: ApiEnv) -> None:
    items = walk(api_env, "/api/v1/disks", limit=7)
    assert len(items) == 16
    assert len({d["id"] for d in items}) == 16
    assert [(d["vm"]["name"], d["unit"]) for d in items] == [
        (v, u) for v in VMS for u in ("scsi0:0", "scsi0:1")
    ]
    oltp = walk(api_env, "/api/v1/vms", q="oltp-1")[0]
    mine = walk(api_env, "/api/v1/disks", vm=oltp["id"])
    assert [(d["unit"], d["datastore"]["name"], d["size_gb"]) for d in mine] == [
        ("scsi0:0", "os-lun", pytest.approx(15)),
        ("scsi0:1", "6diskLUN", pytest.approx(10)),
    ]
    assert all(d["vm"] == {"id": oltp["id"], "name": "oltp-1"} for d in mine)
    # The disk id is the one /disks/{id}/model answers to.
    assert api_env.get(f"/api/v1/disks/{mine[1]['id']}/model").status_code == 200
    on_lun = walk(api_env, "/api/v1/disks", datastore="6diskLUN")
    assert {d["unit"] for d in on_lun} == {"scsi0:1"}
    assert len(on_lun) == 8
    assert {d["pod"] for d in walk(api_env, "/api/v1/disks", pod="basil")} == {"basil"}
    assert len(walk(api_env, "/api/v1/disks", pod="basil")) == 8
    assert len(walk(api_env, "/api/v1/disks", q="webserver")) == 4
    assert len(walk(api_env, "/api/v1/disks", tag="workload/webserver")) == 4
    biggest = walk(api_env, "/api/v1/disks", sort="-size_gb", limit=3)
    assert [d["size_gb"] for d in biggest[:8]] == [pytest.approx(15)] * 8


def test_numeric_sorts_put_unknown_values_last(api_env: ApiEnv) -> None:
    api_env.lab.step(3)
    api_env.run_jobs("collect")
    for sort in ("iops", "-iops", "latency_ms", "-latency_ms"):
        items = walk(api_env, "/api/v1/disks", sort=sort, limit=4)
        key = sort.lstrip("-")
        known = [d[key] for d in items if d[key] is not None]
        assert known, f"no disk has {key} after a collection"
        assert known == sorted(known, reverse=sort.startswith("-"))
        assert all(d[key] is None for d in items[len(known) :]), sort


def test_paging_is_stable_when_vms_are_added_between_pages(api_env: ApiEnv, added: list[str]) -> None:
    first = api_env.get("/api/v1/vms", query_string={"limit": 3}).get_json()
    assert [v["name"] for v in first["items"]] == VMS[:3]
    # One VM sorts before the cursor (not returned: it is behind), one after (returned once).
    added.append(create_vm(api_env, "aaa-added", "9diskLUN"))
    added.append(create_vm(api_env, "zzz-added", "9diskLUN"))
    api_env.service.inventory("lab", refresh=True)
    rest = walk(api_env, "/api/v1/vms", limit=3, cursor=first["next_cursor"])
    names = [v["name"] for v in first["items"] + rest]
    assert names == [*VMS, "zzz-added"]
    # From the start again, both are there; the new disks are listed with their VM and datastore.
    assert [v["name"] for v in walk(api_env, "/api/v1/vms", limit=4)] == ["aaa-added", *VMS, "zzz-added"]
    new_disks = walk(api_env, "/api/v1/disks", datastore="9diskLUN")
    assert sorted(d["vm"]["name"] for d in new_disks) == ["aaa-added", "zzz-added"]


def test_disk_paging_is_stable_when_disks_are_added_between_pages(api_env: ApiEnv, added: list[str]) -> None:
    first = api_env.get("/api/v1/disks", query_string={"limit": 5, "sort": "-name"}).get_json()
    added.append(create_vm(api_env, "aaa-added", "3diskLUN"))
    added.append(create_vm(api_env, "zzz-added", "3diskLUN"))
    api_env.service.inventory("lab", refresh=True)
    rest = walk(api_env, "/api/v1/disks", limit=5, sort="-name", cursor=first["next_cursor"])
    seen = [(d["vm"]["name"], d["unit"]) for d in first["items"] + rest]
    expected = [*[(v, u) for v in VMS for u in ("scsi0:0", "scsi0:1")][::-1], ("aaa-added", "scsi0:1")]
    assert seen == expected


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        ("/api/v1/vms", {"cursor": "not-a-cursor"}, "query.cursor"),
        ("/api/v1/vms", {"cursor": "eyJsIjoidm1zIn0"}, "query.cursor"),  # {"l":"vms"}: no key
        ("/api/v1/vms", {"limit": "0"}, "query.limit"),
        ("/api/v1/vms", {"limit": "501"}, "query.limit"),
        ("/api/v1/vms", {"limit": "ten"}, "query.limit"),
        ("/api/v1/vms", {"sort": "latency"}, "query.sort"),
        ("/api/v1/datastores", {"sort": "--name"}, "query.sort"),
        ("/api/v1/datastores", {"vm": "vm-1"}, "query.vm"),
        ("/api/v1/vms", {"pod": "nope"}, "query.pod"),
        ("/api/v1/disks", {"datastore": "no-such-datastore"}, "query.datastore"),
        ("/api/v1/disks", {"vm": "other:vm-1"}, "query.vm"),
    ],
)
def test_bad_parameters_are_400_naming_them(
    api_env: ApiEnv, path: str, query: dict[str, str], field: str
) -> None:
    assert field in problem_fields(api_env.get(path, query_string=query))


def test_a_cursor_serves_only_its_list_and_sort_order(api_env: ApiEnv) -> None:
    vms = api_env.get("/api/v1/vms", query_string={"limit": 2}).get_json()
    assert vms["next_cursor"]
    resp = api_env.get("/api/v1/disks", query_string={"limit": 2, "cursor": vms["next_cursor"]})
    assert problem_fields(resp) == ["query.cursor"]
    assert "vms" in resp.get_json()["problems"][0]["message"]
    resp = api_env.get(
        "/api/v1/vms", query_string={"limit": 2, "sort": "-name", "cursor": vms["next_cursor"]}
    )
    assert problem_fields(resp) == ["query.cursor"]
    # The same cursor still serves its own list.
    again = api_env.get("/api/v1/vms", query_string={"limit": 2, "cursor": vms["next_cursor"]})
    assert [v["name"] for v in again.get_json()["items"]] == VMS[2:4]


def test_lists_need_a_viewer(api_env: ApiEnv) -> None:
    for path in ("/api/v1/datastores", "/api/v1/vms", "/api/v1/disks"):
        assert api_env.get(path, role=None).status_code == 401
