"""A recommended swap applied against the lab (BASIL §6.3 pod, simulated time paused and stepped):

- the recommendation stores both halves with one ``swap_group``, the plan made from it keeps it, and
  the executor's re-check judges the swap whole: both halves are applied (the first half alone raises
  the imbalance, which the re-check would otherwise refuse);
- plain moves of the same plan are applied as usual;
- when vCenter fails the second half after the first moved, the plan fails and says the swap is half
  done; the first half is not moved back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from basil.app import Service
from basil.config import BalanceConfig
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.app.test_recommendations_lab import OPERATOR, POD, run_stepping
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

# Workstations and OLTP crowd 9diskLUN, both Exchange VMs 6diskLUN, the web servers 3diskLUN: the balancer
# moves a workstation to 3diskLUN; then no single move helps, but exchanging an OLTP VM and an Exchange VM
# between 9diskLUN and 6diskLUN does (the OLTP VM's move alone would raise the imbalance).
PLACEMENT = {
    "webserver-1": "3diskLUN",
    "webserver-2": "3diskLUN",
    "workstation-1": "9diskLUN",
    "workstation-2": "9diskLUN",
    "oltp-1": "9diskLUN",
    "oltp-2": "9diskLUN",
}


def scenario_with_placement(path: Path) -> Path:
    """The §6.3 scenario with the workloads' disks placed as PLACEMENT says, written to *path*."""
    blocks = (SCENARIOS / "basil-6.3.yaml").read_text(encoding="utf-8").split("\n  - name: ")
    for i, block in enumerate(blocks[1:], start=1):
        vm = block.split("\n", 1)[0].strip()
        if vm in PLACEMENT:
            head, sep, tail = block.partition('unit: "scsi0:1"')
            assert sep, vm
            blocks[i] = head + sep + tail.replace("datastore: 6diskLUN", f"datastore: {PLACEMENT[vm]}", 1)
    path.write_text("\n  - name: ".join(blocks), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabProcess]:
    scenario = scenario_with_placement(tmp_path_factory.mktemp("scenario") / "basil-6.3-swap.yaml")
    with LabProcess.start(scenario, speed=0) as lab:
        yield lab


def placed(lab: LabProcess) -> dict[str, str]:
    return {
        vm["name"]: d["datastore"]
        for vm in lab.control("GET", "/lab/placement")["vms"]
        for d in vm["disks"]
        if d["unit"] == "scsi0:1"
    }


def swap_halves(rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two halves of the recommendation's first swap (both carry its swap_group)."""
    swaps = [m for m in rec["moves"] if m["kind"] == "swap"]
    assert swaps, rec["moves"]
    assert swaps[0]["swap_group"] is not None
    halves = [m for m in rec["moves"] if m["swap_group"] == swaps[0]["swap_group"]]
    assert len(halves) == 2, rec["moves"]
    return halves[0], halves[1]


@pytest.fixture
def swappable(lab: LabProcess, make_service: ServiceFactory) -> tuple[Service, dict[str, Any]]:
    """A service on the placement above, modelled there, and its recommendation (with a swap)."""
    lab.reset()
    lab.set_speed(0)
    lab.step(2)
    balance = BalanceConfig(latency_threshold_ms=1, ping_pong_hours=0, imbalance_threshold=0.01)
    svc = make_service(lab, pod={"balance": balance})
    assert svc.run_job("collect")["outcome"] == "succeeded"
    assert placed(lab) == {**dict.fromkeys(placed(lab), "6diskLUN"), **PLACEMENT}
    lab.step(30)
    assert svc.run_job("collect")["outcome"] == "succeeded"
    assert svc.run_job("model")["outcome"] == "succeeded"
    rec = svc.recommend_now(POD, OPERATOR)
    first, second = swap_halves(rec)
    assert all(m["swap_group"] is None for m in rec["moves"] if m["kind"] == "move")
    assert (first["from_name"], first["to_name"]) == (second["to_name"], second["from_name"])
    assert first["imbalance_after"] > first["imbalance_before"]  # the first half alone makes it worse
    assert second["imbalance_after"] < first["imbalance_before"]
    return svc, rec


def test_a_recommended_swap_is_applied_whole(
    swappable: tuple[Service, dict[str, Any]], lab: LabProcess
) -> None:
    svc, rec = swappable
    before = svc.pod(POD)["imbalance"]
    planned = svc.create_plan(OPERATOR, recommendation_id=rec["id"])
    assert [(m["vm"], m["kind"], m["swap_group"]) for m in planned["moves"]] == [
        (m["vm"], m["kind"], m["swap_group"]) for m in rec["moves"]
    ]

    done = run_stepping(svc, lab, planned["id"])
    assert {m["state"] for m in done["moves"]} == {"succeeded"}, done
    assert done["state"] == "succeeded"
    assert "half done" not in done["message"]
    where = placed(lab)
    for vm, ds in {m["vm"]: m["to_name"] for m in rec["moves"]}.items():  # the last move of each VM
        assert where[vm] == ds
    lab.step(30)
    assert svc.run_job("collect")["outcome"] == "succeeded"
    assert svc.pod(POD)["imbalance"] < before


def test_a_swap_whose_second_half_fails_is_reported_half_done(
    swappable: tuple[Service, dict[str, Any]], lab: LabProcess
) -> None:
    svc, rec = swappable
    first, second = swap_halves(rec)
    assert [m["vm"] for m in rec["moves"]].count(second["vm"]) == 1  # the fault hits the second half only
    lab.control(
        "POST",
        "/lab/faults/rules",
        {
            "method": "RelocateVM_Task",
            "fault": "NoDiskSpace",
            "message": "out of space",
            "object": second["vm"],
        },
    )
    try:
        planned = svc.create_plan(OPERATOR, recommendation_id=rec["id"])
        done = run_stepping(svc, lab, planned["id"])
    finally:
        lab.control("DELETE", "/lab/faults")
    states = {m["vm"]: m["state"] for m in done["moves"]}
    assert (states[first["vm"]], states[second["vm"]]) == ("succeeded", "failed"), done
    assert done["state"] == "failed"
    assert "is half done" in done["message"], done["message"]
    assert "(nothing moved back)" in done["message"]
    where = placed(lab)
    assert where[first["vm"]] == first["to_name"]  # the first half stays where it went
    assert where[second["vm"]] == second["from_name"]


def test_a_swap_that_no_longer_fits_is_skipped_whole(
    swappable: tuple[Service, dict[str, Any]], lab: LabProcess
) -> None:
    svc, rec = swappable
    first, second = swap_halves(rec)
    planned = svc.create_plan(OPERATOR, recommendation_id=rec["id"])
    # Before the plan runs, the second half's disk is moved elsewhere by hand.
    elsewhere = next(
        n for n in ("3diskLUN", "6diskLUN", "9diskLUN") if n not in (first["to_name"], second["from_name"])
    )
    manual = svc.create_plan(OPERATOR, pod=POD, moves=[{"disk": second["disk"], "to": elsewhere}])
    assert run_stepping(svc, lab, manual["id"])["state"] == "succeeded"

    done = run_stepping(svc, lab, planned["id"])
    halves = [m for m in done["moves"] if m["swap_group"] == first["swap_group"]]
    assert [m["state"] for m in halves] == ["skipped", "skipped"], done
    for m in halves:
        assert m["message"].startswith("the swap no longer fits: disk scsi0:1 of " + second["vm"]), m
    where = placed(lab)
    assert where[first["vm"]] == first["from_name"]  # the first half never moved
    assert where[second["vm"]] == elsewhere
    assert "half done" not in done["message"]
