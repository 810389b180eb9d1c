"""The service's Prometheus metrics, kept in process and written in the text exposition format (0.0.4).

Counters only grow; gauges (plan states) are read from the store when the text is written. No
client library: the handful of series here does not need one, and the format is a few lines.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from basil.app.recommendation import Round

_HELP = {
    "basil_collections_total": ("counter", "Collection cycles, by vCenter and outcome."),
    "basil_samples_total": (
        "counter",
        "Performance samples stored, by vCenter and kind (disk, host_datastore).",
    ),
    "basil_samples_incomplete_total": ("counter", "Samples left out for a missing counter, by vCenter."),
    "basil_missing_counters": ("gauge", "Counters vCenter did not deliver in the last cycle, by vCenter."),
    "basil_moves_total": ("counter", "Plan moves that ended, by outcome (succeeded, failed, skipped)."),
    "basil_srp_changes_total": (
        "counter",
        "Per-disk IO allocation settings issued by the SRP loop, by outcome.",
    ),
    "basil_job_runs_total": ("counter", "Scheduled job runs, by job and outcome."),
    "basil_job_duration_seconds_sum": ("counter", "Total run time of each job."),
    "basil_job_duration_seconds_count": ("counter", "Runs of each job (with the sum: the mean duration)."),
    "basil_vcenter_errors_total": ("counter", "Errors vCenter returned, by vCenter."),
    "basil_plans": ("gauge", "Plans in the store, by state."),
    "basil_vcenter_connected": ("gauge", "1 when the vCenter session is up."),
    "basil_vcenter_job_failing": (
        "gauge",
        "1 while a job (collect, inventory, tags, model, connect) fails on a vCenter.",
    ),
    "basil_pod_imbalance": (
        "gauge",
        "A pod's imbalance now: sigma/mean of N = sum(L)/P (BASIL eq. 5), as the API's pod view shows it.",
    ),
    "basil_pod_imbalance_threshold": ("gauge", "A pod's imbalance threshold."),
    "basil_prediction_error": (
        "gauge",
        "The newest applied plan's prediction error an hour later (vCenter time), by pod and quantity: "
        "latency, read_latency and iops are the median |predicted - measured| / measured over the pod's "
        "datastores, "
        "imbalance is (predicted - measured) / measured.",
    ),
    "basil_slo_damage": (
        "gauge",
        "A pod's damage sum((RT - DRT)^2 / DRT) over the disks above their DRT at its latest SLO round, "
        "by pod, priority group and basis: predicted (the model, current placement) or measured.",
    ),
    "basil_datastore_prediction_error": (
        "gauge",
        "A datastore's newest measured prediction error an hour after a plan (vCenter time), "
        "(predicted - measured) / measured, by estimator (device_model, whatif) and quantity.",
    ),
    "basil_recommendation_stale": (
        "gauge",
        "1 when a pod's latest recommendation is stale (the placement it was computed from changed).",
    ),
}


def _escape(value: str) -> str:
    """A label value as the exposition format writes it: backslash, quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


class Metrics:
    """Thread-safe counters and gauges keyed by metric name and labels."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._values[name]
            series[key] = series.get(key, 0.0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[name][key] = value

    def value(self, name: str, **labels: str) -> float:
        with self._lock:
            return self._values.get(name, {}).get(tuple(sorted(labels.items())), 0.0)

    def observe_job(self, job: str, outcome: str, seconds: float) -> None:
        self.inc("basil_job_runs_total", job=job, outcome=outcome)
        self.inc("basil_job_duration_seconds_sum", seconds, job=job)
        self.inc("basil_job_duration_seconds_count", job=job)

    def render(self, gauges: Iterable[tuple[str, Mapping[str, str], float]] = ()) -> str:
        """The exposition text: every metric with its HELP and TYPE, then extra *gauges* read now."""
        with self._lock:
            snapshot = {name: dict(series) for name, series in self._values.items()}
        extra: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
        for name, labels, value in gauges:
            extra[name][tuple(sorted(labels.items()))] = value
        lines: list[str] = []
        for name in sorted(set(snapshot) | set(extra) | set(_HELP)):
            kind, text = _HELP.get(name, ("untyped", name))
            series = {**snapshot.get(name, {}), **extra.get(name, {})}
            if name == "basil_job_duration_seconds_count":  # the summary's header, before its first sample
                lines.append("# HELP basil_job_duration_seconds Job run time in seconds.")
                lines.append("# TYPE basil_job_duration_seconds summary")
            elif not name.startswith("basil_job_duration_seconds"):
                lines.append(f"# HELP {name} {text}")
                lines.append(f"# TYPE {name} {kind}")
            for key, value in sorted(series.items()):
                lines.append(f"{name}{_labels(dict(key))} {value:.17g}")
        return "\n".join(lines) + "\n"


def record_slo_damage(metrics: Metrics, round_: Round) -> None:
    """Set ``basil_slo_damage`` for each group of a round of the SLO goal (nothing for balance rounds)."""
    if round_.slo is None:
        return
    for group in round_.slo.pod(round_.pod).groups:
        metrics.set(
            "basil_slo_damage", group.damage_before, pod=round_.pod, group=group.name, basis="predicted"
        )
        if group.measured_damage is not None:
            metrics.set(
                "basil_slo_damage", group.measured_damage, pod=round_.pod, group=group.name, basis="measured"
            )
