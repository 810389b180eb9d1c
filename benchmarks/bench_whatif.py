"""Validation of the consolidation what-if (Casale et al.) against the lab's storage physics.

Each workload type runs alone on a LUN of the lab (paused clock, stepped), then every pair (and a
few triples) runs together on the same LUN. The lab's ground truth (``/lab/truth``, averaged over
the run) gives per disk read/write IOPS and latency; outstanding IOs come from Little's law (the
lab's ``IOPS × latency / OIO`` is 1, as vCenter's averaged counters give it). The predictions of
:mod:`basil.core.consolidation` from the isolation runs are compared with the consolidated runs:
absolute relative errors of the mix, the throughput and the read/write response times, per
combination, and their medians.

Sets of combinations:

- ``tuning``: the workloads the estimator was developed on (Table 1 Iometer, Filebench-like
  mail/web/file, a sequential stream) on a 6 x 15k FC RAID 0 LUN, scenario seed 16;
- ``heldout``: other workload types (DSS, VDI, backup, log, analytics) and pairs of them with the
  tuning types, on an 8 x 10k SAS RAID 10 LUN, scenario seed 2026; not looked at while the
  estimator was changed, reported beside the tuning set;
- ``third``: written down after the interleaving rule was chosen (on the tuning set) and before it
  was run: tuning and held-out types mixed, sequential streams beside random ones, on a 8 x 7.2k
  SATA RAID 5 LUN, scenario seed 311;
- ``fourth``: written down before the destage rule (whose motivation was the held-out set's log
  combinations): new types, log-like write streams and combinations without them, on a 7 x 15k FC
  RAID 5 LUN, scenario seed 7001;
- ``fifth``: written down before the estimator was changed for issue 16 (all four sets above had
  been seen by then): new and earlier types, with and without cached writers and sequential
  streams, on a 10 x 10k SAS RAID 6 LUN, scenario seed 5150;
- ``sixth``: written down before the filling cache was modelled (task wif3) and not run before
  that change was final: new and earlier types, with cached writers strong enough to saturate
  destaging and without, on a 6 x 7.2k SATA RAID 6 LUN with a 512 MB cache, scenario seed 6606;
- ``seventh``: written down (task wif4) before a cache already full where a disk was measured was
  carried to its neighbours, and not run before that change was final: new and earlier types, with
  disks whose writes alone may overflow the cache, cached writers and plain pairs, on a 5 x 10k SAS
  RAID 5 LUN with a 256 MB cache, scenario seed 7707;
- ``eighth``: written down (task wif5) before cache bursts below the mean destage bound were
  modelled, and not run before that change was final: bursty cached writers below the bound, writers
  well below it, a sequential reader beside random ones, plain random pairs, on a 4 x 15k FC RAID 10
  LUN with a 384 MB cache, scenario seed 8808;
- ``ninth``: written down (task wif6) before the warm-up option and the estimator change of that
  task, and not run until they were final: random pairs, a sequential reader beside random ones,
  cached writers below and near the destage bound, one triple, on an 8 x 7.2k SATA RAID 10 LUN with
  a 768 MB cache, scenario seed 9909;
- ``tenth``: written down (task wif7) before anything of that task was changed in the estimator,
  and not run until it was final: sequential readers beside random ones, random pairs, cached
  writers, two triples, on a 9 x 15k FC RAID 6 LUN with a 1,024 MB cache, scenario seed 1010.

A disk's VM has the same name alone and consolidated, so its outstanding-IO draws are the same in
both runs (the lab draws a ranged OIO per VM and interval): the comparison is of the same workload.

    .venv/bin/python benchmarks/bench_whatif.py
        [--set tuning|heldout|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|seen|all ...]
        [--intervals N] [--no-triples] [--cache FILE] [--no-sequential] [--no-destage] [--no-separation]
        [--no-filling] [--no-full-cache] [--no-edge] [--no-steady-full] [--no-fork-join]
        [--warmup N] [--jobs J] [--dump FILE]
        [--series NAME+NAME]
        [--parallelism M]
        [--service]

Needs build/basil-lab (`make lab`). Target: a median read-latency error under 10 %.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.vcenter.labproc import LabProcess

from basil.core.consolidation import (
    DEFAULT_WRITE_CACHE_MS,
    RAID_WRITE_COST,
    DeviceParams,
    ReadInterval,
    SeparatedFit,
    WorkloadMeasurement,
    parallelism_from_fit,
    positioning_from_fit,
    predict_consolidation,
    separate_destage,
)
from basil.core.device_model import DeviceModelParams, DeviceSample, fit_device_model, fitted_intervals

# Table 1 Iometer workloads (BASIL), Filebench-like mail/web/file (BASIL §6.6) and a sequential stream.
WORKLOADS: dict[str, dict[str, Any]] = {
    "oltp": {"oio": {"min": 12, "max": 16}, "io_size_kb": 8, "read_pct": 70, "random_pct": 100},
    "exchange": {"oio": {"min": 4, "max": 16}, "io_size_kb": 4, "read_pct": 67, "random_pct": 100},
    "workstation": {"oio": {"min": 4, "max": 12}, "io_size_kb": 8, "read_pct": 80, "random_pct": 80},
    "webserver": {"oio": {"min": 1, "max": 4}, "io_size_kb": 4, "read_pct": 95, "random_pct": 75},
    "fb-mail": {"oio": {"min": 0, "max": 4.44}, "io_size_kb": 5, "read_pct": 16, "random_pct": 99},
    "fb-web": {"oio": {"min": 0, "max": 8.89}, "io_size_kb": 18, "read_pct": 99, "random_pct": 98},
    "fb-file": {"oio": {"min": 0, "max": 5.56}, "io_size_kb": 5, "read_pct": 60, "random_pct": 99},
    "sequential": {"oio": 4, "io_size_kb": 64, "read_pct": 100, "random_pct": 0},
}
# Held out: chosen before the estimator was changed, never used to decide how it works.
HELDOUT_WORKLOADS: dict[str, dict[str, Any]] = {
    "dss": {"oio": {"min": 6, "max": 12}, "io_size_kb": 64, "read_pct": 100, "random_pct": 100},
    "vdi": {"oio": {"min": 2, "max": 8}, "io_size_kb": 4, "read_pct": 30, "random_pct": 90},
    "backup": {"oio": 2, "io_size_kb": 256, "read_pct": 100, "random_pct": 5},
    "log": {"oio": {"min": 1, "max": 2}, "io_size_kb": 8, "read_pct": 5, "random_pct": 10},
    "analytics": {"oio": {"min": 4, "max": 10}, "io_size_kb": 32, "read_pct": 90, "random_pct": 50},
}


@dataclass
class Setup:
    name: str
    seed: int
    device: dict[str, Any]
    workloads: dict[str, dict[str, Any]]
    combos: list[tuple[str, ...]] = field(default_factory=list)


def tuning(triples: bool) -> Setup:
    names = list(WORKLOADS)
    combos: list[tuple[str, ...]] = list(itertools.combinations(names, 2))
    if triples:
        combos += [
            ("oltp", "webserver", "fb-mail"),
            ("exchange", "fb-web", "sequential"),
            ("workstation", "fb-file", "fb-mail"),
        ]
    device = {"kind": "fc15k", "disks": 6, "raid": "0", "cache_mb": 1024}
    return Setup("tuning", 16, device, WORKLOADS, combos)


def heldout(triples: bool) -> Setup:
    workloads = {**HELDOUT_WORKLOADS, **{k: WORKLOADS[k] for k in ("oltp", "webserver", "fb-mail")}}
    combos: list[tuple[str, ...]] = list(itertools.combinations(HELDOUT_WORKLOADS, 2))
    combos += [(h, t) for h in ("dss", "vdi", "analytics") for t in ("oltp", "webserver", "fb-mail")]
    if triples:
        combos += [("dss", "vdi", "log"), ("analytics", "backup", "webserver")]
    device = {"kind": "sas10k", "disks": 8, "raid": "10", "cache_mb": 2048}
    return Setup("heldout", 2026, device, workloads, combos)


def third(triples: bool) -> Setup:
    """Written down (2026-11-26, before running it) to check the interleaving rule, which was chosen
    on the tuning set: tuning and held-out types mixed, sequential and partly sequential streams
    beside random ones, on a LUN of a kind neither set used (7.2k SATA RAID 5), another seed."""
    workloads = {**WORKLOADS, **HELDOUT_WORKLOADS}
    combos: list[tuple[str, ...]] = [
        ("sequential", "oltp"),
        ("sequential", "vdi"),
        ("sequential", "webserver"),
        ("sequential", "dss"),
        ("backup", "exchange"),
        ("backup", "fb-file"),
        ("log", "workstation"),
        ("log", "fb-web"),
        ("analytics", "exchange"),
        ("analytics", "sequential"),
        ("oltp", "vdi"),
        ("exchange", "dss"),
        ("webserver", "fb-mail"),
    ]
    if triples:
        combos += [("sequential", "backup", "oltp"), ("webserver", "log", "fb-mail")]
    device = {"kind": "sata7k", "disks": 8, "raid": "5", "cache_mb": 1024}
    return Setup("third", 311, device, workloads, combos)


# Fourth set: workload types none of the other sets used.
FOURTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # log-like: sequential writes a write-back cache absorbs
    "redo": {"oio": 1, "io_size_kb": 4, "read_pct": 2, "random_pct": 5},
    "journal": {"oio": {"min": 1, "max": 3}, "io_size_kb": 16, "read_pct": 10, "random_pct": 15},
    "ingest": {"oio": 2, "io_size_kb": 128, "read_pct": 0, "random_pct": 5},
    # without: random, random with cached random writes, a sequential reader
    "erp": {"oio": {"min": 8, "max": 14}, "io_size_kb": 8, "read_pct": 75, "random_pct": 100},
    "search": {"oio": {"min": 4, "max": 10}, "io_size_kb": 16, "read_pct": 95, "random_pct": 90},
    "mailstore": {"oio": {"min": 2, "max": 8}, "io_size_kb": 8, "read_pct": 55, "random_pct": 95},
    "scan": {"oio": 3, "io_size_kb": 128, "read_pct": 100, "random_pct": 10},
}


def fourth(triples: bool) -> Setup:
    """Written down (2026-11-26, before running it and before the destage rule was written) to
    check the destage rule: the held-out set's log combinations motivated it, so they no longer
    check it. New workload types, log-like sequential write streams beside random and sequential
    readers and combinations without them, on a LUN of a kind and RAID level no other set used
    (15k FC RAID 5, 7 devices), another seed."""
    combos: list[tuple[str, ...]] = [
        ("redo", "erp"),
        ("redo", "search"),
        ("redo", "scan"),
        ("journal", "erp"),
        ("journal", "mailstore"),
        ("ingest", "search"),
        ("ingest", "erp"),
        ("erp", "search"),
        ("erp", "mailstore"),
        ("search", "scan"),
        ("mailstore", "scan"),
        ("erp", "search", "mailstore"),
    ]
    if triples:
        combos += [("redo", "erp", "search"), ("journal", "scan", "mailstore")]
    device = {"kind": "fc15k", "disks": 7, "raid": "5", "cache_mb": 1024}
    return Setup("fourth", 7001, device, FOURTH_WORKLOADS, combos)


# Fifth set: four new types beside types of the earlier sets.
FIFTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # new: a write-ahead log (sequential 8 KB writes a write-back cache absorbs), a write-heavy random
    # disk (cached random writes), a partly sequential 64 KB reader, a small-block random reader
    "wal": {"oio": {"min": 1, "max": 2}, "io_size_kb": 8, "read_pct": 3, "random_pct": 8},
    "oltp-w": {"oio": {"min": 6, "max": 12}, "io_size_kb": 8, "read_pct": 40, "random_pct": 100},
    "media": {"oio": {"min": 2, "max": 4}, "io_size_kb": 64, "read_pct": 95, "random_pct": 20},
    "kv": {"oio": {"min": 8, "max": 16}, "io_size_kb": 4, "read_pct": 85, "random_pct": 100},
    **{k: WORKLOADS[k] for k in ("oltp", "exchange", "webserver")},
    **{k: HELDOUT_WORKLOADS[k] for k in ("dss", "vdi", "log")},
    **{k: FOURTH_WORKLOADS[k] for k in ("redo", "erp", "search", "scan")},
}


def fifth(triples: bool) -> Setup:
    """Written down (2026-11-26 03:25 UTC, issue 16) and committed before any change to the estimator
    and before running it: four new types (a write-ahead log, a write-heavy random disk, a partly
    sequential reader, a small-block random reader) and pairs with types of the earlier sets, with
    and without cached writers and sequential streams, on a LUN of a RAID level and spindle count no
    other set used (10 x 10k SAS RAID 6), another seed."""
    combos: list[tuple[str, ...]] = [
        ("wal", "kv"),
        ("wal", "oltp"),
        ("wal", "media"),
        ("oltp-w", "kv"),
        ("oltp-w", "webserver"),
        ("media", "kv"),
        ("media", "exchange"),
        ("log", "erp"),
        ("redo", "vdi"),
        ("scan", "vdi"),
        ("kv", "exchange"),
        ("dss", "oltp-w"),
        ("search", "oltp"),
    ]
    if triples:
        combos += [("wal", "kv", "media"), ("redo", "oltp-w", "webserver")]
    device = {"kind": "sas10k", "disks": 10, "raid": "6", "cache_mb": 2048}
    return Setup("fifth", 5150, device, FIFTH_WORKLOADS, combos)


# Sixth set: four new types beside types of the earlier sets.
SIXTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # new: an audit trail (sequential 16 KB writes a write-back cache absorbs), a change-data-capture
    # disk (cached small random writes), a reporting reader (32 KB, partly sequential), a catalog
    # (small random reads)
    "audit": {"oio": {"min": 1, "max": 3}, "io_size_kb": 16, "read_pct": 4, "random_pct": 10},
    "cdc": {"oio": {"min": 4, "max": 10}, "io_size_kb": 4, "read_pct": 25, "random_pct": 95},
    "report": {"oio": {"min": 2, "max": 6}, "io_size_kb": 32, "read_pct": 98, "random_pct": 60},
    "catalog": {"oio": {"min": 4, "max": 12}, "io_size_kb": 8, "read_pct": 90, "random_pct": 100},
    **{k: WORKLOADS[k] for k in ("oltp", "exchange", "webserver", "fb-mail")},
    **{k: HELDOUT_WORKLOADS[k] for k in ("vdi",)},
    **{k: FOURTH_WORKLOADS[k] for k in ("redo", "search")},
    **{k: FIFTH_WORKLOADS[k] for k in ("wal", "kv")},
}


def sixth(triples: bool) -> Setup:
    """Written down (2026-11-26 04:35 UTC, issue 16, task wif3) and committed before the filling
    cache was modelled, and not run before the estimator change was final: four new types (an audit
    trail, a change-data-capture disk, a reporting reader, a catalog) and pairs with types of the
    earlier sets, some with cached writers strong enough to saturate destaging, some without, on a
    LUN of a kind, RAID level and size no other set used (6 x 7.2k SATA RAID 6, 512 MB cache),
    another seed."""
    combos: list[tuple[str, ...]] = [
        ("audit", "catalog"),
        ("audit", "oltp"),
        ("audit", "report"),
        ("cdc", "catalog"),
        ("cdc", "webserver"),
        ("cdc", "kv"),
        ("wal", "search"),
        ("redo", "catalog"),
        ("vdi", "report"),
        ("catalog", "exchange"),
        ("report", "kv"),
        ("oltp", "search"),
        ("fb-mail", "catalog"),
    ]
    if triples:
        combos += [("audit", "cdc", "catalog"), ("catalog", "report", "webserver")]
    device = {"kind": "sata7k", "disks": 6, "raid": "6", "cache_mb": 512}
    return Setup("sixth", 6606, device, SIXTH_WORKLOADS, combos)


# Seventh set: four new types beside types of the earlier sets.
SEVENTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # new: a spool of large sequential writes (more MB/s than a small array destages), a ledger (a log
    # of 8 KB sequential writes), a ticketing disk (half cached 4 KB random writes), a lookup disk
    # (8 KB random reads) and a streaming reader (128 KB, mostly sequential)
    "spool": {"oio": 2, "io_size_kb": 64, "read_pct": 2, "random_pct": 5},
    "ledger": {"oio": {"min": 1, "max": 2}, "io_size_kb": 8, "read_pct": 5, "random_pct": 10},
    "ticket": {"oio": {"min": 3, "max": 8}, "io_size_kb": 4, "read_pct": 50, "random_pct": 100},
    "lookup": {"oio": {"min": 6, "max": 12}, "io_size_kb": 8, "read_pct": 95, "random_pct": 100},
    "stream": {"oio": 2, "io_size_kb": 128, "read_pct": 100, "random_pct": 15},
    **{k: WORKLOADS[k] for k in ("oltp", "exchange", "webserver")},
    **{k: HELDOUT_WORKLOADS[k] for k in ("vdi",)},
    **{k: FOURTH_WORKLOADS[k] for k in ("search",)},
    **{k: FIFTH_WORKLOADS[k] for k in ("kv",)},
    **{k: SIXTH_WORKLOADS[k] for k in ("audit", "cdc", "catalog")},
}


def seventh(triples: bool) -> Setup:
    """Written down (2026-11-26 06:45 UTC, issue 16, task wif4) and committed before the full cache
    was carried to the neighbours, and not run before that estimator change was final: five new
    types (a spool of 64 KB sequential writes, a ledger, a ticketing disk, a lookup disk, a
    streaming reader) and pairs and triples with types of the earlier sets: some with a disk whose
    writes alone may already overflow the cache (spool, audit), some with cached writers that may
    saturate destaging (ticket, cdc, ledger), some plain; on a LUN of a kind, RAID level, size and
    cache no other set used (5 x 10k SAS RAID 5, 256 MB cache), another seed."""
    combos: list[tuple[str, ...]] = [
        ("spool", "lookup"),
        ("spool", "oltp"),
        ("spool", "ticket"),
        ("audit", "lookup"),
        ("audit", "exchange"),
        ("ledger", "lookup"),
        ("ledger", "search"),
        ("ticket", "lookup"),
        ("ticket", "webserver"),
        ("cdc", "kv"),
        ("lookup", "exchange"),
        ("stream", "vdi"),
        ("lookup", "catalog"),
    ]
    if triples:
        combos += [("spool", "ledger", "lookup"), ("ticket", "lookup", "webserver")]
    device = {"kind": "sas10k", "disks": 5, "raid": "5", "cache_mb": 256}
    return Setup("seventh", 7707, device, SEVENTH_WORKLOADS, combos)


# Eighth set: five new types beside types of the earlier sets.
EIGHTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # new: a binary log (16 KB sequential writes, bursty outstanding IOs), a message queue (cached
    # 4 KB random writes, wide burst range), a metrics disk (8 KB writes, idle to busy), an index
    # disk (8 KB random reads) and a restore reader (256 KB sequential)
    "binlog": {"oio": {"min": 1, "max": 3}, "io_size_kb": 16, "read_pct": 3, "random_pct": 12},
    "queue": {"oio": {"min": 1, "max": 7}, "io_size_kb": 4, "read_pct": 20, "random_pct": 90},
    "metrics": {"oio": {"min": 0, "max": 4}, "io_size_kb": 8, "read_pct": 10, "random_pct": 60},
    "index": {"oio": {"min": 4, "max": 10}, "io_size_kb": 8, "read_pct": 92, "random_pct": 100},
    "restore": {"oio": 2, "io_size_kb": 256, "read_pct": 100, "random_pct": 8},
    **{k: WORKLOADS[k] for k in ("oltp", "webserver")},
    **{k: HELDOUT_WORKLOADS[k] for k in ("vdi",)},
    **{k: FOURTH_WORKLOADS[k] for k in ("redo", "search")},
    **{k: FIFTH_WORKLOADS[k] for k in ("kv",)},
    **{k: SIXTH_WORKLOADS[k] for k in ("catalog",)},
    **{k: SEVENTH_WORKLOADS[k] for k in ("ledger",)},
}


def eighth(triples: bool) -> Setup:
    """Written down (2026-11-26 07:15 UTC, issue 16, task wif5) and committed before cache bursts
    below the mean destage bound were modelled, and not run before that estimator change was final:
    five new types (a binary log, a message queue, a metrics disk, an index disk, a restore reader)
    and pairs and triples with types of the earlier sets: cached writers whose mean destage demand
    may stay below the bound while their outstanding IOs burst (binlog, queue, metrics, ledger),
    writers well below it (redo), a sequential reader beside random ones (restore), plain random
    pairs; on a LUN of a kind, RAID level, size and cache no other set used (4 x 15k FC RAID 10,
    384 MB cache), another seed."""
    combos: list[tuple[str, ...]] = [
        ("binlog", "index"),
        ("binlog", "catalog"),
        ("queue", "index"),
        ("queue", "oltp"),
        ("metrics", "oltp"),
        ("binlog", "metrics"),
        ("ledger", "kv"),
        ("redo", "index"),
        ("metrics", "webserver"),
        ("restore", "index"),
        ("restore", "vdi"),
        ("index", "oltp"),
        ("catalog", "webserver"),
        ("kv", "search"),
    ]
    if triples:
        combos += [("binlog", "queue", "index"), ("restore", "metrics", "catalog")]
    device = {"kind": "fc15k", "disks": 4, "raid": "10", "cache_mb": 384}
    return Setup("eighth", 8808, device, EIGHTH_WORKLOADS, combos)


# Ninth set: five new types beside types of the earlier sets.
NINTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # new: an event log (4 KB sequential writes, 1-2 in flight), a session store (cached 4 KB random
    # writes, 60 %), a billing disk (8 KB random IO, 35 % writes), a profile disk (16 KB random reads)
    # and an export reader (32 KB, mostly sequential)
    "events": {"oio": {"min": 1, "max": 2}, "io_size_kb": 4, "read_pct": 5, "random_pct": 10},
    "session": {"oio": {"min": 2, "max": 6}, "io_size_kb": 4, "read_pct": 40, "random_pct": 100},
    "billing": {"oio": {"min": 6, "max": 12}, "io_size_kb": 8, "read_pct": 65, "random_pct": 100},
    "profile": {"oio": {"min": 4, "max": 12}, "io_size_kb": 16, "read_pct": 88, "random_pct": 100},
    "export": {"oio": 3, "io_size_kb": 32, "read_pct": 100, "random_pct": 5},
    **{k: WORKLOADS[k] for k in ("oltp", "exchange", "webserver")},
    **{k: FOURTH_WORKLOADS[k] for k in ("redo",)},
    **{k: FIFTH_WORKLOADS[k] for k in ("wal", "kv")},
    **{k: SIXTH_WORKLOADS[k] for k in ("catalog",)},
    **{k: SEVENTH_WORKLOADS[k] for k in ("lookup",)},
}


def ninth(triples: bool) -> Setup:
    """Written down (2026-11-26 09:50 UTC, issue 16, task wif6) and committed before the changes of
    task wif6 (the warm-up option of the ground truth, the estimator change), and not run until they
    were final: five new types (an event log, a session store, a billing disk, a profile disk, an
    export reader) and pairs and a triple with types of the earlier sets: random pairs, a sequential
    reader beside random ones (export), cached writers that may stay below the destage bound (redo,
    session) or come near it (events, wal, billing); on a LUN of a kind, RAID level, size and cache
    no other set used (8 x 7.2k SATA RAID 10, 768 MB cache), another seed."""
    combos: list[tuple[str, ...]] = [
        ("events", "profile"),
        ("events", "billing"),
        ("session", "profile"),
        ("session", "oltp"),
        ("billing", "kv"),
        ("export", "profile"),
        ("export", "oltp"),
        ("export", "exchange"),
        ("profile", "exchange"),
        ("catalog", "oltp"),
        ("redo", "profile"),
        ("wal", "billing"),
        ("lookup", "webserver"),
    ]
    if triples:
        combos += [("events", "session", "profile")]
    device = {"kind": "sata7k", "disks": 8, "raid": "10", "cache_mb": 768}
    return Setup("ninth", 9909, device, NINTH_WORKLOADS, combos)


# Tenth set: six new types beside types of the earlier sets.
TENTH_WORKLOADS: dict[str, dict[str, Any]] = {
    # new: a vault reader (128 KB sequential, 2 in flight), an ETL disk (64 KB, 70 % reads, 20 %
    # random), a CRM disk (8 KB random IO, 75 % reads), a cache-server disk (4 KB random reads), an
    # audit trail (8 KB sequential writes, 1-2 in flight) and a desktop disk (4 KB, half writes, 85 %
    # random)
    "vault": {"oio": 2, "io_size_kb": 128, "read_pct": 100, "random_pct": 3},
    "etl": {"oio": {"min": 2, "max": 6}, "io_size_kb": 64, "read_pct": 70, "random_pct": 20},
    "crm": {"oio": {"min": 6, "max": 14}, "io_size_kb": 8, "read_pct": 75, "random_pct": 100},
    "cachesrv": {"oio": {"min": 8, "max": 16}, "io_size_kb": 4, "read_pct": 98, "random_pct": 100},
    "trail": {"oio": {"min": 1, "max": 2}, "io_size_kb": 8, "read_pct": 2, "random_pct": 8},
    "desk": {"oio": {"min": 1, "max": 5}, "io_size_kb": 4, "read_pct": 50, "random_pct": 85},
    **{k: WORKLOADS[k] for k in ("oltp", "exchange", "webserver", "sequential")},
    **{k: HELDOUT_WORKLOADS[k] for k in ("backup",)},
    **{k: FIFTH_WORKLOADS[k] for k in ("kv",)},
    **{k: SEVENTH_WORKLOADS[k] for k in ("stream",)},
}


def tenth(triples: bool) -> Setup:
    """Written down (2026-11-26 12:21 UTC, issue 16, task wif7) and committed before anything of
    that task was changed in the estimator, and not run until it was final: six new types (a vault
    reader, an ETL disk, a CRM disk, a cache-server disk, an audit trail, a desktop disk) and pairs
    and triples with types of the earlier sets: sequential readers beside random ones (vault, etl,
    backup, stream, sequential), random pairs, cached writers (trail, desk); on a LUN of a kind, RAID
    level, size and cache no other set used (9 x 15k FC RAID 6, 1,024 MB cache), another seed."""
    combos: list[tuple[str, ...]] = [
        ("vault", "crm"),
        ("vault", "cachesrv"),
        ("vault", "oltp"),
        ("etl", "crm"),
        ("etl", "exchange"),
        ("etl", "kv"),
        ("backup", "crm"),
        ("stream", "cachesrv"),
        ("sequential", "crm"),
        ("crm", "cachesrv"),
        ("crm", "webserver"),
        ("desk", "crm"),
        ("desk", "cachesrv"),
        ("trail", "crm"),
        ("trail", "cachesrv"),
    ]
    if triples:
        combos += [("vault", "crm", "cachesrv"), ("trail", "desk", "crm")]
    device = {"kind": "fc15k", "disks": 9, "raid": "6", "cache_mb": 1024}
    return Setup("tenth", 1010, device, TENTH_WORKLOADS, combos)


QUEUE_DEPTH = 32


def scenario(setup: Setup, names: tuple[str, ...]) -> dict[str, Any]:
    vms = [
        {
            "name": name,
            "host": "esx-01",
            "disks": [
                {"unit": "scsi0:0", "size_gb": 10, "datastore": "os-lun"},
                {"unit": "scsi0:1", "size_gb": 10, "datastore": "lun", "workload": setup.workloads[name]},
            ],
        }
        for name in names
    ]
    return {
        "name": f"whatif-{setup.name}-" + "+".join(names),
        "seed": setup.seed,
        "clusters": [{"name": "c", "hosts": ["esx-01"]}],
        "datastores": [
            {"name": "lun", "capacity_gb": 500, "device": setup.device},
            {
                "name": "os-lun",
                "capacity_gb": 500,
                "device": {"kind": "fc15k", "disks": 5, "raid": "5", "cache_mb": 512},
            },
        ],
        "vms": vms,
    }


Figures = dict[str, dict[str, float]]


def run(
    setup: Setup,
    names: tuple[str, ...],
    intervals: int,
    workdir: Path,
    cache: dict[str, Any],
    *,
    warmup: int = 0,
) -> Figures:
    """Per VM: read/write IOPS and latency averaged over *intervals* of the lab's truth.

    Alone, the datastore's read figures of every interval are kept too (under ``_intervals``): the
    samples a device model of the LUN is fitted on, as Basil fits one from vCenter's 20 s samples.
    With *warmup*, the lab first runs that many intervals (alone and together alike) and the truth
    is taken over the *intervals* that follow only (``/lab/truth`` averages the last N): the regime
    the datastore settles in, rather than one starting with an empty write cache.
    """
    key = f"{setup.name}/{intervals}/" + (f"w{warmup}/" if warmup else "") + "+".join(names)
    if key in cache:
        return dict(cache[key])
    path = workdir / ("+".join(names) + ".yaml")
    path.write_text(yaml.safe_dump(scenario(setup, names)))
    series: list[dict[str, float]] = []
    with LabProcess.start(path, speed=0) as lab:
        if warmup:
            lab.step(warmup)
        for _ in range(intervals if len(names) == 1 else 0):
            lab.step(1)
            ds = next(d for d in lab.control("GET", "truth?intervals=1")["datastores"] if d["name"] == "lun")
            series.append({k: float(ds[k]) for k in ("read_iops", "read_latency_ms")})
        if len(names) > 1:
            lab.step(intervals)
        truth = lab.control("GET", f"truth?intervals={intervals}")
    out: Figures = {}
    if series:
        out["_intervals"] = {f"{k}.{n}": v for n, row in enumerate(series) for k, v in row.items()}
    for disk in truth["disks"]:
        if disk["datastore"] != "lun":
            continue
        out[disk["vm"]] = {
            k: float(disk[k]) for k in ("read_iops", "write_iops", "read_latency_ms", "write_latency_ms")
        }
    cache[key] = out
    return out


def prefetch(
    setup: Setup,
    combos: list[tuple[str, ...]],
    intervals: int,
    workdir: Path,
    cache: dict[str, Any],
    *,
    warmup: int,
    jobs: int,
) -> None:
    """The lab runs not in *cache* yet, *jobs* of them at a time (each its own lab process)."""
    missing = [
        c
        for c in combos
        if f"{setup.name}/{intervals}/" + (f"w{warmup}/" if warmup else "") + "+".join(c) not in cache
    ]
    if jobs <= 1 or len(missing) <= 1:
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for done in pool.map(lambda c: run(setup, c, intervals, workdir, cache, warmup=warmup), missing):
            del done


def series(setup: Setup, names: tuple[str, ...], intervals: int, workdir: Path) -> None:
    """Per interval, each disk's IOPS and latencies (the lab's truth of that interval alone), to see
    when the datastore settles (``--series``): a write latency above a cache hit is a full cache."""
    path = workdir / ("series-" + "+".join(names) + ".yaml")
    path.write_text(yaml.safe_dump(scenario(setup, names)))
    print(f"{setup.name} {'+'.join(names)}: interval, then per disk read IOPS/ms, write IOPS/ms")
    with LabProcess.start(path, speed=0) as lab:
        for n in range(intervals):
            lab.step(1)
            disks = [d for d in lab.control("GET", "truth?intervals=1")["disks"] if d["datastore"] == "lun"]
            print(
                f"{n + 1:4d} "
                + "  ".join(
                    f"{d['vm']} {d['read_iops']:.0f}/{d['read_latency_ms']:.2f} "
                    f"{d['write_iops']:.0f}/{d['write_latency_ms']:.2f}"
                    for d in disks
                )
            )


def measurement(
    name: str, figures: dict[str, float], random_pct: float | None, io_kb: float | None = None
) -> WorkloadMeasurement:
    """What Basil has of a disk from vCenter: IOPS and latency per class, OIO = IOPS x latency, its
    random % (the guest's seek histogram, which the lab keeps as its workload's pattern) and its IO
    size (vCenter's KB/s over IOPS; the lab's workloads issue one size)."""
    return WorkloadMeasurement(
        name=name,
        read_iops=figures["read_iops"],
        write_iops=figures["write_iops"],
        read_latency_ms=figures["read_latency_ms"],
        write_latency_ms=figures["write_latency_ms"],
        read_oio=figures["read_iops"] * figures["read_latency_ms"] / 1000.0,
        write_oio=figures["write_iops"] * figures["write_latency_ms"] / 1000.0,
        random_pct=random_pct,
        read_io_kb=io_kb,
        write_io_kb=io_kb,
    )


def separated_fit(setup: Setup, alone: dict[str, Figures], cost: float) -> SeparatedFit | None:
    """The reads' line with the isolation runs' own destaging separated (:func:`separate_destage`),
    over the intervals the device model keeps (IOs of at most 32 KB, at most 90 % sequential). An
    interval's writes are its reads times the run's write/read ratio (vCenter has both per interval;
    the lab's truth per interval here keeps the reads); cached writes (at most 1 ms) destage
    k · r device operations each, r the disk's random share."""
    limits = DeviceModelParams()
    points: list[ReadInterval] = []
    for name, figures in alone.items():
        w = setup.workloads[name]
        own = figures[name]
        if (
            float(w["io_size_kb"]) > limits.max_io_size_kb
            or 100.0 - float(w["random_pct"]) > limits.max_seq_pct
        ):
            continue
        ratio = own["write_iops"] / own["read_iops"] if own["read_iops"] > 0 else 0.0
        cached = own["write_iops"] > 0 and own["write_latency_ms"] <= DEFAULT_WRITE_CACHE_MS
        rows = figures["_intervals"]
        for n in range(len(rows) // 2):
            iops, latency = rows[f"read_iops.{n}"], rows[f"read_latency_ms.{n}"]
            destaged = iops * ratio * cost * float(w["random_pct"]) / 100.0 if cached else 0.0
            points.append(
                ReadInterval(oio=iops * latency / 1000.0, latency_ms=latency, destaged_ops=destaged)
            )
    return separate_destage(points)


def service_device(
    setup: Setup, alone: dict[str, Figures], samples: list[DeviceSample], separate: bool
) -> DeviceParams:
    """The LUN as the service reads it (``--service``): its modelling's separation over the device
    model's kept intervals (:func:`basil.app.modelling.separation`, k = 1: the service knows no RAID
    level, each interval's cached writes those of the isolation run's disk, its reads times the
    run's write/read ratio, the workload's random %), stored as a model's details are and read back
    by the routes' :func:`basil.app.whatif.device_params`; k = 1 in the estimator too."""
    from basil.app.modelling import separation, separation_details  # noqa: PLC0415
    from basil.app.whatif import device_params  # noqa: PLC0415
    from basil.store.fits import DatastoreModel  # noqa: PLC0415
    from basil.store.samples import CachedWrites  # noqa: PLC0415

    fit = fit_device_model(samples)
    writes: dict[int, CachedWrites] = {}
    n = 0
    for name, figures in alone.items():
        own, w = figures[name], setup.workloads[name]
        ratio = own["write_iops"] / own["read_iops"] if own["read_iops"] > 0 else 0.0
        cached = own["write_latency_ms"] <= DEFAULT_WRITE_CACHE_MS  # the service's rule, in its query
        rows = figures["_intervals"]
        for k in range(len(rows) // 2):
            iops = rows[f"read_iops.{k}"] * ratio if cached else 0.0
            writes[n * 20] = CachedWrites(iops * float(w["random_pct"]) / 100.0, 0)
            n += 1
    details: dict[str, Any] = {"destage_separation": None, "destage_separation_note": "--no-separation"}
    if separate and fit.credible:
        sep, note, errors = separation(fitted_intervals(samples), writes)
        details = {
            "destage_separation": None if sep is None else separation_details(sep, errors),
            "destage_separation_note": note,
        }
    at = datetime.now(UTC)
    model = DatastoreModel(
        "lab", "lun", at, at, at, fit.performance, fit.slope, fit.intercept,
        fit.r_squared, fit.points_used, 0, "ok" if fit.credible else "not_credible", details,
    )  # fmt: skip
    device, _ = device_params("lab", "lun", {}, {("lab", "lun"): model})
    print(f"service path: m {device.parallelism:.2f} ({device.parallelism_source}); c {device.destage_ms}")
    print(f"  ({device.destage_source})")
    return replace(device, max_conn=QUEUE_DEPTH)


def device_fit(
    setup: Setup, alone: dict[str, Figures], separate: bool = True, service: bool = False
) -> DeviceParams:
    """The LUN's device model (BASIL §4, Basil's own fit) over the isolation runs' 20 s intervals,
    read as m = intercept / slope (see :mod:`basil.core.consolidation`)."""
    samples: list[DeviceSample] = []
    for name, figures in alone.items():
        w = setup.workloads[name]
        rows = figures["_intervals"]
        for n in range(len(rows) // 2):
            iops, latency = rows[f"read_iops.{n}"], rows[f"read_latency_ms.{n}"]
            samples.append(
                DeviceSample(
                    host="esx-01",
                    oio=iops * latency / 1000.0,
                    latency_ms=round(latency),
                    latency_us=latency * 1000.0,
                    iops=iops,
                    io_size_kb=float(w["io_size_kb"]),
                    seq_pct=100.0 - float(w["random_pct"]),
                    time=float(len(samples) * 20),
                )
            )
    if service:
        return service_device(setup, alone, samples, separate)
    fit = fit_device_model(samples)
    m = parallelism_from_fit(fit.slope, fit.intercept) if fit.credible else None
    print(f"device model of the LUN from the isolation runs: {fit.describe()}")
    # The RAID level is the administrator's knowledge (vCenter does not report it).
    cost = RAID_WRITE_COST[str(setup.device["raid"])]
    if m is None:
        return DeviceParams(max_conn=QUEUE_DEPTH, write_cost=cost, write_cost_source="RAID level")
    position = positioning_from_fit(fit.slope, fit.intercept)
    print(f"parallelism m = intercept / slope = {m:.2f}; positioning t_pos = intercept = {position}")
    separated = separated_fit(setup, alone, cost) if separate else None
    if separated is not None:
        m_sep = parallelism_from_fit(separated.slope_ms, separated.intercept_ms)
        print(
            f"with the isolation runs' destaging separated ({separated.points} intervals): "
            f"a = {separated.intercept_ms:.3f} ms, b = {separated.slope_ms:.3f} ms/IO, m = {m_sep}, "
            f"c = {separated.destage_ms} ms per destaged operation"
        )
        if m_sep is not None:
            return DeviceParams(
                max_conn=QUEUE_DEPTH,
                parallelism=m_sep,
                parallelism_source="device model, destaging separated",
                positioning_ms=separated.intercept_ms,
                positioning_source="device model, destaging separated (intercept)",
                write_cost=cost,
                write_cost_source="RAID level",
                destage_ms=separated.destage_ms,
                destage_source="isolation runs (separated from the reads' line)",
            )
    return DeviceParams(
        max_conn=QUEUE_DEPTH,
        parallelism=m,
        parallelism_source="device model",
        positioning_ms=position,
        positioning_source="device model (intercept)",
        write_cost=cost,
        write_cost_source="RAID level",
    )


def switched_off(
    device: DeviceParams,
    *,
    filling: bool,
    full_carried: bool,
    edge: bool,
    steady: bool = True,
    fork_join: bool = True,
) -> DeviceParams:
    """The device with the rules the diagnostic flags switch off (each says so)."""
    for on, note in (
        (filling, "the cache never fills (the destage stretch only bounded, writes stay cached)"),
        (full_carried, "a cache full where a disk was measured is not carried to its neighbours"),
        (edge, "a cache at its edge where a disk was measured (cached writes > 2 hits) is not carried"),
        (steady, "a full cache as before task wif6 (admission wait, destage stretch kept)"),
        (fork_join, "an IO larger than a stripe unit waits as a small one does (before task wif7)"),
    ):
        if not on:
            print(f"diagnostic: {note}")
    return replace(
        device,
        cache_fills=device.cache_fills and filling,
        full_cache_carried=device.full_cache_carried and full_carried,
        edge_carried=device.edge_carried and edge,
        steady_full=device.steady_full and steady,
        stripe_kb=device.stripe_kb if fork_join else None,
    )


def error(predicted: float | None, measured: float, signed: list[float]) -> float | None:
    """Absolute relative error; the signed one is kept to tell optimism from pessimism."""
    if measured <= 1e-9 or predicted is None:
        return None
    signed.append((predicted - measured) / measured)
    return abs(predicted - measured) / measured


KEYS = ("mix", "mix eq. 1-2", "throughput", "X eq. 3-4", "read ms", "write ms")


def evaluate(
    setup: Setup,
    intervals: int,
    workdir: Path,
    cache: dict[str, Any],
    *,
    parallelism: float | None = None,
    sequential: bool = True,
    destage: bool = True,
    separate: bool = True,
    service: bool = False,
    filling: bool = True,
    full_carried: bool = True,
    edge: bool = True,
    steady: bool = True,
    fork_join: bool = True,
    warmup: int = 0,
    jobs: int = 1,
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, list[float]]:
    errors: dict[str, list[float]] = {k: [] for k in KEYS}
    signed: dict[str, list[float]] = {k: [] for k in KEYS}
    # Sequential streams lose their sequentiality when consolidated (the array interleaves them):
    # the isolation service times do not carry over; reported apart as the estimator's known gap.
    random_only: list[float] = []  # read errors
    names = sorted({n for combo in setup.combos for n in combo})
    started = time.monotonic()
    prefetch(setup, [(n,) for n in names] + setup.combos, intervals, workdir, cache, warmup=warmup, jobs=jobs)
    runs = {name: run(setup, (name,), intervals, workdir, cache, warmup=warmup) for name in names}
    alone = {name: figures[name] for name, figures in runs.items()}
    print(f"\n== {setup.name}: {setup.device}, seed {setup.seed}, warm-up {warmup} intervals")
    print(f"lab runs: {time.monotonic() - started:.0f} s wall ({jobs} at a time; 0 when all were cached)")
    device = device_fit(setup, runs, separate, service)
    if parallelism is not None:
        print(f"diagnostic: m = {parallelism:g} given instead")
        device = replace(device, parallelism=parallelism, parallelism_source="given")
    if not sequential:
        print("diagnostic: no random % given (sequential streams keep their isolation service times)")
    if not destage:
        print("diagnostic: no destage load (cached writes free to the devices)")
        device = replace(device, write_cost=None, write_cost_source="diagnostic")
    device = switched_off(
        device, filling=filling, full_carried=full_carried, edge=edge, steady=steady, fork_join=fork_join
    )
    print(f"write cost k = {device.write_cost} ({device.write_cost_source})")
    print(f"{'combination':<36} {'mix':>6} {'X':>6} {'read ms (per VM)':>24} {'write ms (per VM)':>24}")
    for combo in setup.combos:
        together = run(setup, combo, intervals, workdir, cache, warmup=warmup)
        randoms = {n: float(setup.workloads[n]["random_pct"]) if sequential else None for n in combo}
        p = predict_consolidation(
            [measurement(n, alone[n], randoms[n], float(setup.workloads[n]["io_size_kb"])) for n in combo],
            device,
        )
        measured_r = sum(v["read_iops"] for v in together.values())
        measured_w = sum(v["write_iops"] for v in together.values())
        mix_e = error(p.read_mix, measured_r / (measured_r + measured_w), signed["mix"])
        mix_paper = error(p.paper_read_mix, measured_r / (measured_r + measured_w), signed["mix eq. 1-2"])
        x_e = error(p.read_iops + p.write_iops, measured_r + measured_w, signed["throughput"])
        x_paper = error(p.paper_read_iops + p.paper_write_iops, measured_r + measured_w, signed["X eq. 3-4"])
        read_e = [
            error(w.read_latency_ms, together[w.name]["read_latency_ms"], signed["read ms"])
            if together[w.name]["read_iops"] > 0.5
            else None
            for w in p.workloads
        ]
        write_e = [
            error(w.write_latency_ms, together[w.name]["write_latency_ms"], signed["write ms"])
            if together[w.name]["write_iops"] > 0.5
            else None
            for w in p.workloads
        ]
        if rows is not None:
            rows.extend(
                {
                    "set": setup.name,
                    "combination": "+".join(combo),
                    "disk": w.name,
                    "random_pct": float(setup.workloads[w.name]["random_pct"]),
                    "read_ms": [w.read_latency_ms, together[w.name]["read_latency_ms"]],
                    "write_ms": [w.write_latency_ms, together[w.name]["write_latency_ms"]],
                    "read_iops": [w.read_iops, together[w.name]["read_iops"]],
                    "write_iops": [w.write_iops, together[w.name]["write_iops"]],
                    "alone": alone[w.name],
                    "cache_full": p.cache_full,
                    "fork_join": w.fork_join,
                    "full_where_measured": list(p.full_where_measured),
                    "edge_where_measured": list(p.edge_where_measured),
                    "write_through": w.write_through,
                    "destage_util": p.destage_util,
                    "destage_total": p.destage_total,
                    "destage_demand": p.destage_demand,
                }
                for w in p.workloads
            )
        if all(float(setup.workloads[n]["random_pct"]) >= 50 for n in combo):
            random_only.extend(v for v in read_e if v is not None)
        for key, values in (
            ("mix", [mix_e]),
            ("mix eq. 1-2", [mix_paper]),
            ("throughput", [x_e]),
            ("X eq. 3-4", [x_paper]),
            ("read ms", read_e),
            ("write ms", write_e),
        ):
            errors[key] += [v for v in values if v is not None]

        def fmt(values: list[float | None]) -> str:
            return " ".join("   -" if v is None else f"{v:4.0%}" for v in values)

        label = "+".join(combo)
        print(
            f"{label:<36} {fmt([mix_e]):>6} {fmt([x_e]):>6} {fmt(read_e):>24} {fmt(write_e):>24}"
            f"  U {p.destage_util:.2f}"
            + (f" U1 {p.destage_total:.2f}" if p.destage_total > 0 else "")
            + (f" full (demand {p.destage_demand:.2f})" if p.cache_full else "")
            + (f" full where measured: {','.join(p.full_where_measured)}" if p.full_where_measured else "")
            + (f" edge where measured: {','.join(p.edge_where_measured)}" if p.edge_where_measured else "")
        )
    print(f"{setup.name}: absolute relative errors, median (max); median signed error (+ = pessimistic):")
    for key in KEYS:
        found = errors[key]
        if found:
            bias = statistics.median(signed[key])
            median = statistics.median(found)
            print(f"  {key:<11} {median:6.1%} ({max(found):.1%})  signed {bias:+.1%}  n={len(found)}")
    if random_only:
        print(
            f"  read ms, combinations without a sequential stream (all random >= 50 %): "
            f"{statistics.median(random_only):.1%} ({max(random_only):.1%}) n={len(random_only)}"
        )
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--intervals", type=int, default=45, help="20 s intervals per run (45 = 15 min)")
    parser.add_argument("--no-triples", action="store_true")
    parser.add_argument(
        "--set",
        choices=(
            "tuning",
            "heldout",
            "third",
            "fourth",
            "fifth",
            "sixth",
            "seventh",
            "eighth",
            "ninth",
            "tenth",
            "seen",
            "all",
        ),
        nargs="+",
        default=["all"],
        help="one or more sets (seen: the nine sets evaluated before task wif7; all: every set)",
    )
    parser.add_argument("--cache", type=Path, help="JSON file keeping the lab runs between invocations")
    parser.add_argument(
        "--no-sequential",
        action="store_true",
        help="diagnostic: give the estimator no random %% (the estimator before the interleaving rule)",
    )
    parser.add_argument(
        "--no-destage",
        action="store_true",
        help="diagnostic: cached writes cost the devices nothing (the estimator before the destage rule)",
    )
    parser.add_argument(
        "--no-separation",
        action="store_true",
        help="diagnostic: m and t_pos from the plain device model, a destaged write at t_pos / m "
        "(the rest of the estimator as now)",
    )
    parser.add_argument(
        "--parallelism",
        type=float,
        help="diagnostic: this m instead of the device model's (e.g. the spindles)",
    )
    parser.add_argument(
        "--no-filling",
        action="store_true",
        help="diagnostic: the cache never fills, the destage stretch is only bounded (the estimator "
        "before the filling cache was modelled)",
    )
    parser.add_argument(
        "--no-full-cache",
        action="store_true",
        help="diagnostic: a cache full where a disk was measured (its writes slower than a cache hit "
        "alone) is not carried to its neighbours (the estimator before task wif4)",
    )
    parser.add_argument(
        "--no-edge",
        action="store_true",
        help="diagnostic: a disk whose cached writes were slower than two cache hits alone (the cache at "
        "its edge where measured) is not carried as a full cache (the estimator before task wif5)",
    )
    parser.add_argument(
        "--service",
        action="store_true",
        help="the service's path: its modelling's separation (k = 1) read back by the routes' "
        "device_params, k = 1 in the estimator (with --no-separation: the service before issue 16's fix)",
    )
    parser.add_argument(
        "--no-steady-full",
        action="store_true",
        help="diagnostic: a full cache as before task wif6 (a filling cache's admission wait, the destage "
        "stretch kept beside a cache full where measured) instead of the full cache's steady state",
    )
    parser.add_argument(
        "--no-fork-join",
        action="store_true",
        help="diagnostic: an IO larger than the stripe unit waits as a one-unit IO does, no H(w) (the "
        "estimator before task wif7)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=0,
        help="intervals the lab runs before the truth window, alone and together alike (0: the window "
        "starts with an empty write cache, as before task wif6)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="lab runs at a time (each its own lab process)")
    parser.add_argument(
        "--series",
        help="diagnostic: print this combination's per-interval truth (names joined by +, of the one "
        "--set given) over --warmup + --intervals intervals, and nothing else",
    )
    parser.add_argument("--dump", type=Path, help="write every disk's predicted and measured figures (JSON)")
    args = parser.parse_args()
    if args.warmup < 0 or args.jobs < 1:
        parser.error("--warmup must be at least 0 and --jobs at least 1")
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    setups = [
        s(not args.no_triples)
        for s in (tuning, heldout, third, fourth, fifth, sixth, seventh, eighth, ninth, tenth)
    ]
    if "seen" in args.set:
        setups = [s for s in setups if s.name != "tenth" or "tenth" in args.set]
    elif "all" not in args.set:
        setups = [s for s in setups if s.name in args.set]
    if args.series:
        with tempfile.TemporaryDirectory() as tmp:
            series(setups[0], tuple(args.series.split("+")), args.warmup + args.intervals, Path(tmp))
        return
    pooled: dict[str, dict[str, list[float]]] = {}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for setup in setups:
                pooled[setup.name] = evaluate(
                    setup,
                    args.intervals,
                    Path(tmp),
                    cache,
                    parallelism=args.parallelism,
                    sequential=not args.no_sequential,
                    destage=not args.no_destage,
                    separate=not args.no_separation,
                    service=args.service,
                    filling=not args.no_filling,
                    full_carried=not args.no_full_cache,
                    edge=not args.no_edge,
                    steady=not args.no_steady_full,
                    fork_join=not args.no_fork_join,
                    warmup=args.warmup,
                    jobs=args.jobs,
                    rows=rows,
                )
        finally:
            if args.cache:
                args.cache.write_text(json.dumps(cache))
    if args.dump:
        args.dump.write_text(json.dumps(rows, indent=1))
    # docs/whatif.md pools the read latencies of the four sets seen before issue 16's changes.
    for label, sets in (("four seen sets", ("tuning", "heldout", "third", "fourth")), ("all sets run", None)):
        reads = [e for name, errs in pooled.items() if sets is None or name in sets for e in errs["read ms"]]
        if reads and (sets is None or all(name in pooled for name in sets)):
            writes = [
                e for name, errs in pooled.items() if sets is None or name in sets for e in errs["write ms"]
            ]
            print(
                f"pooled read ms, {label}: {statistics.median(reads):.1%} (n={len(reads)}); "
                f"write ms {statistics.median(writes):.1%} (n={len(writes)})"
            )
    print(
        "\npaper: mix 3-13 %, throughput 3-21 %, read response time 4-17 %; target: median read error < 10 %"
    )


if __name__ == "__main__":
    main()
