"""Benchmark the lab vCenter at scale: start it on lab/scenarios/large.yaml (64 hosts, 2,000 VMs,
6,000 virtual disks), then time what a collector does every 20 s: QueryPerf of every virtualDisk
counter of every VM, batched within config.vpxd.stats.maxQueryMetrics, one worker and several in
parallel. Prints the lab's start-up time, the query figures and the lab's memory.

Run: ``make bench-lab`` (builds build/basil-lab), or
``.venv/bin/python benchmarks/bench_lab_queryperf.py [--scenario FILE] [--workers 1 4] [--plain]``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim, vmodl

REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "build" / "basil-lab"
USER, PASSWORD = "administrator@vsphere.local", "basil-lab-bench"
VIRTUAL_DISK = "virtualDisk"


@dataclass(frozen=True)
class Lab:
    pid: int
    host: str
    port: int
    ca_pem: Path | None
    startup_s: float


@contextlib.contextmanager
def running_lab(scenario: Path, tls: bool, workdir: Path) -> Iterator[Lab]:
    """Starts the lab paused (speed 0) and stops it on exit."""
    cert = workdir / "cert.pem"
    args = [str(BINARY), "--scenario", str(scenario), "--listen", "127.0.0.1:0", "--speed", "0"]
    args += ["--user", USER]
    env = {**os.environ, "BASIL_LAB_PASSWORD": PASSWORD}  # not on the command line, which ps shows
    if tls:
        args += ["--tls", "--cert-out", str(cert)]
    start = time.monotonic()
    with (workdir / "lab.log").open("w") as log:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert proc.stdout is not None
    url = ""
    for line in proc.stdout:
        if line.startswith("basil-lab: url "):
            url = line.split()[-1]
        if line.strip() == "basil-lab: ready":
            break
    else:
        sys.exit(f"the lab did not start: {(workdir / 'lab.log').read_text()[-2000:]}")
    startup = time.monotonic() - start
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained
    match = re.match(r"https?://([^:/]+):(\d+)/sdk", url)
    assert match, url
    try:
        yield Lab(proc.pid, match.group(1), int(match.group(2)), cert if tls else None, startup)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def connect(lab: Lab) -> Any:
    """A pyVmomi connection; over TLS the lab's certificate is verified against the PEM it wrote."""
    if lab.ca_pem is None:  # --plain: HTTP, no certificate to verify
        return SmartConnect(host=lab.host, port=lab.port, user=USER, pwd=PASSWORD, protocol="http")
    context = ssl.create_default_context(cafile=str(lab.ca_pem))
    return SmartConnect(host=lab.host, port=lab.port, user=USER, pwd=PASSWORD, sslContext=context)


def control(lab: Lab, method: str, path: str, body: str = "") -> str:
    """Calls the lab's control API with its credentials (HTTP Basic) and a JSON body."""
    scheme = "https" if lab.ca_pem else "http"
    req = urllib.request.Request(
        f"{scheme}://{lab.host}:{lab.port}/lab/{path}", data=body.encode() or None, method=method
    )
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode("ascii")
    req.add_header("Authorization", f"Basic {token}")
    req.add_header("Content-Type", "application/json")
    context = ssl.create_default_context(cafile=str(lab.ca_pem)) if lab.ca_pem else None
    with urllib.request.urlopen(req, context=context, timeout=600) as res:
        return str(res.read().decode())


def rss_mib(pid: int) -> tuple[float, float]:
    """Resident and peak resident memory of a process, in MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def cpu_s(pid: int) -> float:
    """CPU time (user + system) a process has used, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def disk_instances(si: Any) -> dict[Any, list[str]]:
    """Every VM and its disks' perf instances ("scsi0:1"), read in one PropertyCollector call."""
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    pc = vmodl.query.PropertyCollector
    spec = pc.FilterSpec(
        objectSet=[
            pc.ObjectSpec(
                obj=view,
                skip=True,
                selectSet=[pc.TraversalSpec(name="v", path="view", skip=False, type=vim.view.ContainerView)],
            )
        ],
        propSet=[pc.PropertySpec(type=vim.VirtualMachine, pathSet=["config.hardware.device"])],
    )
    out: dict[Any, list[str]] = {}
    result = content.propertyCollector.RetrievePropertiesEx([spec], pc.RetrieveOptions(maxObjects=5000))
    while True:
        for obj in result.objects:
            devices = obj.propSet[0].val
            buses = {
                d.key: d.busNumber for d in devices if isinstance(d, vim.vm.device.VirtualSCSIController)
            }
            out[obj.obj] = [
                f"scsi{buses[d.controllerKey]}:{d.unitNumber}"
                for d in devices
                if isinstance(d, vim.vm.device.VirtualDisk) and d.controllerKey in buses
            ]
        if not result.token:
            break
        result = content.propertyCollector.ContinueRetrievePropertiesEx(result.token)
    view.DestroyView()
    return out


def batches(instances: dict[Any, list[str]], counters: list[int], limit: int) -> list[list[Any]]:
    """Query specs, one per VM, grouped so a query asks for at most `limit` metrics."""
    out: list[list[Any]] = []
    current: list[Any] = []
    size = 0
    for vm, units in instances.items():
        ids = [vim.PerformanceManager.MetricId(counterId=c, instance=u) for u in units for c in counters]
        if current and size + len(ids) > limit:
            out.append(current)
            current, size = [], 0
        current.append(vim.PerformanceManager.QuerySpec(entity=vm, metricId=ids, intervalId=20, maxSample=1))
        size += len(ids)
    if current:
        out.append(current)
    return out


def run_queries(lab: Lab, work: list[list[Any]], workers: int) -> tuple[float, int]:
    """Runs every batch with `workers` connections; returns wall seconds and values received."""
    clients = [connect(lab) for _ in range(workers)]
    perfs = [c.RetrieveContent().perfManager for c in clients]
    values = [0] * workers

    def worker(i: int) -> None:
        for batch in work[i::workers]:
            for entity in perfs[i].QueryPerf(querySpec=batch):
                values[i] += sum(len(s.value) for s in entity.value)

    start = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(worker, range(workers)))
    elapsed = time.monotonic() - start
    for c in clients:
        Disconnect(c)
        c._stub.DropConnections()
    return elapsed, sum(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=Path, default=REPO / "lab" / "scenarios" / "large.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--intervals", type=int, default=15, help="20 s intervals solved before querying")
    parser.add_argument("--plain", action="store_true", help="plain HTTP instead of TLS")
    args = parser.parse_args()
    if not BINARY.exists():
        sys.exit(f"{BINARY} is missing: run `make lab`")
    with tempfile.TemporaryDirectory() as tmp, running_lab(args.scenario, not args.plain, Path(tmp)) as lab:
        transport = "http" if args.plain else "https"
        print(f"scenario {args.scenario.name}: lab ready in {lab.startup_s:.2f} s ({transport})")
        start = time.monotonic()
        control(lab, "POST", "time/step", f'{{"intervals": {args.intervals}}}')
        step = time.monotonic() - start
        per = step / args.intervals * 1000
        print(f"solved {args.intervals} intervals in {step:.2f} s ({per:.0f} ms per 20 s interval)")
        si = connect(lab)
        content = si.RetrieveContent()
        limit = int(content.setting.QueryOptions("config.vpxd.stats.maxQueryMetrics")[0].value)
        counters = sorted(c.key for c in content.perfManager.perfCounter if c.groupInfo.key == VIRTUAL_DISK)
        available = {
            m.counterId
            for m in content.perfManager.QueryAvailablePerfMetric(
                entity=next(iter(disk_instances(si))), intervalId=20
            )
        }
        counters = [c for c in counters if c in available]
        start = time.monotonic()
        instances = disk_instances(si)
        inventory = time.monotonic() - start
        disks = sum(len(u) for u in instances.values())
        metrics = disks * len(counters)
        work = batches(instances, counters, limit if limit > 0 else metrics)
        print(f"inventory: {len(instances)} VMs, {disks} disks read in {inventory:.2f} s")
        print(
            f"QueryPerf: {len(counters)} virtualDisk counters x {disks} disks = {metrics} metrics, "
            f"maxQueryMetrics {limit}, {len(work)} queries, latest sample each"
        )
        Disconnect(si)
        si._stub.DropConnections()
        for workers in args.workers:
            lab_cpu = cpu_s(lab.pid)
            elapsed, values = run_queries(lab, work, workers)
            lab_cpu = cpu_s(lab.pid) - lab_cpu
            print(
                f"  {workers} worker(s): {elapsed:.2f} s, {len(work) / elapsed:.0f} queries/s, "
                f"{metrics / elapsed:,.0f} metrics/s, {values} values; lab CPU {lab_cpu:.2f} s"
            )
        rss, peak = rss_mib(lab.pid)
        print(f"lab memory: RSS {rss:.0f} MiB, peak {peak:.0f} MiB")


if __name__ == "__main__":
    main()
