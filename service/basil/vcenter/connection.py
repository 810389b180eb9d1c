"""One authenticated, self-healing SOAP session to a vCenter, and the TLS rules every door to it follows.

Every SOAP call Basil makes goes through :class:`VCenterConnection`'s stub, which counts requests,
logs in again when vCenter says ``NotAuthenticated``, retries transport failures of read-only calls
with exponential back-off, and turns an untrusted certificate into :class:`VCenterTLSError`. The
password is held only here, never put in a log line, a ``repr`` or an error message.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import re
import socket
import ssl
import threading
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from xml.parsers.expat import ExpatError

import requests
import urllib3
from requests.adapters import HTTPAdapter

from basil.errors import Problem, raise_if_problems
from basil.vcenter._vmomi import SoapAdapter, VmomiSupport, vim, vmodl
from basil.vcenter.errors import (
    VCenterAuthenticationError,
    VCenterConnectionError,
    VCenterError,
    VCenterTLSError,
    error_from_fault,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

_HEX = re.compile(r"^[0-9a-f]+$")

# Calls that only read, so a transport failure can be retried without doing anything twice. A call
# that changes vCenter (a *_Task, Login, CreateFilter, ...) is retried only when vCenter refused it
# with NotAuthenticated, which guarantees it was not executed.
_READ_ONLY_METHODS = frozenset(
    {
        "Fetch",
        "RetrieveServiceContent",
        "RetrieveProperties",
        "RetrievePropertiesEx",
        "ContinueRetrievePropertiesEx",
        "WaitForUpdatesEx",
        "QueryPerf",
        "QueryPerfCounter",
        "QueryPerfCounterByLevel",
        "QueryAvailablePerfMetric",
        "QueryOptions",
        "CurrentTime",
    }
)


def normalize_thumbprint(thumbprint: str) -> str:
    """``AA:BB:..`` or ``aabb..`` -> lower-case hex without separators."""
    return thumbprint.replace(":", "").replace(" ", "").lower()


def certificate_thumbprint(der: bytes, length: int = 64) -> str:
    """SHA-256 (64 hex digits) or SHA-1 (40) thumbprint of a DER certificate, lower-case hex."""
    digest = hashlib.sha1 if length == 40 else hashlib.sha256
    return digest(der).hexdigest()


@dataclass(frozen=True)
class TLSOptions:
    """How the server's certificate is trusted.

    Default: verified against the system CA store with host-name checking. ``ca_bundle``: verified
    against that PEM file instead. ``thumbprint``: the certificate must have exactly this SHA-1 or
    SHA-256 thumbprint (the way vSphere clients pin a self-signed vCenter). ``verify=False`` trusts
    anything and logs a warning at each connection; it has to be asked for explicitly.
    """

    verify: bool = True
    ca_bundle: str | None = None
    thumbprint: str | None = None

    def validate(self, where: str = "tls") -> list[Problem]:
        problems: list[Problem] = []
        if self.ca_bundle is not None and self.thumbprint is not None:
            problems.append(Problem(f"{where}.thumbprint", "give either ca_bundle or thumbprint, not both"))
        if not self.verify and self.ca_bundle is not None:
            problems.append(Problem(f"{where}.ca_bundle", "a CA bundle makes no sense with verify off"))
        if self.ca_bundle is not None and not Path(self.ca_bundle).is_file():
            problems.append(Problem(f"{where}.ca_bundle", f"no such file: {self.ca_bundle}"))
        if self.thumbprint is not None:
            tp = normalize_thumbprint(self.thumbprint)
            if len(tp) not in (40, 64) or not _HEX.match(tp):
                problems.append(
                    Problem(
                        f"{where}.thumbprint",
                        "must be a SHA-1 (40 hex digits) or SHA-256 (64 hex digits) thumbprint, "
                        "colons allowed",
                    )
                )
        return problems

    @property
    def pinned(self) -> str | None:
        return normalize_thumbprint(self.thumbprint) if self.thumbprint else None

    def ssl_context(self) -> ssl.SSLContext:
        """The client context: CA-verifying, or not verifying when pinned (the pin is checked after)."""
        if self.thumbprint is not None or not self.verify:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        return ssl.create_default_context(cafile=self.ca_bundle)


@dataclass(frozen=True)
class ConnectionParams:
    """Where a vCenter is and how to log in: user and password, or an existing SOAP session cookie."""

    server: str  # host name or address, with ":port" when not 443
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    session_cookie: str | None = field(default=None, repr=False)  # vmware_soap_session value
    tls: TLSOptions = field(default_factory=TLSOptions)
    retries: int = 3
    backoff_s: float = 0.5
    timeout_s: float = 120.0
    keepalive_s: float = 600.0  # vCenter drops idle sessions after 30 minutes by default
    pool_size: int = 8

    def validate(self) -> list[Problem]:
        problems: list[Problem] = []
        try:
            host, port = self.host_port()
            if not host:
                problems.append(Problem("server", "must name a host"))
            if not 0 < port < 65536:
                problems.append(Problem("server", f"port {port} is out of range"))
        except ValueError as err:
            problems.append(Problem("server", str(err)))
        if self.session_cookie is None:
            if not self.user:
                problems.append(Problem("user", "required (or give a session cookie)"))
            if not self.password:
                problems.append(Problem("password", "required (or give a session cookie)"))
        if self.retries < 0:
            problems.append(Problem("retries", f"must be >= 0, got {self.retries}"))
        if self.backoff_s < 0:
            problems.append(Problem("backoff_s", f"must be >= 0, got {self.backoff_s}"))
        if self.timeout_s <= 0:
            problems.append(Problem("timeout_s", f"must be > 0, got {self.timeout_s}"))
        if self.keepalive_s < 0:
            problems.append(Problem("keepalive_s", f"must be >= 0 (0 = off), got {self.keepalive_s}"))
        if self.pool_size < 1:
            problems.append(Problem("pool_size", f"must be >= 1, got {self.pool_size}"))
        problems.extend(self.tls.validate())
        return problems

    def host_port(self) -> tuple[str, int]:
        server = self.server.strip()
        for prefix in ("https://", "http://"):
            if server.startswith(prefix):
                raise ValueError("give a host name or host:port, not a URL")
        if server.startswith("["):  # [v6addr]:port
            host, _, rest = server[1:].partition("]")
            return host, int(rest[1:]) if rest.startswith(":") else 443
        if server.count(":") == 1:
            host, port = server.split(":")
            if not port.isdigit():
                raise ValueError(f"port {port!r} is not a number")
            return host, int(port)
        return server, 443


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that accepts the server only if its certificate has the pinned thumbprint.

    pyVmomi's own pinning only runs after CA verification has failed and then switches the shared
    SSL context to CERT_NONE for every later connection; checking the pin on every handshake here
    keeps it in force for the whole pool.
    """

    def __init__(self, *args: Any, pin: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pin = pin

    def connect(self) -> None:
        super().connect()
        der = self.sock.getpeercert(binary_form=True) if self.sock is not None else None
        if der is None or certificate_thumbprint(der, len(self._pin)) != self._pin:
            self.close()
            raise VCenterTLSError(
                f"the certificate of {self.host}:{self.port} does not match the pinned thumbprint"
            )


class _FingerprintAdapter(HTTPAdapter):
    """A requests adapter that checks the certificate's thumbprint (urllib3's assert_fingerprint)."""

    def __init__(self, fingerprint: str) -> None:
        self._fingerprint = fingerprint
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["assert_fingerprint"] = self._fingerprint
        super().init_poolmanager(*args, **kwargs)


class _PinnedSession(requests.Session):
    """A requests session whose HTTPS adapter checks the pinned thumbprint, and keeps doing so.

    The Automation SDK mounts plain adapters of its own on the session it is given (to size its
    pool), which would drop the pin and leave an unverified connection (urllib3 warns about each
    request): HTTPS adapters mounted later are refused and the pinned one stays.
    """

    def __init__(self, fingerprint: str) -> None:
        super().__init__()
        self.verify = False  # the pin replaces CA verification (a pinned vCenter is self-signed)
        super().mount("https://", _FingerprintAdapter(fingerprint))

    def mount(self, prefix: str, adapter: Any) -> None:
        if prefix.lower().startswith("https"):
            log.debug("keeping the pinned HTTPS adapter instead of a %s", type(adapter).__name__)
            return
        super().mount(prefix, adapter)


def pinned_or_plain_session(tls: TLSOptions) -> requests.Session:
    """A requests session that trusts the server as *tls* says (pin, CA bundle, system CAs or, asked
    for explicitly, nothing)."""
    session = _PinnedSession(tls.pinned) if tls.pinned is not None else requests.Session()
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override session.verify, which would
    # silently swap the trust chosen here; the SOAP side ignores the environment too.
    session.trust_env = False
    if tls.pinned is None:
        if not tls.verify:
            session.verify = False
            # Asked for explicitly and already warned about once per connection; urllib3 would
            # otherwise warn on every request.
            warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        elif tls.ca_bundle is not None:
            session.verify = tls.ca_bundle
    return session


class _ResilientStub(SoapAdapter.StubAdapterBase):  # type: ignore[misc]
    """The stub all managed objects are bound to: counting, re-login, bounded retries."""

    def __init__(self, soap: Any, owner: VCenterConnection) -> None:
        SoapAdapter.StubAdapterBase.__init__(self, version=soap.version)
        self._soap = soap
        self._owner = owner

    def InvokeMethod(self, mo: Any, info: Any, args: Any) -> Any:  # noqa: N802 - pyVmomi's name
        owner = self._owner
        params = owner.params
        method = getattr(info, "wsdlName", "?")
        attempt = 0
        relogged = False
        while True:
            generation = owner._generation
            owner._count_request()
            try:
                status, obj = self._soap.InvokeMethod(mo, info, args, self)
            except ssl.SSLCertVerificationError as err:
                raise VCenterTLSError(
                    f"the certificate of {params.server} is not trusted: {err.verify_message}"
                ) from None
            except (OSError, http.client.HTTPException, ExpatError) as err:
                safe = method in _READ_ONLY_METHODS or isinstance(err, ConnectionRefusedError)
                if not safe or attempt >= params.retries:
                    raise VCenterConnectionError(
                        f"{method} on {params.server} failed after {attempt + 1} attempt(s): "
                        f"{type(err).__name__}: {err}"
                    ) from None
                attempt += 1
                delay = params.backoff_s * 2 ** (attempt - 1)
                log.info("%s on %s: %s; retry %d in %.1fs", method, params.server, err, attempt, delay)
                time.sleep(delay)
                continue
            if status == 200:
                return obj
            if isinstance(obj, vim.fault.NotAuthenticated) and not relogged:
                relogged = True
                owner._relogin(generation)
                continue
            if isinstance(obj, vmodl.fault.HostCommunication) and attempt < params.retries:
                attempt += 1
                time.sleep(params.backoff_s * 2 ** (attempt - 1))
                continue
            raise obj


class VCenterConnection:
    """A logged-in session to one vCenter: the service content, the stub, and nothing more.

    Use as a context manager, or call :meth:`connect` and :meth:`close`. Managed objects obtained
    through it stay bound to its stub, so every call they make is counted, retried and re-logged-in.
    """

    def __init__(self, params: ConnectionParams) -> None:
        raise_if_problems(params.validate(), "vCenter connection")
        self.params = params
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._requests = 0
        self._generation = 0
        self._soap: Any = None
        self._stub: Any = None
        self._content: Any = None
        self._keepalive_stop = threading.Event()
        self._keepalive_thread: threading.Thread | None = None
        self._owns_session = params.session_cookie is None

    # --- life cycle -------------------------------------------------------------------------

    def connect(self) -> VCenterConnection:
        if self._stub is not None:
            return self
        params = self.params
        host, port = params.host_port()
        if not params.tls.verify and params.tls.pinned is None:
            log.warning(
                "TLS certificate verification is OFF for %s (asked for): the connection can be intercepted",
                params.server,
            )
        version = self._negotiate_version(host, port)
        soap = SoapAdapter.SoapStubAdapter(
            host=host,
            port=port,
            version=version,
            sslContext=params.tls.ssl_context(),
            poolSize=params.pool_size,
            httpConnectionTimeout=params.timeout_s,
            sessionId=params.session_cookie,
        )
        if params.tls.pinned is not None:
            soap.scheme = partial(_PinnedHTTPSConnection, pin=params.tls.pinned)
        self._soap = soap
        self._stub = _ResilientStub(soap, self)
        try:
            # The content is fetched through the raw stub: it needs no session, and a failure here
            # must not trigger a login attempt.
            si = vim.ServiceInstance("ServiceInstance", soap)
            self._count_request()
            self._content = self._call_raw(si.RetrieveContent, "reading the service content")
            if params.session_cookie is None:
                self._login()
            else:
                session = self._call_raw(
                    lambda: self._bind(self._content.sessionManager, soap).currentSession,
                    "checking the session",
                )
                if session is None:
                    raise VCenterAuthenticationError(
                        f"the session given for {params.server} is not (or no longer) logged in"
                    )
        except BaseException:
            soap.DropConnections()
            self._soap = self._stub = self._content = None
            raise
        # The content again, now through the resilient stub, so that every managed object reference
        # in it (and everything reached from them) is bound to that stub.
        self._content = self._call_raw(
            vim.ServiceInstance("ServiceInstance", self._stub).RetrieveContent, "reading the service content"
        )
        if params.keepalive_s > 0:
            self._keepalive_stop.clear()
            self._keepalive_thread = threading.Thread(
                target=self._keepalive, name=f"basil-vc-keepalive-{params.server}", daemon=True
            )
            self._keepalive_thread.start()
        log.info("connected to %s (API %s) as %s", params.server, version, params.user or "<session>")
        return self

    def close(self) -> None:
        """Log out (when Basil created the session) and drop every pooled connection."""
        self._keepalive_stop.set()
        if self._keepalive_thread is not None:
            self._keepalive_thread.join(timeout=5)
            self._keepalive_thread = None
        soap = self._soap
        if soap is None:
            return
        if self._owns_session and self._content is not None:
            try:
                self._count_request()
                self._bind(self._content.sessionManager, soap).Logout()
            except (vmodl.MethodFault, OSError, http.client.HTTPException, VCenterError) as err:
                log.info("logout from %s: %s", self.params.server, type(err).__name__)
        soap.DropConnections()
        self._soap = self._stub = self._content = None
        log.info("disconnected from %s", self.params.server)

    def __enter__(self) -> VCenterConnection:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what callers use ---------------------------------------------------------------------

    @property
    def content(self) -> Any:
        """``vim.ServiceInstanceContent`` bound to the resilient stub."""
        if self._content is None:
            raise VCenterConnectionError(f"not connected to {self.params.server}")
        return self._content

    @property
    def stub(self) -> Any:
        if self._stub is None:
            raise VCenterConnectionError(f"not connected to {self.params.server}")
        return self._stub

    @property
    def soap_adapter(self) -> Any:
        """The underlying pyVmomi SoapStubAdapter (its pool and TLS rules), for raw requests.

        Calls made on it directly are neither retried nor re-logged-in: a caller must fall back to
        the managed objects of :attr:`content` for anything but a plain success.
        """
        if self._soap is None:
            raise VCenterConnectionError(f"not connected to {self.params.server}")
        return self._soap

    def count_request(self) -> None:
        """Count a request sent outside the stub (see :attr:`soap_adapter`)."""
        self._count_request()

    @property
    def generation(self) -> int:
        """How many times this connection has logged in again since :meth:`connect` (0 at first).

        Whatever vCenter binds to a session (PropertyCollectors and their filters, container
        views, an update version) is gone after a re-login; its holders compare this number with
        the one they were built under and build again.
        """
        return self._generation

    @property
    def requests_made(self) -> int:
        """SOAP requests sent so far (including retries and logins)."""
        return self._requests

    @property
    def server(self) -> str:
        return self.params.server

    @property
    def instance_uuid(self) -> str:
        """vCenter's instance UUID (``content.about.instanceUuid``): what the vSphere Client calls the
        server GUID in its object ids (``urn:vmomi:Datastore:datastore-42:<uuid>``); read with the
        service content at connect, so asking costs no request."""
        return str(getattr(self.content.about, "instanceUuid", None) or "")

    def ref(self, kind: type[T], moid: str) -> T:
        """A managed object reference of type *kind* (e.g. ``vim.VirtualMachine``) bound to this session."""
        return kind(moid, self.stub)  # type: ignore[call-arg]

    def http_session(self) -> requests.Session:
        """A requests session with the same TLS rules, for the vSphere Automation (REST/JSON-RPC) API."""
        return pinned_or_plain_session(self.params.tls)

    @contextmanager
    def translate(self, doing: str) -> Iterator[None]:
        """Turn a vSphere fault raised inside the block into a typed :class:`VCenterError`."""
        try:
            yield
        except vmodl.MethodFault as fault:
            raise error_from_fault(fault, doing) from None

    # --- internals ----------------------------------------------------------------------------

    def _count_request(self) -> None:
        with self._count_lock:
            self._requests += 1

    def _bind(self, mo: Any, stub: Any) -> Any:
        return type(mo)(mo._moId, stub)

    def _call_raw(self, fn: Callable[[], T], doing: str) -> T:
        """A call on the raw stub, with transport and TLS failures mapped to typed errors."""
        server = self.params.server
        try:
            return fn()
        except VCenterError:
            raise
        except ssl.SSLCertVerificationError as err:
            raise VCenterTLSError(
                f"{doing}: the certificate of {server} is not trusted: {err.verify_message}"
            ) from None
        except vmodl.MethodFault as fault:
            raise error_from_fault(fault, f"{doing} on {server}") from None
        except (OSError, http.client.HTTPException, ExpatError) as err:
            raise VCenterConnectionError(f"{doing} on {server}: {type(err).__name__}: {err}") from None

    def _login(self) -> None:
        params = self.params
        sm = self._bind(self._content.sessionManager, self._soap)
        self._count_request()
        # The message of InvalidLogin is vCenter's own and does not echo the password.
        self._call_raw(
            lambda: sm.Login(userName=params.user, password=params.password),
            f"logging in as {params.user}",
        )

    def _relogin(self, seen_generation: int) -> None:
        """Log in again after NotAuthenticated; threads that saw the same dead session log in once."""
        with self._lock:
            if self._generation != seen_generation:
                return  # another thread already renewed the session
            if not self._owns_session:
                raise VCenterAuthenticationError(
                    f"the session given for {self.params.server} expired and there is no password "
                    "to log in again"
                )
            log.warning("session on %s lost; logging in again", self.params.server)
            self._login()
            self._generation += 1

    def _keepalive(self) -> None:
        interval = self.params.keepalive_s
        while not self._keepalive_stop.wait(interval):
            try:
                si = vim.ServiceInstance("ServiceInstance", self._stub)
                si.CurrentTime()
            except (VCenterError, vmodl.MethodFault) as err:
                log.warning("keep-alive on %s failed: %s", self.params.server, err)

    def _negotiate_version(self, host: str, port: int) -> str:
        """The newest vim25 API version both pyVmomi and the server speak (vimServiceVersions.xml)."""
        conn = self._http_connection(host, port)
        try:
            try:
                self._count_request()
                conn.request("GET", "/sdk/vimServiceVersions.xml")
                resp = conn.getresponse()
                body = resp.read()
            except VCenterError:
                raise
            except ssl.SSLCertVerificationError as err:
                raise VCenterTLSError(
                    f"the certificate of {self.params.server} is not trusted: {err.verify_message}"
                ) from None
            except (OSError, http.client.HTTPException) as err:
                raise VCenterConnectionError(
                    f"cannot reach {self.params.server}: {type(err).__name__}: {err}"
                ) from None
        finally:
            conn.close()
        server_versions: set[str] = set()
        if resp.status == 200:
            try:
                root = ET.fromstring(body)
            except ET.ParseError:
                root = None
            if root is not None:
                for ns in root.iter("namespace"):
                    if (ns.findtext("name") or "") == "urn:vim25":
                        server_versions.update((v.text or "").strip() for v in ns.iter("version"))
        for candidate in VmomiSupport.GetServiceVersions("vim25"):
            if VmomiSupport.GetVersionNamespace(candidate).split("/", 1)[-1] in server_versions:
                return str(candidate)
        log.info("%s did not list a known vim25 version; using vSphere 6.0's", self.params.server)
        return "vim.version.version10"

    def _http_connection(self, host: str, port: int) -> http.client.HTTPSConnection:
        tls = self.params.tls
        if tls.pinned is not None:
            return _PinnedHTTPSConnection(
                host, port, context=tls.ssl_context(), timeout=self.params.timeout_s, pin=tls.pinned
            )
        return http.client.HTTPSConnection(
            host, port, context=tls.ssl_context(), timeout=self.params.timeout_s
        )


def fetch_server_thumbprint(server: str, timeout_s: float = 10.0, length: int = 64) -> str:
    """The SHA-256 (or SHA-1 with length=40) thumbprint of the certificate *server* presents.

    For an administrator who wants to pin a self-signed vCenter: compare it out of band first.
    """
    try:
        host, port = ConnectionParams(server, session_cookie="-").host_port()
    except ValueError as err:
        raise VCenterConnectionError(f"{server}: {err}") from None
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as err:
        raise VCenterConnectionError(f"cannot reach {server}: {err.strerror or err}") from None
    try:
        with sock, ctx.wrap_socket(sock, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    except ssl.SSLError as err:
        # A plain-HTTP port answers the ClientHello with an HTTP error page, which the TLS layer
        # reads as a record of an unknown version.
        if err.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "UNKNOWN_PROTOCOL", "HTTP_REQUEST"):
            raise VCenterTLSError(f"{server} does not speak TLS on port {port} (plain HTTP?)") from None
        raise VCenterTLSError(f"no TLS handshake with {server}: {err.reason or err}") from None
    except OSError as err:
        raise VCenterConnectionError(f"{server} closed the connection: {err.strerror or err}") from None
    if der is None:
        raise VCenterTLSError(f"{server} presented no certificate")
    return certificate_thumbprint(der, length)
