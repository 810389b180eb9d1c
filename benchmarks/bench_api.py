"""API latency under concurrent clients on a populated store: p50 and p99 at stated request rates.

Set-up, all real: a lab vCenter on a generated scenario (``--vms`` VMs with two disks each on a
datastore cluster of eight LUNs, four hosts); a Service collects it once (so the store's series are
the lab's disks), then the store is filled with a day of 5-minute and hourly rollups for every disk
and host/datastore pair, ``--plans`` plans (1-3 moves each, a fifth cancelled) and ``--audit`` audit
rows (the lab's clock at ``--serve-speed`` from the first collection on: 1, real time, by default). The
application's own CPU cost per request of the mix is measured in-process with no HTTP (``--app-cost``
requests). Then ``basil serve`` runs as a subprocess on that store (HTTPS, its scheduler collecting
every 20 s meanwhile), and an open-loop load generator sends a fixed mix of requests at each stated rate
from ``--clients`` threads: each request has a scheduled start, and its latency is measured from
that start, so a slow server is not hidden by clients that wait (no coordinated omission).

The mix: 95 % GETs over pods, pod history, datastores (summary, load, model points), VMs, disk
models, plans (the list and one plan), audit, jobs, health and pools; 5 % writes (placement
queries, and plans created and cancelled). Prints, per rate, the achieved rate, errors, p50/p99
overall and per endpoint, the serving process's CPU time per request and share of a core, the load
average, and when the slowest 1 % were due (a stall of the whole service shows as one span) next to
the scheduler's job runs in ``basil serve`` meanwhile (from its store's ``job_runs``).

Then the slow-client run: ``--idle`` clients hold TCP connections that never start TLS (each opens a
new one when the server closes it) and ``--slow`` clients send a request head one byte every
``--dribble-s`` over TLS (again when answered 408), while the same mix runs at ``--slow-rate``; its
p50/p99 are the normal clients' (``--idle 0 --slow 0`` skips it). They start together, so their
deadlines and reconnections come together; ``--hostile-spread-s`` starts them evenly over that long.

``--profile FILE`` runs the ``--app-cost`` requests under cProfile (their CPU figures are then
inflated), writes the statistics to FILE and prints the top functions; ``--app-only`` stops after
the ``--app-cost`` part (no ``basil serve``). ``--collect-cost N`` times N ``collect`` jobs in-process
(the lab paused and stepped one 20 s interval before each: one sample per disk, as each cycle of
``basil serve``), printing the process's CPU a job; ``--collect-profile FILE`` profiles them (CPU time,
every thread of the job).

    .venv/bin/python benchmarks/bench_api.py [--vms 150] [--plans 2000] [--audit 10000]
        [--rates 10,50,100,200] [--seconds 30] [--clients 16]
        [--idle 20] [--slow 20] [--slow-rate 100] [--dribble-s 1] [--hostile-spread-s 0]
        [--serve-speed 1] [--app-cost 300]
        [--profile FILE] [--app-only] [--collect-cost 0] [--collect-profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import socket
import sqlite3
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import requests
import yaml
from sqlalchemy import select, update

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vcenter.labproc import LabProcess  # noqa: E402

from basil.app import Service  # noqa: E402
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig  # noqa: E402
from basil.serve import READY_LINE  # noqa: E402
from basil.store import audit  # noqa: E402
from basil.store import plans as plan_store  # noqa: E402
from basil.store.models import LEVEL_5MIN, LEVEL_HOUR, RollupState  # noqa: E402
from basil.store.samples import DISK, HOST_DATASTORE, aggregate, merge_rollup_rows  # noqa: E402
from basil.store.tokens import create_token  # noqa: E402

PASSWORD_ENV = "BASIL_BENCH_VC_PASSWORD"
DATASTORES = 8
HOSTS = 4


def scenario(vms: int, seed: int = 11) -> dict[str, Any]:
    """A datastore cluster of eight FC LUNs of various sizes and *vms* VMs with an OS and a data disk each."""
    rng = random.Random(seed)
    names = [f"lun-{i:02d}" for i in range(DATASTORES)]
    datastores: list[dict[str, Any]] = [
        {"name": n, "capacity_gb": 4000, "pod": "bench-pod",
         "device": {"kind": "fc15k", "disks": 4 + 2 * (i % 5), "raid": "5", "cache_mb": 1024}}
        for i, n in enumerate(names)
    ]  # fmt: skip
    datastores.append(
        {"name": "os-lun", "capacity_gb": 8000, "device": {"kind": "fc15k", "disks": 12, "raid": "5"}}
    )
    machines = []
    for i in range(vms):
        low = rng.randint(1, 8)
        machines.append(
            {
                "name": f"vm-{i:04d}",
                "host": f"esx-{i % HOSTS + 1:02d}",
                "disks": [
                    {"unit": "scsi0:0", "size_gb": 10, "datastore": "os-lun"},
                    {
                        "unit": "scsi0:1",
                        "size_gb": rng.choice([10, 20, 40]),
                        "datastore": rng.choice(names[:5]),
                        "workload": {
                            "oio": {"min": low, "max": low + rng.randint(1, 8)},
                            "io_size_kb": rng.choice([4, 8, 16]),
                            "read_pct": rng.choice([50, 70, 90]),
                            "random_pct": rng.choice([60, 80, 100]),
                        },
                    },
                ],
            }
        )
    return {
        "name": "bench-api",
        "description": f"bench_api.py: {vms} VMs, {2 * vms} disks, {DATASTORES} LUNs in a datastore cluster",
        "seed": seed,
        "clusters": [{"name": "bench-cluster", "hosts": [f"esx-{h:02d}" for h in range(1, HOSTS + 1)]}],
        "datastores": datastores,
        "vms": machines,
    }


def day_of_rollups(service: Service, kind: Any, day_start: int, rng: np.random.Generator) -> tuple[int, int]:
    """A day of rollups for every series of *kind* in the store, through the store's own aggregation;
    (series, rows written)."""
    with service.store.read_session() as session:
        ids = [row[0] for row in session.execute(select(kind.series_table.c.id))]
    series_ids = np.array(ids, dtype=np.int64)
    rows = 0
    for hour in range(24):
        start = day_start + hour * 3600
        ts = np.repeat(np.arange(start, start + 3600, 20, dtype=np.int64), len(series_ids))
        series = np.tile(series_ids, 180)
        n = len(ts)
        values = {name: rng.gamma(2.0, 20.0, n) for name in kind.values}
        for name in kind.values:
            if "latency" in name:
                values[name] = rng.gamma(3.0, 3.0, n)
            elif "oio" in name:
                values[name] = rng.lognormal(1.0, 0.6, n)
        five = aggregate(kind, series, ts, values, LEVEL_5MIN)
        hourly = merge_rollup_rows(kind, five, LEVEL_HOUR)
        with service.store.session() as session:
            for chunk in range(0, len(five), 20_000):
                session.execute(kind.rollup_table.insert(), five[chunk : chunk + 20_000])
            session.execute(kind.rollup_table.insert(), hourly)
        rows += len(five) + len(hourly)
    with service.store.session() as session:
        session.execute(
            update(RollupState)
            .where(RollupState.kind == kind.name, RollupState.level.in_([LEVEL_5MIN, LEVEL_HOUR]))
            .values(watermark=day_start + 86400)
        )
    return len(series_ids), rows


def populate(service: Service, n_plans: int, n_audit: int) -> dict[str, Any]:
    """Plans over the lab's real disks, audit rows, a day of rollups; returns ids for the request mix."""
    inventory = service.inventory("lab")
    pod = service.resolved_pod("basil")
    pod_ds = sorted(pod.datastores)
    disks = [(vm, d) for vm in inventory.vms.values() for d in vm.disks if d.datastore in pod_ds]
    rng = random.Random(3)
    started = time.perf_counter()
    for i in range(n_plans):
        chosen = rng.sample(disks, rng.randint(1, 3))
        specs = [
            plan_store.MoveSpec(
                "lab", vm.moid, d.key, d.datastore, rng.choice([s for s in pod_ds if s != d.datastore]),
                int(d.capacity_bytes), vm_name=vm.name, instance=d.instance,
            )
            for vm, d in chosen
        ]  # fmt: skip
        with service.store.session() as session:
            plan = plan_store.create_plan(session, "basil", "lab", specs, created_by="bench")
            if i % 5 == 0:
                plan_store.cancel_plan(session, plan.id, "bench")
    plans_s = time.perf_counter() - started
    with service.store.session() as session:
        for i in range(n_audit):
            action = rng.choice(["plan.create", "plan.approve", "pool.replace"])
            outcome = rng.choice(["ok", "ok", "ok", "denied"])
            audit.record(
                session, audit.AuditEntry(f"user-{i % 17}", "token", action, f"plan {i}", "10.0.0.7", outcome)
            )
    day_start = (int(time.time()) // 3600) * 3600 - 86400
    np_rng = np.random.default_rng(5)
    disk_series, disk_rows = day_of_rollups(service, DISK, day_start, np_rng)
    pair_series, pair_rows = day_of_rollups(service, HOST_DATASTORE, day_start, np_rng)
    print(
        f"store: {n_plans} plans ({plans_s:.1f} s), {n_audit} audit rows, a day of 5-min and hourly rollups "
        f"for {disk_series} disks and {pair_series} host/datastore pairs ({disk_rows + pair_rows:,} rows)"
    )
    return {
        "vms": [vm.moid for vm, _ in disks],
        "disks": [f"{vm.moid}:{d.instance}" for vm, d in disks],
        "datastores": pod_ds,
        "disk_to": {f"{vm.moid}:{d.instance}": d.datastore for vm, d in disks},
    }


class Load:
    """An open-loop request generator: requests start on schedule whatever the server's speed."""

    def __init__(self, base: str, cert: str, token: str, ids: dict[str, Any], clients: int) -> None:
        self.base = base
        self.cert = cert
        self.headers = {"Authorization": f"Bearer {token}"}
        self.ids = ids
        self.clients = clients
        self.local = threading.local()

    def session(self) -> requests.Session:
        s: requests.Session | None = getattr(self.local, "session", None)
        if s is None:
            s = requests.Session()
            s.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise replace the service's certificate
            s.verify = self.cert
            s.headers.update(self.headers)
            self.local.session = s
        return s

    def request(self, rng: random.Random) -> tuple[str, str, str, Any]:
        """(label, method, path, body) of the next request of the mix."""
        ids = self.ids
        roll = rng.random()
        if roll < 0.03:
            new_disk = {
                "pod": "basil",
                "size_gb": 20,
                "oio": 6,
                "io_size_kb": 8,
                "read_pct": 70,
                "random_pct": 90,
            }
            return "POST /placement", "POST", "/api/v1/placement", new_disk
        if roll < 0.05:
            disk = rng.choice(ids["disks"])
            target = rng.choice([d for d in ids["datastores"] if d != ids["disk_to"][disk]])
            return (
                "POST /plans + cancel",
                "PLAN",
                "/api/v1/plans",
                {"pod": "basil", "moves": [{"disk": disk, "to": target}]},
            )
        ds = f"/api/v1/datastores/{rng.choice(ids['datastores'])}"
        gets = [
            ("GET /pods", "/api/v1/pods"),
            ("GET /pods/{pod}", "/api/v1/pods/basil"),
            ("GET /pods/{pod}/history", "/api/v1/pods/basil/history?hours=24"),
            ("GET /datastores/{id}", ds),
            ("GET /datastores/{id}/load", f"{ds}/load?hours=24"),
            ("GET /datastores/{id}/model/points", f"{ds}/model/points?hours=24"),
            ("GET /vms/{id}", f"/api/v1/vms/{rng.choice(ids['vms'])}"),
            ("GET /disks/{id}/model", f"/api/v1/disks/{rng.choice(ids['disks'])}/model?hours=24"),
            ("GET /plans?state=running", "/api/v1/plans?state=running"),
            ("GET /plans/{id}", f"/api/v1/plans/{rng.randint(1, ids['plans'])}"),
            ("GET /audit", "/api/v1/audit?limit=100"),
            ("GET /jobs", "/api/v1/jobs"),
            ("GET /health", "/api/v1/health"),
            ("GET /pools", "/api/v1/pools"),
        ]  # fmt: skip
        label, path = rng.choice(gets)
        return label, "GET", path, None

    def send(self, method: str, path: str, body: Any) -> int:
        s = self.session()
        if method == "PLAN":
            resp = s.post(self.base + path, json=body, timeout=120)
            if resp.status_code != 201:
                return resp.status_code
            resp = s.post(f"{self.base}/api/v1/plans/{resp.json()['id']}/cancel", timeout=120)
            return resp.status_code
        resp = s.request(method, self.base + path, json=body, timeout=120)
        return resp.status_code

    def run(self, rate: float, seconds: float, seed: int, server_pid: int | None = None) -> dict[str, Any]:
        cpu0 = _process_cpu_s(server_pid)
        total = int(rate * seconds)
        rng = random.Random(seed)
        schedule = [(i / rate, *self.request(rng)) for i in range(total)]
        results: list[tuple[str, float, int, float]] = []
        lock = threading.Lock()
        cursor = iter(schedule)
        t0 = time.perf_counter() + 0.5
        wall0 = time.time() + 0.5

        def worker() -> None:
            while True:
                with lock:
                    item = next(cursor, None)
                if item is None:
                    return
                at, label, method, path, body = item
                delay = t0 + at - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                try:
                    status = self.send(method, path, body)
                except requests.RequestException:
                    status = 0
                latency = time.perf_counter() - (t0 + at)  # from the scheduled start
                with lock:
                    results.append((label, latency, status, at))

        threads = [threading.Thread(target=worker) for _ in range(self.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        cpu = _process_cpu_s(server_pid) - cpu0 if server_pid is not None else None
        return {
            "rate": rate,
            "achieved": len(results) / elapsed,
            "results": results,
            "server_cpu_s": cpu,
            "wall": (wall0, wall0 + elapsed),
        }


def _process_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far, from /proc (Linux); 0 without a pid."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Hostile:
    """Idle and slow clients attached to the server for the length of a run, each in its own thread."""

    def __init__(
        self, base: str, cert: str, idle: int, slow: int, dribble_s: float, *, spread_s: float = 0.0
    ) -> None:
        host, port = base.split("://", 1)[1].rsplit(":", 1)
        self.spread_s = spread_s
        self.address = (host, int(port))
        self.context = ssl.create_default_context(cafile=cert)
        self.dribble_s = dribble_s
        self.stop = threading.Event()
        self.connections = {"idle": 0, "slow": 0}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.idle_client, daemon=True) for _ in range(idle)]
        self.threads += [threading.Thread(target=self.slow_client, daemon=True) for _ in range(slow)]

    def __enter__(self) -> Hostile:
        for i, t in enumerate(self.threads):
            if i and self.spread_s:  # starts spread evenly, so that their deadlines and reconnections are too
                time.sleep(self.spread_s / len(self.threads))
            t.start()
        time.sleep(2)  # all attached before the normal clients start
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def count(self, kind: str) -> None:
        with self.lock:
            self.connections[kind] += 1

    def idle_client(self) -> None:
        """A TCP connection that never sends a byte (no TLS handshake); a new one when it is closed."""
        while not self.stop.is_set():
            try:
                with socket.create_connection(self.address, timeout=1) as sock:
                    self.count("idle")
                    while not self.stop.is_set():
                        try:
                            if sock.recv(1) == b"":
                                break
                        except TimeoutError:
                            continue
            except OSError:
                self.stop.wait(0.1)

    def slow_client(self) -> None:
        """A TLS client sending its request head one byte every dribble_s; a new one when cut off."""
        head = b"GET /api/v1/health HTTP/1.1\r\nHost: bench\r\nUser-Agent: " + b"s" * 10_000
        while not self.stop.is_set():
            try:
                raw = socket.create_connection(self.address, timeout=10)
                with self.context.wrap_socket(raw, server_hostname=self.address[0]) as tls:
                    self.count("slow")
                    for i in range(len(head)):
                        if self.stop.wait(self.dribble_s if i else 0):
                            return
                        tls.sendall(head[i : i + 1])
            except OSError:
                self.stop.wait(0.1)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def report(run: dict[str, Any], db: Path | None = None) -> None:
    """One rate's figures (with the machine's 1-minute load average at its end: it is shared)."""
    results = run["results"]
    errors = [r for r in results if not 200 <= r[2] < 300]
    lat = [r[1] * 1000 for r in results]
    print(
        f"\nrate {run['rate']:g}/s (achieved {run['achieved']:.1f}/s), {len(results)} requests, "
        f"{len(errors)} errors: p50 {percentile(lat, 50):.1f} ms, p99 {percentile(lat, 99):.1f} ms, "
        f"mean {statistics.fmean(lat):.1f} ms; load average {os.getloadavg()[0]:.2f}"
    )
    if run.get("server_cpu_s") is not None and results:
        # CPU time does not depend on how busy the shared machine is: what the serving process (front end,
        # application, scheduler jobs) spent per request, and the share of one core it took at this rate.
        cpu_ms = run["server_cpu_s"] * 1000 / len(results)
        print(
            f"  basil serve CPU: {cpu_ms:.1f} ms a request, {cpu_ms * run['achieved'] / 10:.0f} % of a core"
        )
    by_label: dict[str, list[float]] = defaultdict(list)
    for label, latency, *_ in results:
        by_label[label].append(latency * 1000)
    print(f"  {'endpoint':<36} {'n':>5} {'p50 ms':>8} {'p99 ms':>8}")
    for label in sorted(by_label):
        values = by_label[label]
        print(f"  {label:<36} {len(values):>5} {percentile(values, 50):>8.1f} {percentile(values, 99):>8.1f}")
    if errors:
        print(f"  error statuses: {sorted({r[2] for r in errors})}")
    print(f"  the slowest 1 % were scheduled at (s into the run): {_stalls(results)}")
    if db is not None and "wall" in run:
        print(f"  job runs of basil serve meanwhile (s into the run): {_job_runs(db, *run['wall'])}")


def _job_runs(db: Path, start: float, end: float) -> str:
    """The scheduler's runs (``job_runs``) that overlapped [start, end] (epoch seconds), as seconds into the
    run, to match with the slowest 1 %."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT job_id, started_at, finished_at FROM job_runs ORDER BY started_at"
        ).fetchall()
    out = []
    for job, started, finished in rows:
        a = _epoch(started)
        b = _epoch(finished) if finished else end
        if b >= start and a <= end:
            out.append(f"{job} {a - start:.1f}-{b - start:.1f}")
    return ", ".join(out) or "-"


def _epoch(stamp: str) -> float:
    ts = datetime.fromisoformat(stamp)
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def _stalls(results: list[tuple[str, float, int, float]]) -> str:
    """When the slowest 1 % of requests were due, as spans (a stall of the whole service shows as one span
    covering every endpoint; a slow endpoint as scattered points)."""
    if not results:
        return "-"
    bar = percentile([r[1] for r in results], 99)
    times = sorted(r[3] for r in results if r[1] >= bar)
    spans: list[list[float]] = []
    for at in times:
        if spans and at - spans[-1][1] <= 1.0:
            spans[-1][1] = at
        else:
            spans.append([at, at])
    return ", ".join(f"{a:.1f}-{b:.1f}" if b > a else f"{a:.1f}" for a, b in spans)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vms", type=int, default=150)
    parser.add_argument("--plans", type=int, default=2000)
    parser.add_argument("--audit", type=int, default=10_000)
    parser.add_argument("--rates", default="10,50,100,200")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--idle", type=int, default=20)
    parser.add_argument("--slow", type=int, default=20)
    parser.add_argument("--slow-rate", type=float, default=100.0)
    parser.add_argument("--dribble-s", type=float, default=1.0)
    parser.add_argument(
        "--hostile-spread-s", type=float, default=0.0, help="start the idle and slow clients over this long"
    )
    parser.add_argument("--serve-speed", type=float, default=1.0, help="the lab's speed while serving")
    parser.add_argument("--app-cost", type=int, default=300, help="requests timed without HTTP (0: none)")
    parser.add_argument(
        "--profile", default="", help="write a cProfile of the --app-cost requests to this file"
    )
    parser.add_argument("--app-only", action="store_true", help="stop after --app-cost (no basil serve)")
    parser.add_argument(
        "--collect-cost", type=int, default=0, help="collect jobs timed in-process, one lab interval each"
    )
    parser.add_argument(
        "--collect-profile", default="", help="write a cProfile of the --collect-cost jobs to this file"
    )
    return parser.parse_args()


def main() -> int:
    args = _arguments()
    work = Path(tempfile.mkdtemp(prefix="basil-bench-api-"))
    scenario_path = work / "scenario.yaml"
    scenario_path.write_text(yaml.safe_dump(scenario(args.vms), sort_keys=False), encoding="utf-8")
    print(f"bench_api: {args.vms} VMs / {2 * args.vms} disks, {DATASTORES} pod LUNs, {HOSTS} hosts ({work})")
    with LabProcess.start(scenario_path, speed=60) as lab:
        os.environ[PASSWORD_ENV] = lab.password
        config = BasilConfig(
            vcenters=(VCenterConfig(name="lab", server=lab.server, user=lab.user, password_env=PASSWORD_ENV,
                                    tls=TLSOptions(ca_bundle=lab.pem)),),
            pods=(PodConfig(name="basil", vcenter="lab", datastore_cluster="bench-pod"),),
            store=StoreConfig(url=f"sqlite:///{work / 'basil.db'}"),
        )  # fmt: skip
        service = Service.from_config(config)
        service.start(scheduler=False)
        for job in ("inventory", "collect", "model"):
            service.run_job(job)
        # From here the lab's clock runs at --serve-speed: at 1, each 20 s collection stores one interval per
        # disk, as from a real vCenter (at 60 it stores sixty: a 60-fold collection load), and the serving
        # process's first collection does not catch up the hour or two the lab would run through while
        # the store is filled (a collection of several seconds, which stalls every request meanwhile).
        lab.set_speed(args.serve_speed)
        ids = populate(service, args.plans, args.audit)
        ids["plans"] = args.plans
        with service.store.session() as session:
            token, _ = create_token(session, "bench", "operator", created_by="bench",
                                    expires_at=datetime.now(UTC) + timedelta(days=1))  # fmt: skip
        if args.app_cost:
            app_cost(service, token, ids, args.app_cost, args.profile)
        if args.collect_cost:
            collect_cost(service, lab, args.collect_cost, args.collect_profile)
            lab.set_speed(args.serve_speed)
        service.shutdown()
        if args.app_only:
            return 0

        doc = {
            "vcenters": [{"name": "lab", "server": lab.server, "user": lab.user, "password_env": PASSWORD_ENV,
                          "tls": {"ca_bundle": lab.pem}}],
            "pods": [{"name": "basil", "vcenter": "lab", "datastore_cluster": "bench-pod"}],
            "store": {"url": f"sqlite:///{work / 'basil.db'}"},
            "server": {"listen": f"127.0.0.1:{_free_port()}",
                       "tls": {"self_signed": True, "dir": str(work / "tls")}},
        }  # fmt: skip
        (work / "basil.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
        with (work / "serve.log").open("w") as log:
            serve = subprocess.Popen(
                [sys.executable, "-m", "basil", "serve", "--config", str(work / "basil.yaml")],
                stdout=subprocess.PIPE, stderr=log, text=True, env=dict(os.environ),
            )  # fmt: skip
        try:
            assert serve.stdout is not None
            base = ""
            for line in serve.stdout:
                if " API " in line:
                    base = line.split(" API ", 1)[1].split("/api/v1/", 1)[0]
                if line.strip() == READY_LINE:
                    break
            threading.Thread(target=lambda: [None for _ in serve.stdout or []], daemon=True).start()
            load = Load(base, str(work / "tls" / "basil.crt"), token, ids, args.clients)
            load.run(5, 4, seed=0)  # warm-up: connections, caches
            print(
                f"basil serve at {base}: {args.clients} client threads, open loop, {args.seconds:g} s a "
                f"rate; the lab at speed {args.serve_speed:g}, the scheduler collecting every 20 s; "
                f"load average {os.getloadavg()[0]:.2f}"
            )
            for i, rate in enumerate(float(r) for r in args.rates.split(",") if r):
                report(load.run(rate, args.seconds, seed=i + 1, server_pid=serve.pid), work / "basil.db")
            if args.idle or args.slow:
                slow_client_run(
                    load, base, str(work / "tls" / "basil.crt"), args, serve.pid, db=work / "basil.db"
                )
        finally:
            serve.terminate()
            serve.wait(timeout=120)
            if serve.stdout is not None:
                serve.stdout.close()
    return 0


def app_cost(service: Service, token: str, ids: dict[str, Any], n: int, profile: str = "") -> None:
    """The WSGI application's own cost, no HTTP: *n* requests of the mix through Flask's test client in
    this thread, each timed in CPU time (the thread's, so other processes on the machine do not count)
    and in wall time. The mean CPU time is what one request takes from the GIL whatever the front end:
    1000 ms over it is the rate one process can reach at best. With *profile*, the requests run under
    cProfile (slower), whose statistics go to that file and whose top functions are printed."""
    from basil.api import create_app  # noqa: PLC0415

    client = create_app(service).test_client()
    headers = {"Authorization": f"Bearer {token}"}
    load = Load("", "", token, ids, 1)
    rng = random.Random(7)
    cpu: dict[str, list[float]] = defaultdict(list)
    wall: list[float] = []
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    for _ in range(n):
        label, method, path, body = load.request(rng)
        w0, c0 = time.perf_counter(), time.thread_time()
        if method == "PLAN":
            resp = client.post(path, json=body, headers=headers)
            if resp.status_code == 201:
                client.post(f"{path}/{resp.get_json()['id']}/cancel", headers=headers)
        else:
            client.open(path, method=method, json=body, headers=headers)
        cpu[label].append((time.thread_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
    every = [v for values in cpu.values() for v in values]
    mean = statistics.fmean(every)
    print(
        f"\napp cost (no HTTP, one thread, {n} requests of the mix): CPU mean {mean:.1f} ms, "
        f"p50 {percentile(every, 50):.1f} ms, p99 {percentile(every, 99):.1f} ms (wall mean "
        f"{statistics.fmean(wall):.1f} ms): at most {1000 / mean:.0f} req/s on one core"
    )
    print(f"  {'endpoint':<36} {'n':>5} {'CPU ms':>8}")
    for label in sorted(cpu):
        print(f"  {label:<36} {len(cpu[label]):>5} {statistics.fmean(cpu[label]):>8.1f}")


def collect_cost(service: Service, lab: LabProcess, n: int, profile: str = "") -> None:
    """The ``collect`` job's own cost in this process, nothing else running: the lab paused, then *n* times
    one 20 s interval stepped and the job run (one sample per disk and host/datastore pair, as each cycle
    of ``basil serve`` at the lab's real-time speed). CPU is the process's (the job's query threads
    included). With *profile*, every thread of the jobs runs under cProfile (slower), whose statistics
    go to that file and whose top functions are printed."""
    from basil.vcenter.perf import PerfCollector  # noqa: PLC0415

    lab.set_speed(0)
    service.run_job("collect")  # catches up what the lab produced since the last collection: not timed
    profilers: list[cProfile.Profile] = []
    original = PerfCollector._query_within_limit
    if profile:

        def profiled(self: PerfCollector, *a: Any) -> Any:
            profiler = cProfile.Profile(time.thread_time)  # CPU, not the waits for vCenter or the lock
            profilers.append(profiler)
            profiler.enable()
            try:
                return original(self, *a)
            finally:
                profiler.disable()

        PerfCollector._query_within_limit = profiled  # type: ignore[method-assign]
    cpu: list[float] = []
    wall: list[float] = []
    stored: list[int] = []
    main = cProfile.Profile(time.thread_time)
    try:
        for _ in range(n):
            lab.control("POST", "time/step", {"intervals": 1})
            w0, c0 = time.perf_counter(), time.process_time()
            if profile:
                main.enable()
            run = service.run_job("collect")
            if profile:
                main.disable()
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
            stored.append(sum(int(v.get("stored", 0)) for v in run.get("details", {}).get("vcenters", [])))
    finally:
        PerfCollector._query_within_limit = original  # type: ignore[method-assign]
    if profile:
        stats = pstats.Stats(main)
        for profiler in profilers:
            stats.add(profiler)
        stats.dump_stats(profile)
        stats.sort_stats("tottime").print_stats(40)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(60)
    print(
        f"\ncollect cost (in-process, {n} jobs, one lab interval each, "
        f"{statistics.fmean(stored):.0f} samples stored a job): CPU mean {statistics.fmean(cpu):.0f} ms "
        f"(median {statistics.median(cpu):.0f}, min {min(cpu):.0f}, max {max(cpu):.0f}), "
        f"wall mean {statistics.fmean(wall):.0f} ms; load average {os.getloadavg()[0]:.2f}"
    )


def slow_client_run(
    load: Load, base: str, cert: str, args: argparse.Namespace, server_pid: int, *, db: Path
) -> None:
    """The normal mix at --slow-rate while idle and slow clients hold connections."""
    with Hostile(base, cert, args.idle, args.slow, args.dribble_s, spread_s=args.hostile_spread_s) as hostile:
        print(
            f"\nslow-client run: {args.idle} idle TCP connections (no TLS handshake) and "
            f"{args.slow} TLS clients sending their head a byte every {args.dribble_s:g} s "
            "attached; the normal clients' latency:"
        )
        report(load.run(args.slow_rate, args.seconds, seed=99, server_pid=server_pid), db)
    print(
        f"  connections opened by the idle clients: {hostile.connections['idle']}, by the slow clients: "
        f"{hostile.connections['slow']} (a new one after each server deadline)"
    )


def _free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


if __name__ == "__main__":
    sys.exit(main())
