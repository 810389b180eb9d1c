"""What-if of consolidation: mix, throughput and response times of workloads sharing one device.

Casale, Kraft and Krishnamurthy predict what VMs see when consolidated on one LUN from what each saw
in isolation (§V, for two VMs): the read/write mix and the throughputs as linear combinations
weighted by the isolation throughputs (eq. 1–4), and each VM's read and write response time as its
own plus the batches of the other VMs' reads and writes it finds ahead (eq. 5–6), writes scaled by
``max_write_conn / max_conn``.

Generalisation to n workloads (the paper leaves it to future work), written down here:

- Workloads come in *groups*: the workloads of a group were measured together on one device (the
  disks already on a target datastore, or disks moved together from one source). A group's
  measurements already contain its members' mutual interference, so interference is only added
  between groups. With one workload a group, this is the paper's model for n VMs.
- Mix (eq. 1–2): β^R = Σ_k α^R_k T_k / Σ_k T_k over all workloads (reported as the paper's; the
  answer's mix is that of the predicted throughputs, below).
- Throughput: the paper's eq. 3–4 (X^R = Σ_g G^R_g · G_g / Σ G over groups) assumes a device so busy
  that sharing it leaves the total throughput near the isolation throughputs' weighted mean. A
  virtual disk's IO generator keeps its outstanding IOs whatever the device (Iometer's workers, a
  database's threads: a closed loop), so by Little's law its throughput scales with the inverse of
  its mean response time: T_i' = T_i · C̄_i / C̄_i' with C̄ = α^R C^R + α^W C^W, its mix kept (the
  paper's α_{i,j} ≈ α_i). X^R and X^W are the sums; eq. 3–4 are reported beside them
  (``paper_read_iops``/``paper_write_iops``). ``overhead_factor`` is (X^R + X^W) / Σ T, the paper's c_oh.
- Response time (eq. 5–6): C^R_i ≈ C^R_i(alone) + Σ_{j in other groups} (S^R_j A^R_j + w S^W_j A^W_j) / m
  and C^W_i likewise, with w = max_write_conn / max_conn. The paper's MVA takes the LUN as one FCFS
  server (S_j = C_j / (1 + A_j)); a LUN striped over spindles or flash channels serves m requests at
  once, so an arriving request waits 1/m of the service of each request ahead: C = S (1 + A/m), hence
  S_j = C_j / (1 + A_j/m) and the batch ahead costs S_j A_j / m. m = 1 is the paper. In S_j, A_j is
  the whole queue j's requests found (its reads and writes, and for a group measured together all
  the group's: that is what its latency waited behind); the batches are per class (A^R_j, A^W_j). m is the
  datastore's *parallelism*: BASIL's device model fits its read latency against outstanding reads,
  L = a + b·OIO, which under the same MVA reads a = S and b = S/m, so m = a / b (the latency of a
  lone IO over what each queued IO adds); without a credible fit m is 1 and the answer says so.
- Writes acknowledged by the array's write-back cache (a write latency in isolation at or below
  ``write_cache_ms``, 1 ms by default: no spindle completes an IO that fast, only a cache does) do
  not wait behind other disks' requests while the cache keeps up: their predicted latency is the
  isolation one. The paper found its write predictions pessimistic and blamed ESX issuing writes
  when reads are few; on arrays with write-back caches the reason is simpler. A cache that fills
  (destaging cannot keep up) makes writes wait: see the filling cache below.
- Sequential streams are interleaved (the "I/O blender"). A disk's sequential IO continues where
  its previous IO left the heads only if no other stream's IO was served there in between. IOs are
  striped, so every device sees every stream's IOs in the order they arrive; the IO a device served
  before one of disk i's was another disk's with probability f_i = 1 − X_i / Σ_k X_k, the others'
  share of the IO rate. Of disk i's IOs the sequential share s_i = 1 − random_pct_i / 100
  (vscsiStats' seek histogram: small seeks) then pays a random positioning with probability f_i.
  Where it was measured, f_i⁰ used the rates of its own group (0 alone); consolidated, f_i¹ uses
  the predicted rates of every disk, which depend on the answer (a slower stream has a smaller
  share): a damped fixed point. Its IOs cost Δ_i = s_i · (f_i¹ − f_i⁰) · t_pos more, t_pos the
  positioning of a random IO on the target device: the latency of a lone random IO, the intercept
  of the datastore's device model (L = a + b·OIO at OIO → 0; it also holds the controller and a
  small IO's transfer, a few per cent of a spindle's positioning). C_i' gains Δ_i once: its own
  sequential IOs in flight lie on consecutive stripe units, other devices, so it does not queue
  behind them; every other disk's latency gains Δ_i A_i / m (reads and uncached writes) for i's
  dearer IOs ahead of it. A random disk (s = 0), a disk alone (f¹ = f⁰ = 0) or one among the same
  disks it was measured with (f¹ = f⁰) keeps its figures. Without t_pos (no device model, or
  ``positioning_ms`` not given) or without random % nothing is added, and the answer says so.
  Disks with at most 25 % random IO are flagged ``sequential`` (Basil's workload classes).
  Leaving (:func:`predict_departure`) runs the rule backwards: the staying streams regain
  sequentiality, f from the measured rates of all the disks measured together to the staying ones'.
- A large IO split over stripe units waits for the slowest (:func:`fork_join`). A LUN is striped
  in units of ``stripe_kb`` (64 KB assumed: vCenter does not report it); an IO of w units (its
  size over the unit, at most the m servers) completes when its last piece does, each piece
  queued at its own device. The mean of the largest of w independent exponential waits is H(w)
  times their mean (:func:`harmonic`), so whatever is added to a one-unit IO's latency (the other
  groups' batches, Δ, the other disks' dearer IOs) is H(w) times as long for it: C_i' = C_i +
  H(w_i) · added_i, reads by their size (``read_io_kb``, vCenter's readIOSize), uncached writes by
  theirs. What it puts ahead of others is in its measured figures already: they do not move. A
  departure takes H(w) times as much away. Unknown sizes, or ``stripe_kb`` None, give H = 1.
- Cached writes are destaged. A write the cache acknowledged costs the client little, but the
  array must write it to the devices later: k device operations (the RAID write penalty,
  ``RAID_WRITE_COST``: 1 for RAID 0, 2 for mirrors, 4 and 6 for a small RAID 5 and 6 write; the
  same notion as ``basil.core.predictive.WRITE_COST_READS``, a write's cost in device work), each
  a positioning where the write does not continue the previous one, while writes that continue
  their stream are gathered into full stripes and cost no positioning. A disk's cached writes,
  X^W a second, thus keep the devices busy U = X^W · k · (r + s·f) · c of the time (r its random
  share, s = 1 − r broken up by other streams with probability f; :func:`destage_util`). c is the
  devices' time for one destaged operation, per server: the cache writes its dirty blocks in
  sorted order, so c is expected below a read's t_pos / m; where it was separated from the reads'
  device model (:func:`separate_destage`) it is ``DeviceParams.destage_ms``, else t_pos / m (an
  upper bound). f here is the neighbours' share of the IOs in flight, 1 − A_i / Σ A (A_i its
  outstanding IOs, which a closed loop keeps): destaged writes are not issued by the disk's IO
  loop, so its IO rate does not order them among the others; the devices serve, between two of
  them, what the other disks keep queued. Alone a log's sequential writes destage almost free;
  beside disks with many IOs in flight they destage as random writes. Only the change ΔU =
  U(f¹) − U(f⁰), at the predicted write rates, is added: the destage load a disk had where it
  was measured is in its own figures and, through its read service times, in the batches it puts
  ahead of its neighbours. Destaging competes with the disks' IO first come, first served (an
  open load in a closed network): every read and uncached write is stretched by 1 / (1 − ΔU)
  (:func:`destage_factor`), ΔU bounded to ``MAX_DESTAGE_UTIL``, the share of their time the
  devices give destaging (the answer's ``destage_saturated`` at the bound).
- The filling cache. Where the destage demand ΔU at the predicted write rates exceeds the bound,
  the cache fills: it takes a write only when destaging has freed a block, so the cached writes of
  every disk whose writes it absorbs wait an admission wait q on top of their acknowledgement
  (first come, first served: the same q for all). Their disks are closed loops: with a longer
  write latency their IOPS fall, and with them their destage load. q is the shortest wait with
  which that load fits the devices (ΔU = the bound), by bisection, every step the damped fixed
  point above (:func:`_admission`); the neighbours' reads see the destage load the devices give,
  the bound, no more. The answer says so (``cache_full``, ``destage_demand`` the load a cache
  keeping up would need, ``admission_wait_ms``, ``admitted_write_iops``, per disk
  ``write_waits``); ``DeviceParams.cache_fills`` False keeps the earlier rule (a stretch bounded,
  writes at their cached latency). Not modelled: the time a cache takes to fill (its size and the
  surplus rate), nor a filling cache's writes going through to the devices once it is full.
- The cache full where a disk was measured (:func:`full_where_measured`). A write-back cache makes
  a write wait only once it is full: then writes wait for the devices. So a disk whose writes
  were slower than a cache hit (``write_cache_ms``) where it ran, on a datastore with a cache,
  says the cache was full there: its writes were device writes, the RAID penalty in them, and
  they count in its batches whole (the write share w is 1 for it, not the paper's half: not a
  cache hit, not throttled by the host). Only a disk measured alone says so: beside other disks
  (the service's figures of a disk on a shared datastore, ``alone`` False) the others may have
  filled the cache, and they do not come along. Its writes alone overran the cache, so on the
  consolidated datastore the cache is full for everyone: the cached writes of every disk of
  another group go through to the devices (:func:`write_through_ms`): the positioned share
  p = r + s·f of a write is a small write of k operations in two rounds on parity RAID (k > 2)
  and one on mirrors and RAID 0, each round a positioning t_pos behind the datastore's IOs in
  flight on m servers, t_pos·(1 + Q/m), the device model's line; the continuing share is
  gathered into full stripes, one round behind the same queue; stretched by the destage load.
  Those disks are closed loops: their IOPS fall with their write latency (the damped fixed
  point). Their writes' device work is the work destaging them cost, so it stays in ΔU at the
  predicted write rates. The answer: ``cache_full``, ``full_where_measured`` (the disks taken as
  measured with the cache full) and per disk ``write_through`` (and ``write_waits``); no
  admission wait then. ``DeviceParams.full_cache_carried`` False keeps the rule before (such a
  disk only taken as uncached). A departure does not model a full cache.
- The cache at its edge where a disk was measured (:func:`at_edge_where_measured`). A disk whose
  writes were taken as cached (at most ``write_cache_ms``) but were on average more than
  ``EDGE_FACTOR`` (2) cache hits (``DeviceParams.write_hit_ms``, else the fastest cached write of
  the disks predicted together) had the cache full part of the time where it ran (measured alone,
  as above): its destage demand alone was at the bound, its figures a blend of cache hits and
  full-cache writes. Beside a disk of another group the demand only rises, so the cache is full:
  that disk's cached writes and the other groups' go through to the devices, as above (its own
  group's keep their figures). The full cache's steady state: the lab's 15-minute runs from an
  empty cache blend it with the filling. The answer: ``edge_where_measured``;
  ``DeviceParams.edge_carried`` False: not carried.
- The full cache in its steady state (task wif6, ``DeviceParams.steady_full``). A consolidation
  is permanent, and a cache that the writes overrun stays full once it has filled (the time it
  takes, its size over the surplus rate, is not in vCenter's counters and does not matter to
  the regime the datastore settles in). Full, nothing is destaged in the background: every
  cached write goes through to the devices (:func:`write_through_ms`, not stretched), the
  demand over the bound gives no admission wait, and no disk's reads are stretched by
  destaging; each group's figures shed the stretch 1 / (1 − U⁰) its own cached writes' destaging
  put on them where it was measured (U⁰ at its measured write rates and in-flight share: the
  reads × (1 − U⁰)). Applies to the filling cache (above) and to a full cache carried from where
  a disk was measured or at its edge. False: the rules before (the admission wait; the carried
  full cache with the destage stretch kept).
  Leaving a datastore takes the stretch back (1 − |ΔU|). k is the administrator's (vCenter does
  not report RAID levels); without it, 1, a lower bound, and the answer says so; without t_pos
  or a random % nothing is added.
- The reads' device model with the destaging separated (:func:`separate_destage`). Where the
  disks a device model is fitted on write through the cache, their reads share the devices with
  that destaging, L = (a + b·OIO) / (1 − U): the more IOs in flight, the more writes a second
  and the more destaging, so a line fitted to L alone carries the destaging in its slope (and
  m = a / b, t_pos = a with it). Written L = a + b·OIO + c·(D·L / 1000), D the destaged
  operations a second, the fit is linear in a, b and c: it gives the reads' line without the
  destaging, and c.
- Mix: the answer's β^R = X^R / (X^R + X^W), of the predicted throughputs; the paper's eq. 1–2, of
  the isolation throughputs, is reported beside it (``paper_read_mix``), and is wrong wherever a
  workload's throughput changes much (a sequential stream's falls most).
- Inputs from vSphere: per disk read/write IOPS, latency and outstanding IOs (OIO). The paper's
  A_j is the queue an arriving request of class j finds; vSphere only has time-averaged OIO per
  class, which stands in for it (by PASTA exact for Poisson arrivals; batched arrivals see more).
  Without OIO, Little's law gives it: A = IOPS × latency. ``max_conn`` is the datastore's queue
  depth (``datastoreMaxQueueDepth``); ``max_write_conn`` defaults to half of it (the paper's 16 of 32).

The paper's own errors were 3–13 % (mix), 3–21 % (throughput), 4–17 % (read response time) and
worse, pessimistic, for writes. Figures in the lab: docs/whatif.md (``make bench-whatif``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from basil.core.workload_model import WorkloadModelParams
from basil.errors import Problem, raise_if_problems


@dataclass(frozen=True)
class WorkloadMeasurement:
    """What one workload (a virtual disk) showed where it ran: per-class IOPS, latency (ms), OIO."""

    name: str
    read_iops: float
    write_iops: float
    read_latency_ms: float
    write_latency_ms: float
    read_oio: float | None = None
    write_oio: float | None = None
    group: str = ""  # workloads sharing a non-empty group were measured together
    alone: bool = True  # False: it never ran alone, its figures include others' interference
    random_pct: float | None = None  # share of its IOs that seek (0-100); None: unknown
    read_io_kb: float | None = None  # mean size of its reads (KB); None: unknown
    write_io_kb: float | None = None  # mean size of its writes (KB); None: unknown

    @property
    def sequential_share(self) -> float:
        """s = 1 − random % / 100: the share of its IOs that continue where the previous one ended."""
        return 0.0 if self.random_pct is None else 1.0 - self.random_pct / 100.0

    @property
    def sequential(self) -> bool:
        """Basil's workload class ``sequential``: at most 25 % random IO."""
        return self.random_pct is not None and self.random_pct <= SEQUENTIAL_RANDOM_PCT

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops

    @property
    def read_queue(self) -> float:
        """A^R: reads found ahead on arrival (OIO, else Little's law)."""
        if self.read_oio is not None:
            return self.read_oio
        return self.read_iops * self.read_latency_ms / 1000.0

    @property
    def write_queue(self) -> float:
        if self.write_oio is not None:
            return self.write_oio
        return self.write_iops * self.write_latency_ms / 1000.0

    @property
    def queue(self) -> float:
        """Its outstanding IOs, both classes."""
        return self.read_queue + self.write_queue

    def read_service_ms(self, parallelism: float = 1.0, seen: float | None = None) -> float:
        """S^R = C^R / (1 + A/m), the MVA estimate of the service time on m parallel servers, A the
        queue an arriving request found: its own outstanding IOs, or *seen* (its group's)."""
        return self.read_latency_ms / (1.0 + (self.queue if seen is None else seen) / parallelism)

    def write_service_ms(self, parallelism: float = 1.0, seen: float | None = None) -> float:
        return self.write_latency_ms / (1.0 + (self.queue if seen is None else seen) / parallelism)

    def batches_ms(self, parallelism: float, write_share: float, seen: float | None = None) -> float:
        """(S^R A^R + w S^W A^W) / m: what its requests in flight add to a request arriving behind them."""
        return (
            self.read_service_ms(parallelism, seen) * self.read_queue
            + write_share * self.write_service_ms(parallelism, seen) * self.write_queue
        ) / parallelism

    @property
    def mean_latency_ms(self) -> float:
        """C̄ = α^R C^R + α^W C^W, the mean response time of one of its IOs."""
        if self.iops <= 0:
            return 0.0
        return (self.read_iops * self.read_latency_ms + self.write_iops * self.write_latency_ms) / self.iops

    def problems(self, where: str) -> list[Problem]:
        found: list[Problem] = []
        if not self.name:
            found.append(Problem(f"{where}.name", "must not be empty"))
        for field in (
            "read_iops",
            "write_iops",
            "read_latency_ms",
            "write_latency_ms",
            "read_oio",
            "write_oio",
            "random_pct",
            "read_io_kb",
            "write_io_kb",
        ):
            value = getattr(self, field)
            if value is None and (
                field.endswith("oio") or field in ("random_pct", "read_io_kb", "write_io_kb")
            ):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                found.append(Problem(f"{where}.{field}", f"must be a finite number, not {value!r}"))
            elif value < 0:
                found.append(Problem(f"{where}.{field}", f"must not be negative, got {value:g}"))
            elif field.endswith("io_kb") and value == 0:
                found.append(Problem(f"{where}.{field}", "must be positive (null: unknown)"))
            elif field == "random_pct" and value > 100:
                found.append(Problem(f"{where}.{field}", f"must be at most 100, got {value:g}"))
        return found


DEFAULT_WRITE_CACHE_MS = 1.0
PARALLELISM_PAPER = "the paper's single server (no device model of the datastore)"
POSITIONING_NONE = "none: sequential streams keep their isolation service times (no device model)"
# The RAID write penalty: device operations per small random write a cache destages (RAID 0 writes
# the data; mirrors write it twice; RAID 5 and 6 read old data and parity and write both back).
RAID_WRITE_COST: Mapping[str, float] = {"0": 1.0, "1": 2.0, "10": 2.0, "5": 4.0, "6": 6.0}
DEFAULT_WRITE_COST = 1.0
DESTAGE_FROM_READS = "t_pos / m: a destaged write costs the devices what a random read does"
WRITE_COST_LOWER_BOUND = "lower bound: one device write per host write (RAID level unknown)"
# The RAID stripe unit (element): an IO larger than it is split over several devices and waits for
# the slowest (module doc). vCenter does not report it; 64 KB is the common default of arrays.
DEFAULT_STRIPE_KB = 64.0
STRIPE_ASSUMED = "assumed: 64 KB, a common RAID stripe unit (vCenter does not report it)"
# Destaging may take at most this share of the devices (arrays keep the rest for reads; the lab's
# documented ceiling); beyond it the cache fills and writes wait for the devices, not modelled.
MAX_DESTAGE_UTIL = 0.8
# A cached write slower on average than this many cache hits: the cache was at its edge, full at times.
EDGE_FACTOR = 2.0
# Basil's workload class "sequential" (basil.core.workload_model): at most this random %.
SEQUENTIAL_RANDOM_PCT = WorkloadModelParams().sequential_class_random_pct


@dataclass(frozen=True)
class DeviceParams:
    """The shared device: ``max_conn`` (datastore queue depth), the connections writes may use, the
    requests it serves at once (``parallelism``, m) and the write latency below which writes are
    taken as acknowledged by a write-back cache (None: never)."""

    max_conn: float = 32.0
    max_write_conn: float | None = None  # None: half of max_conn, as the paper's 16 of 32
    parallelism: float = 1.0
    parallelism_source: str = PARALLELISM_PAPER
    write_cache_ms: float | None = DEFAULT_WRITE_CACHE_MS
    positioning_ms: float | None = None  # t_pos: a lone random IO's latency (device model intercept)
    positioning_source: str = POSITIONING_NONE
    # k: device operations per destaged small random write (the RAID write penalty); None: cached
    # writes are free to the devices (no destage load)
    write_cost: float | None = DEFAULT_WRITE_COST
    write_cost_source: str = WRITE_COST_LOWER_BOUND
    # c: the devices' time (ms, per server) of one destaged device operation, the array's cache
    # writing in sorted order; None: t_pos / m, a read's (module doc)
    destage_ms: float | None = None
    destage_source: str = DESTAGE_FROM_READS
    # Where the destage demand exceeds what the devices can give it, the cache fills and the cached
    # writers' writes wait for the devices (module doc); False: the stretch is only bounded (before).
    cache_fills: bool = True
    # A disk whose writes alone were slower than a cache hit had the cache full where it was measured:
    # carried to its neighbours, whose cached writes then go through to the devices (module doc);
    # False: the rule before (such a disk only taken as uncached).
    full_cache_carried: bool = True
    # A cache hit's latency (ms); None: the fastest cached write of the disks predicted together.
    write_hit_ms: float | None = None
    # A disk whose cached writes were slower than EDGE_FACTOR cache hits had the cache filling at times
    # where it was measured: carried to its neighbours as a full cache (module doc); False: not.
    edge_carried: bool = True
    # A full cache (filling, or carried from where a disk was measured) in its steady state: no
    # destaging left to stretch anyone, each disk's figures freed of its own, every cached write
    # through to the devices (module doc); False: the rules before (admission wait, stretch kept).
    steady_full: bool = True
    # The RAID stripe unit (KB): an IO of w stripe units waits for the slowest of w devices, H(w)
    # times the added wait of a one-unit IO (module doc); None: the rule off (before task wif7).
    stripe_kb: float | None = DEFAULT_STRIPE_KB
    stripe_source: str = STRIPE_ASSUMED

    @property
    def destage_op_ms(self) -> float | None:
        """c, or t_pos / m where no separate figure is known; None without t_pos."""
        if self.destage_ms is not None:
            return self.destage_ms
        if self.positioning_ms is None:
            return None
        return self.positioning_ms / self.parallelism

    @property
    def write_share(self) -> float:
        writes = self.max_conn / 2.0 if self.max_write_conn is None else self.max_write_conn
        return writes / self.max_conn

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        for field in (
            "max_conn",
            "max_write_conn",
            "parallelism",
            "write_cache_ms",
            "positioning_ms",
            "write_cost",
            "destage_ms",
            "write_hit_ms",
            "stripe_kb",
        ):
            value = getattr(self, field)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                found.append(Problem(field, f"must be a finite number, not {value!r}"))
            elif value <= 0:
                found.append(Problem(field, f"must be positive, got {value:g}"))
        if not found and self.parallelism < 1:
            found.append(Problem("parallelism", f"must be at least 1, got {self.parallelism:g}"))
        if not found and self.write_cost is not None and self.write_cost < 1:
            found.append(Problem("write_cost", f"must be at least 1, got {self.write_cost:g}"))
        if not found and self.max_write_conn is not None and self.max_write_conn > self.max_conn:
            found.append(Problem("max_write_conn", "must not exceed max_conn"))
        return found


@dataclass(frozen=True)
class WorkloadPrediction:
    name: str
    group: str
    read_iops: float
    write_iops: float
    read_latency_ms: float
    write_latency_ms: float
    confidence: str  # "measured alone" or why not
    write_cached: bool = False
    sequential: bool = False  # at most 25 % random IO
    positioning_added_ms: float = 0.0  # Δ: what interleaving adds to (or, leaving, takes from) its IOs
    destage_added_ms: float = 0.0  # what the change in destage load adds to its reads
    write_waits: bool = False  # the cache is full: its cached writes wait for the devices
    # a disk measured with the cache full is beside it: its cached writes go through to the devices
    write_through: bool = False
    # H(w): how much more its reads wait than a one-stripe-unit IO, split over w devices (module doc)
    fork_join: float = 1.0

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "group": self.group,
            "read_iops": self.read_iops,
            "write_iops": self.write_iops,
            "iops": self.read_iops + self.write_iops,
            "read_latency_ms": self.read_latency_ms,
            "write_latency_ms": self.write_latency_ms,
            "write_cached": self.write_cached,
            "sequential": self.sequential,
            "positioning_added_ms": self.positioning_added_ms,
            "destage_added_ms": self.destage_added_ms,
            "write_waits": self.write_waits,
            "write_through": self.write_through,
            "fork_join": self.fork_join,
            "confidence": self.confidence,
        }


@dataclass(frozen=True)
class ConsolidationPrediction:
    """The device's predicted mix and throughputs, and each workload's IOPS and latencies."""

    read_mix: float  # β^R, of the predicted throughputs
    write_mix: float  # β^W
    paper_read_mix: float  # eq. 1, of the isolation throughputs
    paper_write_mix: float  # eq. 2
    read_iops: float  # X^R
    write_iops: float  # X^W
    overhead_factor: float  # c_oh
    paper_read_iops: float  # eq. 3
    paper_write_iops: float  # eq. 4
    workloads: list[WorkloadPrediction]
    device: DeviceParams
    inputs: list[WorkloadMeasurement]
    destage_util: float = 0.0  # ΔU: what interleaving adds to the devices' share of time destaging
    destage_demand: float = 0.0  # ΔU the cached writes would need with the cache keeping up
    destage_total: float = 0.0  # U¹: all the destaging together with the cache keeping up
    cache_full: bool = False  # the demand exceeds the bound: the writers' writes wait for the devices
    admission_wait_ms: float = 0.0  # what a cached write waits for the full cache to take it
    # the disks whose writes alone were slower than a cache hit: the cache was full where measured
    full_where_measured: tuple[str, ...] = ()
    # the disks whose cached writes were slower than EDGE_FACTOR cache hits: the cache filled at times
    edge_where_measured: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "read_mix": self.read_mix,
            "write_mix": self.write_mix,
            "paper_read_mix": self.paper_read_mix,
            "paper_write_mix": self.paper_write_mix,
            "read_iops": self.read_iops,
            "write_iops": self.write_iops,
            "overhead_factor": self.overhead_factor,
            "paper_read_iops": self.paper_read_iops,
            "paper_write_iops": self.paper_write_iops,
            "max_conn": self.device.max_conn,
            "write_share": self.device.write_share,
            "parallelism": self.device.parallelism,
            "parallelism_source": self.device.parallelism_source,
            "write_cache_ms": self.device.write_cache_ms,
            "positioning_ms": self.device.positioning_ms,
            "positioning_source": self.device.positioning_source,
            "write_cost": self.device.write_cost,
            "write_cost_source": self.device.write_cost_source,
            "destage_ms": self.device.destage_op_ms,
            "destage_source": self.device.destage_source if self.device.destage_op_ms is not None else "none",
            "stripe_kb": self.device.stripe_kb,
            "stripe_source": self.device.stripe_source if self.device.stripe_kb is not None else "none",
            "destage_util": self.destage_util,
            "destage_saturated": self.cache_full or self.destage_util >= MAX_DESTAGE_UTIL,
            "destage_demand": self.destage_demand,
            "destage_total": self.destage_total,
            "cache_full": self.cache_full,
            "admitted_write_iops": sum(w.write_iops for w in self.workloads if w.write_waits),
            "admission_wait_ms": self.admission_wait_ms,
            "full_where_measured": list(self.full_where_measured),
            "edge_where_measured": list(self.edge_where_measured),
            "workloads": [w.to_dict() for w in self.workloads],
            "inputs": [
                {
                    "name": m.name,
                    "group": m.group,
                    "read_iops": m.read_iops,
                    "write_iops": m.write_iops,
                    "read_latency_ms": m.read_latency_ms,
                    "write_latency_ms": m.write_latency_ms,
                    "read_oio": m.read_queue,
                    "write_oio": m.write_queue,
                    "oio_source": "measured" if m.read_oio is not None else "Little's law",
                    "alone": m.alone,
                    "random_pct": m.random_pct,
                    "read_io_kb": m.read_io_kb,
                    "write_io_kb": m.write_io_kb,
                }
                for m in self.inputs
            ],
        }


MAX_PARALLELISM = 256.0


def parallelism_from_fit(slope_ms: float | None, intercept_ms: float | None) -> float | None:
    """m = a / b from a device model's line L = a + b·OIO (see the module doc); None when the line
    cannot be read that way (no line, a slope or intercept not positive). Bounded to [1, 256]."""
    if slope_ms is None or intercept_ms is None or not (slope_ms > 0 and intercept_ms > 0):
        return None
    if not (math.isfinite(slope_ms) and math.isfinite(intercept_ms)):
        return None
    return min(MAX_PARALLELISM, max(1.0, intercept_ms / slope_ms))


def positioning_from_fit(slope_ms: float | None, intercept_ms: float | None) -> float | None:
    """t_pos, a lone random IO's latency: the intercept a of the device model's line L = a + b·OIO
    (module doc); None where :func:`parallelism_from_fit` cannot read the line either."""
    if parallelism_from_fit(slope_ms, intercept_ms) is None or intercept_ms is None:
        return None
    return intercept_ms


@dataclass(frozen=True)
class ReadInterval:
    """One interval of a datastore's reads, for :func:`separate_destage`: its outstanding reads, its
    read latency (ms) and the device operations a second its cached writes put on the devices with a
    positioning (X^W · k · r: written back later, in the cache's order)."""

    oio: float
    latency_ms: float
    destaged_ops: float


@dataclass(frozen=True)
class SeparatedFit:
    """The reads' line L = a + b·OIO with the devices' own destaging taken out, and c."""

    intercept_ms: float  # a: t_pos
    slope_ms: float  # b: a / m
    destage_ms: float | None  # c: per server, one destaged operation; None: no cached writes seen
    points: int


MIN_SEPARATION_POINTS = 5


def separate_destage(intervals: Sequence[ReadInterval]) -> SeparatedFit | None:
    """The reads' device model with the destaging of the intervals' own cached writes separated.

    Measured where disks write through a write-back cache, reads share the devices with the
    destaging of those writes: L = (a + b·OIO) / (1 − U), U = D·c / 1000 the devices' share of time
    destaging, D the destaged operations a second that need a positioning, c the devices' time for
    one (per server, in the order the cache writes them). A line fitted to L alone puts the
    destaging in a and b: the more outstanding IOs, the more writes a second, the more destaging,
    so b grows with it. Written L = a + b·OIO + c·(D·L/1000), it is linear in a, b and c and is
    fitted by least squares; c is then what a destaged write costs, known from the same counters
    (module doc). None where a, b or c come out not positive or the points do not determine them;
    c None where no interval had cached writes (the two-term line)."""
    points = [i for i in intervals if i.oio > 0 and i.latency_ms > 0 and i.destaged_ops >= 0]
    if len(points) < MIN_SEPARATION_POINTS:
        return None
    oio = np.array([p.oio for p in points], dtype=np.float64)
    latency = np.array([p.latency_ms for p in points], dtype=np.float64)
    work = np.array([p.destaged_ops * p.latency_ms / 1000.0 for p in points], dtype=np.float64)
    with_writes = bool(np.any(work > 0))
    columns = [np.ones(len(points)), oio] + ([work] if with_writes else [])
    design = np.column_stack(columns)
    coef, _, rank, _ = np.linalg.lstsq(design, latency, rcond=None)
    if rank < design.shape[1]:
        return None
    a, b = float(coef[0]), float(coef[1])
    c = float(coef[2]) if with_writes else None
    if not (a > 0 and b > 0) or (c is not None and not c > 0):
        return None
    return SeparatedFit(intercept_ms=a, slope_ms=b, destage_ms=c, points=len(points))


def _group_key(index: int, workload: WorkloadMeasurement) -> str:
    return workload.group or f"#{index}"


def interleaved_share(own: float, in_flight: float) -> float:
    """f = 1 − A_i / Σ A: how often another stream's IO comes between two of a disk's IOs, its
    neighbours' share of the IOs in flight (0 for a disk alone or with nothing in flight)."""
    if own <= 0 or in_flight <= 0:
        return 0.0
    return max(0.0, 1.0 - own / in_flight)


FIXED_POINT_ITERATIONS = 400
# The filling cache's admission wait (ms): bisection steps, and the search's ceiling.
ADMISSION_BISECTIONS = 40
MAX_ADMISSION_MS = 1.0e6
FIXED_POINT_TOLERANCE = 1e-6


def positioning_added_ms(
    workload: WorkloadMeasurement, measured: float, predicted: float, device: DeviceParams
) -> float:
    """Δ = s · (f¹ − f⁰) · t_pos: what the interleaving of its sequential IO with the other streams
    adds to each of its IOs when the share of others' IOs goes from *measured* (f⁰, where its
    figures were measured) to *predicted* (f¹); negative when neighbours leave (module doc)."""
    if device.positioning_ms is None or workload.sequential_share <= 0:
        return 0.0
    return workload.sequential_share * (predicted - measured) * device.positioning_ms


def _write_cached(workload: WorkloadMeasurement, device: DeviceParams) -> bool:
    return (
        device.write_cache_ms is not None
        and workload.write_iops > 0
        and workload.write_latency_ms <= device.write_cache_ms
    )


def cache_hit_ms(workloads: Sequence[WorkloadMeasurement], device: DeviceParams) -> float | None:
    """A cache hit's latency on the datastore: ``DeviceParams.write_hit_ms``, else the fastest write
    latency of the disks whose writes the cache absorbed (None without a cache or such a disk)."""
    if device.write_hit_ms is not None:
        return device.write_hit_ms
    cached = [w.write_latency_ms for w in workloads if _write_cached(w, device) and w.write_latency_ms > 0]
    return min(cached) if cached else None


def at_edge_where_measured(workload: WorkloadMeasurement, device: DeviceParams, hit_ms: float | None) -> bool:
    """Its writes were taken as cached but were on average more than ``EDGE_FACTOR`` times a cache hit
    (*hit_ms*): a share of them waited for a full cache, so the cache filled at times where it was
    measured, its destaging at the bound there (module doc). Needs what :func:`full_where_measured`
    needs (a disk measured alone among them); off with ``edge_carried`` False."""
    return (
        device.edge_carried
        and device.full_cache_carried
        and workload.alone
        and hit_ms is not None
        and device.positioning_ms is not None
        and device.write_cost is not None
        and _write_cached(workload, device)
        and workload.write_latency_ms > EDGE_FACTOR * hit_ms
    )


def full_where_measured(workload: WorkloadMeasurement, device: DeviceParams) -> bool:
    """Its writes were slower than a cache hit on a datastore with a write-back cache: the cache was
    full where it was measured (a write-back cache makes a write wait only once it is full, when
    writes wait for the devices), so its writes were device load, in its own figures (module doc).
    Needs a cache (``write_cache_ms``), the device's line (t_pos) to price a write that goes through,
    and a known k; off with ``full_cache_carried`` False. Only for a disk measured alone: beside
    other disks, they may have filled the cache, and they do not come along (module doc)."""
    return (
        device.full_cache_carried
        and workload.alone
        and device.write_cache_ms is not None
        and device.positioning_ms is not None
        and device.write_cost is not None
        and workload.write_iops > 0
        and workload.write_latency_ms > device.write_cache_ms
    )


def write_through_ms(
    workload: WorkloadMeasurement, interleaved: float, queue: float, stretch: float, device: DeviceParams
) -> float:
    """A write that goes through a full cache to the devices, the RAID penalty in the foreground: its
    positioned share p = r + s·f (random, or sequential broken up by other streams) is a small
    write, in two rounds on parity RAID (k > 2: read old data and parity, then write both; the
    operations of a round run on different devices at once) and one round on mirrors and RAID 0;
    each round a positioning t_pos behind the *queue* of IOs in flight on m servers, t_pos·(1 + Q/m)
    (the device model's line at the datastore's outstanding IOs). Its continuing share is gathered
    into full stripes, one round without positioning, behind the same queue. Stretched by the
    destage load; never below the cache hit it had (module doc)."""
    position = device.positioning_ms or 0.0
    rounds = 2.0 if (device.write_cost or 1.0) > 2.0 else 1.0
    share = 0.0 if workload.random_pct is None else workload.random_pct / 100.0
    positioned = min(1.0, share + workload.sequential_share * interleaved)
    behind = position * queue / device.parallelism
    through = positioned * rounds * (position + behind) + (1.0 - positioned) * behind
    return max(workload.write_latency_ms, through * stretch)


def _positioning_batches_ms(
    workloads: Sequence[WorkloadMeasurement], added: Sequence[float], device: DeviceParams
) -> list[float]:
    """Per disk i, Σ_{j≠i} Δ_j (A^R_j + w A^W_j) / m: what the other disks' dearer IOs in flight add
    to a request of i behind them (cached writes occupy no device). A stream does not wait behind its
    own sequential IOs: consecutive ones lie on consecutive stripe units, other devices."""
    each = [
        delta * (w.read_queue + (0.0 if _write_cached(w, device) else device.write_share * w.write_queue))
        for w, delta in zip(workloads, added, strict=True)
    ]
    total = sum(each)
    return [(total - own) / device.parallelism for own in each]


def destage_util(
    workload: WorkloadMeasurement, write_iops: float, interleaved: float, device: DeviceParams
) -> float:
    """U = X^W · k · (r + s·f) · c: the devices' share of time spent destaging a disk's cached
    writes, *write_iops* a second, when a share *interleaved* (f) of the IOs in flight are other
    streams' (module doc). A destaged write costs k device operations (the RAID write penalty),
    each a positioning where it does not continue the previous one (its random share r, and its
    sequential share s broken up by other streams); c is one such operation's device time per
    server (``DeviceParams.destage_op_ms``: the separated figure, else t_pos / m); a write that
    continues its stream is gathered into full stripes, costing no positioning. 0 for writes the
    cache does not absorb, or without t_pos, k or the disk's random %."""
    cost = device.destage_op_ms
    if (
        cost is None
        or device.positioning_ms is None
        or device.write_cost is None
        or workload.random_pct is None
        or write_iops <= 0
        or not _write_cached(workload, device)
    ):
        return 0.0
    positioned = workload.random_pct / 100.0 + workload.sequential_share * interleaved
    return write_iops * device.write_cost * positioned * cost / 1000.0


def destage_factor(measured: float, predicted: float) -> float:
    """How much longer a request takes at the devices when their share of time destaging goes from
    *measured* (U⁰, where the figures were measured) to *predicted* (U¹): in mixed-network MVA an
    open load ΔU = U¹ − U⁰ stretches every residence time by 1 / (1 − ΔU); a load that leaves
    (ΔU < 0) takes that stretch back, 1 − |ΔU|. Only the change counts: the destage load a disk
    had where it was measured is in its figures, and in its read service times that the batches
    carry to its neighbours (module doc). ΔU is bounded to ``MAX_DESTAGE_UTIL``, beyond which the
    cache fills (not modelled)."""
    added = predicted - measured
    if math.isnan(added):  # both beyond any float: as saturated as a load can be
        added = MAX_DESTAGE_UTIL
    if added >= 0:
        return 1.0 / (1.0 - min(added, MAX_DESTAGE_UTIL))
    return 1.0 - min(-added, MAX_DESTAGE_UTIL)


def harmonic(w: float) -> float:
    """H(w), extended to real w ≥ 1 by linear interpolation between the integers: the mean of the
    largest of w independent exponential waits, in units of their mean (1 for w ≤ 1)."""
    if w <= 1.0:
        return 1.0
    n = math.floor(w)
    return sum(1.0 / k for k in range(1, n + 1)) + (w - n) / (n + 1)


def fork_join(io_kb: float | None, device: DeviceParams) -> float:
    """H(w) for an IO of *io_kb* split over w = io_kb / stripe unit devices, at most the m servers
    the device model sees (module doc); 1 for an IO within a stripe unit or of unknown size."""
    if io_kb is None or device.stripe_kb is None:
        return 1.0
    return harmonic(min(io_kb / device.stripe_kb, max(1.0, device.parallelism)))


def _interleaved(
    workloads: Sequence[WorkloadMeasurement],
    measured: Sequence[float],
    in_flight: tuple[Sequence[float], Sequence[float]],
    device: DeviceParams,
    predicted: Callable[[Sequence[float], tuple[float, float]], list[WorkloadPrediction]],
    *,
    loop: bool = False,
) -> tuple[list[WorkloadPrediction], tuple[float, float]]:
    """The predictions with sequential streams interleaved and the cached writes destaged (module
    doc): f¹ of the reads from the shares of the predicted IO rates, which depend on Δ and on the
    destage load U¹, solved as a damped fixed point; *measured* is f⁰. The destaging's f⁰ and f¹
    are the shares of the IOs in flight (*in_flight*), which do not move. Returns the
    predictions and (U⁰, U¹)."""

    def destage(rates: Sequence[float]) -> tuple[float, float]:
        """(U⁰, U¹) at the predicted write rates, f⁰ and f¹ the neighbours' shares of the IOs in
        flight where measured and together (*in_flight*)."""
        writes = [
            rate * w.write_iops / w.iops if w.iops > 0 else 0.0
            for w, rate in zip(workloads, rates, strict=True)
        ]
        return (
            sum(
                destage_util(w, x, f, device) for w, x, f in zip(workloads, writes, in_flight[0], strict=True)
            ),
            sum(
                destage_util(w, x, f, device) for w, x, f in zip(workloads, writes, in_flight[1], strict=True)
            ),
        )

    rates = [w.iops for w in workloads]
    load = destage(rates)
    predictions = predicted([0.0] * len(workloads), load)
    if not loop and (device.positioning_ms is None or not any(w.sequential_share > 0 for w in workloads)):
        return predictions, load
    # Damped; the damping halves whenever a step reverses the previous one (the destage stretch
    # feeds back strongly: slower disks write less, which lowers the stretch).
    damping, previous = 0.5, [0.0] * len(workloads)
    for _ in range(FIXED_POINT_ITERATIONS):
        together = sum(rates)
        positioning = [
            positioning_added_ms(w, f0, interleaved_share(rate, together), device)
            for w, f0, rate in zip(workloads, measured, rates, strict=True)
        ]
        load = destage(rates)
        predictions = predicted(positioning, load)
        new_rates = [p.read_iops + p.write_iops for p in predictions]
        if all(
            abs(a - b) <= FIXED_POINT_TOLERANCE * max(1.0, b) for a, b in zip(new_rates, rates, strict=True)
        ):
            break
        steps = [a - b for a, b in zip(new_rates, rates, strict=True)]
        if sum(x * y for x, y in zip(steps, previous, strict=True)) < 0:
            damping = max(damping / 2.0, 1e-3)
        previous = steps
        rates = [b + damping * step for b, step in zip(rates, steps, strict=True)]
    return predictions, load


def _in_flight_shares(
    keys: Sequence[str], workloads: Sequence[WorkloadMeasurement]
) -> tuple[list[float], list[float]]:
    """Per disk, the neighbours' share of the IOs in flight where measured (its group) and together."""
    group_queue: dict[str, float] = {}
    for key, w in zip(keys, workloads, strict=True):
        group_queue[key] = group_queue.get(key, 0.0) + w.queue
    all_queue = sum(group_queue.values())
    return (
        [interleaved_share(w.queue, group_queue[key]) for key, w in zip(keys, workloads, strict=True)],
        [interleaved_share(w.queue, all_queue) for w in workloads],
    )


def _check(workloads: Sequence[WorkloadMeasurement], device: DeviceParams) -> None:
    """Every problem of the disks and the device at once, naming the field."""
    problems = [p for k, w in enumerate(workloads) for p in w.problems(f"disks[{k}]")] + device.problems()
    if not workloads:
        problems.append(Problem("disks", "needs at least one disk"))
    names = [w.name for w in workloads]
    problems += [
        Problem("disks", f"{n!r} appears more than once")
        for n in sorted({n for n in names if names.count(n) > 1})
    ]
    raise_if_problems(problems, "what-if")


def _admission(
    admitted: Callable[[float], tuple[list[WorkloadPrediction], tuple[float, float]]],
) -> tuple[list[WorkloadPrediction], tuple[float, float]]:
    """The full cache's admission wait, by bisection: the shortest with which the cached writers'
    destage load fits the devices (ΔU ≤ ``MAX_DESTAGE_UTIL``); *admitted* predicts at a given wait
    (the damped fixed point). Returns its predictions and (U⁰, U¹)."""

    def fits(wait_ms: float) -> bool:
        load = admitted(wait_ms)[1]
        return load[1] - load[0] <= MAX_DESTAGE_UTIL

    low, high = 0.0, 1.0
    while not fits(high) and high < MAX_ADMISSION_MS:
        low, high = high, high * 4.0
    for _ in range(ADMISSION_BISECTIONS):
        middle = (low + high) / 2.0
        if fits(middle):
            high = middle
        else:
            low = middle
    return admitted(high)


def _through(
    keys: Sequence[str], workloads: Sequence[WorkloadMeasurement], device: DeviceParams, hit_ms: float | None
) -> tuple[frozenset[int], bool]:
    """The disks whose cached writes go through to the devices: beside a disk of another group
    measured with the cache full (:func:`full_where_measured`) or at its edge
    (:func:`at_edge_where_measured`); its own group's figures have it. A disk at the edge goes
    through too: its figures are mostly cache hits, which the full cache no longer gives. And
    whether such a full cache is carried at all (a disk of another group beside it)."""
    edge = {key for key, w in zip(keys, workloads, strict=True) if at_edge_where_measured(w, device, hit_ms)}
    full_groups = edge | {
        key for key, w in zip(keys, workloads, strict=True) if full_where_measured(w, device)
    }
    carried = any(full_groups - {key} for key in keys)
    return frozenset(
        i
        for i, (key, w) in enumerate(zip(keys, workloads, strict=True))
        if _write_cached(w, device) and (full_groups - {key} or (carried and key in edge))
    ), carried


def _interference(
    keys: Sequence[str], workloads: Sequence[WorkloadMeasurement], device: DeviceParams
) -> dict[str, float]:
    """eq. 5–6 on m parallel servers: per group, the batches its requests put ahead of every other
    group's (the queue an arriving request of the group found: all its OIO)."""
    seen: dict[str, float] = {}
    for key, w in zip(keys, workloads, strict=True):
        seen[key] = seen.get(key, 0.0) + w.queue
    interference: dict[str, float] = {}
    for key, w in zip(keys, workloads, strict=True):
        # A disk measured with the cache full wrote to the devices: its writes' batches count whole.
        writes_share = 1.0 if full_where_measured(w, device) else device.write_share
        interference[key] = interference.get(key, 0.0) + w.batches_ms(
            device.parallelism, writes_share, seen[key]
        )
    return interference


def _own_destage(
    keys: Sequence[str],
    workloads: Sequence[WorkloadMeasurement],
    shares: Sequence[float],
    device: DeviceParams,
) -> dict[str, float]:
    """Per group, U⁰: the devices' share of time destaging its cached writes where it was measured
    (its measured write rates, *shares* the neighbours' shares of the IOs in flight there)."""
    own: dict[str, float] = {}
    for key, w, f in zip(keys, workloads, shares, strict=True):
        own[key] = own.get(key, 0.0) + destage_util(w, w.write_iops, f, device)
    return own


def predict_consolidation(
    workloads: Sequence[WorkloadMeasurement], device: DeviceParams
) -> ConsolidationPrediction:
    """Predict n workloads on one device from their separate measurements (eq. 1–6 generalised)."""
    _check(workloads, device)

    keys = [_group_key(k, w) for k, w in enumerate(workloads)]
    group_iops: dict[str, float] = {}
    for key, w in zip(keys, workloads, strict=True):
        group_iops[key] = group_iops.get(key, 0.0) + w.iops
    total = sum(group_iops.values())
    # eq. 3–4 over groups (reported for comparison): each group keeps the share G_g / Σ G.
    share = {key: (g / total if total > 0 else 1.0) for key, g in group_iops.items()}
    reads = sum(w.read_iops for w in workloads)
    writes = sum(w.write_iops for w in workloads)
    paper_read_mix = reads / total if total > 0 else 0.0  # eq. 1: Σ α^R_k T_k / Σ T_k
    paper_write_mix = writes / total if total > 0 else 0.0
    paper_read = sum(w.read_iops * share[key] for key, w in zip(keys, workloads, strict=True))
    paper_write = sum(w.write_iops * share[key] for key, w in zip(keys, workloads, strict=True))

    interference = _interference(keys, workloads, device)
    all_interference = sum(interference.values())
    measured = [interleaved_share(w.iops, group_iops[key]) for key, w in zip(keys, workloads, strict=True)]

    # The destage rule's interleaving: the neighbours' share of the IOs in flight where measured
    # (in its group) and together; closed loops keep their outstanding IOs, so these do not move.
    in_flight = _in_flight_shares(keys, workloads)

    # The cache full (module doc): these disks' cached writes wait *admission* ms for the cache to
    # free a block, the same wait for all (first come, first served), on top of the cache's ack.
    waiting: frozenset[int] = frozenset()
    admission = 0.0
    # The cache full where a disk was measured, carried to the datastore (module doc): the cached
    # writes of every disk of another group go through to the devices.
    hit_ms = cache_hit_ms(workloads, device)
    (through, carried), all_queue = _through(keys, workloads, device, hit_ms), sum(w.queue for w in workloads)

    # The full cache's steady state (module doc): no destaging, each group's figures freed of the
    # destage load its own cached writes put on the devices where it was measured (U⁰).
    steady = device.steady_full and bool(through)
    relief = _own_destage(keys, workloads, in_flight[0], device)

    # A large IO split over several devices waits for the slowest of them (module doc).
    split = [(fork_join(w.read_io_kb, device), fork_join(w.write_io_kb, device)) for w in workloads]

    def predicted(positioning: Sequence[float], destage: tuple[float, float]) -> list[WorkloadPrediction]:
        stretch = destage_factor(*destage)
        batches = _positioning_batches_ms(workloads, positioning, device)
        out = []
        for i, (key, w, delta, behind) in enumerate(zip(keys, workloads, positioning, batches, strict=True)):
            added = all_interference - interference[key] + delta + behind
            read_split, write_split = split[i]
            cached = _write_cached(w, device)
            unstretched = w.read_latency_ms + added * read_split
            read_ms = unstretched * (1.0 - min(relief[key], MAX_DESTAGE_UTIL) if steady else stretch)
            # through a full cache; admitted by a filling one; a cache hit; or a device write
            write_ms = (
                write_through_ms(w, in_flight[1][i], all_queue, 1.0 if steady else stretch, device)
                if i in through
                else w.write_latency_ms + admission
                if i in waiting
                else w.write_latency_ms
                if cached
                else (w.write_latency_ms + added * write_split) * stretch
            )
            confidence = (
                "measured alone"
                if w.alone
                else "never measured alone: estimated from figures shared with other disks"
            )
            out.append(
                _closed_loop(
                    w,
                    read_ms,
                    write_ms,
                    confidence=confidence,
                    cached=cached,
                    positioning_added_ms=delta,
                    destage_added_ms=read_ms - unstretched,
                    write_waits=i in waiting or i in through,
                    write_through=i in through,
                    fork_join=read_split,
                )
            )
        return out

    predictions, destage = _interleaved(workloads, measured, in_flight, device, predicted, loop=bool(through))
    demand, total_demand = destage[1] - destage[0], destage[1]
    full = device.cache_fills and demand >= MAX_DESTAGE_UTIL and not through
    if full and device.steady_full:
        # Filled, for good: every cached write goes through to the devices, nothing is destaged.
        through, steady = frozenset(i for i, w in enumerate(workloads) if _write_cached(w, device)), True
        predictions, destage = _interleaved(workloads, measured, in_flight, device, predicted, loop=True)
    elif full:
        # The closed loop: the writers' IOPS fall with their write latency until their destage load
        # is what the devices give it, ΔU = MAX_DESTAGE_UTIL; the admission wait by bisection, each
        # step the same damped fixed point.
        waiting = frozenset(
            i
            for i, (w, f) in enumerate(zip(workloads, in_flight[1], strict=True))
            if destage_util(w, w.write_iops, f, device) > 0
        )

        def admitted(wait_ms: float) -> tuple[list[WorkloadPrediction], tuple[float, float]]:
            nonlocal admission
            admission = wait_ms
            return _interleaved(workloads, measured, in_flight, device, predicted, loop=True)

        predictions, destage = _admission(admitted)
    read_x = sum(p.read_iops for p in predictions)
    write_x = sum(p.write_iops for p in predictions)
    # The mix of the predicted throughputs; eq. 1–2 (the isolation throughputs') reported beside it.
    return ConsolidationPrediction(
        read_mix=read_x / (read_x + write_x) if read_x + write_x > 0 else paper_read_mix,
        write_mix=write_x / (read_x + write_x) if read_x + write_x > 0 else paper_write_mix,
        paper_read_mix=paper_read_mix,
        paper_write_mix=paper_write_mix,
        read_iops=read_x,
        write_iops=write_x,
        overhead_factor=(read_x + write_x) / total if total > 0 else 1.0,
        paper_read_iops=paper_read,
        paper_write_iops=paper_write,
        workloads=predictions,
        device=device,
        inputs=list(workloads),
        destage_util=destage[1] - destage[0],
        destage_demand=demand,
        destage_total=total_demand,
        cache_full=full or carried,
        admission_wait_ms=admission,
        full_where_measured=tuple(w.name for w in workloads if full_where_measured(w, device)),
        edge_where_measured=tuple(w.name for w in workloads if at_edge_where_measured(w, device, hit_ms)),
    )


def predict_departure(
    together: Sequence[WorkloadMeasurement], leaving: set[str] | frozenset[str], device: DeviceParams
) -> list[WorkloadPrediction]:
    """What the workloads measured *together* on one device see once those named in *leaving* go.

    eq. 5–6 read backwards: each staying workload's latency loses the batches the leaving ones put
    ahead of it, (S^R_j A^R_j + w S^W_j A^W_j) / m, never below its own service time S(m); writes
    acknowledged by a write-back cache keep their latency; IOPS follow by Little's law.
    """
    m, w_share = device.parallelism, device.write_share
    seen = sum(w.queue for w in together)
    removed = sum(w.batches_ms(m, w_share, seen) for w in together if w.name in leaving)
    staying = [w for w in together if w.name not in leaving]
    # The staying sequential streams regain sequentiality: Δ ≤ 0 (module doc).
    rate_together, rate_staying = sum(w.iops for w in together), sum(w.iops for w in staying)
    positioning = [
        positioning_added_ms(
            w, interleaved_share(w.iops, rate_together), interleaved_share(w.iops, rate_staying), device
        )
        for w in staying
    ]
    batches = _positioning_batches_ms(staying, positioning, device)
    # The destage load loses what interleaving added: the staying streams' f falls to the staying
    # disks' share; the leaving disks' own load (without interleaving) leaves with their batches.
    queue_together, queue_staying = seen, sum(w.queue for w in staying)
    stretch = destage_factor(
        sum(
            destage_util(w, w.write_iops, interleaved_share(w.queue, queue_together), device)
            for w in together
        ),
        sum(
            destage_util(
                w,
                w.write_iops,
                interleaved_share(w.queue, queue_staying) if w.name not in leaving else 0.0,
                device,
            )
            for w in together
        ),
    )
    out: list[WorkloadPrediction] = []
    for w, delta, behind in zip(staying, positioning, batches, strict=True):
        cached = _write_cached(w, device)
        change = delta + behind - removed
        # A large IO split over several devices loses H(w) times what a one-unit IO does.
        read_split, write_split = fork_join(w.read_io_kb, device), fork_join(w.write_io_kb, device)
        # Never below its own service time S(m), less the positioning it no longer pays (and, as a
        # guard against a positioning cost above what the disk paid, never below a tenth of S).
        read_floor = max(w.read_service_ms(m, seen) + delta, w.read_service_ms(m, seen) / 10.0)
        write_floor = max(w.write_service_ms(m, seen) + delta, w.write_service_ms(m, seen) / 10.0)
        unstretched = max(read_floor, w.read_latency_ms + change * read_split)
        read_ms = max(read_floor, (w.read_latency_ms + change * read_split) * stretch)
        write_ms = (
            w.write_latency_ms
            if cached
            else max(write_floor, (w.write_latency_ms + change * write_split) * stretch)
        )
        out.append(
            _closed_loop(
                w,
                read_ms,
                write_ms,
                confidence="measured with the leaving disks",
                cached=cached,
                positioning_added_ms=delta,
                destage_added_ms=read_ms - unstretched,
                fork_join=read_split,
            )
        )
    return out


def _closed_loop(
    w: WorkloadMeasurement,
    read_ms: float,
    write_ms: float,
    *,
    confidence: str,
    cached: bool,
    positioning_added_ms: float,
    destage_added_ms: float,
    write_waits: bool = False,
    write_through: bool = False,
    fork_join: float = 1.0,
) -> WorkloadPrediction:
    """*w* at its predicted read and write latencies. Little's law for a closed loop: its outstanding
    IOs stay, so its IOPS follow 1 / C̄ (both sides scaled by the ratio of its mean latencies)."""
    before = w.mean_latency_ms
    after = (w.read_iops * read_ms + w.write_iops * write_ms) / w.iops if w.iops > 0 else 0.0
    scale = before / after if after > 0 and before > 0 else 1.0
    return WorkloadPrediction(
        name=w.name,
        group=w.group,
        read_iops=scale * w.read_iops,
        write_iops=scale * w.write_iops,
        read_latency_ms=read_ms,
        write_latency_ms=write_ms,
        confidence=confidence,
        write_cached=cached,
        sequential=w.sequential,
        positioning_added_ms=positioning_added_ms,
        destage_added_ms=destage_added_ms,
        write_waits=write_waits,
        write_through=write_through,
        fork_join=fork_join,
    )


def isolate(
    group: Sequence[WorkloadMeasurement], keep: set[str] | frozenset[str], device: DeviceParams
) -> list[WorkloadMeasurement]:
    """The workloads named in *keep*, measured together with the rest of *group* on *device*, as they
    would measure without the rest (:func:`predict_departure`): the input for moving them elsewhere
    together, so that the batches of the disks they leave behind are not carried with them."""
    kept = [w for w in group if w.name in keep]
    if len(kept) == len(group):
        return kept
    by_name = {w.name: w for w in kept}
    gone = frozenset(w.name for w in group if w.name not in keep)
    return [
        WorkloadMeasurement(
            p.name,
            p.read_iops,
            p.write_iops,
            p.read_latency_ms,
            p.write_latency_ms,
            group=by_name[p.name].group,
            alone=by_name[p.name].alone,
            random_pct=by_name[p.name].random_pct,
            read_io_kb=by_name[p.name].read_io_kb,
            write_io_kb=by_name[p.name].write_io_kb,
        )
        for p in predict_departure(group, gone, device)
    ]


def measurement_from_mapping(
    raw: Mapping[str, object], where: str
) -> tuple[WorkloadMeasurement | None, list[Problem]]:
    """A WorkloadMeasurement from a JSON object; unknown keys and wrong types are problems."""
    known = {
        "name",
        "read_iops",
        "write_iops",
        "read_latency_ms",
        "write_latency_ms",
        "read_oio",
        "write_oio",
        "group",
        "alone",
        "random_pct",
        "read_io_kb",
        "write_io_kb",
    }
    problems = [Problem(f"{where}.{key}", "unknown field") for key in raw if key not in known]
    for key in ("name", "read_iops", "write_iops", "read_latency_ms", "write_latency_ms"):
        if key not in raw:
            problems.append(Problem(f"{where}.{key}", "is required"))
    name, group, alone = raw.get("name", ""), raw.get("group", ""), raw.get("alone", True)
    if not isinstance(name, str):
        problems.append(Problem(f"{where}.name", "must be a string"))
    if not isinstance(group, str):
        problems.append(Problem(f"{where}.group", "must be a string"))
    if not isinstance(alone, bool):
        problems.append(Problem(f"{where}.alone", "must be true or false"))

    def number(key: str) -> float:
        value = raw.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if key in raw:
            problems.append(Problem(f"{where}.{key}", f"must be a number, not {value!r}"))
        return 0.0

    def optional(key: str) -> float | None:
        return None if raw.get(key) is None else number(key)

    figures = {key: number(key) for key in ("read_iops", "write_iops", "read_latency_ms", "write_latency_ms")}
    oio = {key: optional(key) for key in ("read_oio", "write_oio", "random_pct", "read_io_kb", "write_io_kb")}
    if problems:
        return None, problems
    measurement = WorkloadMeasurement(
        name=str(name),
        read_iops=figures["read_iops"],
        write_iops=figures["write_iops"],
        read_latency_ms=figures["read_latency_ms"],
        write_latency_ms=figures["write_latency_ms"],
        read_oio=oio["read_oio"],
        write_oio=oio["write_oio"],
        group=str(group),
        alone=bool(alone),
        random_pct=oio["random_pct"],
        read_io_kb=oio["read_io_kb"],
        write_io_kb=oio["write_io_kb"],
    )
    return measurement, measurement.problems(where)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def whatif_from_mapping(raw: object) -> ConsolidationPrediction:
    """Predict from a what-if document: ``{"datastore": {"queue_depth": 32}, "disks": [{...}, ...]}``.

    Every problem in the document is reported at once, with its path (``disks[2].read_iops``).
    """
    if not isinstance(raw, Mapping):
        raise_if_problems([Problem("", "must be a JSON object with datastore and disks")], "what-if")
        raise AssertionError  # unreachable
    problems = [Problem(key, "unknown field") for key in raw if key not in {"datastore", "disks"}]
    datastore = raw.get("datastore", {})
    device = DeviceParams()
    if not isinstance(datastore, Mapping):
        problems.append(Problem("datastore", "must be an object"))
    else:
        problems += [
            Problem(f"datastore.{key}", "unknown field")
            for key in datastore
            if key
            not in {
                "name",
                "queue_depth",
                "max_write_conn",
                "parallelism",
                "write_cache_ms",
                "positioning_ms",
                "write_cost",
                "destage_ms",
                "stripe_kb",
            }
        ]

        def is_number(value: object) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool)

        depth = datastore.get("queue_depth", 32)
        writes = datastore.get("max_write_conn")
        parallelism = datastore.get("parallelism")
        cache = datastore.get("write_cache_ms", DEFAULT_WRITE_CACHE_MS)
        positioning = datastore.get("positioning_ms")
        cost = datastore.get("write_cost", DEFAULT_WRITE_COST)
        destage = datastore.get("destage_ms")
        stripe = datastore.get("stripe_kb", DEFAULT_STRIPE_KB)
        wrong = [
            f"datastore.{key}"
            for key, value, optional in (
                ("queue_depth", depth, False),
                ("max_write_conn", writes, True),
                ("parallelism", parallelism, True),
                ("write_cache_ms", cache, True),
                ("positioning_ms", positioning, True),
                ("write_cost", cost, True),
                ("destage_ms", destage, True),
                ("stripe_kb", stripe, True),
            )
            if not (is_number(value) or (optional and value is None))
        ]
        problems += [Problem(field, "must be a number") for field in wrong]
        if not wrong:
            device = DeviceParams(
                max_conn=_number(depth),
                max_write_conn=None if writes is None else _number(writes),
                parallelism=1.0 if parallelism is None else _number(parallelism),
                parallelism_source=PARALLELISM_PAPER if parallelism is None else "given",
                write_cache_ms=None if cache is None else _number(cache),
                positioning_ms=None if positioning is None else _number(positioning),
                positioning_source=POSITIONING_NONE if positioning is None else "given",
                write_cost=None if cost is None else _number(cost),
                write_cost_source=(
                    WRITE_COST_LOWER_BOUND
                    if "write_cost" not in datastore
                    else ("none: cached writes are free to the devices" if cost is None else "given")
                ),
                destage_ms=None if destage is None else _number(destage),
                destage_source=DESTAGE_FROM_READS if destage is None else "given",
                stripe_kb=None if stripe is None else _number(stripe),
                stripe_source=STRIPE_ASSUMED if "stripe_kb" not in datastore else "given",
            )
            names = {"max_conn": "datastore.queue_depth"}
            problems += [
                Problem(names.get(p.field, f"datastore.{p.field}"), p.message) for p in device.problems()
            ]
    disks = raw.get("disks")
    measurements: list[WorkloadMeasurement] = []
    if not isinstance(disks, list) or not disks:
        problems.append(Problem("disks", "must be a non-empty list of disks"))
    else:
        for k, item in enumerate(disks):
            if not isinstance(item, Mapping):
                problems.append(Problem(f"disks[{k}]", "must be an object"))
                continue
            measurement, found = measurement_from_mapping(item, f"disks[{k}]")
            problems += found
            if measurement is not None:
                measurements.append(measurement)
    raise_if_problems(problems, "what-if")
    return predict_consolidation(measurements, device)
