"""The service's memory on the lab's large scenario: an hour of steady collection, then an hour's outage.

The lab runs ``lab/scenarios/large.yaml`` (2,000 VMs, 6,000 disks, 64 hosts, 50 datastores). A
Service on a fresh SQLite store starts its APScheduler scheduler the way ``basil serve`` does (the
API's WSGI server is not started: its memory is bench-api's business), with every job on its default
schedule except collection, which runs every ``--collect-s`` wall seconds: with the lab at
``--speed`` 10 a cycle covers two or three 20 s intervals of vCenter time (the real service, every
20 s, covers one), and an hour of vCenter time takes six minutes.

(a) Steady state: the scheduler runs until an hour of vCenter time has been collected, with a line
    every ten minutes of vCenter time; then the scheduler is paused and the model job and the
    maintenance job (roll-up and retention) are run once each.
(b) Catch-up after an hour's outage: the lab is paused, one cycle brings the service up to date,
    the lab is stepped 180 intervals (an hour) and one collection job catches them up, with the
    peak memory while it does.

Memory, all cheap enough to read without disturbing what is measured: RSS (``VmRSS``); its peak
since the phase began (``VmHWM``, reset through ``/proc/self/clear_refs``); and the heap in use:
bytes in pymalloc's allocated blocks plus glibc malloc's bytes in use (``mallinfo2``), i.e. what
Python objects and the C libraries hold, without what the allocators keep in reserve. Peaks of
the heap are sampled every 0.2 s. ``--tracemalloc`` adds tracemalloc's count of Python
allocations (it slows the process and adds memory of its own, so it is off by default).

    .venv/bin/python benchmarks/bench_service_memory.py [--speed 10] [--collect-s 5] [--hours 1]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import logging
import os
import re
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vcenter.labproc import LabProcess  # noqa: E402

from basil.app import Service  # noqa: E402
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig  # noqa: E402
from basil.config.schema import SchedulesConfig  # noqa: E402
from basil.errors import ConflictError  # noqa: E402
from basil.store import Store  # noqa: E402
from basil.store.models import JobRunRow  # noqa: E402

HOUR_S = 3600
INTERVALS_PER_HOUR = 180
MB = 2**20


# --- memory figures ----------------------------------------------------------------------------------


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    return _status("VmRSS")


def hwm_mb() -> float:
    """Peak RSS since the last :func:`reset_hwm`."""
    return _status("VmHWM")


def reset_hwm() -> None:
    Path("/proc/self/clear_refs").write_text("5")


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


_libc = ctypes.CDLL(None)
_libc.mallinfo2.restype = _MallInfo2
_PYMALLOC = re.compile(rb"# bytes in allocated blocks\s*=\s*([\d,]+)")
_stats_lock = threading.Lock()


def pymalloc_bytes() -> int:
    """Bytes in pymalloc's allocated blocks (``sys._debugmallocstats`` writes them to C's stderr)."""
    with _stats_lock, tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        found = _PYMALLOC.search(out.read())
    return int(found.group(1).replace(b",", b"")) if found else 0


def heap_mb() -> float:
    """Python objects and C libraries' allocations in use: pymalloc blocks + malloc in use."""
    info = _libc.mallinfo2()
    return (pymalloc_bytes() + info.uordblks + info.hblkhd) / MB


class Peaks:
    """Samples RSS and the heap every *period* seconds in a thread; the maxima since :meth:`reset`,
    overall and per set of jobs running at the time of the sample (jobs on periods that divide each
    other start together)."""

    def __init__(self, period: float = 0.2) -> None:
        self.period = period
        self.rss = self.heap = 0.0
        self.running: set[str] = set()
        self.by_jobs: dict[frozenset[str], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-peaks", daemon=True)
        self._thread.start()

    def reset(self) -> None:
        reset_hwm()
        self.rss, self.heap = rss_mb(), heap_mb()
        self.by_jobs = {}

    def watch(self, svc: Service) -> None:
        """Note which jobs are running: every job of the service, scheduled or not, goes through run_job."""
        run_job = svc.run_job

        def watched(job_id: str) -> dict[str, Any]:
            self.running.add(job_id)
            try:
                return run_job(job_id)
            finally:
                self.running.discard(job_id)

        svc.run_job = watched  # type: ignore[method-assign]

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            heap = heap_mb()
            self.rss = max(self.rss, rss_mb())
            self.heap = max(self.heap, heap)
            running = frozenset(self.running)
            self.by_jobs[running] = max(self.by_jobs.get(running, 0.0), heap)

    def jobs(self) -> str:
        return "; ".join(
            f"{'+'.join(sorted(jobs)) or 'none'} {heap:.0f} MB"
            for jobs, heap in sorted(self.by_jobs.items(), key=lambda item: item[1])
        )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def report(label: str, peaks: Peaks | None = None) -> None:
    line = f"{label:<34} RSS {rss_mb():7.0f} MB  heap {heap_mb():7.0f} MB"
    if peaks is not None:
        line += f"  | peak RSS {max(hwm_mb(), peaks.rss):7.0f} MB  peak heap {peaks.heap:7.0f} MB"
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        line += f"  | tracemalloc {current / MB:.0f} MB (peak {peak / MB:.0f} MB)"
        tracemalloc.reset_peak()
    print(line, flush=True)


# --- the service -------------------------------------------------------------------------------------


def run_when_free(svc: Service, job: str) -> dict[str, Any]:
    """Run *job* now, waiting while the scheduler's own run of it finishes."""
    while True:
        try:
            return svc.run_job(job)
        except ConflictError:
            time.sleep(0.2)


def vcenter_span(svc: Service, first: datetime | None) -> float:
    latest = svc.links["lab"].last_collection
    if first is None or latest is None:
        return 0.0
    return (latest - first).total_seconds()


@contextmanager
def lab_and_service(args: argparse.Namespace, work: Path) -> Iterator[tuple[LabProcess, Service]]:
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
            schedules=SchedulesConfig(collect_s=args.collect_s),
        )
        svc = Service(config, Store(url), params_factory=lambda _vc: lab.connection_params())
        try:
            yield lab, svc
        finally:
            if svc.scheduler is not None:
                svc.scheduler.remove_all_jobs()  # a throw-away store: nothing is left due at shutdown
            svc.shutdown()


class SkippedRuns(logging.Filter):
    """Counts (and silences) APScheduler's notes that a collect run was skipped: the last one still ran."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if "maximum number of running instances" in record.getMessage():
            self.count += 1
            return False
        return True


def collect_runs(svc: Service, since: datetime) -> list[tuple[float, str]]:
    """(duration in s, outcome) of every collect run started after *since*."""
    with svc.store.read_session() as session:
        rows = session.execute(
            select(JobRunRow.started_at, JobRunRow.finished_at, JobRunRow.outcome).where(
                JobRunRow.job_id == "collect", JobRunRow.started_at >= since
            )
        ).all()
    return [((f - s).total_seconds() if f else float("nan"), o) for s, f, o in rows]


def summary(details: dict[str, Any]) -> str:
    (vc,) = details["vcenters"]
    keys = ("disk_samples", "host_samples", "stored", "duplicates", "requests", "rounds", "chunks", "behind")
    return ", ".join(f"{k} {vc[k]}" for k in keys if k in vc)


def steady_state(args: argparse.Namespace, lab: LabProcess, svc: Service, peaks: Peaks) -> None:
    print(
        f"(a) steady state: lab speed {args.speed:g}, collect every {args.collect_s} s "
        f"({args.speed * args.collect_s / 20:g} intervals of 20 s per cycle), other jobs on their schedules",
        flush=True,
    )
    started = datetime.now(UTC)
    skipped = SkippedRuns()
    for handler in logging.getLogger().handlers:
        handler.addFilter(skipped)
    peaks.reset()
    svc.start(scheduler=True)
    inv = svc.inventory("lab")
    disks = sum(len(v.disks) for v in inv.vms.values())
    print(
        f"lab: {len(inv.vms)} VMs, {disks} disks, {len(inv.datastores)} datastores, {len(inv.hosts)} hosts",
        flush=True,
    )
    report("after start", peaks)
    first: datetime | None = None
    wall = time.monotonic()
    next_mark = 600.0
    while True:
        time.sleep(1.0)
        if first is None:
            first = svc.links["lab"].last_collection
            continue
        span = vcenter_span(svc, first)
        if span >= next_mark or span >= args.hours * HOUR_S:
            report(f"  {span / 60:3.0f} min of vCenter time", peaks)
            next_mark += 600.0
        if span >= args.hours * HOUR_S:
            break
    assert svc.scheduler is not None
    svc.scheduler.pause()
    took = time.monotonic() - wall
    while peaks.running:  # the runs that had started end
        time.sleep(0.2)
    runs = collect_runs(svc, started)
    durations = sorted(d for d, o in runs if o == "succeeded")
    failed = sum(1 for _, o in runs if o != "succeeded")
    median = durations[len(durations) // 2] if durations else float("nan")
    print(
        f"collected {vcenter_span(svc, first) / 3600:.2f} h of vCenter time in {took:.0f} s wall: "
        f"{len(runs)} collect runs ({failed} failed), median {median:.1f} s, "
        f"max {max(durations, default=float('nan')):.1f} s; {skipped.count} runs skipped while "
        "the previous one still ran",
        flush=True,
    )
    report(f"after {args.hours:g} h of collection", peaks)
    print(f"  peak heap by jobs running: {peaks.jobs()}", flush=True)
    peaks.reset()
    t = time.monotonic()
    model = run_when_free(svc, "model")
    took = time.monotonic() - t
    (vc,) = model["details"].get("vcenters", [{}])
    print(f"model job: {model['outcome']} in {took:.1f} s: {vc}", flush=True)
    report("after modelling", peaks)
    peaks.reset()
    maintenance = run_when_free(svc, "maintenance")
    details = maintenance["details"]
    rolled = ", ".join(f"{k} {v}" for k, v in details.get("rollups", {}).items())
    deleted = sum(details.get("deleted", {}).values())
    print(f"maintenance job: {maintenance['outcome']}: rollups {rolled}; {deleted} rows pruned", flush=True)
    report("after roll-up and retention", peaks)


def catch_up(lab: LabProcess, svc: Service, peaks: Peaks) -> None:
    print("(b) catch-up after an hour's outage", flush=True)
    lab.set_speed(0)
    run_when_free(svc, "collect")  # up to the paused clock
    t = time.monotonic()
    lab.step(INTERVALS_PER_HOUR)
    print(f"lab stepped an hour ({INTERVALS_PER_HOUR} intervals) in {time.monotonic() - t:.1f} s", flush=True)
    gc.collect()
    report("before catching up")
    peaks.reset()
    t = time.monotonic()
    run = run_when_free(svc, "collect")
    took = time.monotonic() - t
    print(f"catch-up cycle: {run['outcome']} in {took:.1f} s: {summary(run['details'])}", flush=True)
    report("after catching up", peaks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=10.0, help="lab speed (vCenter seconds per second)")
    parser.add_argument("--collect-s", type=int, default=5, help="collect job period, wall seconds (>= 5)")
    parser.add_argument("--hours", type=float, default=1.0, help="hours of vCenter time in (a)")
    parser.add_argument("--tracemalloc", action="store_true", help="also count Python allocations")
    parser.add_argument("--skip-steady", action="store_true", help="only (b), after one cycle")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.tracemalloc:
        tracemalloc.start()
    work = Path(tempfile.mkdtemp(prefix="basil-bench-mem-"))
    peaks = Peaks()
    with lab_and_service(args, work) as (lab, svc):
        peaks.watch(svc)
        if args.skip_steady:
            svc.start(scheduler=False)
            run_when_free(svc, "collect")
            report("after start and one cycle")
        else:
            steady_state(args, lab, svc, peaks)
        catch_up(lab, svc, peaks)
    peaks.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
