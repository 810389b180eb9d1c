"""The knobs of a recommendation round: thresholds, budgets, candidate order and the model parameters.

One frozen dataclass shared by the balancer and initial placement, so the service can build it from
its configuration and the command line from a snapshot's ``options``; ``validate()`` reports every
bad field at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from basil.core.device_model import DeviceModelParams
from basil.core.workload_model import WorkloadModelParams, number_problems
from basil.errors import Problem

ORDER_LOAD_PER_GB = "load_per_gb"  # BASIL §5 (1): highest L per GB first, least data moved
ORDER_LEAST_DISTURBANCE = "least_disturbance"  # BASIL §5 (2): lowest current IOPS / L first
CANDIDATE_ORDERS = (ORDER_LOAD_PER_GB, ORDER_LEAST_DISTURBANCE)

REASON_BALANCE_IO = "balanceDatastoreIOLoad"  # Storage DRS's reason code for IO-load moves

# What a round optimises (see basil.core.search and basil.core.predictive).
OBJECTIVE_NORMALIZED_LOAD = "normalized_load"  # BASIL §5: equalise N_j = ΣL/P_j (lower f = σ/μ)
OBJECTIVE_THROUGHPUT = "throughput"  # predicted total IOPS up (IOPS-weighted latency down), fairly
# Per pod: throughput for mixed tiers, normalized_load otherwise, never predicted worse than the start
# (basil.core.search.pod_objective states the rule).
OBJECTIVE_AUTO = "auto"
OBJECTIVES = (OBJECTIVE_AUTO, OBJECTIVE_NORMALIZED_LOAD, OBJECTIVE_THROUGHPUT)

# How the normalized-load objective searches (the throughput objective always uses best_move).
SEARCH_BEST_MOVE = "best_move"  # best single move over all datastore pairs first, then swaps
SEARCH_PAIRWISE = "pairwise"  # BASIL's Algorithm 1: subset sum between the most and least loaded
SEARCHES = (SEARCH_BEST_MOVE, SEARCH_PAIRWISE)


def _int_problems(value: object, path: str, minimum: int) -> list[Problem]:
    if not isinstance(value, int) or isinstance(value, bool):
        return [Problem(path, f"must be an integer, got {value!r}")]
    if value < minimum:
        return [Problem(path, f"must be at least {minimum}, got {value}")]
    return []


def _choice_problems(value: object, path: str, choices: tuple[str, ...]) -> list[Problem]:
    if value not in choices:
        return [Problem(path, f"must be one of {', '.join(choices)}, got {value!r}")]
    return []


@dataclass(frozen=True, slots=True)
class BalancerParams:
    """Parameters of one balancing round (and of initial placement, which shares the constraints).

    - ``imbalance_threshold``: stop once a pod's f = σ/μ of N is at or below it (Algorithm 1).
    - ``max_moves`` / ``max_gb``: budget of the round, over all pods; None is unlimited. A move is one
      Storage vMotion, which may carry several disks of one VM.
    - ``space_headroom_pct``: a target must keep this share of its capacity free after a move.
    - ``candidate_order``: ``load_per_gb`` or ``least_disturbance`` (§5).
    - ``ping_pong_hours``: a disk moved less than this long before the snapshot stays put.
    - ``seed``: seeds the subset-sum trials; same snapshot and params give the same plan.
    - ``subset_trials``, ``subset_tolerance``: RGLI trials per pair, and how close to the best sum a
      trial must come to compete on candidate order instead.
    - ``max_pair_attempts``: pairs with eligible disks tried per step before the round gives up
      (``pairwise`` search only).
    - ``objective``: ``auto`` (the default: per pod, ``throughput`` when its datastores are of mixed
      tiers, else ``normalized_load``, and no round is predicted to lower the pod's total IOPS; see
      ``basil.core.search.pod_objective``), ``normalized_load`` (BASIL's N-equalisation, as in the
      paper) or ``throughput`` (the predictive goal: raise the pod's predicted total IOPS, which under
      a fixed number of outstanding IOs is the same as cutting its IOPS-weighted latency, without
      making any disk much worse).
    - ``search``: ``best_move`` (best single move over every datastore pair, then swaps) or
      ``pairwise`` (Algorithm 1 as in the paper); the throughput objective always uses ``best_move``.
    - ``fairness_pct``, ``fairness_ms``: the throughput objective's fairness rule: no move may raise
      the predicted latency of any disk above max(its latency at the start of the round × (1 +
      fairness_pct/100), that latency + fairness_ms).
    - ``min_gain_pct``: the throughput objective moves a disk only for a predicted gain of at least
      this share of the pod's total IOPS (a Storage vMotion costs IO of its own).
    """

    imbalance_threshold: float = 0.1
    max_moves: int | None = None
    max_gb: float | None = None
    space_headroom_pct: float = 10.0
    candidate_order: str = ORDER_LOAD_PER_GB
    ping_pong_hours: float = 24.0
    seed: int = 0
    subset_trials: int = 8
    subset_tolerance: float = 0.05
    max_pair_attempts: int = 64
    objective: str = OBJECTIVE_AUTO
    search: str = SEARCH_BEST_MOVE
    fairness_pct: float = 10.0
    fairness_ms: float = 1.0
    min_gain_pct: float = 0.5
    workload_model: WorkloadModelParams = field(default_factory=WorkloadModelParams)
    device_model: DeviceModelParams = field(default_factory=DeviceModelParams)

    def validate(self, path: str = "") -> list[Problem]:
        """Every bad field, with its path (prefixed by *path*, e.g. ``options``)."""
        at = (lambda name: f"{path}.{name}") if path else (lambda name: name)
        found = [
            *number_problems(self.imbalance_threshold, at("imbalance_threshold"), minimum=0),
            *number_problems(self.space_headroom_pct, at("space_headroom_pct"), minimum=0, maximum=99),
            *number_problems(self.ping_pong_hours, at("ping_pong_hours"), minimum=0),
            *number_problems(self.subset_tolerance, at("subset_tolerance"), minimum=0, maximum=1),
            *_int_problems(self.seed, at("seed"), minimum=0),
            *_int_problems(self.subset_trials, at("subset_trials"), minimum=1),
            *_int_problems(self.max_pair_attempts, at("max_pair_attempts"), minimum=1),
            *_choice_problems(self.objective, at("objective"), OBJECTIVES),
            *_choice_problems(self.search, at("search"), SEARCHES),
            *number_problems(self.fairness_pct, at("fairness_pct"), minimum=0),
            *number_problems(self.fairness_ms, at("fairness_ms"), minimum=0),
            *number_problems(self.min_gain_pct, at("min_gain_pct"), minimum=0, maximum=100),
            *self.workload_model.validate(at("workload_model")),
            *self.device_model.validate(at("device_model")),
        ]
        if self.max_moves is not None:
            found += _int_problems(self.max_moves, at("max_moves"), minimum=0)
        if self.max_gb is not None:
            found += number_problems(self.max_gb, at("max_gb"), minimum=0)
        if self.candidate_order not in CANDIDATE_ORDERS:
            found.append(
                Problem(
                    at("candidate_order"),
                    f"must be one of {', '.join(CANDIDATE_ORDERS)}, got {self.candidate_order!r}",
                )
            )
        return found
