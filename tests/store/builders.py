"""Builders of sample streams for store tests and benchmarks: disks and hosts with plausible, varied load."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from basil.store.samples import DiskSampleIn, HostDatastoreSampleIn

T0 = 1_717_200_000  # 2024-06-01 00:00:00 UTC, a multiple of 3600


def disk_cycle(rng: np.random.Generator, ts: int, n_disks: int, vcenter: str = "vc") -> list[DiskSampleIn]:
    """One 20 s collection cycle of *n_disks* virtual disks (VM i, instance scsi0:0)."""
    r = rng.gamma(2.0, 50.0, n_disks)
    w = rng.gamma(2.0, 30.0, n_disks)
    return [
        DiskSampleIn(
            vcenter, f"vm-{i}", "scsi0:0", ts,
            read_iops=float(r[i]), write_iops=float(w[i]),
            read_oio=float(rng.lognormal(0.5, 0.8)), write_oio=float(rng.lognormal(0.0, 0.8)),
            read_latency_ms=float(rng.gamma(3.0, 2.0)), write_latency_ms=float(rng.gamma(2.0, 1.5)),
            read_io_size_kb=float(rng.choice([4.0, 8.0, 16.0, 64.0])),
            write_io_size_kb=float(rng.choice([4.0, 32.0])),
            small_seeks=float(rng.integers(0, 100)), medium_seeks=float(rng.integers(0, 100)),
            large_seeks=float(rng.integers(0, 100)),
        )
        for i in range(n_disks)
    ]  # fmt: skip


def host_cycle(
    rng: np.random.Generator, ts: int, hosts: int, datastores: int, vcenter: str = "vc"
) -> list[HostDatastoreSampleIn]:
    """One cycle of every (host, datastore) pair."""
    out = []
    for h in range(hosts):
        for d in range(datastores):
            r = float(rng.gamma(2.0, 100.0))
            out.append(
                HostDatastoreSampleIn(
                    vcenter, f"host-{h}", f"ds-{d}", ts,
                    read_iops=r, write_iops=float(rng.gamma(2.0, 50.0)),
                    read_oio=float(rng.lognormal(1.0, 0.5)), write_oio=float(rng.lognormal(0.5, 0.5)),
                    read_latency_ms=float(rng.gamma(3.0, 2.0)), write_latency_ms=float(rng.gamma(2.0, 1.0)),
                    read_kbps=r * 8.0, write_kbps=float(rng.gamma(2.0, 200.0)), max_queue_depth=64.0,
                )
            )  # fmt: skip
    return out


def cycles(start: int, end: int, step: int = 20) -> Iterator[int]:
    return iter(range(start, end, step))
