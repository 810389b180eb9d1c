"""Predicted against measured: one recommended plan per lab scenario, checked an hour later (vCenter time).

For each scenario, all real: the lab runs paused (speed 0) and is stepped; a Service collects half an
hour, models, recommends, applies the recommendation as a plan (stepping the lab while vCenter
copies), then the lab runs one more hour of simulated time while the service collects, and the model
job measures the plan's prediction. Prints per datastore the predicted and measured latency and IOPS
and their errors, and per scenario the pod's medians and the imbalance predicted, predicted by the
round, and re-modelled an hour later.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_prediction.py [--scenarios basil-6.2,basil-6.3]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("BASIL_LAB_BINARY", str(ROOT / "build" / "basil-lab"))

from tests.app.conftest import PASSWORD_ENV, SCENARIOS, lab_config  # noqa: E402
from tests.vcenter.labproc import LabProcess  # noqa: E402

from basil.app import Actor, Service  # noqa: E402
from basil.store import Store  # noqa: E402

OPERATOR = Actor("bench", "operator", "127.0.0.1")
POD = "basil-pod"


def lab_now(lab: LabProcess) -> datetime:
    return datetime.fromisoformat(str(lab.control("GET", "/lab/time")["now"]).replace("Z", "+00:00"))


def catch_up(svc: Service, lab: LabProcess) -> None:
    """Collect until the stored samples reach the lab's time (a backlog comes window by window)."""
    for _ in range(40):
        svc.run_job("collect")
        newest = svc.sample_now("lab")
        if newest is not None and newest >= lab_now(lab).timestamp() - 60:
            return


def run(scenario: str) -> dict[str, Any]:
    with (
        LabProcess.start(SCENARIOS / f"{scenario}.yaml", speed=0) as lab,
        tempfile.TemporaryDirectory() as tmp,
    ):
        os.environ[PASSWORD_ENV] = lab.password
        url = f"sqlite:///{tmp}/basil.db"
        svc = Service(lab_config(lab, url), Store(url), params_factory=lambda _vc: lab.connection_params())
        svc.start(scheduler=False)
        try:
            lab.step(2)
            svc.run_job("collect")
            lab.step(90)
            catch_up(svc, lab)
            svc.run_job("model")
            rec = svc.recommend_now(POD, OPERATOR)
            if not rec["moves"]:
                return {"scenario": scenario, "skipped": rec["stop_reason"]}
            plan = svc.create_plan(OPERATOR, recommendation_id=rec["id"])
            svc.apply_plan(plan["id"], OPERATOR)
            for _ in range(300):
                if svc.plan(plan["id"])["state"] in ("succeeded", "failed", "cancelled"):
                    break
                lab.step(1)
                time.sleep(0.05)
            done = svc.wait_for_plan(plan["id"], timeout_s=120)
            (check,) = svc.predictions(POD)
            due = datetime.fromisoformat(check["due_at"])
            while lab_now(lab) < due:
                lab.step(min(30, max(1, math.ceil((due - lab_now(lab)).total_seconds() / 20))))
                catch_up(svc, lab)
            lab.step(3)
            catch_up(svc, lab)
            svc.run_job("model")
            (measured,) = svc.predictions(POD)
            return {"scenario": scenario, "plan": done, "check": measured}
        finally:
            svc.shutdown()


def pct(v: float | None) -> str:
    return "    -" if v is None else f"{v * 100:+5.0f}%"


def apct(v: float | None) -> str:
    return "-" if v is None else f"{abs(v) * 100:.0f}%"


def num(v: float | None) -> str:
    return "      -" if v is None else f"{v:7.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="basil-6.2,basil-6.3")
    args = parser.parse_args()
    for scenario in args.scenarios.split(","):
        result = run(scenario)
        if "skipped" in result:
            print(f"{scenario}: no move recommended ({result['skipped']})")
            continue
        check = result["check"]
        moves = result["plan"]["counts"]
        print(f"\n{scenario}: plan {check['plan']} ({moves['succeeded']} moved, {moves['skipped']} skipped), "
              f"measured {check['state']} at {check['due_at']} (vCenter time)")  # fmt: skip
        print(f"{'datastore':12} {'model':8} {'lat pred':>8} {'lat meas':>8} {'err':>6} "
              f"{'IOPS pred':>9} {'IOPS meas':>9} {'err':>6}")  # fmt: skip
        for d in check["datastores"]:
            p, m, e = d["predicted"], d["measured"] or {}, d["error"] or {}
            latency = f"{num(p['latency_ms'])} ms {num(m.get('latency_ms'))} ms {pct(e.get('latency'))}"
            iops = f"{num(p['iops'])}   {num(m.get('iops'))}   {pct(e.get('iops'))}"
            print(f"{d['name']:12} {d['model'] or '-':8} {latency} {iops}")
        err = check["error"] or {}
        imb = check["imbalance"]
        medians = (
            f"latency {apct(err.get('latency_median_abs'))}, read latency "
            f"{apct(err.get('read_latency_median_abs'))}, IOPS {apct(err.get('iops_median_abs'))}"
        )
        print(f"median |error|: {medians}")
        print(
            f"imbalance predicted {imb['predicted']:.3f}, re-modelled an hour later {imb['measured']:.3f} "
            f"({pct(err.get('imbalance_rel'))})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
