"""Records the plugin's unit-test fixtures (plugin/test/fixtures/*.json) from the real service on the lab.

The Vitest tests shape and render these answers, so they must be what the API really returns: run
this script again whenever the API's shapes change, then fix what the plugin's tests say.

    .venv/bin/python tests/plugin/record_fixtures.py      # needs build/basil-lab (make lab)
    .venv/bin/python tests/plugin/record_fixtures.py whatif   # only the what-if answers (a minute)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "plugin" / "test" / "fixtures"


def lab_trace(lab: Any, vm: str, unit: str) -> str:
    """The lab's request trace (SPC) of one disk over its last 3 solved intervals (GET /lab/trace)."""
    import requests  # noqa: PLC0415

    resp = requests.get(
        f"{lab.instance.control_url}trace?vm={quote(vm)}&unit={quote(unit)}&intervals=3&format=spc&seed=1",
        auth=(lab.user, lab.password), verify=lab.pem, timeout=60,
    )  # fmt: skip
    resp.raise_for_status()
    return resp.text


# A what-if the lab cannot make: a log-like sequential writer (cached writes) beside random readers,
# on a RAID 5 (k 4) LUN with a slow positioning: the destage load the interleaving adds saturates.
# Every disk's writes are cache hits where it ran (a slower one would say the cache was full there:
# FULL_WHATIF).
SATURATED_WHATIF = {
    "datastore": {"name": "raid5-lun", "parallelism": 2, "positioning_ms": 8, "write_cost": 4},
    "disks": [
        {"name": "redo", "read_iops": 5, "write_iops": 900, "read_latency_ms": 2, "write_latency_ms": 0.4,
         "read_oio": 0.1, "write_oio": 1, "random_pct": 0},
        {"name": "erp", "read_iops": 300, "write_iops": 120, "read_latency_ms": 6, "write_latency_ms": 0.4,
         "read_oio": 2, "write_oio": 0.2, "random_pct": 100, "alone": False},
        {"name": "search", "read_iops": 250, "write_iops": 10, "read_latency_ms": 5, "write_latency_ms": 0.5,
         "read_oio": 1.5, "write_oio": 0.1, "random_pct": 90},
    ],
}  # fmt: skip


# A disk whose writes were slower than a cache hit where it ran alone (the cache was full there)
# beside a random reader of another datastore, on a RAID 6 LUN: the reader's cached writes go through.
FULL_WHATIF = {
    "datastore": {"name": "sata-raid6", "parallelism": 5.5, "positioning_ms": 11.6, "write_cost": 6},
    "disks": [
        {"name": "audit", "read_iops": 15, "write_iops": 370, "read_latency_ms": 3.5, "write_latency_ms": 5,
         "random_pct": 10},
        {"name": "catalog", "read_iops": 250, "write_iops": 28, "read_latency_ms": 31,
         "write_latency_ms": 0.37, "random_pct": 100},
    ],
}  # fmt: skip


def record_whatif(call: Any, save: Any, pod: str) -> None:
    """The what-if of the pod's busiest datastore with the busiest disk of each other datastore
    moved there (``whatif_lab.json``, ``whatif_disks_lab.json`` the pod's disks that name them), and
    the estimator's answers on :data:`SATURATED_WHATIF` (``whatif_saturated.json``) and
    :data:`FULL_WHATIF` (``whatif_full.json``)."""
    pods = call("GET", "/pods")
    target = max(
        next(p for p in pods if p["name"] == pod)["datastores"], key=lambda d: d["normalized_load"] or 0
    )
    disks = save("whatif_disks_lab.json", call("GET", f"/disks?pod={pod}&sort=name&limit=200"))["items"]
    busiest: dict[str, dict[str, Any]] = {}
    for d in disks:
        here = d["datastore"]["id"]
        if here != target["id"] and (d["iops"] or 0) > (busiest.get(here, {}).get("iops") or 0):
            busiest[here] = d
    moved = [d["id"] for d in busiest.values()]
    save("whatif_lab.json", call("POST", f"/datastores/{target['id']}/whatif", {"disks": moved}))
    save("whatif_saturated.json", call("POST", "/whatif", SATURATED_WHATIF))
    save("whatif_full.json", call("POST", "/whatif", FULL_WHATIF))


def main() -> int:
    only_whatif = sys.argv[1:] == ["whatif"]
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("BASIL_LAB_BINARY", str(ROOT / "build" / "basil-lab"))
    from basil.api import create_app  # noqa: PLC0415
    from basil.app import Service  # noqa: PLC0415
    from basil.store.tokens import create_token  # noqa: PLC0415
    from tests.api.conftest import PASSWORD_ENV, lab_config  # noqa: PLC0415
    from tests.vcenter.labproc import LabProcess  # noqa: PLC0415

    scenario = ROOT / "lab" / "scenarios" / "basil-6.2.yaml"
    with LabProcess.start(scenario, speed=120) as lab, tempfile.TemporaryDirectory() as tmp:
        os.environ[PASSWORD_ENV] = lab.password
        service = Service.from_config(lab_config(lab, Path(tmp) / "basil.db"))
        service.start(periodic=False)
        try:
            with service.store.session() as session:
                token, _ = create_token(session, "fixtures", "admin", created_by="record_fixtures")
            client = create_app(service).test_client()
            headers = {"Authorization": f"Bearer {token}"}

            def call(method: str, path: str, body: Any = None, expect: int = 200) -> Any:
                resp = client.open(f"/api/v1{path}", method=method, headers=headers, json=body)
                answer = resp.get_data(as_text=True)
                assert resp.status_code == expect, (method, path, resp.status_code, answer)
                return resp.get_json()

            def follow(job: str, run: Any) -> Any:
                while run["outcome"] == "running":
                    time.sleep(0.1)
                    run = call("GET", f"/jobs/{job}/runs/{run['id']}")
                return run

            def run_job(job: str) -> None:
                run = follow(job, call("POST", f"/jobs/{job}/run", expect=202))
                assert run["outcome"] in ("succeeded", "skipped"), run

            def save(name: str, value: Any) -> Any:
                text = json.dumps(value, indent=1, ensure_ascii=False) + "\n"
                (OUT / name).write_text(text, encoding="utf-8")
                return value

            for _ in range(4):  # several model fits: history and disk-model series with more than one point
                for _ in range(3):
                    run_job("collect")
                    time.sleep(0.6)
                run_job("model")

            if only_whatif:
                record_whatif(call, save, call("GET", "/pods")[0]["name"])
                return 0
            save("vcenters.json", call("GET", "/vcenters"))
            pods = save("pods.json", call("GET", "/pods"))
            pod = pods[0]["name"]
            by_load = sorted(pods[0]["datastores"], key=lambda d: -(d["normalized_load"] or 0))
            busiest = by_load[0]["id"]
            save("pod_history.json", call("GET", f"/pods/{pod}/history?hours=6"))
            save("datastore.json", call("GET", f"/datastores/{busiest}"))
            save("datastore_points.json", call("GET", f"/datastores/{busiest}/model/points?hours=6"))
            save("datastore_load.json", call("GET", f"/datastores/{busiest}/load?hours=6"))
            rec = save("recommendation.json", call("POST", f"/pods/{pod}/recommendations", expect=201))

            vm_id = rec["moves"][0]["vm_id"]
            vm_name = rec["moves"][0]["vm"]
            tree = {
                "name": "gold-tier",
                "datastore": by_load[0]["name"],
                "root": {"reservation": 300},
                "pools": [
                    {"name": "gold", "shares": "high", "children": [{"vm": vm_name, "reservation": 150}]},
                ],
            }
            bad_tree = {
                **tree,
                "pools": [
                    {
                        "name": "gold",
                        "reservation": 500,
                        "limit": 100,
                        "children": [{"vm": "ghost", "reservation": -1}],
                    },
                    {"name": "gold", "shares": "lots"},
                ],
            }
            save("pool_problems.json", call("POST", "/pools/validate", bad_tree))
            call("POST", "/pools", tree, expect=201)
            run_job("srp")
            save("pools.json", call("GET", "/pools"))
            save("entitlements.json", call("GET", "/pools/gold-tier/entitlements"))
            vm = save("vm.json", call("GET", f"/vms/{vm_id}"))
            trace = lab_trace(lab, vm_name, vm["disks"][-1]["instance"])
            question = {"trace": trace, "format": "spc", "fraction": 0.95, "bound_ms": 10}
            save("vm_reservation.json", call("PUT", f"/vms/{vm_id}/trace", question))
            disk = vm["disks"][-1]["id"]
            save("disk_model.json", call("GET", f"/disks/{quote(disk, safe='')}/model?hours=6"))
            record_whatif(call, save, pod)

            plan = save("plan_proposed.json", call("POST", "/plans", {"recommendation_id": rec["id"]}, 201))
            call("POST", f"/plans/{plan['id']}/apply")
            running = None
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                current = call("GET", f"/plans/{plan['id']}")
                if running is None and any(m["state"] == "running" for m in current["moves"]):
                    running = save("plan_running.json", current)
                    # Computed while the plan moves disks: stale once the plan has moved them.
                    call("POST", f"/pods/{pod}/recommendations", expect=201)
                if current["state"] in ("succeeded", "failed", "cancelled"):
                    save("plan_succeeded.json", current)
                    break
                time.sleep(0.3)
            else:
                raise SystemExit("the plan did not finish in 300 s")
            save("recommendation_stale.json", call("GET", f"/pods/{pod}/recommendations"))
            save("pod.json", call("GET", f"/pods/{pod}"))
            save("schedules.json", call("GET", "/schedules"))
            save("jobs.json", call("GET", "/jobs"))
            save("health.json", call("GET", "/health"))
            save("me.json", call("GET", "/me"))
            # A run asked for (202, running), asked for again while it runs (409), and followed to its end.
            started = save("job_run_started.json", call("POST", "/jobs/collect/run", expect=202))
            save("job_conflict.json", call("POST", "/jobs/collect/run", expect=409))
            save("job_run.json", follow("collect", started))
            bad_window = {"cron": "0 25 * * *", "timezone": "Mars/Olympus", "duration": "9d"}
            save("window_problems.json", call("PUT", "/schedules/rebalance", bad_window, expect=400))
            window = {"cron": "30 1 * * sun", "max_moves": 12}
            save("schedules_changed.json", call("PUT", "/schedules/rebalance", window))
            save("schedules_reset.json", call("DELETE", "/schedules/rebalance"))
            save("audit.json", call("GET", "/audit?limit=20"))
            # An hour of vCenter time later (30 s at speed 120) the plan's prediction is measured.
            deadline = time.monotonic() + 300
            while [c["state"] for c in call("GET", f"/pods/{pod}/predictions")][:1] != ["measured"]:
                if time.monotonic() > deadline:
                    raise SystemExit("the plan's prediction was not measured in 300 s")
                time.sleep(2)
                run_job("collect")
                run_job("model")
            save("predictions.json", call("GET", f"/pods/{pod}/predictions"))
            save("pod.json", call("GET", f"/pods/{pod}"))  # with the measured prediction error
            if running is None:
                print("note: no poll saw a move running; plan_running.json was not refreshed")
        finally:
            service.shutdown()
    print(f"fixtures written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
