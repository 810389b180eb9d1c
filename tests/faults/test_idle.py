"""Each lab fault injected while the service is idle (no plan applying): health turns degraded while
the fault lasts and names the vCenter, the job and the error; it clears when the job succeeds again;
collection resumes with no gap beyond the fault (issue 12, items 1 and 2)."""

from __future__ import annotations

import pytest

from tests.faults.conftest import (
    ServiceFactory,
    assert_degraded,
    assert_healthy,
    assert_no_gap,
    collect,
    problems,
    run,
)
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab


def test_session_loss_is_survived_without_a_gap(lab: LabProcess, service: ServiceFactory) -> None:
    svc = service(lab)
    collect(svc)
    assert_healthy(svc)
    lab.control("POST", "faults/session-loss")
    lab.step(3)
    collect(svc)  # the session-bound collector of the inventory is rebuilt on the new session
    link = svc.links["lab"]
    assert link.conn is not None
    assert link.conn.generation == 1
    assert link.watcher_rebuilds == 1
    model = run(svc, "model")
    assert model["outcome"] == "succeeded", model
    assert_healthy(svc)
    assert_no_gap(svc, lab)
    # Twice more: every loss is one more re-login, nothing accumulates.
    for _ in range(2):
        lab.control("POST", "faults/session-loss")
        lab.step(1)
        collect(svc)
    assert link.conn.generation == 3
    assert_no_gap(svc, lab)
    assert_healthy(svc)


def test_a_failing_perf_manager_degrades_health_until_collection_works(
    lab: LabProcess, service: ServiceFactory
) -> None:
    svc = service(lab)
    collect(svc)
    lab.control(
        "POST", "faults/rules", {"method": "QueryPerf", "fault": "SystemError", "message": "perf down"}
    )
    lab.step(2)
    failed = run(svc, "collect")
    assert failed["outcome"] == "failed", failed
    assert_degraded(svc, "collect", "perf down")
    (vc,) = svc.vcenters()
    assert vc["last_error"]
    assert "perf down" in vc["last_error"]
    assert 'basil_vcenter_job_failing{job="collect",vcenter="lab"} 1' in svc.metrics()
    lab.control("DELETE", "faults")
    lab.step(1)
    collect(svc)  # catches up the intervals the fault hid
    assert_healthy(svc)
    assert "basil_vcenter_job_failing{" not in svc.metrics()
    assert_no_gap(svc, lab)


def test_a_failing_inventory_read_degrades_health_until_it_works(
    lab: LabProcess, service: ServiceFactory
) -> None:
    svc = service(lab)
    collect(svc)
    lab.control(
        "POST", "faults/rules", {"method": "WaitForUpdatesEx", "fault": "SystemError", "message": "pc down"}
    )
    failed = run(svc, "inventory")
    assert failed["outcome"] == "failed", failed
    assert_degraded(svc, "inventory", "pc down")
    lab.control("DELETE", "faults")
    lab.step(2)
    collect(svc)  # the half-done re-read is started over by the collection's poll
    assert_degraded(svc, "inventory", "pc down")  # until the inventory job itself succeeds
    again = run(svc, "inventory")
    assert again["outcome"] == "succeeded", again
    assert_healthy(svc)
    lab.step(1)
    collect(svc)
    assert_no_gap(svc, lab)


def test_added_latency_slows_but_does_not_break_collection(lab: LabProcess, service: ServiceFactory) -> None:
    svc = service(lab)
    collect(svc)
    lab.control("PUT", "faults/latency", {"ms": 200})
    lab.step(2)
    collect(svc)
    run(svc, "inventory")
    assert_healthy(svc)
    lab.control("DELETE", "faults")
    assert_no_gap(svc, lab)


def test_an_inaccessible_datastore_keeps_the_others_collected(
    lab: LabProcess, service: ServiceFactory
) -> None:
    svc = service(lab)
    collect(svc)
    lab.control("POST", "faults/datastore", {"datastore": "3diskLUN", "accessible": False})
    lab.step(2)
    collect(svc)
    inv = svc.inventory("lab")
    assert not inv.datastore_by_name("3diskLUN").accessible
    assert_degraded(svc, "inventory", "datastore 3diskLUN of pod basil-pod is inaccessible")
    lab.control("DELETE", "faults")
    lab.step(1)
    collect(svc)
    assert svc.inventory("lab").datastore_by_name("3diskLUN").accessible
    assert_healthy(svc)


def test_jobs_with_nothing_to_work_with_say_so(lab: LabProcess, service: ServiceFactory) -> None:
    svc = service(lab)
    model = run(svc, "model")
    assert model["outcome"] == "skipped", model
    assert "no samples yet" in model["message"]


def test_a_vcenter_that_cannot_be_reached_degrades_health_and_skips_recommending(
    lab: LabProcess, service: ServiceFactory
) -> None:
    from tests.ports import free_port  # noqa: PLC0415

    closed = f"127.0.0.1:{free_port()}"
    svc = service(lab, params_factory=lambda _vc: lab.connection_params(server=closed, retries=0))
    collect_run = run(svc, "collect")
    assert collect_run["outcome"] == "failed", collect_run
    recommend = run(svc, "recommend")
    assert recommend["outcome"] == "skipped", recommend
    assert "no pod could be resolved" in recommend["message"]
    health = svc.health()
    assert health["status"] == "degraded"
    assert {p["job"] for p in health["problems"]} == {"connect", "collect"}
    assert all(p["vcenter"] == "lab" for p in health["problems"])
    (vc,) = svc.vcenters()
    assert vc["next_attempt"] is not None
    assert not vc["connected"]


def test_an_automation_api_answering_503_degrades_only_tags(lab: LabProcess, service: ServiceFactory) -> None:
    lab.control("PUT", "faults/automation", {"status": 503})
    svc = service(lab)  # starts and connects: no pod of this configuration uses tags
    assert svc.links["lab"].connected
    assert_degraded(svc, "tags", "reading tags on")
    collect(svc)
    inventory = run(svc, "inventory")
    assert inventory["outcome"] == "succeeded", inventory
    assert_degraded(svc, "tags", "reading tags on")
    assert {p["job"] for p in problems(svc)} == {"tags"}
    lab.control("DELETE", "faults")
    again = run(svc, "inventory")
    assert again["outcome"] == "succeeded", again
    assert_healthy(svc)
    assert svc.inventory("lab", refresh=False).tags  # read again once the API serves


def test_an_unchanged_inventory_is_not_stored_again(lab: LabProcess, service: ServiceFactory) -> None:
    svc = service(lab)
    first = run(svc, "inventory")
    assert first["outcome"] == "succeeded", first
    assert "saved_version" in first["details"]["vcenters"]["lab"]
    again = run(svc, "inventory")  # read in full again, tags too: nothing differs
    assert again["details"]["vcenters"]["lab"] == {"unchanged": True}
    lab.control("POST", "faults/datastore", {"datastore": "os-lun", "accessible": False})
    changed = run(svc, "inventory")
    assert "saved_version" in changed["details"]["vcenters"]["lab"]
