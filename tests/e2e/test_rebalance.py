"""BASIL §6.3 end to end: the service collects and models the lab through the vSphere API, recommends,
the plan is approved and applied through the REST API over HTTPS, and the lab's ground truth then
shows a lower IOPS-weighted average latency and a higher total IOPS than before."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.vcenter.labproc import LabProcess

from .conftest import start_service, wait_for

WINDOW = 30  # intervals of 20 s of simulated time averaged for "before" and "after" (10 minutes)


def _lab_time(lab: LabProcess) -> datetime:
    return datetime.fromisoformat(lab.control("GET", "/lab/status")["last_interval"].replace("Z", "+00:00"))


def test_recommended_plan_applied_through_the_api_improves_the_lab(
    lab_63: LabProcess, tmp_path: Path
) -> None:
    serve = start_service(lab_63, tmp_path)
    try:
        pod = serve.get("/api/v1/pods/basil")
        six = next(d for d in pod["datastores"] if d["name"] == "6diskLUN")

        # The collector and the modeller run on their schedules: wait for a fitted device model.
        def fitted() -> Any:
            ds = serve.get(f"/api/v1/datastores/{six['id']}")
            return ds if ds["model"]["P"] is not None else None

        model = wait_for("a device model of 6diskLUN", fitted)
        assert model["model"]["points_used"] >= 5

        recommendation = serve.post("/api/v1/pods/basil/recommendations", expect=201)
        moves = recommendation["moves"]
        assert moves, recommendation
        assert all(m["from"] == six["id"] for m in moves)
        assert recommendation["after"]["imbalance"] < recommendation["before"]["imbalance"]

        before = lab_63.truth(WINDOW)
        plan = serve.post("/api/v1/plans", {"recommendation_id": recommendation["id"]}, expect=201)
        assert plan["state"] == "proposed"
        approved = serve.post(f"/api/v1/plans/{plan['id']}/approve")
        assert approved["state"] == "approved"
        running = serve.post(f"/api/v1/plans/{plan['id']}/apply")
        assert running["state"] in ("running", "succeeded")

        def finished() -> Any:
            current = serve.get(f"/api/v1/plans/{plan['id']}")
            return current if current["state"] in ("succeeded", "failed", "cancelled") else None

        done = wait_for("the plan to finish", finished, timeout_s=300)
        assert done["state"] == "succeeded", done
        assert all(m["state"] == "succeeded" for m in done["moves"]), done["moves"]
        assert done["progress"] == 100

        # The lab moved the disks where the plan said.
        placement = lab_63.control("GET", "/lab/placement")
        where = {(vm["moid"], d["unit"]): d["datastore_moid"] for vm in placement["vms"] for d in vm["disks"]}
        for m in done["moves"]:
            vm_id, unit = m["disk"].split(":", 1)
            assert where[(vm_id, unit)] == m["to"].split(":")[-1], m

        # Ground truth over as many intervals, all after the last move ended.
        settled = _lab_time(lab_63) + timedelta(seconds=20 * WINDOW)
        wait_for("a full window after the moves", lambda: _lab_time(lab_63) >= settled, timeout_s=300)
        after = lab_63.truth(WINDOW)
        print(
            f"\nBASIL §6.3 through the API, {len(moves)} move(s): IOPS-weighted latency "
            f"{before['avg_latency_ms']:.1f} -> {after['avg_latency_ms']:.1f} ms, "
            f"total {before['total_iops']:.0f} -> {after['total_iops']:.0f} IOPS"
        )
        assert after["avg_latency_ms"] < before["avg_latency_ms"]
        assert after["total_iops"] > before["total_iops"]

        audit = serve.get("/api/v1/audit?action=plan.")
        assert {e["action"] for e in audit} >= {"plan.create", "plan.approve", "plan.apply", "plan.outcome"}
        # The operator's actions, then the plan's outcome and each Storage vMotion, recorded by Basil.
        assert all(e["outcome"] == "ok" for e in audit)
        assert all(e["who"] == ("basil" if e["action"] == "plan.outcome" else "e2e-admin") for e in audit)
        moved = serve.get("/api/v1/audit?action=move.relocate")
        assert sorted(e["detail"]["task"] for e in moved) == sorted(m["task"] for m in done["moves"])
    finally:
        assert serve.stop() == 0, serve.log()
