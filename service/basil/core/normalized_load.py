"""Normalized load N_j = ΣL_i / P_j (BASIL eq. 5) and the imbalance f = σ/μ the balancer lowers.

This module turns a snapshot into the numbers the algorithms compare: every disk's load L (given,
from its workload model, or from its samples) and every datastore's performance P (given, fitted
from samples, or none: a new datastore).

A new datastore's N. The paper's modeler gives a datastore without data "a slope of zero" (§6.1),
i.e. an infinite P and N = 0 whatever it holds. With that, f = σ/μ of a pod whose load sits on one
datastore next to two new ones is √2 before and after a move to a new datastore, so no move could
ever "lower the imbalance". Instead a new datastore's N is computed with a stand-in P: the median P
of the datastores of its pod that have a model (1.0 when none has). Combined with the rule that a
new datastore receives at most one unit per round, the stand-in only decides which single workload
goes there first; the next round measures the real P, as in §6.3 (Tables 4 and 5).

A datastore whose device is described (``device_kind`` and ``spindles``, or a vendor
``performance``) gets a prior P (:func:`basil.core.device_model.device_prior`). A confident prior is
a model (source "prior"): the datastore is not new and may receive more than one disk per round. A
prior that is not confident (kind without device count) only replaces the pod median as stand-in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter
from typing import NamedTuple, TypedDict

import numpy as np
import numpy.typing as npt

from basil.core.device_model import DeviceFit, device_prior, fit_device_model, settle_performance
from basil.core.params import BalancerParams
from basil.core.snapshot import Snapshot
from basil.core.workload_model import (
    UNKNOWN_CLASS,
    WorkloadClass,
    WorkloadModelParams,
    WorkloadParams,
    classify_workload,
    load_metric,
    load_metric_array,
    model_workload,
    workload_flags,
)
from basil.errors import Problem, raise_if_problems

MODEL_GIVEN = "given"
MODEL_FITTED = "fitted"
MODEL_NEW = "new"
MODEL_PRIOR = "prior"

LOAD_GIVEN = "given"
LOAD_WORKLOAD = "workload"
LOAD_SAMPLES = "samples"


@dataclass(frozen=True, slots=True)
class DatastoreModel:
    """What is known of a datastore's performance and the P its N is computed with."""

    name: str
    pod: str
    source: str  # MODEL_GIVEN, MODEL_FITTED, MODEL_PRIOR or MODEL_NEW
    performance: float | None  # the model's P; None for a new datastore
    effective_performance: float  # P used for N: the model's, or the pod's stand-in when new
    fit: DeviceFit | None  # the fit over the datastore's samples, when it has any

    @property
    def new(self) -> bool:
        return self.source == MODEL_NEW


class DiskLoad(NamedTuple):
    """A disk's load L and where it came from; ``flags`` mark workloads eq. 1 models poorly.

    A named tuple: a round builds one per disk (40,000 in a large pod)."""

    disk: str
    load: float
    source: str  # LOAD_GIVEN, LOAD_WORKLOAD or LOAD_SAMPLES
    workload: WorkloadParams | None
    samples_used: int
    flags: tuple[str, ...]
    workload_class: WorkloadClass = UNKNOWN_CLASS  # sequential / write_heavy / bursty / random
    # Means over the window, when the disk was modelled from samples (eq. 1 uses the percentile; the
    # predictive model places the mean on device lines fitted against means: basil.core.predictive).
    mean_oio: float | None = None
    mean_read_oio: float | None = None

    @property
    def sequential(self) -> bool:
        """Whether the disk is a sequential stream (a balancer may keep it apart from random ones)."""
        return self.workload_class.sequential


@dataclass(frozen=True, slots=True)
class Models:
    """Every datastore's and disk's model, and each pod's stand-in P for new datastores."""

    datastores: Mapping[str, DatastoreModel]
    disks: Mapping[str, DiskLoad]
    stand_in: Mapping[str, float]
    # When every disk is known by its workload model alone (the models built at once): their eq. 1
    # inputs and L as columns, so the round's later passes need not read 40,000 models again.
    columns: WorkloadColumns | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class WorkloadColumns:
    """The disks' workload parameters and L, one row per disk of *disks* in its order (every disk
    known by its workload model alone: no given L, no samples, no means)."""

    disks: Mapping[str, DiskLoad]  # the models these columns are of (the very mapping)
    mix: npt.NDArray[np.float64]  # disks × 4: oio, io_size_kb, read_pct, random_pct
    loads: npt.NDArray[np.float64]  # L (BASIL eq. 1's numerator)


def imbalance(normalized_loads: Sequence[float] | np.ndarray) -> float:
    """f({N}) = σ({N}) / Avg({N}) over a pod's datastores (BASIL §5); 0 when there is no load."""
    n = np.asarray(normalized_loads, dtype=np.float64)
    if n.size == 0:
        return 0.0
    mean = float(n.mean())
    if mean <= 0.0:
        return 0.0
    return float(n.std()) / mean  # population σ: the pod is the whole population


def _described_workloads(
    described: Sequence[WorkloadParams], wparams: WorkloadModelParams
) -> tuple[list[float], list[int], bool, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """For the disks known by their workload model (*described*, in disk order): BASIL eq. 1's
    numerator (numpy, in load_metric's order of operations: the same floats), the four comparisons
    that decide their flags and class as a code 0-15 (``resolve_models``' memo key), all at once; and
    whether every numerator is a load (finite, not negative); and the parameters (a row per workload)
    and the numerators as arrays."""
    # The four parameters of every workload in one pass (one row each), as float64 columns.
    mix = mix_columns(described)
    oio, io_size_kb, read_pct, random_pct = mix.T
    with np.errstate(over="ignore", invalid="ignore"):  # as Python floats: inf or nan, reported later
        metric = load_metric_array(oio, io_size_kb, read_pct, random_pct, wparams.constants)
        valid = bool((np.isfinite(metric) & (metric >= 0)).all())
    loads: list[float] = metric.tolist()
    codes: list[int] = (
        (random_pct <= wparams.sequential_random_pct) * 8
        + (read_pct <= wparams.writes_read_pct) * 4
        + (random_pct <= wparams.sequential_class_random_pct) * 2
        + (read_pct <= wparams.write_heavy_read_pct)
    ).tolist()
    return loads, codes, valid, mix, metric


def resolve_models(snapshot: Snapshot, params: BalancerParams) -> Models:
    """Compute L for every disk and P for every datastore; raise when a disk's L cannot be computed."""
    problems: list[Problem] = []
    wparams = params.workload_model
    disks: dict[str, DiskLoad] = {}
    # workload_flags and classify_workload (without a median OIO) see a workload only through four
    # comparisons: their results are looked up by those (a handful of combinations per snapshot).
    memo: dict[tuple[bool, bool, bool, bool], tuple[tuple[str, ...], WorkloadClass]] = {}

    def flags_and_class(w: WorkloadParams) -> tuple[tuple[str, ...], WorkloadClass]:
        key = (
            w.random_pct <= wparams.sequential_random_pct,
            w.read_pct <= wparams.writes_read_pct,
            w.random_pct <= wparams.sequential_class_random_pct,
            w.read_pct <= wparams.write_heavy_read_pct,
        )
        found = memo.get(key)
        if found is None:
            found = memo[key] = (workload_flags(w, wparams), classify_workload(w, wparams))
        return found

    described = [d.workload for d in snapshot.disks if d.load is None and d.workload is not None]
    computed = _described_workloads(described, wparams)
    every = _all_described(snapshot, described, computed[:3], flags_and_class)
    if every is not None:
        columns = WorkloadColumns(every, computed[3], computed[4])
        return Models(disks=every, **_datastore_models(snapshot, params), columns=columns)
    workload_loads, workload_codes = iter(computed[0]), iter(computed[1])
    by_code: dict[int, tuple[tuple[str, ...], WorkloadClass]] = {}
    for i, disk in enumerate(snapshot.disks):
        if disk.load is not None:
            flags: tuple[str, ...] = ()
            kind = UNKNOWN_CLASS
            if disk.workload is not None:
                flags, kind = flags_and_class(disk.workload)
            disks[disk.id] = DiskLoad(disk.id, disk.load, LOAD_GIVEN, disk.workload, 0, flags, kind)
            continue
        means: tuple[float | None, float | None] = (None, None)
        if disk.workload is not None:
            w, used, source = disk.workload, 0, LOAD_WORKLOAD
            code = next(workload_codes)
            found = by_code.get(code)
            if found is None:
                found = by_code[code] = flags_and_class(w)
            flags, kind = found
            load = next(workload_loads)
        else:
            modelled = model_workload(disk.samples, wparams, snapshot.now)
            if modelled is None:
                problems.append(
                    Problem(
                        f"disks[{i}].samples",
                        f"no sample inside the {wparams.window_hours:g} h window, so L is unknown",
                    )
                )
                continue
            w, used, source = modelled.params, modelled.samples_used, LOAD_SAMPLES
            kind = modelled.workload_class
            means = (modelled.mean_oio, modelled.mean_read_oio)
            load = load_metric(w, wparams.constants)  # BASIL eq. 1, numerator
        if not (math.isfinite(load) and load >= 0):
            problems.append(
                Problem(
                    f"disks[{i}]", f"load metric L = {load:g} with constants {wparams.constants}: not a load"
                )
            )
            continue
        if source == LOAD_SAMPLES:
            flags = workload_flags(w, wparams)
        disks[disk.id] = DiskLoad(disk.id, load, source, w, used, flags, kind, *means)
    raise_if_problems(problems, "snapshot")
    return Models(disks=disks, **_datastore_models(snapshot, params))


def _all_described(
    snapshot: Snapshot,
    described: list[WorkloadParams],
    computed: tuple[list[float], list[int], bool],
    flags_and_class: Callable[[WorkloadParams], tuple[tuple[str, ...], WorkloadClass]],
) -> dict[str, DiskLoad] | None:
    """Every disk's model when every disk is known by its workload model alone (no given L, no
    samples), built at once: what ``resolve_models``' loop builds for each; None when an L is not a
    load (the loop names the disk). *computed*: ``_described_workloads``' loads, codes and validity."""
    loads, codes, valid = computed
    if not valid or len(described) != len(snapshot.disks):
        return None
    flags_of: dict[int, tuple[str, ...]] = {}
    kind_of: dict[int, WorkloadClass] = {}
    for code in set(codes):  # the first disk of each code, as the loop's memo has it
        flags_of[code], kind_of[code] = flags_and_class(described[codes.index(code)])
    flags = list(map(flags_of.__getitem__, codes))
    kinds = list(map(kind_of.__getitem__, codes))
    ids = list(map(_id_of, snapshot.disks))
    n = len(ids)
    fields = zip(
        ids,
        loads,
        repeat(LOAD_WORKLOAD, n),
        described,
        repeat(0, n),
        flags,
        kinds,
        repeat(None, n),
        repeat(None, n),
        strict=True,
    )
    # tuple.__new__ is what DiskLoad(...) calls, without its Python-level wrapper (one per disk).
    return dict(zip(ids, map(_new_tuple, repeat(DiskLoad, n), fields), strict=True))


def mix_columns(workloads: Sequence[WorkloadParams]) -> npt.NDArray[np.float64]:
    """The four parameters of *workloads*, a row each, as float64: read in one pass straight into the
    array (``np.fromiter`` converts each value as ``np.array`` does, without a tuple per workload)."""
    flat = np.fromiter(
        chain.from_iterable(map(_mix_of, workloads)), dtype=np.float64, count=4 * len(workloads)
    )
    return flat.reshape(-1, 4)


_new_tuple = tuple.__new__
_id_of = attrgetter("id")
_mix_of = attrgetter("oio", "io_size_kb", "read_pct", "random_pct")


class _DatastoreParts(TypedDict):
    datastores: dict[str, DatastoreModel]
    stand_in: dict[str, float]


def _datastore_models(snapshot: Snapshot, params: BalancerParams) -> _DatastoreParts:
    """Every datastore's P (given, fitted, prior or none) and each pod's stand-in P for new ones."""
    known: dict[str, tuple[str, float | None, DeviceFit | None]] = {}
    guesses: dict[str, float] = {}
    for ds in snapshot.datastores:
        fit = fit_device_model(ds.samples, params.device_model) if ds.samples else None
        prior = device_prior(ds.device_kind, ds.spindles)
        if fit is not None:
            fit = settle_performance(fit, None, prior, params.device_model)
        if ds.performance is not None:
            known[ds.name] = (MODEL_GIVEN, ds.performance, fit)
        elif fit is not None and fit.ok:
            known[ds.name] = (MODEL_FITTED if fit.credible else MODEL_PRIOR, fit.performance, fit)
        elif prior is not None and prior.confident:
            known[ds.name] = (MODEL_PRIOR, prior.performance, fit)
        else:
            known[ds.name] = (MODEL_NEW, None, fit)
            if prior is not None:
                guesses[ds.name] = prior.performance

    stand_in: dict[str, float] = {}
    for pod, members in snapshot.pods().items():
        ps = [p for ds in members if (p := known[ds.name][1]) is not None]
        stand_in[pod] = float(np.median(ps)) if ps else 1.0

    datastores: dict[str, DatastoreModel] = {}
    for ds in snapshot.datastores:
        source, p, fit = known[ds.name]
        datastores[ds.name] = DatastoreModel(
            name=ds.name,
            pod=ds.pod,
            source=source,
            performance=p,
            effective_performance=p if p is not None else guesses.get(ds.name, stand_in[ds.pod]),
            fit=fit,
        )
    return _DatastoreParts(datastores=datastores, stand_in=stand_in)
