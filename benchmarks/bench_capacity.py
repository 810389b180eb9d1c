"""Benchmark of capacity planning by workload shaping (Lu's thesis, Table 4.1) on a bursty trace.

Prints, on a synthetic on/off Pareto trace (on periods at 2000 IO/s, mean on 0.2 s, mean off 0.8 s,
α = 1.5), the capacity for f = 90/95/99/99.9/100 % of the IOs within δ = 5/10/20/50 ms in the shape
of Table 4.1, then the time and peak memory to read a 10-million-request SPC trace from disk and
find its capacity for 95 % within 10 ms (and for 100 %), measured in a child process so that its
peak resident memory is its own, and Miser's time on one million requests.

    .venv/bin/python benchmarks/bench_capacity.py [--table-requests N] [--big-requests N]

Target: 10 million requests read and planned in under 30 s and 500 MB on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from basil.core.shaping import capacity_curve, capacity_for_fraction, miser_responses, rtt_decompose
from basil.core.trace import onoff_pareto_arrivals, read_trace

FRACTIONS = (0.9, 0.95, 0.99, 0.999, 1.0)
BOUNDS_MS = (5, 10, 20, 50)


def table(requests: int, seed: int) -> None:
    arrivals = onoff_pareto_arrivals(requests, seed=seed)
    span = float(arrivals[-1] - arrivals[0])
    print(f"on/off Pareto trace: {requests:,} IOs over {span:,.0f} s, mean {requests / span:,.0f} IO/s")
    print("capacity (IO/s) for a fraction of the IOs within the bound (Table 4.1's shape)")
    print(f"{'bound':>8} " + " ".join(f"{f * 100:>9g}%" for f in FRACTIONS) + f" {'time':>8}")
    for bound_ms in BOUNDS_MS:
        started = time.perf_counter()
        curve = capacity_curve(arrivals, FRACTIONS, bound_ms / 1000.0)
        took = time.perf_counter() - started
        print(
            f"{bound_ms:>6} ms " + " ".join(f"{p.capacity_iops:>10,.0f}" for p in curve) + f" {took:>7.1f}s"
        )


def write_spc(path: Path, requests: int, seed: int) -> None:
    arrivals = onoff_pareto_arrivals(requests, seed=seed)
    chunk = 1_000_000
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, requests, chunk):
            part = arrivals[start : start + chunk].tolist()
            out.write(
                "".join(f"0,{8 * (start + k)},4096,{'RW'[k % 3 == 0]},{t:.6f}\n" for k, t in enumerate(part))
            )


def measure(path: Path) -> None:
    """Child process: read the trace and plan it; print one JSON line of figures."""
    started, cpu = time.perf_counter(), time.process_time()
    with path.open(encoding="utf-8") as lines:
        trace = read_trace(lines, "spc")
    read_s, read_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    found = capacity_for_fraction(trace.arrivals, 0.95, 0.010)
    search_s, search_cpu = time.perf_counter() - started, time.process_time() - cpu
    started = time.perf_counter()
    full = capacity_for_fraction(trace.arrivals, 1.0, 0.010)
    full_s = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "requests": trace.requests,
                "read_s": read_s,
                "search_s": search_s,
                "read_cpu": read_cpu,
                "search_cpu": search_cpu,
                "passes": found.passes,
                "capacity_95": found.capacity,
                "full_s": full_s,
                "full_passes": full.passes,
                "capacity_100": full.capacity,
                "peak_mb": peak_kb / 1024.0,
            }
        )
    )


def big(requests: int, seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.spc"
        started = time.perf_counter()
        write_spc(path, requests, seed)
        size_mb = path.stat().st_size / 2**20
        took = time.perf_counter() - started
        print(f"\nwrote {requests:,} SPC lines ({size_mb:,.0f} MB) in {took:.1f} s (not counted)")
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(path)], check=True, capture_output=True, text=True
        )
    f = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"read {f['requests']:,} requests:                {f['read_s']:6.1f} s")
    print(
        f"capacity for 95 % within 10 ms:        {f['search_s']:6.1f} s "
        f"({f['passes']} RTT passes) → {f['capacity_95']:,.0f} IO/s"
    )
    print(f"read + 95 % search:                    {f['read_s'] + f['search_s']:6.1f} s  (target < 30 s)")
    cpu = f["read_cpu"] + f["search_cpu"]
    print(f"  the same in CPU time of the child:    {cpu:6.1f} s  (wall time on a loaded machine is more)")
    print(
        f"capacity for 100 % within 10 ms:       {f['full_s']:6.1f} s "
        f"({f['full_passes']} passes) → {f['capacity_100']:,.0f} IO/s"
    )
    print(f"peak resident memory of the child:     {f['peak_mb']:6.0f} MB (target < 500 MB)")


def miser(requests: int, seed: int) -> None:
    arrivals = onoff_pareto_arrivals(requests, seed=seed)
    cmin = capacity_for_fraction(arrivals, 0.95, 0.010).capacity
    primary = rtt_decompose(arrivals, cmin, 0.010)
    started = time.perf_counter()
    responses = miser_responses(arrivals, primary, cmin * (1 + 1 / 6), 0.010)
    took = time.perf_counter() - started
    within = float(np.mean(responses[primary] <= 0.010 + 1e-9))
    over = responses[~primary] * 1000
    print(
        f"\nMiser on {requests:,} IOs at Cmin(95 %) × 7/6 = {cmin * 7 / 6:,.0f} IO/s: {took:.1f} s; "
        f"primary within 10 ms {within:.2%}; overflow p50 {np.percentile(over, 50):.1f} ms, "
        f"p99 {np.percentile(over, 99):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table-requests", type=int, default=1_000_000)
    parser.add_argument("--big-requests", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        measure(args.measure)
        return
    table(args.table_requests, args.seed)
    big(args.big_requests, args.seed)
    miser(min(args.table_requests, 1_000_000), args.seed)


if __name__ == "__main__":
    main()
