"""Device model figures on the lab's tiered scenario (SSD, FC, SATA): before and after, and under a copy.

Runs ``lab/scenarios/tiered.yaml`` with simulated time stepped (speed 0, deterministic), collects
with the service's collector, and prints per datastore:

- "before": the device model as it was (least squares on the hosts' whole-millisecond read latency,
  §4.1 filters, no credibility check), over the same stored intervals;
- "after": the service's settled model: P with its 95 % interval, source, latency resolution;

then moves web-2's 40 GB disk from sata-01 to ssd-01 by Storage vMotion (copy at 40 MB/s, about 50
intervals), models again, and prints each datastore's P with the copy left out (the service) and
with it left in (same fit, no exclusion windows).

With ``--sequence`` it runs ``basil-6.3.yaml`` instead (BASIL §6.3: the 9-disk LUN new and empty),
moves two workloads onto the 9-disk LUN one after the other (copies at 20 MB/s) and models every
minute, printing the 9-disk LUN's P run after run: the old least squares, this window's raw fit and
the settled P — the demo's "5.6 → 4.7 → 9.0 → 3.8 → 0.50" case.

Usage: ``python benchmarks/bench_device_model.py [--intervals 90] [--sequence]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.app.conftest import PASSWORD_ENV, SCENARIOS, lab_config
from tests.vcenter.labproc import PASSWORD, LabProcess

from basil.app import Service
from basil.app.modelling import device_samples
from basil.core.device_model import DeviceModelParams, aggregate_intervals, fit_device_model
from basil.store import Store
from basil.store.samples import DevicePoints, device_points, disk_read_latency_us
from basil.vcenter._vmomi import vim
from basil.vcenter.actions import read_properties
from basil.vcenter.connection import VCenterConnection


def legacy_p(points: DevicePoints) -> tuple[float | None, float | None]:
    """The old device model: least squares on ms latency of the intervals §4.1 keeps; (P, r²)."""
    samples = device_samples(points)
    intervals, _ = aggregate_intervals([s for s in samples if s.op == "read"])
    kept = [i for i in intervals if i.io_size_kb <= 32 and i.seq_pct <= 90]
    if len(kept) < 5:
        return None, None
    x = np.array([i.oio for i in kept])
    y = np.array([i.latency_ms for i in kept])
    if np.ptp(x) == 0:
        return None, None
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - float(np.sum((y - (intercept + slope * x)) ** 2)) / float(np.sum((y - y.mean()) ** 2) or 1)
    return (1 / slope if slope > 0 else None), r2


def fmt(p: float | None) -> str:
    return f"{p:.3g}" if p is not None else "-"


def advance(svc: Service, lab: LabProcess, intervals: int, chunk: int = 30) -> None:
    svc.run_job("collect")
    while intervals > 0:
        n = min(chunk, intervals)
        lab.step(n)
        intervals -= n
        svc.run_job("collect")


def table(svc: Service, title: str, *, with_copy: bool = False) -> None:
    inv = svc.inventory("lab", refresh=False)
    now = svc.sample_now("lab")
    assert now is not None
    print(f"\n{title}")
    head = "  datastore  before: P (r²)       after: P [95 % interval]  source   latency  dropped"
    print(head + ("                       P with the copy left in" if with_copy else ""))
    for (_vc, moid), m in sorted(
        svc.datastore_models("lab").items(), key=lambda kv: inv.datastores[kv[0][1]].name
    ):
        name = inv.datastores[moid].name
        with svc.store.read_session() as session:
            points = device_points(session, "lab", moid, now - 86400, now + 1)
            disks = [
                (vm.moid, d.instance) for vm in inv.vms.values() for d in vm.disks if d.datastore == moid
            ]
            micro = disk_read_latency_us(session, "lab", disks, now - 86400, now + 1)
        old_p, r2 = legacy_p(points)
        d = m.details
        ci = f"[{fmt(d.get('p_low'))}, {fmt(d.get('p_high'))}]"
        dropped = ", ".join(
            f"{n} {k}" for k, n in sorted(d.get("dropped", {}).items()) if n and k != "writes"
        )
        line = (
            f"  {name:9}  {fmt(old_p):>7} ({fmt(r2):>5})      {fmt(m.p):>7} {ci:18} {d.get('source', '-'):8}"
            f" {d.get('latency_resolution') or '-':7}  {dropped}"
        )
        if with_copy:
            kept_in = fit_device_model(device_samples(points, micro), DeviceModelParams())
            line += f"   {fmt(kept_in.performance or kept_in.fitted_performance)} ({kept_in.status.value})"
        print(line)


def relocate(svc: Service, vm_name: str, target: str) -> str:
    """Start a Storage vMotion of the VM's data disk (scsi0:1); returns the task moid."""
    inv = svc.inventory("lab")
    vm = next(v for v in inv.vms.values() if v.name == vm_name)
    ds = next(d.moid for d in inv.datastores.values() if d.name == target)

    def start(c: VCenterConnection) -> str:
        loc = vim.vm.RelocateSpec.DiskLocator(
            diskId=vm.disk("scsi0:1").key, datastore=c.ref(vim.Datastore, ds)
        )
        return str(
            c.ref(vim.VirtualMachine, vm.moid).RelocateVM_Task(spec=vim.vm.RelocateSpec(disk=[loc]))._moId
        )

    return svc.links["lab"].call(start)


def sequence() -> None:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=0, extra=("--svmotion-mbps", "20")) as lab:
        url = f"sqlite:///{tempfile.mkdtemp()}/basil.db"
        svc = Service(lab_config(lab, url), Store(url), params_factory=lambda _vc: lab.connection_params())
        svc.start(scheduler=False)
        try:
            advance(svc, lab, 30)
            print("basil-6.3: 9diskLUN's P, one model run per simulated minute")
            print(
                "  minute  event                    old least squares   this window's fit          settled P"
            )
            moves = {3: ("exchange-1", "9diskLUN"), 24: ("oltp-1", "9diskLUN")}
            nine = None
            for minute in range(1, 46):
                event = ""
                if minute in moves:
                    relocate(svc, *moves[minute])
                    event = f"move {moves[minute][0]} starts"
                advance(svc, lab, 3, chunk=3)
                svc.run_job("model")
                inv = svc.inventory("lab", refresh=False)
                nine = nine or next(d.moid for d in inv.datastores.values() if d.name == "9diskLUN")
                m = svc.datastore_models("lab").get(("lab", nine))
                now = svc.sample_now("lab")
                assert now is not None
                with svc.store.read_session() as session:
                    old, r2 = legacy_p(device_points(session, "lab", nine, now - 86400, now + 1))
                if m is None:
                    continue
                d = m.details
                raw = f"{fmt(d.get('fitted_p'))} ({d.get('fit_status')})"
                settled = f"{fmt(m.p)} [{fmt(d.get('p_low'))}, {fmt(d.get('p_high'))}] {d.get('source')}"
                print(f"  {minute:6}  {event:24} {fmt(old):>7} (r² {fmt(r2):>5})   {raw:26} {settled}")
        finally:
            svc.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--intervals", type=int, default=90)
    parser.add_argument("--sequence", action="store_true", help="the §6.3 run-after-run sequence instead")
    args = parser.parse_args()
    os.environ[PASSWORD_ENV] = PASSWORD
    if args.sequence:
        sequence()
        return
    with LabProcess.start(SCENARIOS / "tiered.yaml", speed=0, extra=("--svmotion-mbps", "40")) as lab:
        url = f"sqlite:///{tempfile.mkdtemp()}/basil.db"
        config = lab_config(lab, url, name="tiered", datastore_cluster="tiered-pod")
        svc = Service(config, Store(url), params_factory=lambda _vc: lab.connection_params())
        svc.start(scheduler=False)
        try:
            advance(svc, lab, args.intervals)
            svc.run_job("model")
            table(svc, f"tiered.yaml after {args.intervals} intervals ({args.intervals // 3} minutes)")
            inv = svc.inventory("lab")
            web2 = next(v for v in inv.vms.values() if v.name == "web-2")
            ssd = next(ds.moid for ds in inv.datastores.values() if ds.name == "ssd-01")
            link = svc.links["lab"]

            def start(c: VCenterConnection) -> str:
                loc = vim.vm.RelocateSpec.DiskLocator(
                    diskId=web2.disk("scsi0:1").key, datastore=c.ref(vim.Datastore, ssd)
                )
                vm = c.ref(vim.VirtualMachine, web2.moid)
                return str(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(disk=[loc]))._moId)

            task = link.call(start)
            steps = 0
            while (
                str(
                    link.call(
                        lambda c: read_properties(c, c.ref(vim.Task, task), ["info.state"]).get("info.state")
                    )
                )
                != "success"
            ):
                advance(svc, lab, 10, chunk=10)
                steps += 10
            advance(svc, lab, 20)
            svc.run_job("model")
            table(
                svc,
                f"after moving web-2 (sata-01 -> ssd-01), a copy of about {steps} intervals",
                with_copy=True,
            )
        finally:
            svc.shutdown()


if __name__ == "__main__":
    main()
