"""The predictive model behind the throughput objective: latency and IOPS of every datastore and disk
of a pod, as a function of where the disks are.

Per datastore j the device model gives latency as a line in its outstanding IOs (BASIL §4):
``lat_j = a_j + s_j · X_j`` ms, with ``s_j = 1 / P_j`` and ``a_j`` the fit's intercept. ``X_j`` is the
datastore's load in outstanding IOs of a typical mix (below). Every disk sees its datastore's
latency, and keeps its own outstanding IOs ``o_i`` whatever the latency (a closed loop, as an
application with a fixed queue depth behaves), so Little's law gives its throughput
``IOPS_i = 1000 · o_i / lat_j``. With the outstanding IOs fixed, the pod's IOPS-weighted latency
is ``1000 · Σo / ΣIOPS``: raising the total IOPS and cutting the IOPS-weighted latency are one goal.

Load of a disk. An IO's cost depends on its mix (eq. 1): ``c_i = (K2 + size)(K3 + read)(K4 +
random)``. A disk's load in typical outstanding IOs is ``x_i = o_i · c_i / c_ref`` with ``c_ref`` the
median ``c`` of the snapshot's disks, so a typical disk's ``x`` is its OIO. A disk known only by its
``L`` counts ``x = o = L / c_ref``.

Which statistic. A device line is fitted against a datastore's mean outstanding reads per interval
(``datastore.datastoreReadOIO``) and its mean read latency. eq. 1's load uses the 90th percentile
(§6.1), which would place a bursty datastore far up its line. So the predictive model uses means:
``o_i`` is the disk's mean OIO over the window (reads and writes: writes load the devices too, a
RAID 5 small write four times), weighted by its mix cost as above. The line's own axis is outstanding
reads: each datastore's slope is scaled so that its X at the start equals its disks' mean outstanding
reads (``virtualDisk.readOIO`` when collected, else mean OIO times read share;
:meth:`PredictiveState.anchor`). With no move a datastore is predicted on its own line at the load
it was measured with, and a move shifts X by the mover's cost-weighted OIO. A disk known only by its
percentile parameters (no samples) uses them.

Sequential streams. eq. 1's ``K4 + random`` makes a sequential disk cheap, which holds while the
array sees it alone. Interleaved with other disks' IO its next IO finds the heads elsewhere about as
often as other disks' IOs come between two of its own, so its effective random share is
``r + (1 − r)(1 − o_i / O_j)`` (``O_j`` the datastore's outstanding IOs) and its cost grows by the
ratio of eq. 1's random factors. Summed over a datastore that is ``X_j = A_j − B_j / O_j`` with
``A_j = Σ x_i (K4 + 1)/(K4 + r_i)`` and ``B_j = Σ x_i (1 − r_i) o_i / (K4 + r_i)``: both add up, so a
move changes them in O(1). A random disk (r = 1) counts ``x_i`` wherever it is; a lone sequential
stream counts its cheap ``x_i``; mixed, it loses its sequential benefit.

On spinning disks (a configured HDD kind) a random IO's time is mostly positioning: a seek and half a
rotation, about 5.5 of 5.7 ms on a 15k drive (``POSITIONING_MS`` of ``NO_LOAD_MS``, share ``p``). A
sequential IO skips it, and so does every IO queued ahead of it that is sequential too: the no-load
time and what each queued IO adds both scale with the mix's mean effective random share
``rho = ((K4 + 1) X − K4 A) / A`` (within [0, 1]; the weights are eq. 1's). So there
``lat = (1 − p + p · rho) · (a + s · A)``: ``a`` and ``s`` are a fully random mix's (the fitted line
divided by its factor at the start's rho) and ``A`` already counts every IO at its random cost, so the
sequential benefit is counted once. A datastore left with a lone backup stream is predicted at a
fraction of a random IO's time, as it runs; eq. 1's factor (K4 = 1: a sequential IO costs half a
random one) would leave it at the random intercept. Flash has no positioning (``p = 0``): there the
line ``a + s · X`` holds as above.

Writes per device kind. eq. 1's read factor ``K3 + read`` gives a write ``K3 / (1 + K3)`` of a read's
cost (K3 = 0.25: a fifth), right for HDD arrays whose write-back cache absorbs and gathers writes.
Flash behind RAID 5 is different: a small write is a read-modify-write of data and parity, four
flash operations (each slower than a read), where a read is one. ``WRITE_COST_READS`` gives, per
configured device kind, a small write's cost in reads; on a datastore of that kind the write part
of every disk's ``x_i`` (its share ``K3 (1 − read) / (K3 + read)`` of the cost) counts
``write_cost · (1 + K3) / K3`` times. So each
disk carries its write parts ``wa``, ``wb`` of ``a``, ``b``, and a datastore j adds
``a + e_j · wa`` with ``e_j`` its extra factor (0 for kinds eq. 1 describes). The anchor below then
places the datastore's start on its line as before: the extra cost only changes what a move of a
write-heavy disk onto (or off) such a datastore is predicted to do.

Intercepts and slopes without a credible fit. A credible fit's intercept is used when positive (the
line of a fit that is not credible says nothing of the device). One small IO is served by one device,
so a datastore's no-load latency does not depend on its device count, while its slope goes as one
over it (BASIL §4, Fig. 6). A datastore without a credible fit (a prior, a carried P, new) whose
device kind is configured takes the median intercept of the pod's credible fits of its kind, else the
kind's data-sheet no-load time (``NO_LOAD_MS``); and, when the pod has credible fits of its kind and
its device count is configured, their median P per device times its count. Otherwise it takes the
pod's median ratio intercept/slope of the fitted models times its own slope, or, when none has, one
slope (``a = s``: one IO costs at least what one more queued IO adds). With a zero intercept a device
would deliver P IOs per ms at any load and no move could change its throughput, so the assumption is
stated instead of hidden. An empty datastore's line is for a typical mix at eq. 1's costs; on a kind
whose writes cost more (``WRITE_COST_READS``) the pod's mix counts ``(Σa + e·Σwa) / Σa`` times as much
X there, so its slope per unit of X is divided by that (:meth:`PredictiveState.anchor`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not, ne
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from basil.core.normalized_load import MODEL_FITTED, MODEL_GIVEN, DiskLoad, Models, mix_columns
from basil.core.workload_model import WorkloadConstants, WorkloadParams

# The mix assumed for c_ref when no disk of the snapshot has a workload model: 8 KB, 70 % reads,
# fully random (a typical OLTP disk).
_DEFAULT_MIX = WorkloadParams(oio=1.0, io_size_kb=8.0, read_pct=70.0, random_pct=100.0)
INTERCEPT_DEFAULT_SLOPES = 1.0  # a = s when nothing better is known (see the module docstring)
#: A single small random read's service time at no load per device kind, ms: controller and fabric
#: (about 0.2 ms) plus, on spinning disks, an average seek and half a rotation (data-sheet figures:
#: 15k rpm 3.5 ms + 2.0 ms, 10k rpm 4.2 ms + 3.0 ms, 7.2k rpm 8.5 ms + 4.2 ms); flash about 0.1 ms.
#: One IO is served by one device, so it does not depend on the device count (see "Intercepts").
#: Of which positioning (seek and half a rotation; none on flash): what a sequential stream's IOs skip.
POSITIONING_MS: Mapping[str, float] = {
    "fc15k": 5.5,
    "sas15k": 5.5,
    "sas10k": 7.2,
    "sata7k": 12.7,
    "nlsas7k": 12.7,
}
NO_LOAD_MS: Mapping[str, float] = {
    "ssd": 0.2,
    "fc15k": 5.7,
    "sas15k": 5.7,
    "sas10k": 7.4,
    "sata7k": 12.9,
    "nlsas7k": 12.9,
}
#: A small random write's cost in reads per device kind where eq. 1's K3 under-states it (see the
#: module docstring, "Writes per device kind"): flash in RAID 5, a read-modify-write of four flash
#: operations against one for a read. HDD kinds keep eq. 1's (their cache absorbs writes).
WRITE_COST_READS: Mapping[str, float] = {"ssd": 4.0}

Array = npt.NDArray[np.float64]


def _mix_cost(w: WorkloadParams, k: WorkloadConstants) -> float:
    return (k.k2 + w.io_size_kb) * (k.k3 + w.read_pct / 100.0) * (k.k4 + w.random_pct / 100.0)


class DiskDemand(NamedTuple):
    """One disk's outstanding IOs and its terms of X (see the module docstring). A named tuple: a
    round builds one per disk (40,000 in a large pod)."""

    oio: float  # o_i
    a: float  # x_i (K4 + 1)/(K4 + r_i): its cost when fully interleaved
    b: float  # x_i (1 − r_i) o_i/(K4 + r_i): what being alone takes off, times O_j
    sequential: bool  # random share below one half: gains from running alone
    line_oio: float = 0.0  # its place on a device line: mean outstanding reads (the fit's axis)
    wa: float = 0.0  # the write part of a (its share K3 (1 − read)/(K3 + read) of the cost)
    wb: float = 0.0  # the write part of b


def positioning_share(kind: str | None) -> float:
    """The share of a no-load random read's time that is positioning on a device of *kind*
    (``POSITIONING_MS`` over ``NO_LOAD_MS``; 0 for flash or an unknown kind)."""
    if kind is None or kind not in POSITIONING_MS or kind not in NO_LOAD_MS:
        return 0.0
    return POSITIONING_MS[kind] / NO_LOAD_MS[kind]


def write_extra(kind: str | None, constants: WorkloadConstants) -> float:
    """The extra factor e_j on the write part of a disk's load on a datastore of device *kind*: 0
    where eq. 1's K3 holds, else ``write_cost · (1 + K3) / K3 − 1`` (``WRITE_COST_READS``)."""
    cost = WRITE_COST_READS.get(kind) if kind is not None else None
    k3 = constants.k3
    if cost is None or not (k3 > 0 and math.isfinite(k3)):
        return 0.0
    return max(cost * (1.0 + k3) / k3 - 1.0, 0.0)


class DiskDemands(Mapping[str, DiskDemand]):
    """Every disk's :class:`DiskDemand` by disk id, kept as one column per field: a round reads a few
    disks' demands one by one and all of a pod's at once (:meth:`columns`), so none is built as an
    object until asked for."""

    # The float fields, in the order of :meth:`columns`' rows.
    FLOAT_FIELDS = ("oio", "a", "b", "line_oio", "wa", "wb")

    def __init__(self, ids: Sequence[str], table: Array, sequential: npt.NDArray[np.bool_]) -> None:
        self.ids = ids
        self.index = dict(zip(ids, range(len(ids)), strict=True))
        self.table = table  # len(FLOAT_FIELDS) × disks
        self.sequential = sequential

    def __getitem__(self, disk: str) -> DiskDemand:
        i = self.index[disk]
        row = self.table.item
        return DiskDemand(
            row(0, i), row(1, i), row(2, i), bool(self.sequential.item(i)), row(3, i), row(4, i), row(5, i)
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)

    def in_order(self, ids: Sequence[str]) -> bool:
        """Whether the table's columns are the disks *ids*, in that order, each once (then the
        demand of the disk at position i of *ids* is column i)."""
        return len(self.index) == len(self.ids) and self.ids == ids

    def columns(self, disks: Sequence[str]) -> Array:
        """The float fields of *disks*' demands (rows in ``FLOAT_FIELDS`` order, a column per disk)."""
        rows: Array = self.table[:, list(map(self.index.__getitem__, disks))]
        return rows


# A disk model's fields, read for every disk in one pass each (C loops).
_load_of = attrgetter("load")
_workload_of = attrgetter("workload")
_means_of = attrgetter("mean_oio", "mean_read_oio")


def _demand_inputs(models: Models, n: int) -> tuple[Array, npt.NDArray[np.bool_], Array, Array]:
    """Per disk of *models* (*n* of them): L, whether it has a workload model, and for those that do
    (one row each) the four workload parameters and the two means (OIO, outstanding reads)."""
    columns = models.columns
    if columns is not None and columns.disks is models.disks and len(columns.loads) == n:
        # Every disk known by its workload model alone, its parameters and L already as columns (the
        # same values as read below: the same workload objects, in the same order; no means).
        loads, mix = columns.loads, columns.mix
        has = np.ones(n, dtype=np.bool_)
        described: list[DiskLoad] = []
    else:
        values = list(models.disks.values())
        loads = np.fromiter(map(_load_of, values), dtype=np.float64, count=n)
        workloads = list(map(_workload_of, values))
        present = list(map(is_not, workloads, repeat(None)))
        has = np.array(present, dtype=np.bool_)
        described = list(compress(values, present))
        mix = mix_columns(list(compress(workloads, present)))
    if not any(map(ne, map(_means_of, described), repeat((None, None)))):
        # No disk with a workload has means (none was modelled from samples): its percentile
        # parameters, as the general case below computes them (the same operations, so the same floats).
        means = np.stack((mix[:, 0], mix[:, 0] * mix[:, 2] / 100.0), axis=1)
    else:
        means = np.array(
            [
                (
                    m.mean_oio if m.mean_oio is not None else m.workload.oio,
                    m.mean_read_oio
                    if m.mean_read_oio is not None
                    else (m.mean_oio if m.mean_oio is not None else m.workload.oio)
                    * m.workload.read_pct
                    / 100.0,
                )
                for m in described
                if m.workload is not None  # all of them (described), for the type checker
            ],
            dtype=np.float64,
        ).reshape(-1, 2)
    return loads, has, mix, means


def disk_demands(models: Models, constants: WorkloadConstants) -> DiskDemands:
    """Every disk's demand, from its workload model when it has one, else from its L.

    Means where the window gave them (see the module docstring, "Which statistic"): ``o_i`` is the
    mean OIO and the disk's place on the device line its mean outstanding reads (or, without a read
    counter, its mean OIO times its read share); a disk known only by its percentile parameters
    uses them."""
    ids = list(models.disks)
    n = len(ids)
    loads, has, mix, means = _demand_inputs(models, n)
    k2, k3, k4 = constants.k2, constants.k3, constants.k4
    # eq. 1's mix cost per disk with a workload model, in _mix_cost's order of operations.
    with np.errstate(over="ignore", invalid="ignore"):  # as Python floats: inf, no warning
        costs = (k2 + mix[:, 1]) * (k3 + mix[:, 2] / 100.0) * (k4 + mix[:, 3] / 100.0)
    c_ref = float(np.median(costs)) if costs.size else _mix_cost(_DEFAULT_MIX, constants)
    if not (math.isfinite(c_ref) and c_ref > 0):
        c_ref = 1.0
    cost = np.zeros(n, dtype=np.float64)
    oio = np.zeros(n, dtype=np.float64)
    reads = np.zeros(n, dtype=np.float64)
    random = np.zeros(n, dtype=np.float64)
    read_share = np.ones(n, dtype=np.float64)
    read_share[has] = np.minimum(np.maximum(mix[:, 2] / 100.0, 0.0), 1.0)
    cost[has] = costs
    oio[has] = means[:, 0]
    reads[has] = means[:, 1]
    random[has] = mix[:, 3]
    modelled = has & (loads > 0)
    o = np.maximum(oio, 0.0)
    line = np.maximum(reads, 0.0)
    r = np.minimum(np.maximum(random / 100.0, 0.0), 1.0)
    denominator = k4 + r
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.where(modelled, o * cost / c_ref, np.maximum(loads, 0.0) / c_ref)
        split = modelled & (denominator > 0) & (r < 1.0)
        a = np.where(split, x * (k4 + 1.0) / denominator, x)
        b = np.where(split, x * (1.0 - r) * o / denominator, 0.0)
        read_factor = k3 + read_share
        writes = np.where(
            modelled & (read_factor > 0),
            k3 * (1.0 - read_share) / np.where(read_factor > 0, read_factor, 1.0),
            0.0,
        )
        wa = a * writes
        wb = b * writes
    o = np.where(modelled, o, x)
    line = np.where(modelled, line, x)
    sequential = split & (r < 0.5)
    return DiskDemands(ids, np.stack((o, a, b, line, wa, wb)), sequential)


def device_lines(
    models: Models,
    names: Sequence[str],
    kinds: Sequence[str | None] | None = None,
    devices: Sequence[int | None] | None = None,
) -> tuple[Array, Array, tuple[str, ...]]:
    """Intercepts a_j and slopes s_j (ms, ms per IO) of *names*, and how each intercept was chosen.

    *kinds* and *devices* (each datastore's configured device kind and count, when known) let a
    datastore without a credible fit borrow from fitted datastores of its kind (see the module
    docstring, "Intercepts")."""
    n = len(names)
    kinds = list(kinds) if kinds is not None else [None] * n
    devices = list(devices) if devices is not None else [None] * n
    slopes = np.array(
        [1.0 / models.datastores[name].effective_performance for name in names], dtype=np.float64
    )
    fitted: list[float | None] = []
    credible: list[bool] = []
    for name in names:
        fit = models.datastores[name].fit
        ok = fit is not None and fit.ok and fit.credible
        credible.append(ok and models.datastores[name].source in (MODEL_FITTED, MODEL_GIVEN))
        intercept = fit.intercept if ok and fit is not None else None
        fitted.append(
            intercept if intercept is not None and math.isfinite(intercept) and intercept > 0 else None
        )
    # Per kind: the credible fits' intercepts (ms) and P per device.
    kind_intercepts: dict[str, list[float]] = {}
    kind_per_device: dict[str, list[float]] = {}
    for i, name in enumerate(names):
        kind = kinds[i]
        if kind is None or not credible[i]:
            continue
        if fitted[i] is not None:
            kind_intercepts.setdefault(kind, []).append(float(fitted[i]))  # type: ignore[arg-type]
        count = devices[i]
        if count is not None and count > 0:
            kind_per_device.setdefault(kind, []).append(models.datastores[name].effective_performance / count)
    for i in range(n):
        kind, count = kinds[i], devices[i]
        if credible[i] or kind is None or count is None or count <= 0 or kind not in kind_per_device:
            continue
        # No credible fit of its own: slope ∝ 1/devices (BASIL §4, Fig. 6) from its kind's fits.
        slopes[i] = 1.0 / (float(np.median(kind_per_device[kind])) * count)
    ratios = [f / float(s) for f, s in zip(fitted, slopes, strict=True) if f is not None]
    ratio = float(np.median(ratios)) if ratios else INTERCEPT_DEFAULT_SLOPES
    intercepts = np.empty(n, dtype=np.float64)
    sources: list[str] = []
    for i, f in enumerate(fitted):
        kind = kinds[i]
        if f is not None:
            intercepts[i] = f
            sources.append("fitted")
        elif kind is not None and kind in kind_intercepts:
            intercepts[i] = float(np.median(kind_intercepts[kind]))
            sources.append("kind_fitted")
        elif kind is not None and kind in NO_LOAD_MS:
            intercepts[i] = NO_LOAD_MS[kind]
            sources.append("kind_datasheet")
        else:
            intercepts[i] = ratio * float(slopes[i])
            sources.append("pod_ratio" if ratios else "one_slope")
    return intercepts, slopes, tuple(sources)


class PredictiveState:
    """Latency and IOPS of a pod's datastores as units move; every update is O(1).

    ``A``, ``B``, ``O`` are per datastore (see the module docstring); a unit brings its own sums.
    Plain lists, for fast scalar updates; :meth:`latencies` and :meth:`arrays` give numpy views.
    """

    def __init__(self, intercepts: Array, slopes: Array) -> None:
        d = len(intercepts)
        self.a: list[float] = [float(v) for v in intercepts]
        self.s: list[float] = [float(v) for v in slopes]
        self.A: list[float] = [0.0] * d
        self.B: list[float] = [0.0] * d
        self.O: list[float] = [0.0] * d
        self.count: list[int] = [0] * d
        self.extra: list[float] = [0.0] * d  # e_j: see the module docstring, "Writes per device kind"
        # Positioning: the share p of a random IO's time that is positioning per configured kind (0:
        # none, as on flash), in use (a_pos) once anchor() has set the line (see "Sequential streams").
        self.positioning: list[float] = [0.0] * d
        self.a_pos: list[float] = [0.0] * d
        self.k4 = 1.0

    def add(
        self, j: int, a: float, b: float, o: float, disks: int, *, wa: float = 0.0, wb: float = 0.0
    ) -> None:
        """Add a unit's sums to datastore j (negative: remove them); *wa*, *wb* its write parts."""
        e = self.extra[j]
        self.A[j] += a + e * wa if e else a
        self.B[j] += b + e * wb if e else b
        self.O[j] += o
        self.count[j] += disks

    def anchor(self, line_oio: Sequence[float], pod: tuple[float, float] | None = None) -> None:
        """Scale each datastore's slope so that its X at the start is its outstanding reads there
        (*line_oio*, the device line's own axis): with no move a datastore is predicted on its line at
        the load it was measured with, and a move changes X by the mover's share of it (see the module
        docstring, "Which statistic"). The factor is bounded to [1/4, 4].

        An empty datastore has no load of its own to convert. Its line (a prior, or a fit from
        earlier) is for a typical mix at eq. 1's costs; where writes cost more (``extra``), the same
        mix counts ``(Σa + e·Σwa) / Σa`` times as much X, so its slope per unit of X is divided by
        that (*pod*: the pod's disks' ``a`` and write parts ``wa`` summed)."""
        for j, reads in enumerate(line_oio):
            o = self.O[j]
            x = self.A[j] - self.B[j] / o if o > 0 else 0.0
            if o <= 0 and pod is not None:
                pod_a, pod_wa = pod
                load = pod_a + self.extra[j] * pod_wa
                if pod_a > 0 and load > 0:
                    self.s[j] *= pod_a / load
                self.a_pos[j] = self.positioning[j]  # a fully random mix when empty: factor 1
                continue
            share = self.positioning[j]
            if share > 0:
                # Spinning disks: latency = (1 − p + p·rho)·(a + s·A) (see "Sequential streams"), so
                # the line's intercept and slope, measured at this mix's rho, are a fully random
                # mix's divided by its factor, and the slope is anchored on A.
                rho = _random_share(self.k4, self.A[j], x) if o > 0 else 1.0
                factor = 1.0 - share + share * rho
                if reads > 0 and self.A[j] > 0:
                    self.s[j] *= min(max(reads / self.A[j], 0.25), 4.0)
                self.a[j] /= factor
                self.s[j] /= factor
                self.a_pos[j] = share
            elif reads > 0 and x > 0:
                self.s[j] *= min(max(reads / x, 0.25), 4.0)

    def latency(self, j: int) -> float:
        return latency_of(
            self.a[j], self.s[j], self.A[j], self.B[j], self.O[j], share=self.a_pos[j], k4=self.k4
        )

    def iops(self, j: int) -> float:
        return iops_of(self.a[j], self.s[j], self.A[j], self.B[j], self.O[j], share=self.a_pos[j], k4=self.k4)

    def latency_iops(self, j: int) -> tuple[float, float]:
        """:meth:`latency` and :meth:`iops` of datastore j, the latency computed once."""
        latency = self.latency(j)
        o = self.O[j]
        return latency, (1000.0 * o / latency if o > 0 else 0.0)

    def arrays(self) -> tuple[Array, Array, Array, Array]:
        """Latency, slope, O and B per datastore, as arrays."""
        a = np.array(self.a, dtype=np.float64)
        s = np.array(self.s, dtype=np.float64)
        big_a = np.array(self.A, dtype=np.float64)
        big_b = np.array(self.B, dtype=np.float64)
        o = np.array(self.O, dtype=np.float64)
        share = np.array(self.a_pos, dtype=np.float64)
        k4 = self.k4
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.maximum(np.where(o > 0, big_a - big_b / np.where(o > 0, o, 1.0), 0.0), 0.0)
            rho = np.clip(
                np.where(big_a > 0, (k4 + 1.0) * x / np.where(big_a > 0, big_a, 1.0) - k4, 1.0), 0.0, 1.0
            )
        spinning = (1.0 - share + share * rho) * (a + s * np.maximum(big_a, 0.0))
        latency: Array = np.where(o > 0, np.where(share > 0, spinning, a + s * x), a)
        return latency, s, o, big_b

    def latencies(self) -> Array:
        return self.arrays()[0]

    def total_iops(self) -> float:
        latency, _, o, _ = self.arrays()
        return float((1000.0 * o / latency).sum())

    def weighted_latency(self) -> float:
        """The pod's IOPS-weighted mean latency, ms (Little: Σo / ΣIOPS, in ms)."""
        total = self.total_iops()
        return 1000.0 * sum(self.O) / total if total > 0 else 0.0


def _random_share(k4: float, big_a: float, x: float) -> float:
    """The mix's mean effective random share rho from X/A = (K4 + rho)/(K4 + 1) (see "Sequential
    streams"), within [0, 1]."""
    if big_a <= 0:
        return 1.0
    return min(max((k4 + 1.0) * x / big_a - k4, 0.0), 1.0)


def latency_of(
    a: float, s: float, big_a: float, big_b: float, o: float, *, share: float = 0.0, k4: float = 1.0
) -> float:
    """lat = a + s · X with X = A − B/O (*a* for an empty datastore); on spinning disks (*share*, the
    positioning share p, above 0) lat = (1 − p + p · rho) · (a + s · A) with rho the mix's effective
    random share (see the module docstring, "Sequential streams")."""
    if o <= 0:
        return a
    x = max(big_a - big_b / o, 0.0)
    if share:
        return (1.0 - share + share * _random_share(k4, big_a, x)) * (a + s * max(big_a, 0.0))
    return a + s * x


def iops_of(
    a: float, s: float, big_a: float, big_b: float, o: float, *, share: float = 0.0, k4: float = 1.0
) -> float:
    if o <= 0:
        return 0.0
    return 1000.0 * o / latency_of(a, s, big_a, big_b, o, share=share, k4=k4)


def allowed_latency(latency_ms: float, fairness_pct: float, fairness_ms: float, pod_ms: float = 0.0) -> float:
    """The fairness rule: the highest latency a disk that had *latency_ms* at the start of the round
    may be predicted to get: its own plus ``fairness_pct`` % or plus ``fairness_ms``, or the pod's
    IOPS-weighted latency at the start (*pod_ms*), whichever is highest. No disk ends much worse
    than it was, or worse than the average IO of the pod was."""
    return max(latency_ms * (1.0 + fairness_pct / 100.0), latency_ms + fairness_ms, pod_ms)


def unit_sums(demands: Mapping[str, DiskDemand], disks: Iterable[str]) -> tuple[float, float, float]:
    """A unit's A, B and O (sums over its disks)."""
    a = b = o = 0.0
    for d in disks:
        demand = demands[d]
        a += demand.a
        b += demand.b
        o += demand.oio
    return a, b, o


def unit_write_sums(demands: Mapping[str, DiskDemand], disks: Iterable[str]) -> tuple[float, float]:
    """A unit's write parts of A and B (sums over its disks)."""
    wa = wb = 0.0
    for d in disks:
        demand = demands[d]
        wa += demand.wa
        wb += demand.wb
    return wa, wb
