"""The snapshot a strategy decides on: datastores, virtual disks and placement rules, as plain data.

The frozen dataclasses are what the balancer and initial placement read; the service builds them
from its store, the command line from a JSON file through :func:`parse_snapshot`. Both paths end in
the same validation, which reports every problem with its field path (``disks[3].size_gb``).

JSON format (``*`` marks optional fields; times are seconds since the epoch or ISO 8601 strings,
naive ones read as UTC)::

    {
      "description"*: "free text",
      "datastores": [{
        "name": "ds1", "capacity_gb": 500, "free_gb": 120, "hosts": ["esx1", "esx2"],
        "maintenance"*: false,                  # never a target; left out of the balance
        "performance"*: 1.4,                    # P, when known; wins over samples
        "samples"*: [{"host", "oio", "latency_ms", "iops", "io_size_kb", "seq_pct",
                      "time"*, "op"*: "read" | "write",
                      "latency_us"*}],          # per host; latency_us wins over latency_ms
        "pod"*: "gold",                         # balancing domain; default "default"
        "device_kind"*: "ssd" | "fc15k" | "sas15k" | "sas10k" | "sata7k" | "nlsas7k",
        "spindles"*: 8                          # devices behind it; with device_kind, a prior P
      }],
      "disks": [{
        "id": "vm1/scsi0:1", "vm": "vm1", "datastore": "ds1", "size_gb": 40,
        "hosts": ["esx1"],                      # hosts the disk is used from
        "load"*: 350.0,                         # L, when known; wins over workload and samples
        "workload"*: {"oio", "io_size_kb", "read_pct", "random_pct"},   # a workload model
        "samples"*: [{"oio", "io_size_kb", "read_pct", "random_pct", "time"*}],   # raw samples
        "iops"*: 420,                           # current IOPS, for the least-disturbance order
        "last_moved"*: "2024-05-01T02:00:00Z"   # for ping-pong avoidance
      }],
      "slo"*: {...},                            # the SLO goal's groups (basil.core.slo.parse_slo)
      "options"*: {
        "imbalance_threshold", "max_moves", "max_gb", "space_headroom_pct",
        "candidate_order": "load_per_gb" | "least_disturbance", "ping_pong_hours", "now", "seed",
        "splittable_vms": [vm], "anti_affinity": [[vm, vm, ...]], "excluded_vms": [vm],
        "subset_trials", "subset_tolerance", "max_pair_attempts",
        "objective": "normalized_load" | "throughput", "search": "best_move" | "pairwise",
        "fairness_pct", "fairness_ms", "min_gain_pct",
        "workload_model": {"k1", "k2", "k3", "k4", "percentile", "window_hours",
                           "sequential_random_pct", "writes_read_pct",
                           "sequential_class_random_pct", "write_heavy_read_pct", "burst_ratio"},
        "device_model": {"max_io_size_kb", "max_seq_pct", "min_points", "min_oio_spread",
                         "min_oio_range", "max_ci_ratio", "max_step"}
      }
    }

Every disk needs ``load``, ``workload`` or ``samples``. A datastore with neither ``performance`` nor
samples that fit is new (BASIL §6.3), unless ``device_kind`` and ``spindles`` give it a confident
prior P. Files without the optional fields read as before. Unknown fields are errors, so a typo is
never silently ignored.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import repeat
from operator import attrgetter, is_not, itemgetter
from typing import Any, TypeVar

from basil.core.device_model import OP_READ, PER_DEVICE_P, DeviceModelParams, DeviceSample
from basil.core.params import BalancerParams
from basil.core.workload_model import (
    WorkloadConstants,
    WorkloadModelParams,
    WorkloadParams,
    WorkloadSample,
    number_problems,
)
from basil.errors import Problem, ValidationError, raise_if_problems

DEFAULT_POD = "default"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Datastore:
    """A datastore: space, the hosts that see it, and what is known of its performance."""

    name: str
    capacity_gb: float
    free_gb: float
    hosts: frozenset[str]
    maintenance: bool = False
    performance: float | None = None  # P = 1/slope (§4), when given rather than fitted
    samples: tuple[DeviceSample, ...] = ()
    pod: str = DEFAULT_POD
    device_kind: str | None = None  # for a prior P (device_model.PER_DEVICE_P)
    spindles: int | None = None

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        if self.device_kind is not None and self.device_kind not in PER_DEVICE_P:
            found.append(
                Problem(
                    f"{path}.device_kind",
                    f"unknown device kind {self.device_kind!r} (known: {', '.join(sorted(PER_DEVICE_P))})",
                )
            )
        if self.spindles is not None and (isinstance(self.spindles, bool) or self.spindles < 1):
            found.append(Problem(f"{path}.spindles", f"must be a positive integer, got {self.spindles!r}"))
        if not self.name:
            found.append(Problem(f"{path}.name", "must not be empty"))
        found += number_problems(self.capacity_gb, f"{path}.capacity_gb", minimum=0, exclusive_minimum=True)
        free = number_problems(self.free_gb, f"{path}.free_gb", minimum=0)
        found += free
        if not free and math.isfinite(self.capacity_gb) and self.free_gb > self.capacity_gb:
            found.append(
                Problem(
                    f"{path}.free_gb", f"is larger than capacity_gb ({self.free_gb:g} > {self.capacity_gb:g})"
                )
            )
        if self.performance is not None:
            found += number_problems(
                self.performance, f"{path}.performance", minimum=0, exclusive_minimum=True
            )
        if not self.pod:
            found.append(Problem(f"{path}.pod", "must not be empty"))
        found += [p for i, s in enumerate(self.samples) for p in s.problems(f"{path}.samples[{i}]")]
        found += _time_consistency(self.samples, f"{path}.samples")
        seen: set[tuple[str, float]] = set()
        for i, s in enumerate(self.samples):
            if s.time is None:
                continue
            key = (s.host, s.time) if s.op == OP_READ else (f"{s.host}\0w", s.time)
            if key in seen:
                found.append(
                    Problem(
                        f"{path}.samples[{i}]",
                        f"a second {s.op} sample of host {s.host!r} at time {s.time:g}",
                    )
                )
            seen.add(key)
        return found


@dataclass(frozen=True, slots=True)
class Disk:
    """A virtual disk: where it is, how big, who uses it, and its load L or what L is computed from."""

    id: str
    vm: str
    datastore: str
    size_gb: float
    hosts: frozenset[str]
    load: float | None = None  # L (numerator of eq. 1), when given
    workload: WorkloadParams | None = None
    samples: tuple[WorkloadSample, ...] = ()
    iops: float | None = None
    last_moved: float | None = None  # seconds since the epoch

    def plainly_valid(self) -> bool:
        """A quick check that :meth:`problems` finds nothing, for the common disk (plain floats, a
        workload or a load, no samples): True only when it would return no problem; False means
        "ask :meth:`problems`", not necessarily that there is one."""
        w, load, iops, moved = self.workload, self.load, self.iops, self.last_moved
        if self.samples or not (self.id and self.vm and self.datastore) or (load is None and w is None):
            return False
        if w is not None and not (
            type(w.oio) in _PLAIN
            and type(w.io_size_kb) in _PLAIN
            and type(w.read_pct) in _PLAIN
            and type(w.random_pct) in _PLAIN
            and 0.0 <= w.oio < _INF
            and 0.0 <= w.io_size_kb < _INF
            and 0.0 <= w.read_pct <= 100.0
            and 0.0 <= w.random_pct <= 100.0
        ):
            return False
        return (
            type(self.size_gb) in _PLAIN
            and 0.0 <= self.size_gb < _INF
            and (load is None or (type(load) in _PLAIN and 0.0 <= load < _INF))
            and (iops is None or (type(iops) in _PLAIN and 0.0 <= iops < _INF))
            and (moved is None or (type(moved) in _PLAIN and -_INF < moved < _INF))
        )

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        for name in ("id", "vm", "datastore"):
            if not getattr(self, name):
                found.append(Problem(f"{path}.{name}", "must not be empty"))
        found += number_problems(self.size_gb, f"{path}.size_gb", minimum=0)
        if self.load is not None:
            found += number_problems(self.load, f"{path}.load", minimum=0)
        if self.workload is not None:
            found += self.workload.problems(f"{path}.workload")
        found += [p for i, s in enumerate(self.samples) for p in s.problems(f"{path}.samples[{i}]")]
        found += _time_consistency(self.samples, f"{path}.samples")
        if self.iops is not None:
            found += number_problems(self.iops, f"{path}.iops", minimum=0)
        if self.last_moved is not None:
            found += number_problems(self.last_moved, f"{path}.last_moved")
        if self.load is None and self.workload is None and not self.samples:
            found.append(Problem(path, "needs one of load, workload or samples"))
        return found


@dataclass(frozen=True, slots=True)
class Rules:
    """Placement rules: VMs whose disks may be split, anti-affinity groups, VMs never moved."""

    splittable_vms: frozenset[str] = frozenset()
    anti_affinity: tuple[frozenset[str], ...] = ()
    excluded_vms: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one recommendation or placement decision reads; ``now`` is when it was taken."""

    datastores: tuple[Datastore, ...]
    disks: tuple[Disk, ...]
    rules: Rules = field(default_factory=Rules)
    now: float | None = None
    description: str = ""

    def validate(self) -> list[Problem]:
        """Every problem of the snapshot, with field paths as in the JSON format (rules under ``rules``)."""
        return validate_parts(
            list(enumerate(self.datastores)), list(enumerate(self.disks)), self.rules, self.now
        )

    def pods(self) -> dict[str, list[Datastore]]:
        """Datastores per pod, pods and datastores in name order."""
        result: dict[str, list[Datastore]] = {}
        for ds in sorted(self.datastores, key=lambda d: (d.pod, d.name)):
            result.setdefault(ds.pod, []).append(ds)
        return result


@dataclass(frozen=True, slots=True)
class SnapshotDocument:
    """A parsed snapshot file: the snapshot and the parameters its ``options`` ask for."""

    snapshot: Snapshot
    params: BalancerParams
    slo: object = None  # the SLO goal's section as given, read by basil.core.slo.parse_slo


_PLAIN = frozenset({float, int})  # number types Disk.plainly_valid accepts (not bool, not numpy's)
_INF = math.inf  # a module constant: one lookup, not math's attribute, in Disk.plainly_valid's checks


def _time_consistency(samples: Sequence[DeviceSample] | Sequence[WorkloadSample], path: str) -> list[Problem]:
    timed = sum(1 for s in samples if s.time is not None)
    if 0 < timed < len(samples):
        return [
            Problem(path, f"either every sample has a time or none does ({timed} of {len(samples)} have one)")
        ]
    return []


def _rule_problems(rules: Rules, vms: set[str], path: str) -> list[Problem]:
    problems: list[Problem] = []
    for name, group in (("splittable_vms", rules.splittable_vms), ("excluded_vms", rules.excluded_vms)):
        problems += [Problem(f"{path}.{name}", f"unknown VM {vm!r}") for vm in sorted(group - vms)]
    for g, group in enumerate(rules.anti_affinity):
        if len(group) < 2:
            problems.append(
                Problem(f"{path}.anti_affinity[{g}]", "an anti-affinity group needs at least two VMs")
            )
        problems += [
            Problem(f"{path}.anti_affinity[{g}]", f"unknown VM {vm!r}") for vm in sorted(group - vms)
        ]
    return problems


def validate_parts(
    datastores: Sequence[tuple[int, Datastore]],
    disks: Sequence[tuple[int, Disk]],
    rules: Rules,
    now: float | None,
    *,
    other_datastore_names: Iterable[str] = (),
    other_vm_names: Iterable[str] = (),
    rules_path: str = "rules",
    now_path: str = "now",
) -> list[Problem]:
    """Field and cross-reference checks over indexed datastores and disks.

    The indices are the positions in the input, so a parser that skipped a malformed entry still
    reports the others at their own paths; *other_datastore_names* / *other_vm_names* are names of
    skipped entries, so references to them are not reported a second time.
    """
    problems: list[Problem] = []
    names: dict[str, int] = {}
    for i, ds in datastores:
        problems += ds.problems(f"datastores[{i}]")
        if ds.name in names:
            problems.append(
                Problem(
                    f"datastores[{i}].name",
                    f"duplicate datastore {ds.name!r} (also datastores[{names[ds.name]}])",
                )
            )
        else:
            names[ds.name] = i
    known = set(names) | set(other_datastore_names)
    vms: set[str] = set(other_vm_names)
    plain = _plain_disks(list(map(_second, disks)), known)
    if plain is not None:  # every disk passes: the per-disk checks below would find nothing
        vms |= plain[0]
        last_moved = plain[1]
    else:
        last_moved = _disk_problems(disks, known, vms, problems)
    problems += _rule_problems(rules, vms, rules_path)
    if now is not None:
        problems += number_problems(now, now_path)
    elif last_moved:
        problems.append(Problem(now_path, "is required when disks carry last_moved (ping-pong avoidance)"))
    return problems


def _plain_disks(disks: list[Disk], known: set[str]) -> tuple[set[str], bool] | None:
    """When every disk is plainly valid (:meth:`Disk.plainly_valid`), the ids are unique and every
    datastore is *known*: the disks' VMs and whether any carries ``last_moved``, each check made for
    all disks in one C loop (map, set) rather than a Python step per disk; otherwise None, and the
    per-disk checks (:func:`_disk_problems`) name each problem."""
    if not all(map(Disk.plainly_valid, disks)):
        return None
    ids = list(map(_id_of, disks))
    if len(set(ids)) != len(ids) or not set(map(_datastore_of, disks)) <= known:
        return None
    return set(map(_vm_of, disks)), any(map(is_not, map(_last_moved_of, disks), repeat(None)))


_second = itemgetter(1)
_id_of = attrgetter("id")
_vm_of = attrgetter("vm")
_datastore_of = attrgetter("datastore")
_last_moved_of = attrgetter("last_moved")


def _disk_problems(
    disks: Sequence[tuple[int, Disk]], known: set[str], vms: set[str], problems: list[Problem]
) -> bool:
    """The disks' problems one disk at a time, each at its field path (added to *problems*); their
    VMs added to *vms*; whether any carries ``last_moved``."""
    ids: dict[str, int] = {}
    last_moved = False
    for i, disk in disks:
        if not disk.plainly_valid():
            problems += disk.problems(f"disks[{i}]")
        if disk.id in ids:
            problems.append(
                Problem(f"disks[{i}].id", f"duplicate disk {disk.id!r} (also disks[{ids[disk.id]}])")
            )
        else:
            ids[disk.id] = i
        if disk.datastore and disk.datastore not in known:
            problems.append(Problem(f"disks[{i}].datastore", f"unknown datastore {disk.datastore!r}"))
        vms.add(disk.vm)
        last_moved = last_moved or disk.last_moved is not None
    return last_moved


# --- JSON -------------------------------------------------------------------------------------------

_DATASTORE_REQUIRED = ("name", "capacity_gb", "free_gb", "hosts")
_DATASTORE_OPTIONAL = ("maintenance", "performance", "samples", "pod", "device_kind", "spindles")
_DEVICE_SAMPLE_REQUIRED = ("host", "oio", "latency_ms", "iops", "io_size_kb", "seq_pct")
_DEVICE_SAMPLE_OPTIONAL = ("time", "op", "latency_us")
_DISK_REQUIRED = ("id", "vm", "datastore", "size_gb", "hosts")
_DISK_OPTIONAL = ("load", "workload", "samples", "iops", "last_moved")
_WORKLOAD_REQUIRED = ("oio", "io_size_kb", "read_pct", "random_pct")
_OPTION_NAMES = (
    "imbalance_threshold",
    "max_moves",
    "max_gb",
    "space_headroom_pct",
    "candidate_order",
    "ping_pong_hours",
    "now",
    "seed",
    "splittable_vms",
    "anti_affinity",
    "excluded_vms",
    "subset_trials",
    "subset_tolerance",
    "max_pair_attempts",
    "objective",
    "search",
    "fairness_pct",
    "fairness_ms",
    "min_gain_pct",
    "workload_model",
    "device_model",
)
_WORKLOAD_MODEL_OPTIONS = (
    "k1",
    "k2",
    "k3",
    "k4",
    "percentile",
    "window_hours",
    "sequential_random_pct",
    "writes_read_pct",
    "sequential_class_random_pct",
    "write_heavy_read_pct",
    "burst_ratio",
)
_DEVICE_MODEL_OPTIONS = (
    "max_io_size_kb",
    "max_seq_pct",
    "min_points",
    "min_oio_spread",
    "min_oio_range",
    "max_ci_ratio",
    "max_step",
)
_DEVICE_MODEL_NUMBERS = (
    "max_io_size_kb",
    "max_seq_pct",
    "min_oio_spread",
    "min_oio_range",
    "max_ci_ratio",
    "max_step",
)

_MISSING: Any = object()


class _Reader:
    """Collects problems while reading loosely typed JSON into typed values."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def mapping(
        self, value: object, path: str, required: Sequence[str], optional: Sequence[str] = ()
    ) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path or "snapshot", f"must be an object, got {_kind(value)}")
            return None
        for key in required:
            if key not in value:
                self.problem(_join(path, key), "missing required field")
        allowed = set(required) | set(optional)
        for key in value:
            if key not in allowed:
                self.problem(_join(path, str(key)), f"unknown field (allowed: {', '.join(sorted(allowed))})")
        return value

    def number(self, obj: Mapping[str, Any], key: str, path: str) -> float | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(_join(path, key), f"must be a number, got {_kind(value)}")
            return None
        return float(value)

    def integer(self, obj: Mapping[str, Any], key: str, path: str) -> int | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            self.problem(_join(path, key), f"must be an integer, got {_kind(value)}")
            return None
        return value

    def string(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            self.problem(_join(path, key), f"must be a string, got {_kind(value)}")
            return None
        return value

    def boolean(self, obj: Mapping[str, Any], key: str, path: str) -> bool | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if not isinstance(value, bool):
            self.problem(_join(path, key), f"must be true or false, got {_kind(value)}")
            return None
        return value

    def strings(self, obj: Mapping[str, Any], key: str, path: str) -> list[str] | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if not isinstance(value, list):
            self.problem(_join(path, key), f"must be a list of strings, got {_kind(value)}")
            return None
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item:
                self.problem(f"{_join(path, key)}[{i}]", f"must be a non-empty string, got {_kind(item)}")
                ok = False
        return list(value) if ok else None

    def array(self, obj: Mapping[str, Any], key: str, path: str) -> list[Any] | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if not isinstance(value, list):
            self.problem(_join(path, key), f"must be a list, got {_kind(value)}")
            return None
        return value

    def time(self, obj: Mapping[str, Any], key: str, path: str) -> float | None:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return None
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                self.problem(
                    _join(path, key), f"must be seconds since the epoch or an ISO 8601 time, got {value!r}"
                )
                return None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.timestamp()
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(
                _join(path, key), f"must be seconds since the epoch or an ISO 8601 time, got {_kind(value)}"
            )
            return None
        return float(value)

    def entries(
        self, obj: Mapping[str, Any], key: str, path: str, build: Callable[[object, str], T | None]
    ) -> list[tuple[int, T]]:
        items = self.array(obj, key, path)
        if items is None:
            return []
        built: list[tuple[int, T]] = []
        for i, item in enumerate(items):
            value = build(item, f"{_join(path, key)}[{i}]")
            if value is not None:
                built.append((i, value))
        return built


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_KIND_NAMES: dict[type, str] = {bool: "a boolean", list: "a list", dict: "an object", type(None): "null"}


def _kind(value: object) -> str:
    """How a JSON value is named in a message: its type, and the value itself for scalars."""
    if type(value) in _KIND_NAMES:
        return _KIND_NAMES[type(value)]
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    return type(value).__name__


def _device_sample(r: _Reader, raw: object, path: str) -> DeviceSample | None:
    obj = r.mapping(raw, path, _DEVICE_SAMPLE_REQUIRED, _DEVICE_SAMPLE_OPTIONAL)
    if obj is None:
        return None
    before = len(r.problems)
    host = r.string(obj, "host", path)
    nums = [r.number(obj, k, path) for k in ("oio", "latency_ms", "iops", "io_size_kb", "seq_pct")]
    time = r.time(obj, "time", path)
    op = r.string(obj, "op", path)
    latency_us = r.number(obj, "latency_us", path)
    if len(r.problems) > before or host is None or not all(n is not None for n in nums):
        return None
    oio, latency, iops, size, seq = (float(n) for n in nums if n is not None)
    return DeviceSample(
        host, oio, latency, iops, size, seq, time, op if op is not None else OP_READ, latency_us
    )


def _workload(r: _Reader, raw: object, path: str) -> WorkloadParams | None:
    obj = r.mapping(raw, path, _WORKLOAD_REQUIRED)
    if obj is None:
        return None
    nums = [r.number(obj, k, path) for k in _WORKLOAD_REQUIRED]
    if not all(n is not None for n in nums):
        return None
    oio, size, read, rnd = (float(n) for n in nums if n is not None)
    return WorkloadParams(oio, size, read, rnd)


def _workload_sample(r: _Reader, raw: object, path: str) -> WorkloadSample | None:
    obj = r.mapping(raw, path, _WORKLOAD_REQUIRED, ("time",))
    if obj is None:
        return None
    before = len(r.problems)
    nums = [r.number(obj, k, path) for k in _WORKLOAD_REQUIRED]
    time = r.time(obj, "time", path)
    if len(r.problems) > before or not all(n is not None for n in nums):
        return None
    oio, size, read, rnd = (float(n) for n in nums if n is not None)
    return WorkloadSample(oio, size, read, rnd, time)


def _datastore(r: _Reader, raw: object, path: str, names: list[str]) -> Datastore | None:
    obj = r.mapping(raw, path, _DATASTORE_REQUIRED, _DATASTORE_OPTIONAL)
    if obj is None:
        return None
    before = len(r.problems)
    name = r.string(obj, "name", path)
    if name is not None:
        names.append(name)
    capacity = r.number(obj, "capacity_gb", path)
    free = r.number(obj, "free_gb", path)
    hosts = r.strings(obj, "hosts", path)
    maintenance = r.boolean(obj, "maintenance", path)
    performance = r.number(obj, "performance", path)
    pod = r.string(obj, "pod", path)
    kind = r.string(obj, "device_kind", path)
    spindles = r.integer(obj, "spindles", path)
    samples = r.entries(obj, "samples", path, lambda v, p: _device_sample(r, v, p))
    if len(r.problems) > before or name is None or capacity is None or free is None or hosts is None:
        return None
    return Datastore(
        name=name,
        capacity_gb=capacity,
        free_gb=free,
        hosts=frozenset(hosts),
        maintenance=bool(maintenance),
        performance=performance,
        samples=tuple(s for _, s in samples),
        pod=pod if pod is not None else DEFAULT_POD,
        device_kind=kind,
        spindles=spindles,
    )


def _disk(r: _Reader, raw: object, path: str, vms: list[str]) -> Disk | None:
    obj = r.mapping(raw, path, _DISK_REQUIRED, _DISK_OPTIONAL)
    if obj is None:
        return None
    before = len(r.problems)
    disk_id = r.string(obj, "id", path)
    vm = r.string(obj, "vm", path)
    if vm is not None:
        vms.append(vm)
    datastore = r.string(obj, "datastore", path)
    size = r.number(obj, "size_gb", path)
    hosts = r.strings(obj, "hosts", path)
    load = r.number(obj, "load", path)
    workload = _workload(r, obj["workload"], _join(path, "workload")) if "workload" in obj else None
    samples = r.entries(obj, "samples", path, lambda v, p: _workload_sample(r, v, p))
    iops = r.number(obj, "iops", path)
    last_moved = r.time(obj, "last_moved", path)
    if len(r.problems) > before or disk_id is None or vm is None or datastore is None:
        return None
    if size is None or hosts is None:
        return None
    return Disk(
        id=disk_id,
        vm=vm,
        datastore=datastore,
        size_gb=size,
        hosts=frozenset(hosts),
        load=load,
        workload=workload,
        samples=tuple(s for _, s in samples),
        iops=iops,
        last_moved=last_moved,
    )


def _device_model_options(r: _Reader, raw: object) -> DeviceModelParams | None:
    dpath = "options.device_model"
    dobj = r.mapping(raw, dpath, (), _DEVICE_MODEL_OPTIONS)
    if dobj is None:
        return None
    given: dict[str, Any] = {
        name: v for name in _DEVICE_MODEL_NUMBERS if (v := r.number(dobj, name, dpath)) is not None
    }
    points = r.integer(dobj, "min_points", dpath)
    if points is not None:
        given["min_points"] = points
    return dataclasses.replace(DeviceModelParams(), **given)


def _string_options(r: _Reader, obj: Mapping[str, Any], path: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for key in ("candidate_order", "objective", "search"):
        text = r.string(obj, key, path)
        if text is not None:
            found[key] = text
    return found


def _options(r: _Reader, raw: object) -> tuple[BalancerParams, Rules, float | None]:
    defaults = BalancerParams()
    obj = r.mapping(raw, "options", (), _OPTION_NAMES)
    if obj is None:
        return defaults, Rules(), None
    path = "options"
    values: dict[str, Any] = {}
    for key in (
        "imbalance_threshold",
        "max_gb",
        "space_headroom_pct",
        "ping_pong_hours",
        "subset_tolerance",
        "fairness_pct",
        "fairness_ms",
        "min_gain_pct",
    ):
        v = r.number(obj, key, path)
        if v is not None:
            values[key] = v
    for key in ("max_moves", "seed", "subset_trials", "max_pair_attempts"):
        n = r.integer(obj, key, path)
        if n is not None:
            values[key] = n
    values.update(_string_options(r, obj, path))
    now = r.time(obj, "now", path)

    if "workload_model" in obj:
        wpath = "options.workload_model"
        wobj = r.mapping(obj["workload_model"], wpath, (), _WORKLOAD_MODEL_OPTIONS)
        if wobj is not None:
            wd = WorkloadModelParams()
            got = {name: r.number(wobj, name, wpath) for name in _WORKLOAD_MODEL_OPTIONS}

            def pick(name: str, default: float) -> float:
                value = got[name]
                return default if value is None else value

            values["workload_model"] = WorkloadModelParams(
                constants=WorkloadConstants(
                    k1=pick("k1", wd.constants.k1),
                    k2=pick("k2", wd.constants.k2),
                    k3=pick("k3", wd.constants.k3),
                    k4=pick("k4", wd.constants.k4),
                ),
                percentile=pick("percentile", wd.percentile),
                window_hours=pick("window_hours", wd.window_hours),
                sequential_random_pct=pick("sequential_random_pct", wd.sequential_random_pct),
                writes_read_pct=pick("writes_read_pct", wd.writes_read_pct),
                sequential_class_random_pct=pick(
                    "sequential_class_random_pct", wd.sequential_class_random_pct
                ),
                write_heavy_read_pct=pick("write_heavy_read_pct", wd.write_heavy_read_pct),
                burst_ratio=pick("burst_ratio", wd.burst_ratio),
            )
    if "device_model" in obj:
        device_model = _device_model_options(r, obj["device_model"])
        if device_model is not None:
            values["device_model"] = device_model

    splittable = r.strings(obj, "splittable_vms", path) or []
    excluded = r.strings(obj, "excluded_vms", path) or []
    groups: list[frozenset[str]] = []
    raw_groups = r.array(obj, "anti_affinity", path)
    for g, raw_group in enumerate(raw_groups or []):
        gpath = f"options.anti_affinity[{g}]"
        if not isinstance(raw_group, list) or not all(isinstance(v, str) and v for v in raw_group):
            r.problem(gpath, "must be a list of VM names")
            continue
        groups.append(frozenset(raw_group))
    rules = Rules(frozenset(splittable), tuple(groups), frozenset(excluded))
    params = BalancerParams(**values)
    r.problems += params.validate("options")
    return params, rules, now


def parse_snapshot(document: object, *, default_now: float | None = None) -> SnapshotDocument:
    """Read a decoded JSON snapshot; raise :class:`ValidationError` listing every problem.

    *default_now* stands in for ``options.now`` when the document does not give one (the command
    line passes the current time so ping-pong avoidance works on files written without it).
    """
    r = _Reader()
    top = r.mapping(document, "", ("datastores", "disks"), ("options", "description", "slo"))
    if top is None:
        raise ValidationError(r.problems, "snapshot")
    description = r.string(top, "description", "") or ""
    ds_names: list[str] = []
    vm_names: list[str] = []
    datastores = r.entries(top, "datastores", "", lambda v, p: _datastore(r, v, p, ds_names))
    disks = r.entries(top, "disks", "", lambda v, p: _disk(r, v, p, vm_names))
    params, rules, now = _options(r, top.get("options", {}))
    if now is None:
        now = default_now
    r.problems += validate_parts(
        datastores,
        disks,
        rules,
        now,
        other_datastore_names=ds_names,
        other_vm_names=vm_names,
        rules_path="options",
        now_path="options.now",
    )
    raise_if_problems(r.problems, "snapshot")
    snapshot = Snapshot(
        datastores=tuple(d for _, d in datastores),
        disks=tuple(d for _, d in disks),
        rules=rules,
        now=now,
        description=description,
    )
    return SnapshotDocument(snapshot, params, top.get("slo"))


def load_snapshot_json(text: str, *, default_now: float | None = None) -> SnapshotDocument:
    """Parse snapshot JSON text; malformed JSON is a :class:`ValidationError` too."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValidationError(
            [Problem("snapshot", f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno}")],
            "snapshot",
        ) from err
    return parse_snapshot(document, default_now=default_now)


def _datastore_document(ds: Datastore) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": ds.name,
        "capacity_gb": ds.capacity_gb,
        "free_gb": ds.free_gb,
        "hosts": sorted(ds.hosts),
    }
    if ds.maintenance:
        entry["maintenance"] = True
    if ds.performance is not None:
        entry["performance"] = ds.performance
    if ds.samples:
        entry["samples"] = [
            {
                "host": s.host,
                "oio": s.oio,
                "latency_ms": s.latency_ms,
                "iops": s.iops,
                "io_size_kb": s.io_size_kb,
                "seq_pct": s.seq_pct,
                **({"time": s.time} if s.time is not None else {}),
                **({"op": s.op} if s.op != OP_READ else {}),
                **({"latency_us": s.latency_us} if s.latency_us is not None else {}),
            }
            for s in ds.samples
        ]
    if ds.pod != DEFAULT_POD:
        entry["pod"] = ds.pod
    if ds.device_kind is not None:
        entry["device_kind"] = ds.device_kind
    if ds.spindles is not None:
        entry["spindles"] = ds.spindles
    return entry


def _disk_document(disk: Disk) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": disk.id,
        "vm": disk.vm,
        "datastore": disk.datastore,
        "size_gb": disk.size_gb,
        "hosts": sorted(disk.hosts),
    }
    if disk.load is not None:
        item["load"] = disk.load
    if disk.workload is not None:
        w = disk.workload
        item["workload"] = {
            "oio": w.oio,
            "io_size_kb": w.io_size_kb,
            "read_pct": w.read_pct,
            "random_pct": w.random_pct,
        }
    if disk.samples:
        item["samples"] = [
            {
                "oio": s.oio,
                "io_size_kb": s.io_size_kb,
                "read_pct": s.read_pct,
                "random_pct": s.random_pct,
                **({"time": s.time} if s.time is not None else {}),
            }
            for s in disk.samples
        ]
    optional = {"iops": disk.iops, "last_moved": disk.last_moved}
    item.update({k: v for k, v in optional.items() if v is not None})
    return item


def _params_document(params: BalancerParams) -> dict[str, Any]:
    wm, dm = params.workload_model, params.device_model
    options: dict[str, Any] = {
        "imbalance_threshold": params.imbalance_threshold,
        "space_headroom_pct": params.space_headroom_pct,
        "candidate_order": params.candidate_order,
        "ping_pong_hours": params.ping_pong_hours,
        "seed": params.seed,
        "subset_trials": params.subset_trials,
        "subset_tolerance": params.subset_tolerance,
        "max_pair_attempts": params.max_pair_attempts,
        "objective": params.objective,
        "search": params.search,
        "fairness_pct": params.fairness_pct,
        "fairness_ms": params.fairness_ms,
        "min_gain_pct": params.min_gain_pct,
        "workload_model": {
            "k1": wm.constants.k1,
            "k2": wm.constants.k2,
            "k3": wm.constants.k3,
            "k4": wm.constants.k4,
            "percentile": wm.percentile,
            "window_hours": wm.window_hours,
            "sequential_random_pct": wm.sequential_random_pct,
            "writes_read_pct": wm.writes_read_pct,
            "sequential_class_random_pct": wm.sequential_class_random_pct,
            "write_heavy_read_pct": wm.write_heavy_read_pct,
            "burst_ratio": wm.burst_ratio,
        },
        "device_model": {name: getattr(dm, name) for name in _DEVICE_MODEL_OPTIONS},
    }
    budgets = {"max_moves": params.max_moves, "max_gb": params.max_gb}
    options.update({k: v for k, v in budgets.items() if v is not None})
    return options


def snapshot_to_document(snapshot: Snapshot, params: BalancerParams | None = None) -> dict[str, Any]:
    """The JSON form of a snapshot (and its params as ``options``); :func:`parse_snapshot` reads it back."""
    options = _params_document(params) if params is not None else {}
    rules = snapshot.rules
    if rules.splittable_vms:
        options["splittable_vms"] = sorted(rules.splittable_vms)
    if rules.anti_affinity:
        options["anti_affinity"] = [sorted(group) for group in rules.anti_affinity]
    if rules.excluded_vms:
        options["excluded_vms"] = sorted(rules.excluded_vms)
    if snapshot.now is not None:
        options["now"] = snapshot.now
    document: dict[str, Any] = {
        "datastores": [_datastore_document(ds) for ds in snapshot.datastores],
        "disks": [_disk_document(d) for d in snapshot.disks],
    }
    if snapshot.description:
        document["description"] = snapshot.description
    if options:
        document["options"] = options
    return document
