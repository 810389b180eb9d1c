"""What ``basil.yaml`` may say: frozen dataclasses, one per section, each listing its own problems.

Every field has a default so that a missing key is reported as a problem ("must be set") alongside
all the others instead of stopping the conversion at the first one. ``problems(path)`` returns the
problems of one section with full field paths (``pods[1].balance.max_gb``); :meth:`BasilConfig.validate`
raises them all at once. Nothing here reads a file or the environment: see :mod:`basil.config.loader`
for that and :func:`basil.config.loader.runtime_problems` for checks of files and secrets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from basil.config.cron import CronExpression
from basil.core.device_model import PER_DEVICE_P
from basil.core.params import (
    CANDIDATE_ORDERS,
    OBJECTIVE_AUTO,
    OBJECTIVES,
    ORDER_LEAST_DISTURBANCE,
    ORDER_LOAD_PER_GB,
)
from basil.errors import Problem, raise_if_problems

ROLES = ("viewer", "operator", "admin")
Role = Literal["viewer", "operator", "admin"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_THUMBPRINT = re.compile(r"([0-9A-Fa-f]{2}:){19}[0-9A-Fa-f]{2}|([0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:(\d{1,5}))?")


def _number(value: float, path: str, *, low: float | None = None, high: float | None = None) -> list[Problem]:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return [Problem(path, f"must be a finite number, got {value!r}")]
    if low is not None and value < low:
        return [Problem(path, f"must be at least {low:g}, got {value:g}")]
    if high is not None and value > high:
        return [Problem(path, f"must be at most {high:g}, got {value:g}")]
    return []


def _positive(value: float, path: str) -> list[Problem]:
    found = _number(value, path)
    if not found and value <= 0:
        found.append(Problem(path, f"must be greater than 0, got {value:g}"))
    return found


def _name(value: str, path: str) -> list[Problem]:
    if not value:
        return [Problem(path, "must be set")]
    if not _NAME.fullmatch(value):
        return [Problem(path, f"{value!r} may use only letters, digits, '.', '_' and '-' (at most 63)")]
    return []


def _secret_source(env_name: str, file_path: str, path: str, *, required: bool) -> list[Problem]:
    """A password is named by an environment variable or a file, never written in the config itself."""
    if env_name and file_path:
        return [Problem(path, "give password_env or password_file, not both")]
    if not env_name and not file_path:
        return [Problem(f"{path}.password_env", "must be set (or password_file)")] if required else []
    if env_name and not _ENV_NAME.fullmatch(env_name):
        return [Problem(f"{path}.password_env", f"{env_name!r} is not an environment variable name")]
    return []


def host_port(text: str) -> tuple[str, int | None]:
    """Split ``host``, ``host:port`` or ``[v6]:port``; raises ValueError on anything else (a URL, a path)."""
    match = _HOST_PORT.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not host or host:port (no scheme, no path)")
    port = int(match.group(3)) if match.group(3) else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"port {port} is outside 1-65535")
    return match.group(1).strip("[]"), port


@dataclass(frozen=True)
class TLSOptions:
    """How Basil checks a vCenter's certificate: a CA bundle, a pinned thumbprint, or (explicitly) not."""

    verify: bool = True
    ca_bundle: str = ""
    thumbprint: str = ""

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        if self.thumbprint and not _THUMBPRINT.fullmatch(self.thumbprint):
            found.append(
                Problem(
                    f"{path}.thumbprint",
                    "must be a SHA-1 or SHA-256 fingerprint as colon-separated hex pairs",
                )
            )
        if not self.verify and (self.ca_bundle or self.thumbprint):
            found.append(
                Problem(
                    f"{path}.verify",
                    "is false, so ca_bundle and thumbprint would be ignored; remove one side",
                )
            )
        return found


@dataclass(frozen=True)
class VCenterConfig:
    """One vCenter connection. The password comes from an environment variable or a file, never the config."""

    name: str = ""
    server: str = ""
    user: str = ""
    password_env: str = ""
    password_file: str = ""
    tls: TLSOptions = field(default_factory=TLSOptions)
    # How long one vSphere API call may take before Basil counts vCenter as not answering: what a vCenter
    # hang costs a job, a move's follower or a stop (read-only calls are retried 3 times).
    call_timeout_s: float = 120.0
    # Read vSphere tags through the Automation API (for pods, pools and exclusions by tag). Off: no
    # Automation API call at all, for a vCenter whose tagging service is missing or broken.
    tags: bool = True

    def problems(self, path: str) -> list[Problem]:
        found = _name(self.name, f"{path}.name")
        if not 1 <= self.call_timeout_s <= 3600:
            found.append(Problem(f"{path}.call_timeout_s", f"must be 1-3600 s, got {self.call_timeout_s:g}"))
        if not self.server:
            found.append(Problem(f"{path}.server", "must be set (host or host:port)"))
        else:
            try:
                host_port(self.server)
            except ValueError as err:
                found.append(Problem(f"{path}.server", str(err)))
        if not self.user:
            found.append(Problem(f"{path}.user", "must be set"))
        found += _secret_source(self.password_env, self.password_file, path, required=True)
        found += self.tls.problems(f"{path}.tls")
        return found


@dataclass(frozen=True)
class BalanceConfig:
    """How a pod is balanced (BASIL §5): when to act, which disks to move first, and within what limits."""

    # σ/μ of the datastores' normalized loads N_j (BASIL eq. 5) above which moves are recommended.
    imbalance_threshold: float = 0.15
    # §5 "Workload/Virtual Disk Selection": L_i per GB first, or least current IOPS per unit of L_i. The
    # balancer's own names (basil.core.params.CANDIDATE_ORDERS), checked in problems().
    candidate_order: str = ORDER_LOAD_PER_GB
    max_moves: int = 8
    max_gb: float = 1000.0
    # A target datastore must keep this share of its capacity free after the move.
    space_headroom_pct: float = 10.0
    # A disk moved within this many hours is not moved again (§5 "avoid ping-ponging").
    ping_pong_hours: float = 24.0
    # Storage DRS's I/O latency threshold: no IO load balancing while no datastore of the pod is observed
    # above it (newest host samples, IOPS-weighted; basil.core.latency_gate).
    latency_threshold_ms: float = 15.0
    keep_vmdks_together: bool = True
    # What a round optimises (basil.core.params.OBJECTIVES): auto (per pod: throughput for mixed tiers,
    # else N-equalisation; basil.core.search.pod_objective), BASIL's N-equalisation, or the predicted
    # total IOPS under the fairness rule (basil.core.search). docs/decisions.md.
    objective: str = OBJECTIVE_AUTO
    exclude_tag: str = ""
    on_move_failure: Literal["continue", "stop"] = "continue"

    def problems(self, path: str) -> list[Problem]:
        return [
            *_number(self.imbalance_threshold, f"{path}.imbalance_threshold", low=0, high=10),
            *_candidate_order(self.candidate_order, f"{path}.candidate_order"),
            *_objective(self.objective, f"{path}.objective"),
            *_number(self.max_moves, f"{path}.max_moves", low=0),
            *_number(self.max_gb, f"{path}.max_gb", low=0),
            *_number(self.space_headroom_pct, f"{path}.space_headroom_pct", low=0, high=95),
            *_number(self.ping_pong_hours, f"{path}.ping_pong_hours", low=0),
            *_positive(self.latency_threshold_ms, f"{path}.latency_threshold_ms"),
            *_tag_problems(self.exclude_tag, f"{path}.exclude_tag", required=False),
        ]


# Names earlier configurations used, and what the balancer calls them.
_RENAMED_ORDERS = {"iops_per_load": ORDER_LEAST_DISTURBANCE}


def _candidate_order(order: str, path: str) -> list[Problem]:
    if order in CANDIDATE_ORDERS:
        return []
    hint = f" ({order!r} is now called {_RENAMED_ORDERS[order]!r})" if order in _RENAMED_ORDERS else ""
    known = ", ".join(CANDIDATE_ORDERS)
    return [Problem(path, f"{order!r} is not a candidate order: use one of {known}{hint}")]


def _objective(objective: str, path: str) -> list[Problem]:
    if objective in OBJECTIVES:
        return []
    return [Problem(path, f"{objective!r} is not an objective: use one of {', '.join(OBJECTIVES)}")]


def _tag_problems(tag: str, path: str, *, required: bool) -> list[Problem]:
    if not tag:
        return [Problem(path, "must be set")] if required else []
    category, sep, name = tag.partition("/")
    if not sep or not category.strip() or not name.strip() or "/" in name:
        return [Problem(path, f"{tag!r} must be written category/name")]
    return []


@dataclass(frozen=True)
class DeviceConfig:
    """What is known of a datastore's device: a prior P until measurements give a credible one.

    ``kind`` is one of :data:`basil.core.device_model.PER_DEVICE_P`; ``spindles`` the devices (disks
    or flash modules) behind the datastore, 0 when unknown; ``performance`` a vendor or measured P
    (OIO per ms), 0 when none. Kind with spindles, or a performance, is a confident prior: a new
    datastore so described may receive more than one disk in a round.
    """

    kind: str = ""
    spindles: int = 0
    performance: float = 0.0
    vcenter: str = ""  # only this vCenter's datastore of that name; "" for any

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        if self.kind and self.kind not in PER_DEVICE_P:
            found.append(
                Problem(f"{path}.kind", f"{self.kind!r} is not one of {', '.join(sorted(PER_DEVICE_P))}")
            )
        if self.spindles < 0:
            found.append(Problem(f"{path}.spindles", f"must be 0 (unknown) or more, got {self.spindles}"))
        if self.spindles and not self.kind:
            found.append(Problem(f"{path}.kind", "must be set when spindles is"))
        found += _number(self.performance, f"{path}.performance", low=0)
        if not self.kind and not self.performance:
            found.append(Problem(path, "give kind (and spindles) or performance"))
        return found


@dataclass(frozen=True)
class SloGroupConfig:
    """A priority group of the SLO goal (Lipetz et al.): a desired response time for its VMs' disks.

    Members are the VMs carrying the tag ``tag`` (default ``<tag_category>/<name>``) and the VMs of
    the SRP pools named in ``pools``; a VM reached twice for two groups is an error at round time.
    """

    name: str = ""
    drt_ms: float = 0.0
    tag: str = ""
    pools: tuple[str, ...] = ()

    def problems(self, path: str) -> list[Problem]:
        found = _name(self.name, f"{path}.name")
        found += _positive(self.drt_ms, f"{path}.drt_ms")
        if self.tag:
            found += _tag_problems(self.tag, f"{path}.tag", required=True)
        return found


@dataclass(frozen=True)
class SloConfig:
    """The SLO goal of a pod (``goal: slo``): priority groups with DRTs and the model's knobs."""

    tag_category: str = "basil-slo"
    groups: tuple[SloGroupConfig, ...] = ()
    # The highest predicted utilisation a target datastore may reach (Lipetz et al. use 30 %).
    utilisation_cap_pct: float = 30.0
    # Queues serve groups in priority order: true when SIOC shares follow the groups (M/M/1 with
    # priorities); false is plain M/M/1.
    priority_queues: bool = False
    iterations: int = 8
    min_gain_pct: float = 5.0

    def problems(self, path: str, *, required: bool) -> list[Problem]:
        found: list[Problem] = []
        if required and not self.groups:
            found.append(Problem(f"{path}.groups", "goal slo needs at least one group with drt_ms"))
        if not self.tag_category or "/" in self.tag_category:
            found.append(Problem(f"{path}.tag_category", f"{self.tag_category!r} is not a tag category name"))
        seen: dict[str, int] = {}
        for i, group in enumerate(self.groups):
            found += group.problems(f"{path}.groups[{i}]")
            if group.name in seen:
                found.append(
                    Problem(f"{path}.groups[{i}].name", f"{group.name!r} is also groups[{seen[group.name]}]")
                )
            seen.setdefault(group.name, i)
        cap = _number(self.utilisation_cap_pct, f"{path}.utilisation_cap_pct", high=100)
        if not cap and self.utilisation_cap_pct <= 0:
            cap.append(Problem(f"{path}.utilisation_cap_pct", "must be greater than 0"))
        found += cap
        found += _number(self.iterations, f"{path}.iterations", low=1, high=100)
        found += _number(self.min_gain_pct, f"{path}.min_gain_pct", low=0, high=100)
        return found


@dataclass(frozen=True)
class PodConfig:
    """A load-balancing domain: a datastore cluster, a list of datastores, or the datastores with a tag."""

    name: str = ""
    vcenter: str = ""
    datastore_cluster: str = ""
    datastores: tuple[str, ...] = ()
    tag: str = ""
    mode: Literal["manual", "automatic"] = "manual"
    balance: BalanceConfig = field(default_factory=BalanceConfig)
    # What a round optimises: BASIL's balance (default) or latency targets per priority group.
    goal: Literal["balance", "slo"] = "balance"
    slo: SloConfig = field(default_factory=SloConfig)

    def problems(self, path: str) -> list[Problem]:
        found = _name(self.name, f"{path}.name")
        found += self.slo.problems(f"{path}.slo", required=self.goal == "slo")
        if not self.vcenter:
            found.append(Problem(f"{path}.vcenter", "must be set (the name of one of vcenters)"))
        given = [key for key in ("datastore_cluster", "datastores", "tag") if getattr(self, key)]
        if len(given) != 1:
            found.append(
                Problem(
                    path,
                    "give exactly one of datastore_cluster, datastores or tag"
                    + (f" (got {', '.join(given)})" if given else ""),
                )
            )
        if self.tag:
            found += _tag_problems(self.tag, f"{path}.tag", required=True)
        seen: set[str] = set()
        for i, name in enumerate(self.datastores):
            if not name.strip():
                found.append(Problem(f"{path}.datastores[{i}]", "must not be empty"))
            elif name in seen:
                found.append(Problem(f"{path}.datastores[{i}]", f"{name!r} is listed twice"))
            seen.add(name)
        found += self.balance.problems(f"{path}.balance")
        return found


@dataclass(frozen=True)
class SrpConfig:
    """The Storage Resource Pools control loop (SRP §3–4); names follow ``basil.srp.params.SrpParams``."""

    enabled: bool = True
    # L_c, the congestion latency the array is run at (SRP §3.1); also SIOC's congestionThreshold.
    latency_threshold_ms: float = 30.0
    # γ of SRP eq. 4, the smoothing of the array queue depth controller.
    gamma: float = 0.2
    queue_depth_min: float = 4.0
    queue_depth_max: float = 1024.0
    # A new per-disk setting is issued only when it differs from the applied one by more than this.
    hysteresis_pct: float = 10.0
    max_changes_per_run: int = 100
    io_size_charging: bool = True
    charge_chunk_kb: float = 32.0
    manage_sioc: bool = True
    backend: Literal["storage_io_allocation"] = "storage_io_allocation"
    # Reservable (random-read) IOPS per datastore name, where it is known better than it is measured.
    reservable_iops: dict[str, float] = field(default_factory=dict)

    def problems(self, path: str) -> list[Problem]:
        found = [
            *_positive(self.latency_threshold_ms, f"{path}.latency_threshold_ms"),
            *_number(self.gamma, f"{path}.gamma", low=0, high=1),
            *_positive(self.queue_depth_min, f"{path}.queue_depth_min"),
            *_positive(self.queue_depth_max, f"{path}.queue_depth_max"),
            *_number(self.hysteresis_pct, f"{path}.hysteresis_pct", low=0, high=100),
            *_number(self.max_changes_per_run, f"{path}.max_changes_per_run", low=0),
            *_positive(self.charge_chunk_kb, f"{path}.charge_chunk_kb"),
        ]
        if (
            not _number(self.queue_depth_min, "")
            and not _number(self.queue_depth_max, "")
            and self.queue_depth_max < self.queue_depth_min
        ):
            found.append(Problem(f"{path}.queue_depth_max", "must not be below queue_depth_min"))
        for name, iops in self.reservable_iops.items():
            found += _positive(iops, f"{path}.reservable_iops.{name}")
        return found


@dataclass(frozen=True)
class RebalanceWindowConfig:
    """When moves may run unattended: a cron start in a time zone, a duration, and a budget per window."""

    enabled: bool = True
    cron: str = "0 2 * * sat"
    timezone: str = "UTC"
    duration: timedelta = timedelta(hours=3)
    max_moves: int = 20
    max_gb: float = 2000.0

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        try:
            CronExpression.parse(self.cron)
        except ValueError as err:
            found.append(Problem(f"{path}.cron", str(err)))
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            found.append(
                Problem(f"{path}.timezone", f"{self.timezone!r} is not an IANA time zone (e.g. Europe/Paris)")
            )
        if self.duration <= timedelta(0):
            found.append(Problem(f"{path}.duration", "must be longer than 0"))
        elif self.duration > timedelta(days=7):
            found.append(Problem(f"{path}.duration", "must be at most 7d"))
        found += _number(self.max_moves, f"{path}.max_moves", low=0)
        found += _number(self.max_gb, f"{path}.max_gb", low=0)
        return found

    def expression(self) -> CronExpression:
        return CronExpression.parse(self.cron)

    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def open_window(self, now: datetime) -> tuple[datetime, datetime] | None:
        """The (start, end) of the window that contains *now* (aware), or None when the window is closed."""
        start = self.expression().previous_at_or_before(now, self.zone())
        if start is None or now >= start + self.duration:
            return None
        return start, start + self.duration

    def next_window(self, now: datetime) -> tuple[datetime, datetime] | None:
        """The (start, end) of the next window starting after *now*."""
        start = self.expression().next_after(now, self.zone())
        return None if start is None else (start, start + self.duration)


@dataclass(frozen=True)
class SchedulesConfig:
    """How often each job runs, in seconds, and the rebalance window."""

    collect_s: int = 20
    inventory_s: int = 300
    model_s: int = 300
    recommend_s: int = 3600
    srp_s: int = 60
    maintenance_s: int = 60
    rebalance: RebalanceWindowConfig = field(default_factory=RebalanceWindowConfig)

    def problems(self, path: str) -> list[Problem]:
        # vCenter keeps real-time (20 s) samples for one hour: collecting less often loses some.
        found = _number(self.collect_s, f"{path}.collect_s", low=5, high=1800)
        for key in ("inventory_s", "model_s", "recommend_s", "srp_s", "maintenance_s"):
            found += _number(getattr(self, key), f"{path}.{key}", low=5, high=7 * 86400)
        found += self.rebalance.problems(f"{path}.rebalance")
        return found


@dataclass(frozen=True)
class StoreConfig:
    """Where Basil keeps its state: a SQLite file (default) or PostgreSQL; a password by env or file."""

    url: str = "sqlite:///var/basil.db"
    password_env: str = ""
    password_file: str = ""

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        scheme = self.url.split(":", 1)[0].lower() if ":" in self.url else ""
        backend = scheme.split("+", 1)[0]
        if not self.url:
            found.append(Problem(f"{path}.url", "must be set"))
        elif backend not in ("sqlite", "postgresql"):
            found.append(
                Problem(
                    f"{path}.url",
                    "must start with sqlite:/// or postgresql:// (SQLite and PostgreSQL are supported)",
                )
            )
        elif scheme not in ("sqlite", "sqlite+pysqlite", "postgresql", "postgresql+psycopg"):
            found.append(
                Problem(
                    f"{path}.url", f"driver {scheme!r} is not supported; use sqlite or postgresql+psycopg"
                )
            )
        elif backend == "postgresql" and urlsplit(self.url).password:
            found.append(
                Problem(f"{path}.url", "holds a password: give it by password_env or password_file instead")
            )
        if backend == "sqlite" and (self.password_env or self.password_file):
            found.append(Problem(path, "SQLite takes no password; remove password_env/password_file"))
        found += _secret_source(self.password_env, self.password_file, path, required=False)
        return found


@dataclass(frozen=True)
class ServerTLSConfig:
    """The service's own certificate: self-signed and kept in ``dir``, or given as cert and key files."""

    self_signed: bool = True
    dir: str = "var/tls"
    cert: str = ""
    key: str = ""

    def problems(self, path: str) -> list[Problem]:
        if self.self_signed and (self.cert or self.key):
            return [
                Problem(path, "self_signed is true, so cert and key would be ignored; set self_signed: false")
            ]
        if not self.self_signed and not (self.cert and self.key):
            return [Problem(path, "give both cert and key, or self_signed: true")]
        if self.self_signed and not self.dir:
            return [Problem(f"{path}.dir", "must be set: where the generated certificate is kept")]
        return []


@dataclass(frozen=True)
class ServerConfig:
    """Where the HTTPS API listens, and the URL vCenter and clients reach it by."""

    listen: str = "127.0.0.1:8443"
    public_url: str = ""
    tls: ServerTLSConfig = field(default_factory=ServerTLSConfig)
    # Plain HTTP instead of HTTPS: only when asked for, and warned about at every start.
    plain_http: bool = False
    # Worker threads of the WSGI server: requests served at once.
    threads: int = 16
    # Connections held at once (idle, slow or busy); one more is answered 503 and closed.
    max_connections: int = 256
    # Deadlines: the TLS handshake and a request's head, a request's body, the wait for the next
    # request on a kept-alive connection. A slow client only ever holds its own connection.
    header_timeout_s: int = 10
    body_timeout_s: int = 30
    idle_timeout_s: int = 30
    # How long a stopping server lets running requests finish before closing their connections.
    shutdown_grace_s: int = 30
    # Reverse proxies in front of the service (e.g. 1 behind vCenter's or a load balancer) whose
    # X-Forwarded-For / -Proto are believed; 0 believes none, so a client cannot forge its address.
    trusted_proxies: int = 0

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        found += _number(self.threads, f"{path}.threads", low=1, high=512)
        found += _number(self.shutdown_grace_s, f"{path}.shutdown_grace_s", low=0, high=3600)
        found += _number(self.max_connections, f"{path}.max_connections", low=1, high=10000)
        for name in ("header_timeout_s", "body_timeout_s", "idle_timeout_s"):
            found += _number(getattr(self, name), f"{path}.{name}", low=1, high=3600)
        found += _number(self.trusted_proxies, f"{path}.trusted_proxies", low=0, high=5)
        try:
            _, port = host_port(self.listen)
            if port is None:
                found.append(Problem(f"{path}.listen", "must name a port (host:port)"))
        except ValueError as err:
            found.append(Problem(f"{path}.listen", str(err)))
        if self.public_url:
            parts = urlsplit(self.public_url)
            if parts.scheme != "https" or not parts.hostname:
                found.append(Problem(f"{path}.public_url", "must be an https:// URL"))
        found += self.tls.problems(f"{path}.tls")
        return found


@dataclass(frozen=True)
class AuthConfig:
    """Who may call the API: API tokens (``basil token create``) and, for the plugin, vCenter sessions."""

    api_tokens: bool = True
    vcenter_sessions: bool = True
    vcenter_session_role: Role = "operator"
    anonymous_read: bool = False
    # A verified token is trusted this long before its hash is checked again (revocation still applies).
    token_cache_s: int = 60
    # vCenter users (as vCenter names them, e.g. VSPHERE.LOCAL\\jane) given a role outright; others get
    # theirs from their vCenter privileges, at most vcenter_session_role.
    vcenter_roles: dict[str, Role] = field(default_factory=dict)
    # A validated vCenter session is trusted this long (keyed by a hash of the token, never the token).
    vcenter_session_cache_s: int = 300

    def problems(self, path: str) -> list[Problem]:
        found = _number(self.token_cache_s, f"{path}.token_cache_s", low=0, high=3600)
        found += _number(self.vcenter_session_cache_s, f"{path}.vcenter_session_cache_s", low=0, high=3600)
        for user in self.vcenter_roles:
            if not user.strip():
                found.append(Problem(f"{path}.vcenter_roles", "a user name must not be empty"))
        if not self.api_tokens and not self.vcenter_sessions:
            found.append(
                Problem(path, "turn on api_tokens or vcenter_sessions, or nobody can change anything")
            )
        return found


@dataclass(frozen=True)
class RetentionConfig:
    """How long each kind of record is kept. Samples: raw 20 s, then 5-minute and hourly rollups."""

    raw: timedelta = timedelta(hours=2)
    five_min: timedelta = timedelta(days=2)
    hourly: timedelta = timedelta(days=90)
    # Hourly rollups older than this keep their means but drop their percentile sketches (the bulk
    # of a rollup row): the workload model reads a day of distributions, charts read means.
    hourly_sketches: timedelta = timedelta(days=14)
    inventory: timedelta = timedelta(days=7)
    models: timedelta = timedelta(days=30)
    recommendations: timedelta = timedelta(days=30)
    plans: timedelta = timedelta(days=180)
    job_runs: timedelta = timedelta(days=14)
    audit: timedelta = timedelta(days=365)

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        for key in (
            "raw",
            "five_min",
            "hourly",
            "hourly_sketches",
            "inventory",
            "models",
            "recommendations",
            "plans",
            "job_runs",
            "audit",
        ):
            if getattr(self, key) <= timedelta(0):
                found.append(Problem(f"{path}.{key}", "must be longer than 0"))
        # The workload model reads a day of history; a pyramid kept upside down would lose it early.
        if self.five_min < self.raw:
            found.append(Problem(f"{path}.five_min", "must be at least as long as raw"))
        if self.hourly < self.five_min:
            found.append(Problem(f"{path}.hourly", "must be at least as long as five_min"))
        # vCenter serves real-time samples for an hour; a re-collected sample must still find its twin.
        if self.raw < timedelta(hours=1):
            found.append(
                Problem(f"{path}.raw", "must be at least 1h (vCenter keeps real-time samples an hour)")
            )
        if not timedelta(days=1) <= self.hourly_sketches <= self.hourly:
            found.append(
                Problem(
                    f"{path}.hourly_sketches", "must lie between 1d (the workload model's window) and hourly"
                )
            )
        return found


@dataclass(frozen=True)
class BasilConfig:
    """The whole of ``basil.yaml``."""

    vcenters: tuple[VCenterConfig, ...] = ()
    pods: tuple[PodConfig, ...] = ()
    srp: SrpConfig = field(default_factory=SrpConfig)
    schedules: SchedulesConfig = field(default_factory=SchedulesConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    devices: dict[str, DeviceConfig] = field(default_factory=dict)  # datastore name -> its device

    def problems(self, path: str = "") -> list[Problem]:
        prefix = f"{path}." if path else ""
        found: list[Problem] = []
        names: dict[str, int] = {}
        for i, vc in enumerate(self.vcenters):
            found += vc.problems(f"{prefix}vcenters[{i}]")
            if vc.name in names:
                found.append(
                    Problem(f"{prefix}vcenters[{i}].name", f"{vc.name!r} is also vcenters[{names[vc.name]}]")
                )
            names.setdefault(vc.name, i)
        pods: dict[str, int] = {}
        claimed: dict[tuple[str, str], str] = {}
        for i, pod in enumerate(self.pods):
            at = f"{prefix}pods[{i}]"
            found += pod.problems(at)
            if pod.name in pods:
                found.append(Problem(f"{at}.name", f"{pod.name!r} is also pods[{pods[pod.name]}]"))
            pods.setdefault(pod.name, i)
            if pod.vcenter and pod.vcenter not in names:
                known = ", ".join(sorted(names)) or "none defined"
                found.append(Problem(f"{at}.vcenter", f"{pod.vcenter!r} is not one of vcenters ({known})"))
            elif pod.vcenter in names and not self.vcenters[names[pod.vcenter]].tags:
                where = f"vcenters[{names[pod.vcenter]}].tags"
                tags_off = f"needs tags, which are off for vCenter {pod.vcenter!r} ({where})"
                if pod.tag:
                    found.append(Problem(f"{at}.tag", tags_off))
                if pod.balance.exclude_tag:
                    found.append(Problem(f"{at}.balance.exclude_tag", tags_off))
            # A datastore balanced by two pods would be pulled two ways.
            for ds in pod.datastores:
                owner = claimed.setdefault((pod.vcenter, ds), pod.name)
                if owner != pod.name:
                    found.append(Problem(f"{at}.datastores", f"{ds!r} is already in pod {owner!r}"))
        found += self.srp.problems(f"{prefix}srp")
        found += self.schedules.problems(f"{prefix}schedules")
        found += self.store.problems(f"{prefix}store")
        found += self.server.problems(f"{prefix}server")
        found += self.auth.problems(f"{prefix}auth")
        found += self.retention.problems(f"{prefix}retention")
        for name, device in sorted(self.devices.items()):
            found += device.problems(f"{prefix}devices.{name}")
            if device.vcenter and device.vcenter not in names:
                found.append(
                    Problem(f"{prefix}devices.{name}.vcenter", f"{device.vcenter!r} is not one of vcenters")
                )
        return found

    def device_of(self, vcenter: str, datastore_name: str) -> DeviceConfig | None:
        """What the configuration says of a datastore's device, if anything."""
        device = self.devices.get(datastore_name)
        if device is None or (device.vcenter and device.vcenter != vcenter):
            return None
        return device

    def validate(self) -> None:
        """Raise one ValidationError listing every problem of the configuration."""
        raise_if_problems(self.problems(), "configuration")

    def vcenter(self, name: str) -> VCenterConfig:
        for vc in self.vcenters:
            if vc.name == name:
                return vc
        raise KeyError(name)

    def pods_of(self, vcenter: str) -> tuple[PodConfig, ...]:
        return tuple(p for p in self.pods if p.vcenter == vcenter)


def secret_sources(config: BasilConfig) -> Mapping[str, tuple[str, str]]:
    """Every secret the configuration refers to: field path -> (password_env, password_file)."""
    found: dict[str, tuple[str, str]] = {}
    for i, vc in enumerate(config.vcenters):
        found[f"vcenters[{i}]"] = (vc.password_env, vc.password_file)
    if config.store.password_env or config.store.password_file:
        found["store"] = (config.store.password_env, config.store.password_file)
    return found
