"""The cached read models on the lab: after every job or write they depend on, the next read shows it.

Each test changes one thing the pod and datastore views are built from (a collection, a model fit, a
plan, a recommendation, the inventory, a move) and checks the view changed with it; the last one
hammers the views from threads while jobs and writes run, then checks the cache equals a fresh build.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from basil.app import Actor, Service, views
from basil.store import Store
from tests.app.conftest import SCENARIOS, collect, lab_config
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")
POD = "basil-pod"


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


@pytest.fixture(scope="module")
def svc(lab: LabProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service (no scheduler) for the module: the tests run in order, each on what the last left."""
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('read-models')) / 'basil.db'}"
    service = Service(lab_config(lab, url), Store(url), params_factory=lambda _vc: lab.connection_params())
    service.start(scheduler=False)
    yield service
    service.shutdown()


def by_name(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in view["datastores"]}


def a_disk_on(svc: Service, datastore: str) -> dict[str, Any]:
    """A data disk (in the pod) on *datastore*, as the VM view shows it."""
    inv = svc.inventory("lab", refresh=False)
    for vm in sorted(inv.vms.values(), key=lambda v: v.name):
        view = svc.vm(vm.moid)
        for disk in view["disks"]:
            if disk["datastore_name"] == datastore:
                return {"vm": view, "disk": disk}
    raise AssertionError(f"no disk on {datastore}")


def test_samples_then_models_reach_the_views(svc: Service) -> None:
    pod = svc.pod(POD)
    assert [p["name"] for p in svc.pods()] == [POD]
    # Nothing collected, nothing modelled: no IOPS, no device model, no load.
    assert all(d["iops"] is None and d["model_status"] == "no_model" for d in pod["datastores"])
    assert not any(d["load_sum_L"] for d in pod["datastores"])
    assert not pod["imbalance"]
    datastore_id = by_name(pod)["6diskLUN"]["id"]
    assert svc.datastore(datastore_id)["model"]["status"] == "no_model"

    # Newest samples: IOPS and latency per datastore; enough intervals (about 30) for the device
    # model's OIO range to make its fit credible.
    collect(svc, 12)
    pod = svc.pod(POD)
    assert by_name(pod)["6diskLUN"]["iops"] > 0
    assert by_name(pod)["6diskLUN"]["model_status"] == "no_model"

    assert svc.run_job("model")["outcome"] == "succeeded"  # fits: P, L, N and the imbalance
    pod = svc.pod(POD)
    assert by_name(pod)["6diskLUN"]["normalized_load"] > 0
    assert pod["imbalance"] > 1.0  # BASIL §6.3: every workload on one LUN
    assert svc.pods()[0]["imbalance"] == pod["imbalance"]
    assert svc.datastore(datastore_id)["model"]["status"] == "ok"
    assert svc.datastore(datastore_id)["normalized_load"] == by_name(pod)["6diskLUN"]["normalized_load"]


def test_plans_reach_the_views(svc: Service) -> None:
    assert svc.pods()[0]["pending_moves"] == 0
    moving = a_disk_on(svc, "6diskLUN")
    plan = svc.create_plan(OPERATOR, pod=POD, moves=[{"disk": moving["disk"]["id"], "to": "9diskLUN"}])
    assert svc.pods()[0]["pending_moves"] == 1
    assert [m["disk"] for m in svc.pod(POD)["pending"]] == [moving["disk"]["id"]]
    svc.cancel_plan(plan["id"], OPERATOR)
    assert svc.pods()[0]["pending_moves"] == 0
    assert svc.pod(POD)["pending"] == []


def test_a_plan_write_builds_only_the_plans_part_of_the_pod_view(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    build = views._build_pod_view

    def counted(s: Service, pod: Any) -> dict[str, Any]:
        built.append(pod.name)
        return build(s, pod)

    monkeypatch.setattr(views, "_build_pod_view", counted)
    before = svc.pods()[0]
    built.clear()
    moving = a_disk_on(svc, "6diskLUN")
    plan = svc.create_plan(OPERATOR, pod=POD, moves=[{"disk": moving["disk"]["id"], "to": "9diskLUN"}])
    after = svc.pods()[0]
    assert after["pending_moves"] == before["pending_moves"] + 1  # the write shows
    assert {k: v for k, v in after.items() if k != "pending_moves"} == {
        k: v for k, v in before.items() if k != "pending_moves"
    }
    assert list(after) == list(before)  # the same fields in the same order
    svc.cancel_plan(plan["id"], OPERATOR)
    assert svc.pod(POD)["pending_moves"] == before["pending_moves"]
    assert built == []  # neither write built the rest of the view again


def test_a_recommendation_reaches_the_views(svc: Service) -> None:
    before = svc.pods()[0]["last_recommendation"]
    rec = svc.recommend_now(POD, OPERATOR)
    assert rec["moves"]
    last = svc.pods()[0]["last_recommendation"]
    assert last is not None
    assert last["id"] == rec["id"]
    assert last != before
    assert svc.pod(POD)["last_recommendation"]["id"] == rec["id"]


def test_an_inventory_change_reaches_the_views_at_the_next_poll(svc: Service, lab: LabProcess) -> None:
    ident = by_name(svc.pod(POD))["3diskLUN"]["id"]
    assert svc.datastore(ident)["accessible"] is True
    lab.set_accessible("3diskLUN", False)
    try:
        collect(svc, 1, pause_s=0)  # every collection polls the inventory first
        assert by_name(svc.pod(POD))["3diskLUN"]["accessible"] is False
        assert svc.datastore(ident)["accessible"] is False
    finally:
        lab.set_accessible("3diskLUN", True)
        collect(svc, 1, pause_s=0)
    assert svc.datastore(ident)["accessible"] is True


def test_a_move_shows_in_the_views_as_soon_as_it_ends(svc: Service) -> None:
    moving = a_disk_on(svc, "6diskLUN")
    free_before = by_name(svc.pod(POD))["9diskLUN"]["free_gb"]
    plan = svc.create_plan(OPERATOR, pod=POD, moves=[{"disk": moving["disk"]["id"], "to": "9diskLUN"}])
    svc.apply_plan(plan["id"], OPERATOR)
    done = svc.wait_for_plan(plan["id"], timeout_s=300)
    assert done["state"] == "succeeded", done
    # No job ran since: the executor polled the inventory when the move ended.
    disk = next(d for d in svc.vm(moving["vm"]["id"])["disks"] if d["id"] == moving["disk"]["id"])
    assert disk["datastore_name"] == "9diskLUN"
    pod = svc.pod(POD)
    assert by_name(pod)["9diskLUN"]["free_gb"] < free_before
    assert [m["disk"] for m in pod["recent_moves"]][:1] == [moving["disk"]["id"]]
    assert pod["pending_moves"] == 0


def test_concurrent_reads_during_jobs_and_writes_end_equal_to_a_fresh_build(svc: Service) -> None:
    stop = threading.Event()
    failures: list[BaseException] = []
    datastore_ids = [d["id"] for d in svc.pod(POD)["datastores"]]

    def reader() -> None:
        try:
            while not stop.is_set():
                svc.pods()
                svc.pod(POD)
                for ident in datastore_ids:
                    svc.datastore(ident)
        except BaseException as err:  # reported by the test below
            failures.append(err)

    readers = [threading.Thread(target=reader) for _ in range(4)]
    for t in readers:
        t.start()
    try:
        moving = a_disk_on(svc, "6diskLUN")
        move = {"disk": moving["disk"]["id"], "to": "3diskLUN"}
        for _ in range(3):
            collect(svc, 1, pause_s=0.2)
            assert svc.run_job("model")["outcome"] == "succeeded"
            plan = svc.create_plan(OPERATOR, pod=POD, moves=[move])
            svc.recommend_now(POD, OPERATOR)
            svc.cancel_plan(plan["id"], OPERATOR)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert failures == []
    cached = (svc.pods(), svc.pod(POD), [svc.datastore(i) for i in datastore_ids])
    svc.cache.clear()
    fresh = (svc.pods(), svc.pod(POD), [svc.datastore(i) for i in datastore_ids])
    assert cached == fresh
