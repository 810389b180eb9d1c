"""The web layer's own Prometheus metrics, exposed together with the service's at ``/metrics``.

Each app gets its own registry (tests build many apps in one process). Request metrics are labelled
by route rule, not by URL, so that ids in paths do not explode the number of series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Seconds; an API read on a populated store takes milliseconds, a vCenter session validation a second.
_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "basil_http_requests",
            "HTTP requests answered, by method, route rule and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "basil_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route rule.",
            ("method", "route"),
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "basil_http_requests_in_flight", "HTTP requests being answered.", registry=self.registry
        )
        self.auth_failures = Counter(
            "basil_http_auth_failures",
            "Requests refused for authentication (401) or role (403), by kind.",
            ("kind",),
            registry=self.registry,
        )
        self.session_validations = Counter(
            "basil_vcenter_session_validations",
            "vSphere Client session tokens validated through vCenter's clone-ticket flow, by outcome.",
            ("outcome",),
            registry=self.registry,
        )

    def exposition(self) -> str:
        return generate_latest(self.registry).decode("utf-8")
