"""Inventory is re-read in full by the inventory job: a datastore moved into a datastore cluster of the
stock simulator is seen, and pods that then share it are reported (issue 12, item 4). A module of its
own: the move cannot be undone on the stock model (it refuses a move back), so it gets its own."""

from __future__ import annotations

import pytest

from basil.config import PodConfig
from basil.vcenter._vmomi import vim
from basil.vcenter.actions import follow_task
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from tests.lab_vcenter import LabInstance
from tests.stock.conftest import StockService, stock_params

pytestmark = pytest.mark.lab


def test_a_datastore_moved_into_a_datastore_cluster_is_seen_and_overlaps_reported(
    stock: LabInstance, stock_service: StockService
) -> None:
    pods = (
        PodConfig(name="pod0", vcenter="stock", datastore_cluster="DC0_POD0"),
        PodConfig(name="local", vcenter="stock", datastores=("LocalDS_0",)),
    )
    svc = stock_service(tags=False, pods=pods)
    assert svc.resolved_pod("pod0").datastores == ()
    with VCenterConnection(stock_params(stock)) as other:
        inv = fetch_inventory(other, with_tags=False)
        (pod,) = inv.pods.values()
        ds = inv.datastore_by_name("LocalDS_0")
        task = other.ref(vim.StoragePod, pod.moid).MoveIntoFolder_Task([other.ref(vim.Datastore, ds.moid)])
        follow_task(other, task, "moving LocalDS_0 into DC0_POD0")
    run = svc.run_job("inventory")
    assert run["outcome"] == "succeeded", run
    assert svc.resolved_pod("pod0").datastores == (ds.moid,)
    assert run["details"]["overlaps"] == [f"pods pod0 and local share datastores {ds.moid} on stock"]
    health = svc.health()
    assert health["status"] == "degraded"
    assert any("pods pod0 and local share" in p["error"] for p in health["problems"])
