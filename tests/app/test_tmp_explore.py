from __future__ import annotations

import itertools
from dataclasses import replace

from basil.config import BalanceConfig
from basil.core.balancer import recommend
from basil.core.normalized_load import imbalance, resolve_models
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.app.test_recommendations_lab import OPERATOR, POD, disk_of, run_stepping
from tests.vcenter.labproc import LabProcess


def test_explore(make_service: ServiceFactory) -> None:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=0) as lab:
        lab.step(2)
        svc = make_service(lab, pod={"balance": BalanceConfig(latency_threshold_ms=1, ping_pong_hours=0, imbalance_threshold=0.05)})
        assert svc.run_job("collect")["outcome"] == "succeeded"
        spread = {"exchange-2": "9diskLUN", "webserver-2": "3diskLUN", "workstation-2": "9diskLUN", "oltp-2": "3diskLUN"}
        manual = svc.create_plan(OPERATOR, pod=POD, moves=[{"disk": disk_of(svc, n), "to": t} for n, t in spread.items()])
        assert run_stepping(svc, lab, manual["id"])["state"] == "succeeded"
        lab.step(30)
        assert svc.run_job("collect")["outcome"] == "succeeded"
        assert svc.run_job("model")["outcome"] == "succeeded"
        print([ (d["name"], d["model_status"]) for d in svc.pod(POD)["datastores"]])
        pod = svc.resolved_pod(POD, refresh=False)
        ps = svc.pod_snapshot(pod)
        snap = ps.snapshot
        models = resolve_models(snap, ps.params)
        vmname = {v.moid: v.name for v in svc.inventory("lab").vms.values()}
        names = [d.name for d in snap.datastores]
        eff = {n: models.datastores[n].effective_performance for n in names}
        print("P", eff)
        loads = {d.id: models.disks[d.id].load for d in snap.disks}
        print({vmname[d.vm]: loads[d.id] for d in snap.disks})
        ids = [d.id for d in snap.disks]
        found = 0
        for assign in itertools.product(range(3), repeat=len(ids)):
            s = [0.0] * 3
            for i, a in zip(ids, assign):
                s[a] += loads[i]
            f = imbalance([s[k] / eff[names[k]] for k in range(3)])
            if f < 0.1:
                continue
            better = False
            for i, a in zip(ids, assign):
                for b in range(3):
                    if b == a:
                        continue
                    t = list(s); t[a] -= loads[i]; t[b] += loads[i]
                    if imbalance([t[k] / eff[names[k]] for k in range(3)]) < f - 1e-9:
                        better = True
                        break
                if better:
                    break
            if better:
                continue
            disks = tuple(replace(d, datastore=names[a]) for d, a in zip(snap.disks, assign))
            plan = recommend(replace(snap, disks=disks), ps.params)
            if plan.moves and plan.moves[0].kind == "swap":
                print("FOUND", {vmname[d.vm]: names[a] for d, a in zip(snap.disks, assign)}, [(vmname[m.vm], m.source, m.target, m.imbalance_after) for m in plan.moves], f)
                found += 1
                if found > 5:
                    break
        assert False
