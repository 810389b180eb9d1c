"""One full real-time collection cycle on a large vCenter: wall time, SOAP requests, CPU time.

By default it starts the lab binary on the large scenario (2,000 VMs, 6,000 disks, 64 hosts), reads
the inventory, then times collection cycles: the first one (newest sample of every entity) and
incremental ones after the lab has produced the next 20 s sample. The target is a cycle well inside
the 20 s real-time interval on a 2-core machine. Against another vCenter, pass --server/--user and
a password in BASIL_VCENTER_PASSWORD; its certificate is verified against the system's CAs, or
--ca-bundle FILE, or pinned with --thumbprint (the lab's is verified against the PEM it writes).

    .venv/bin/python benchmarks/bench_collect.py [--workers 4] [--cycles 3] [--normal]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from basil.errors import BasilError  # noqa: E402
from basil.vcenter.connection import ConnectionParams, TLSOptions, VCenterConnection  # noqa: E402
from basil.vcenter.inventory import fetch_inventory  # noqa: E402
from basil.vcenter.perf import CollectorParams, PerfCollector  # noqa: E402


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of another process (the lab), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", help="an existing vCenter host:port instead of starting the lab")
    ap.add_argument("--user", default=os.environ.get("BASIL_VCENTER_USER", ""))
    ap.add_argument("--ca-bundle", help="with --server: verify its certificate against this PEM file")
    ap.add_argument("--thumbprint", help="with --server: pin its certificate's SHA-1 or SHA-256 thumbprint")
    ap.add_argument("--scenario", default=str(ROOT / "lab" / "scenarios" / "large.yaml"))
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--cycles", type=int, default=3, help="incremental cycles after the first")
    ap.add_argument("--normal", action="store_true", help="ask for PerfEntityMetric instead of CSV")
    ap.add_argument("--max-query-metrics", type=int, default=None)
    args = ap.parse_args()

    if args.server:
        tls = TLSOptions(ca_bundle=args.ca_bundle, thumbprint=args.thumbprint)
        problems = tls.validate()
        if problems:
            flags = {"tls.ca_bundle": "--ca-bundle", "tls.thumbprint": "--thumbprint"}
            ap.error("; ".join(f"{flags.get(p.field, p.field)}: {p.message}" for p in problems))
        params = ConnectionParams(
            args.server, user=args.user, password=os.environ.get("BASIL_VCENTER_PASSWORD", ""), tls=tls
        )
        try:
            run(params, args, lab=None)
        except BasilError as err:  # an untrusted certificate, a refused login: say so, no traceback
            print(f"bench_collect: {err}", file=sys.stderr)
            return 1
        return 0
    if args.ca_bundle or args.thumbprint:
        ap.error("--ca-bundle and --thumbprint: only with --server (the lab's PEM is used for the lab)")
    # The tests' helpers start the lab binary (built by `make lab`) and wrap its control API.
    from tests.lab_vcenter import start_lab  # noqa: PLC0415
    from tests.vcenter.labvc import LabVC  # noqa: PLC0415

    # Paused: simulated time moves only when the benchmark steps it, so the lab's own interval
    # solving never competes with the collector for the 2 cores while a cycle is timed.
    with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
        instance, running = start_lab(
            Path(tmp), args.scenario, speed=0, tls=True, cap_realtime_queries=False, extra_args=()
        )
        try:
            lab = LabVC(instance)
            lab.step(1)
            run(lab.connection_params(), args, lab=lab, pid=running.proc.pid)
        finally:
            running.stop()
    return 0


def run(
    params: ConnectionParams, args: argparse.Namespace, lab: object | None, pid: int | None = None
) -> None:
    with VCenterConnection(params) as conn:
        t0, r0 = time.perf_counter(), conn.requests_made
        inv = fetch_inventory(conn, with_tags=False)
        disks = sum(len(vm.disks) for vm in inv.vms.values())
        print(
            f"inventory: {len(inv.vms)} VMs, {disks} disks, {len(inv.hosts)} hosts, "
            f"{len(inv.datastores)} datastores in {time.perf_counter() - t0:.2f}s, "
            f"{conn.requests_made - r0} SOAP requests"
        )
        collector = PerfCollector(
            conn,
            CollectorParams(
                workers=args.workers, csv=not args.normal, max_query_metrics=args.max_query_metrics
            ),
        )
        collector.counter_ids()
        print(
            f"maxQueryMetrics {collector.max_query_metrics()}, workers {args.workers}, "
            f"format {'normal' if args.normal else 'csv'}"
        )
        for cycle in range(args.cycles + 1):
            if cycle > 0:
                wait_for_next_sample(lab)
            cpu0 = time.process_time()
            lab_cpu0 = cpu_of(pid) if pid else 0.0
            wall0, req0 = time.perf_counter(), conn.requests_made
            report = collector.collect(inv)
            wall = time.perf_counter() - wall0
            cpu = time.process_time() - cpu0
            lab_cpu = (cpu_of(pid) - lab_cpu0) if pid else float("nan")
            kind = "first" if cycle == 0 else "incremental"
            print(
                f"cycle {cycle} ({kind}): wall {wall:.2f}s, client CPU {cpu:.2f}s, lab CPU {lab_cpu:.2f}s, "
                f"SOAP requests {conn.requests_made - req0} (QueryPerf {report.requests}), "
                f"entities {report.entities}, disk samples {len(report.disk_samples)}, "
                f"host/datastore samples {len(report.host_datastore_samples)}, "
                f"missing {len(report.missing)}, failed batches {len(report.errors)}"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"client peak RSS {rss:.0f} MB")


def wait_for_next_sample(lab: object | None) -> None:
    """Let vCenter produce its next 20 s sample: the lab steps its clock, a real vCenter takes 20 s."""
    advance = getattr(lab, "advance", None)
    if advance is not None:
        advance(20)
    else:
        time.sleep(20)


if __name__ == "__main__":
    sys.exit(main())
