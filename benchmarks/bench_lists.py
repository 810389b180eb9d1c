"""The list endpoints at scale: GET /datastores, /vms, /disks over a large inventory.

Set-up, all real: a paused lab vCenter on a generated scenario (``--vms`` VMs with two disks each,
an OS disk and a data disk on a datastore cluster of ``--datastores`` LUNs); a Service connects to
it, optionally collects once (``--collect``, so disks have IOPS and latency), and the app answers
through Flask's test client (no HTTP, no TLS: the figures are the service's own work). Prints the
time of the first page (which builds and sorts the rows), of later pages, of a walk through every
disk, of filtered and sorted pages, and (with ``--collect``) of pages after another collection.

    .venv/bin/python benchmarks/bench_lists.py [--vms 20000] [--datastores 50] [--collect] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vcenter.labproc import LabProcess  # noqa: E402

from basil.api import create_app  # noqa: E402
from basil.app import Service  # noqa: E402
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig  # noqa: E402
from basil.store.tokens import create_token  # noqa: E402

PASSWORD_ENV = "BASIL_BENCH_VC_PASSWORD"
HOSTS = 8


def scenario(vms: int, datastores: int) -> dict[str, Any]:
    names = [f"lun-{i:03d}" for i in range(datastores)]
    return {
        "name": "bench-lists",
        "description": f"bench_lists.py: {vms} VMs, {2 * vms} disks, {datastores} LUNs",
        "seed": 5,
        "clusters": [{"name": "bench-cluster", "hosts": [f"esx-{h:02d}" for h in range(1, HOSTS + 1)]}],
        "datastores": [
            {"name": n, "capacity_gb": 100_000, "pod": "bench-pod", "device": {"kind": "ssd", "disks": 8}}
            for n in names
        ]
        + [{"name": "os-lun", "capacity_gb": 400_000, "device": {"kind": "ssd", "disks": 24}}],
        "vms": [
            {
                "name": f"vm-{i:05d}",
                "host": f"esx-{i % HOSTS + 1:02d}",
                "disks": [
                    {"unit": "scsi0:0", "size_gb": 10, "datastore": "os-lun"},
                    {
                        "unit": "scsi0:1",
                        "size_gb": 10 + i % 7,
                        "datastore": names[i % datastores],
                        "workload": {
                            "oio": {"min": 1, "max": 4},
                            "io_size_kb": 8,
                            "read_pct": 70,
                            "random_pct": 80,
                        },
                    },
                ],
            }
            for i in range(vms)
        ],
    }


def timed(get: Any, url: str) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    resp = get(url)
    elapsed = (time.perf_counter() - start) * 1000
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body: dict[str, Any] = resp.get_json()
    return elapsed, body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vms", type=int, default=20_000)
    ap.add_argument("--datastores", type=int, default=50)
    ap.add_argument("--collect", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-lists-"))
    path = work / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(args.vms, args.datastores)))
    os.chdir(work)
    t0 = time.perf_counter()
    with LabProcess.start(path, speed=0) as lab:
        print(f"lab: {args.vms} VMs, {2 * args.vms} disks, started in {time.perf_counter() - t0:.1f} s")
        os.environ[PASSWORD_ENV] = lab.password
        config = BasilConfig(
            vcenters=(
                VCenterConfig(
                    name="lab",
                    server=lab.server,
                    user=lab.user,
                    password_env=PASSWORD_ENV,
                    tls=TLSOptions(ca_bundle=lab.pem),
                ),
            ),
            pods=(PodConfig(name="bench", vcenter="lab", datastore_cluster="bench-pod"),),
            store=StoreConfig(url=f"sqlite:///{work / 'basil.db'}"),
        )
        service = Service.from_config(config)
        t0 = time.perf_counter()
        service.start(scheduler=False)
        service.inventory("lab", refresh=False)
        print(f"service: inventory read in {time.perf_counter() - t0:.1f} s")
        if args.collect:
            lab.step(2)
            t0 = time.perf_counter()
            service.run_job("collect")
            print(f"collect: {time.perf_counter() - t0:.1f} s")
        with service.store.session() as session:
            token, _ = create_token(session, "bench", "viewer", created_by="bench")
        client = create_app(service).test_client()
        headers = {"Authorization": f"Bearer {token}"}

        def get(url: str) -> Any:
            return client.get(url, headers=headers)

        measure(get, args.repeat)
        if args.collect:
            # A collection changes the figures, not the inventory: rows stay, figures are read anew.
            lab.step(1)
            service.run_job("collect")
            for url in (
                "/api/v1/disks?limit=500",
                "/api/v1/disks?sort=-iops&limit=50",
                "/api/v1/vms?limit=50",
            ):
                ms, _body = timed(get, url)
                print(f"after another collection, GET {url}: {ms:.0f} ms")
        service.shutdown()


def measure(get: Any, repeat: int) -> None:
    """Print the time of first and later pages, a walk through every disk, and filtered pages."""
    first, body = timed(get, "/api/v1/disks?limit=500")
    print(f"GET /disks?limit=500, first (builds and sorts every row): {first:.0f} ms")
    cursor = body["next_cursor"]
    pages = []
    for _ in range(repeat):
        ms, body = timed(get, f"/api/v1/disks?limit=500&cursor={cursor}")
        pages.append(ms)
    print(
        f"GET /disks?limit=500&cursor=...: median {statistics.median(pages):.1f} ms, max {max(pages):.1f} ms"
    )
    t0 = time.perf_counter()
    cursor, count, n_pages = None, 0, 0
    while True:
        url = "/api/v1/disks?limit=500" + (f"&cursor={cursor}" if cursor else "")
        _ms, body = timed(get, url)
        count += len(body["items"])
        n_pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    print(f"walk of every disk: {count} disks in {n_pages} pages, {time.perf_counter() - t0:.2f} s")
    for url in (
        "/api/v1/disks?sort=-size_gb&limit=50",
        "/api/v1/disks?sort=-iops&limit=50",
        "/api/v1/disks?datastore=lun-007&limit=50",
        "/api/v1/disks?q=vm-1999&limit=50",
        "/api/v1/vms?limit=50",
        "/api/v1/vms?pod=bench&sort=-size_gb&limit=50",
        "/api/v1/datastores?sort=-latency_ms",
    ):
        first, _body = timed(get, url)
        again = [timed(get, url)[0] for _ in range(repeat)]
        print(f"GET {url}: first {first:.0f} ms, then median {statistics.median(again):.1f} ms")


if __name__ == "__main__":
    main()
