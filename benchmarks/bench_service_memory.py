"""The service's memory on the lab's large scenario after an hour of simulated collection.

Starts the lab on ``lab/scenarios/large.yaml`` (2,000 VMs, 6,000 disks, 64 hosts) at high speed, a
Service on a fresh SQLite store, and runs the collection job until an hour of vCenter time has been
collected, then the model job once. Prints RSS (from /proc) and tracemalloc's current and peak
Python heap after start, after the hour, and after modelling.

    .venv/bin/python benchmarks/bench_service_memory.py [--speed 300] [--hours 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vcenter.labproc import LabProcess  # noqa: E402

from basil.app import Service  # noqa: E402
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig  # noqa: E402
from basil.store import Store  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report(label: str) -> None:
    current, peak = tracemalloc.get_traced_memory()
    heap = f"{current / 2**20:8.1f} MB (peak {peak / 2**20:.1f} MB)"
    print(f"{label:<28} RSS {rss_mb():8.1f} MB   Python heap {heap}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=300.0)
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    tracemalloc.start()
    work = Path(tempfile.mkdtemp(prefix="basil-bench-mem-"))
    with LabProcess.start(ROOT / "lab" / "scenarios" / "large.yaml", speed=args.speed) as lab:
        url = f"sqlite:///{work / 'basil.db'}"
        config = BasilConfig(
            vcenters=(
                VCenterConfig(
                    name="lab",
                    server=lab.server,
                    user=lab.user,
                    password_env="UNUSED",
                    tls=TLSOptions(ca_bundle=lab.pem),
                ),
            ),
            pods=(PodConfig(name="pod", vcenter="lab", tag="basil-tier/fc"),),
            store=StoreConfig(url=url),
        )
        svc = Service(config, Store(url), params_factory=lambda _vc: lab.connection_params())
        svc.start(scheduler=False)
        inv = svc.inventory("lab")
        print(
            f"lab: {len(inv.vms)} VMs, {sum(len(v.disks) for v in inv.vms.values())} disks, "
            f"{len(inv.datastores)} datastores, {len(inv.hosts)} hosts; speed {args.speed:g}"
        )
        report("after start")
        first = None
        cycles = samples = 0
        wall = time.monotonic()
        while True:
            run = svc.run_job("collect")
            cycles += 1
            samples += sum(
                v.get("disk_samples", 0) + v.get("host_samples", 0) for v in run["details"]["vcenters"]
            )
            latest = svc.links["lab"].last_collection
            if latest is not None and first is None:
                first = latest
            if (
                first is not None
                and latest is not None
                and (latest - first).total_seconds() >= args.hours * 3600
            ):
                break
            time.sleep(0.5)
        print(
            f"collected {samples} samples in {cycles} cycles, {time.monotonic() - wall:.0f} s wall "
            f"({(latest - first).total_seconds() / 3600:.2f} h of vCenter time)"
        )
        report(f"after {args.hours:g} h of collection")
        t = time.monotonic()
        model = svc.run_job("model")
        took = time.monotonic() - t
        print(f"model job: {model['outcome']} in {took:.1f} s: {model['details'].get('vcenters')}")
        report("after modelling")
        svc.run_job("maintenance")
        report("after roll-up and retention")
        svc.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
