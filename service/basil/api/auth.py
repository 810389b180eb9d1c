"""Who is calling: API tokens (``Authorization: Bearer``) and vSphere Client sessions, and their roles.

API tokens are verified through the store's token repository (a salted PBKDF2 digest); a verified
token is remembered for ``auth.token_cache_s`` under a SHA-256 of the token (never the token itself).
A later use re-reads the token's row only when the store's token table has changed since the last
read (a revocation through this service, which is thus refused at once) or when that read is more than
``TOKEN_RECHECK_S`` old (a revocation by ``basil token revoke`` from another process); expiry is checked
on every use. Between those reads a request's authentication is a hash and a dict lookup.

The vSphere Client plugin sends the user's vCenter session token (``X-Basil-VC-Session``) and the
vCenter it belongs to (``X-Basil-VC-Server``). The token is validated by the clone-ticket flow
(:mod:`basil.vcenter.client_session`): vCenter itself says who the user is and which privileges the
session holds. The role is the one ``auth.vcenter_roles`` names for that user, else the highest role
whose vCenter privileges the session holds on the root folder, at most ``auth.vcenter_session_role``.
The result is cached for ``auth.vcenter_session_cache_s`` under a SHA-256 of the server and token.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from basil.config import AuthConfig, VCenterConfig
from basil.config.schema import host_port
from basil.errors import AuthenticationError, BasilError, PermissionDeniedError
from basil.store import Store
from basil.store.models import ApiTokenRow
from basil.store.tokens import TokenInfo, token_status, verify_token
from basil.vcenter.client_session import ClientSession
from basil.vcenter.connection import ConnectionParams, TLSOptions

log = logging.getLogger(__name__)

ROLE_RANK = {"viewer": 1, "operator": 2, "admin": 3}

# What a vCenter session must hold on the root folder for each role. Viewer: any logged-in user who can
# see the inventory. Operator: whoever may Storage vMotion disks and change their IO allocation, which
# is what Basil's plans and pools do. Admin: whoever may also change vCenter's own settings.
ROLE_PRIVILEGES: Mapping[str, tuple[str, ...]] = {
    "viewer": ("System.View",),
    "operator": (
        "System.View",
        "Resource.HotMigrate",
        "Resource.ColdMigrate",
        "Datastore.AllocateSpace",
        "VirtualMachine.Config.Resource",
    ),
    "admin": (
        "System.View",
        "Resource.HotMigrate",
        "Resource.ColdMigrate",
        "Datastore.AllocateSpace",
        "VirtualMachine.Config.Resource",
        "Global.Settings",
    ),
}
ALL_PRIVILEGES: tuple[str, ...] = tuple(dict.fromkeys(p for ps in ROLE_PRIVILEGES.values() for p in ps))

TOKEN_HEADER = "Authorization"
VC_SESSION_HEADER = "X-Basil-VC-Session"
VC_SERVER_HEADER = "X-Basil-VC-Server"
CREDENTIAL_HEADERS = (TOKEN_HEADER, VC_SESSION_HEADER, VC_SERVER_HEADER)
REFUSED_SESSION_S = 30.0
# Refused vCenter sessions a source address may cause before it must wait: a burst of REFUSALS_BURST,
# then one more every REFUSAL_REFILL_S. Each costs a clone-ticket call to vCenter; a known session, a
# cached one and an API token cost nothing here.
REFUSALS_BURST = 10
REFUSAL_REFILL_S = 6.0
# At most this long between two reads of a cached API token's row: how long a token revoked by another
# process (``basil token revoke`` on the same store) may still be accepted here. A revocation or any
# other change of the token table made through this service is seen at the next request.
TOKEN_RECHECK_S = 1.0

SessionValidator = Callable[[ConnectionParams, str, Sequence[str]], ClientSession]


class TooManyRefusalsError(AuthenticationError):
    """A source address whose vCenter sessions vCenter has refused too often, for now (429)."""

    http_status = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class _RefusalBudget:
    """Per source address, a bucket of REFUSALS_BURST refusals refilled one per REFUSAL_REFILL_S."""

    def __init__(self, clock: Callable[[], float], size: int = 4096) -> None:
        self._clock = clock
        self._size = size
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # source -> (tokens, at)

    def _level(self, source: str, now: float) -> float:
        tokens, at = self._buckets.get(source, (float(REFUSALS_BURST), now))
        return min(float(REFUSALS_BURST), tokens + (now - at) / REFUSAL_REFILL_S)

    def wait_s(self, source: str) -> float:
        """0 when *source* may have one more session checked, else the seconds until it may."""
        with self._lock:
            level = self._level(source, self._clock())
            return 0.0 if level >= 1 else (1 - level) * REFUSAL_REFILL_S

    def spend(self, source: str) -> None:
        with self._lock:
            now = self._clock()
            self._buckets[source] = (self._level(source, now) - 1, now)
            self._buckets.move_to_end(source)
            while len(self._buckets) > self._size:
                self._buckets.popitem(last=False)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a token's name or a vCenter user, the role, and how it authenticated."""

    name: str
    role: str
    via: str  # "token", "vcenter" or "anonymous"
    # A token's lookup id, or the vCenter's configured name: never a secret.
    reference: str = ""

    def allows(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


@dataclass(frozen=True)
class _CheckedToken:
    """A verified token's info as last read from the store, the token table's generation then, and when."""

    info: TokenInfo
    generation: tuple[int, ...]
    checked_at: float


K = TypeVar("K")
V = TypeVar("V")


class _TTLCache(Generic[K, V]):
    """A small thread-safe map whose entries expire; the oldest go first when it is full."""

    def __init__(self, ttl_s: float, size: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self._clock = clock
        self._lock = threading.Lock()
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            if self._clock() - item[0] >= self.ttl_s:
                del self._items[key]
                return None
            return item[1]

    def put(self, key: K, value: V) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            self._items[key] = (self._clock(), value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def update(self, key: K, value: V) -> None:
        """Replace the value of a present entry, keeping its age (a missing or expired one stays out)."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items[key] = (item[0], value)

    def discard_where(self, keep: Callable[[V], bool]) -> None:
        with self._lock:
            for key in [k for k, (_, v) in self._items.items() if not keep(v)]:
                del self._items[key]

    def __len__(self) -> int:
        return len(self._items)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def vcenter_params(vc: VCenterConfig, timeout_s: float = 20.0) -> ConnectionParams:
    """Server and TLS trust of a configured vCenter, without its credentials (for session validation)."""
    tls = TLSOptions(
        verify=vc.tls.verify,
        ca_bundle=vc.tls.ca_bundle or None,
        thumbprint=vc.tls.thumbprint or None,
    )
    return ConnectionParams(server=vc.server, tls=tls, timeout_s=timeout_s, retries=0)


class Authenticator:
    """Turns request credentials into a :class:`Principal`, or raises AuthenticationError (401)."""

    def __init__(
        self,
        config: AuthConfig,
        vcenters: Sequence[VCenterConfig],
        store: Store,
        *,
        session_validator: SessionValidator | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_session_validation: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self._on_validation = on_session_validation or (lambda outcome: None)
        self.vcenters = tuple(vcenters)
        self.store = store
        if session_validator is None:
            # Imported here: pyVmomi is loaded only by a service that validates vCenter sessions.
            from basil.vcenter.client_session import validate_client_session  # noqa: PLC0415

            session_validator = validate_client_session
        self._validate_session = session_validator
        self._clock = clock
        self._tokens: _TTLCache[str, _CheckedToken] = _TTLCache(config.token_cache_s, clock=clock)
        self._sessions: _TTLCache[str, Principal] = _TTLCache(config.vcenter_session_cache_s, clock=clock)
        # A refused session token is refused again without asking vCenter for a while, so that a client
        # retrying a stale token (or guessing) does not turn into a stream of clone-ticket requests.
        self._refused: _TTLCache[str, str] = _TTLCache(REFUSED_SESSION_S, clock=clock)
        self._refusals = _RefusalBudget(clock)
        self._key_locks: dict[str, threading.Lock] = {}
        self._key_locks_guard = threading.Lock()
        self.session_validations = 0  # vCenter round trips made (for metrics and tests)

    # --- entry point -------------------------------------------------------------------------------

    def authenticate(self, headers: Mapping[str, str], source: str = "") -> Principal | None:
        """The caller named by *headers* (sent from the address *source*), or None when the request
        carries no credentials at all."""
        authorization = headers.get(TOKEN_HEADER, "")
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthenticationError("the Authorization header must read 'Bearer <API token>'")
            if not self.config.api_tokens:
                raise AuthenticationError("API tokens are turned off on this service (auth.api_tokens)")
            return self.token_principal(token.strip())
        session = headers.get(VC_SESSION_HEADER, "")
        if session:
            if not self.config.vcenter_sessions:
                raise AuthenticationError(
                    "vCenter sessions are turned off on this service (auth.vcenter_sessions)"
                )
            return self.vcenter_principal(headers.get(VC_SERVER_HEADER, ""), session.strip(), source)
        return None

    # --- API tokens --------------------------------------------------------------------------------

    def token_principal(self, token: str) -> Principal:
        key = _digest(token)
        cached = self._tokens.get(key)
        if cached is not None:
            generation = self.store.generation(ApiTokenRow.__tablename__)
            current: TokenInfo | None = cached.info
            if generation != cached.generation or self._clock() - cached.checked_at >= TOKEN_RECHECK_S:
                # The generation is taken before the read: a change committed meanwhile moves it again.
                with self.store.read_session() as session:
                    current = token_status(session, cached.info.lookup_id)
                if current is not None:
                    self._tokens.update(key, _CheckedToken(current, generation, self._clock()))
            if current is None or not current.active:
                self.forget_token(cached.info.lookup_id)
                raise AuthenticationError("invalid, expired or revoked API token")
            return Principal(current.name, current.role, "token", current.lookup_id)
        generation = self.store.generation(ApiTokenRow.__tablename__)
        with self.store.session() as session:
            info = verify_token(session, token)
        self._tokens.put(key, _CheckedToken(info, generation, self._clock()))
        return Principal(info.name, info.role, "token", info.lookup_id)

    def forget_token(self, lookup_id: str) -> None:
        """Drop a token from the cache at once (after a revocation through the API)."""
        self._tokens.discard_where(lambda checked: checked.info.lookup_id != lookup_id)

    # --- vCenter sessions --------------------------------------------------------------------------

    def find_vcenter(self, server: str) -> VCenterConfig:
        """The configured vCenter the plugin names: by name, by ``host:port`` or by host alone."""
        wanted = server.strip().lower()
        if not wanted:
            if len(self.vcenters) == 1:
                return self.vcenters[0]
            raise AuthenticationError(f"{VC_SERVER_HEADER} is required: this service knows several vCenters")
        for vc in self.vcenters:
            if wanted == vc.name.lower() or wanted == vc.server.lower():
                return vc
        for vc in self.vcenters:
            try:
                want_host, want_port = host_port(wanted)
                host, port = host_port(vc.server.lower())
            except ValueError:
                continue
            if want_host == host and (want_port is None or want_port == (port or 443)):
                return vc
        raise AuthenticationError(f"{server!r} is not a vCenter this service is configured for")

    def vcenter_principal(self, server: str, token: str, source: str = "") -> Principal:
        vc = self.find_vcenter(server)
        key = _digest(vc.name, token)
        cached = self._sessions.get(key)
        if cached is not None:
            return cached
        refused = self._refused.get(key)
        if refused is not None:
            raise AuthenticationError(refused)
        wait_s = self._refusals.wait_s(source)
        if wait_s > 0:
            self._on_validation("rate_limited")
            raise TooManyRefusalsError(
                f"too many refused vCenter sessions from {source or 'this address'}; "
                f"retry in {math.ceil(wait_s)} s",
                wait_s,
            )
        # One validation per token at a time: the plugin fires several requests at once on page load.
        try:
            with self._lock_for(key):
                cached = self._sessions.get(key)
                if cached is not None:
                    return cached
                try:
                    principal = self._validated(vc, token)
                except AuthenticationError as err:
                    self._refused.put(key, err.message)
                    self._refusals.spend(source)
                    raise
                self._sessions.put(key, principal)
        finally:
            with self._key_locks_guard:
                self._key_locks.pop(key, None)
        return principal

    def _validated(self, vc: VCenterConfig, token: str) -> Principal:
        self.session_validations += 1
        try:
            found = self._validate_session(vcenter_params(vc), token, ALL_PRIVILEGES)
            principal = Principal(found.user, self._role_of(found), "vcenter", vc.name)
        except (AuthenticationError, PermissionDeniedError):
            self._on_validation("refused")
            raise
        except BasilError:
            self._on_validation("error")
            raise
        self._on_validation("ok")
        log.info("vCenter session of %s on %s validated: role %s", found.user, vc.name, principal.role)
        return principal

    def _lock_for(self, key: str) -> threading.Lock:
        with self._key_locks_guard:
            return self._key_locks.setdefault(key, threading.Lock())

    def _role_of(self, session: ClientSession) -> str:
        mapped = {user.lower(): role for user, role in self.config.vcenter_roles.items()}
        if session.user.lower() in mapped:
            return mapped[session.user.lower()]
        best = ""
        for role in ("viewer", "operator", "admin"):
            if set(ROLE_PRIVILEGES[role]) <= session.granted:
                best = role
        if not best:
            raise PermissionDeniedError(
                f"vCenter user {session.user} may not even view the inventory (System.View): no Basil role"
            )
        cap = self.config.vcenter_session_role
        return best if ROLE_RANK[best] <= ROLE_RANK[cap] else cap

    @property
    def cached_sessions(self) -> int:
        return len(self._sessions)
