"""The HTTP front end's own cost, without Basil's application: CPU per request and latency at stated rates.

``basil.serve.http.HttpServer`` runs in a subprocess over TLS (a self-signed certificate made for the
run) with a synthetic WSGI application that burns ``--app-ms`` of CPU time in Python (holding the GIL,
as Basil's views mostly do), then waits ``--app-wait-ms`` with the GIL released (as in a database
read), and answers 10 KB of JSON. An open-loop generator (``--clients`` threads
with kept-alive connections, each request on a schedule, latency from its scheduled start) sends
``--seconds`` of requests at each rate. Per rate it prints the achieved rate, p50/p99, the server
process's CPU time per request (independent of how busy the shared machine is) and the load average.

    .venv/bin/python benchmarks/bench_frontend.py [--rates 100,200] [--seconds 10] [--app-ms 0]
        [--app-wait-ms 0] [--clients 16] [--threads 16]
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "service"))

from basil.serve.http import HttpServer  # noqa: E402
from basil.serve.tls import generate  # noqa: E402


def serve(directory: Path, app_ms: float, wait_ms: float, threads: int) -> None:
    """The server side (run in the subprocess): HttpServer with the synthetic application."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(directory / "basil.crt"), str(directory / "basil.key"))
    payload = json.dumps({"values": list(range(2000))}).encode()

    def app(_environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        end = time.thread_time() + app_ms / 1000
        digest = b""
        while time.thread_time() < end:
            digest = hashlib.sha256(digest).digest()
            sum(range(100))
        if wait_ms:
            time.sleep(wait_ms / 1000)  # as a database read: the GIL released meanwhile
        start_response("200 OK", [("Content-Type", "application/json")])
        return [payload]

    server = HttpServer(app, "127.0.0.1", 0, ssl_context=context, threads=threads)
    server.bind()
    print(f"ready {server.bind_addr[1]}", flush=True)
    server.serve()


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(base: str, cert: Path, rate: float, seconds: float, clients: int) -> tuple[list[float], float]:
    """Latencies (ms, from each request's scheduled start; inf for a failure) and the achieved rate."""
    total = int(rate * seconds)
    cursor = iter(range(total))
    lock = threading.Lock()
    latencies: list[float] = []
    t0 = time.perf_counter() + 0.5

    def worker() -> None:
        session = requests.Session()
        session.trust_env = False
        session.verify = str(cert)
        while True:
            with lock:
                i = next(cursor, None)
            if i is None:
                return
            at = t0 + i / rate
            if (delay := at - time.perf_counter()) > 0:
                time.sleep(delay)
            try:
                ok = session.get(f"{base}/x", timeout=60).status_code == 200
            except requests.RequestException:
                ok = False
            with lock:
                latencies.append((time.perf_counter() - at) * 1000 if ok else float("inf"))

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, len(latencies) / (time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="100,200")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--app-ms", type=float, default=0.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--app-wait-ms", type=float, default=0.0, help="then waits this long, GIL released")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the subprocess: its TLS directory
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.app_ms, args.app_wait_ms, args.threads)
        return 0
    directory = Path(tempfile.mkdtemp(prefix="basil-bench-frontend-"))
    generate(directory, ["localhost"], [ipaddress.ip_address("127.0.0.1")])
    command = [sys.executable, __file__, "--serve", str(directory), "--app-ms", str(args.app_ms)]
    command += ["--app-wait-ms", str(args.app_wait_ms), "--threads", str(args.threads)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        base = f"https://127.0.0.1:{port}"
        load(base, directory / "basil.crt", 20, 1, args.clients)  # warm-up: connections made
        print(
            f"bench_frontend: HttpServer over TLS, {args.threads} worker threads, an app of {args.app_ms:g} "
            f"ms CPU then {args.app_wait_ms:g} ms wait answering 10 KB; {args.clients} kept-alive clients, "
            "open loop, "
            f"{args.seconds:g} s a rate"
        )
        for rate in (float(r) for r in args.rates.split(",") if r):
            before = cpu_s(server.pid)
            latencies, achieved = load(base, directory / "basil.crt", rate, args.seconds, args.clients)
            used = cpu_s(server.pid) - before
            values = np.array(latencies)
            failed = int(np.isinf(values).sum())
            done = values[~np.isinf(values)]
            print(
                f"rate {rate:g}/s (achieved {achieved:.1f}/s), {len(values)} requests, {failed} failed: "
                f"p50 {np.percentile(done, 50):.1f} ms, p99 {np.percentile(done, 99):.1f} ms; server CPU "
                f"{used * 1000 / len(values):.2f} ms a request; load average {os.getloadavg()[0]:.2f}"
            )
    finally:
        server.terminate()
        server.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
