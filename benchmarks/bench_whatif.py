"""Validation of the consolidation what-if (Casale et al.) against the lab's storage physics.

Each workload type runs alone on a 6-disk FC LUN of the lab (paused clock, stepped), then every pair
(and a few triples) runs together on the same LUN. The lab's ground truth (``/lab/truth``, averaged
over the run) gives per disk read/write IOPS and latency; outstanding IOs come from Little's law.
The predictions of :mod:`basil.core.consolidation` from the isolation runs are compared with the
consolidated runs: absolute relative errors of the mix, the throughput and the read/write response
times, per combination, and their medians.

    .venv/bin/python benchmarks/bench_whatif.py [--intervals N] [--no-triples]

Needs build/basil-lab (`make lab`). Target: a median read-latency error under 10 %.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.vcenter.labproc import LabProcess

from basil.core.consolidation import DeviceParams, WorkloadMeasurement, predict_consolidation

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
QUEUE_DEPTH = 32


def scenario(names: list[str]) -> dict[str, Any]:
    vms = [
        {
            "name": f"{name}-{k}",
            "host": "esx-01",
            "disks": [
                {"unit": "scsi0:0", "size_gb": 10, "datastore": "os-lun"},
                {"unit": "scsi0:1", "size_gb": 10, "datastore": "lun", "workload": WORKLOADS[name]},
            ],
        }
        for k, name in enumerate(names)
    ]
    return {
        "name": "whatif-" + "+".join(names),
        "seed": 16,
        "clusters": [{"name": "c", "hosts": ["esx-01"]}],
        "datastores": [
            {
                "name": "lun",
                "capacity_gb": 500,
                "device": {"kind": "fc15k", "disks": 6, "raid": "0", "cache_mb": 1024},
            },
            {
                "name": "os-lun",
                "capacity_gb": 500,
                "device": {"kind": "fc15k", "disks": 5, "raid": "5", "cache_mb": 512},
            },
        ],
        "vms": vms,
    }


def run(names: list[str], intervals: int, workdir: Path) -> dict[str, dict[str, float]]:
    """Per VM (name-k): read/write IOPS and latency averaged over *intervals* of the lab's truth."""
    path = workdir / ("+".join(names) + ".yaml")
    path.write_text(yaml.safe_dump(scenario(names)))
    with LabProcess.start(path, speed=0) as lab:
        lab.step(intervals)
        truth = lab.control("GET", f"truth?intervals={intervals}")
    out: dict[str, dict[str, float]] = {}
    for disk in truth["disks"]:
        if disk["datastore"] != "lun":
            continue
        out[disk["vm"]] = {
            k: float(disk[k]) for k in ("read_iops", "write_iops", "read_latency_ms", "write_latency_ms")
        }
    return out


def measurement(name: str, figures: dict[str, float]) -> WorkloadMeasurement:
    return WorkloadMeasurement(
        name=name,
        read_iops=figures["read_iops"],
        write_iops=figures["write_iops"],
        read_latency_ms=figures["read_latency_ms"],
        write_latency_ms=figures["write_latency_ms"],
    )


SIGNED: dict[str, list[float]] = {}


def error(predicted: float, measured: float, key: str = "") -> float | None:
    """Absolute relative error; the signed one is kept per *key* to tell optimism from pessimism."""
    if measured <= 1e-9:
        return None
    SIGNED.setdefault(key, []).append((predicted - measured) / measured)
    return abs(predicted - measured) / measured


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--intervals", type=int, default=45, help="20 s intervals per run (45 = 15 min)")
    parser.add_argument("--no-triples", action="store_true")
    args = parser.parse_args()
    names = list(WORKLOADS)
    combos: list[tuple[str, ...]] = list(itertools.combinations(names, 2))
    if not args.no_triples:
        combos += [
            ("oltp", "webserver", "fb-mail"),
            ("exchange", "fb-web", "sequential"),
            ("workstation", "fb-file", "fb-mail"),
        ]
    errors: dict[str, list[float]] = {"mix": [], "throughput": [], "read ms": [], "write ms": []}
    with tempfile.TemporaryDirectory() as tmp:
        alone = {name: run([name], args.intervals, Path(tmp))[f"{name}-0"] for name in names}
        print(f"{'combination':<36} {'mix':>6} {'X':>6} {'read ms (per VM)':>24} {'write ms (per VM)':>24}")
        for combo in combos:
            together = run(list(combo), args.intervals, Path(tmp))
            p = predict_consolidation(
                [measurement(f"{n}-{k}", alone[n]) for k, n in enumerate(combo)],
                DeviceParams(max_conn=QUEUE_DEPTH),
            )
            measured_r = sum(v["read_iops"] for v in together.values())
            measured_w = sum(v["write_iops"] for v in together.values())
            mix_e = error(p.read_mix, measured_r / (measured_r + measured_w), "mix")
            x_e = error(p.read_iops + p.write_iops, measured_r + measured_w, "throughput")
            read_e = [
                error(w.read_latency_ms, together[w.name]["read_latency_ms"], "read ms") for w in p.workloads
            ]
            write_e = [
                error(w.write_latency_ms, together[w.name]["write_latency_ms"], "write ms")
                for w in p.workloads
            ]
            for key, values in (
                ("mix", [mix_e]),
                ("throughput", [x_e]),
                ("read ms", read_e),
                ("write ms", write_e),
            ):
                errors[key] += [v for v in values if v is not None]

            def fmt(values: list[float | None]) -> str:
                return " ".join("   -" if v is None else f"{v:4.0%}" for v in values)

            label = "+".join(combo)
            print(f"{label:<36} {fmt([mix_e]):>6} {fmt([x_e]):>6} {fmt(read_e):>24} {fmt(write_e):>24}")
    print("\nabsolute relative errors, median (max); median signed error (+ = pessimistic):")
    for key, values in errors.items():
        if values:
            bias = statistics.median(SIGNED[key])
            median = statistics.median(values)
            print(f"  {key:<11} {median:6.1%} ({max(values):.1%})  signed {bias:+.1%}  n={len(values)}")
    print("paper: mix 3-13 %, throughput 3-21 %, read response time 4-17 %; target: median read error < 10 %")


if __name__ == "__main__":
    main()
