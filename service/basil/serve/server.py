"""``basil serve``: one process holding the API's HTTP front end, its worker threads and the service's
one scheduler.

The order matters. The store lock comes first (a second ``basil serve`` on the same store stops
there, before it could start a second scheduler); then the listening socket (a port in use stops
the start before anything runs); then the service starts (migrations, vCenter connections, plans
resumed, the APScheduler scheduler); then requests are served. SIGTERM or SIGINT stops it the other
way round: the socket stops accepting, running requests get ``server.shutdown_grace_s`` to finish,
then ``service.shutdown()`` lets running moves end and stops the scheduler, and the process exits 0.
"""

from __future__ import annotations

import faulthandler
import gc
import logging
import signal
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TextIO

from basil.api import create_app
from basil.api.service import ServiceApi
from basil.config import BasilConfig
from basil.config.schema import host_port
from basil.serve.http import HttpServer, Limits
from basil.serve.lock import ServeLock
from basil.serve.tls import Certificate, server_certificate

log = logging.getLogger(__name__)

READY_LINE = "basil serve: ready"
#: How long the heap's freeze waits for the vCenters' first connection attempts (one that hangs is given up).
HEAP_FREEZE_WAIT_S = 120.0


@dataclass
class Listening:
    """What the banner prints: where the service answers and with which certificate."""

    base_url: str
    certificate: Certificate | None


def tls_context(cert: Certificate) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert.cert), str(cert.key))
    # TLS 1.2 is the oldest the vSphere Client's proxy and current browsers use; nothing older.
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class BasilServer:
    """The WSGI server and the service of one ``basil serve`` process."""

    def __init__(
        self,
        config: BasilConfig,
        service_factory: Callable[[BasilConfig], ServiceApi],
        *,
        out: TextIO | None = None,
        freeze_heap: bool = False,
    ) -> None:
        self.config = config
        # The process's own server (:func:`run`) freezes the start's heap; one embedded in another
        # program (the tests) leaves that program's collector alone.
        self.freeze_heap = freeze_heap
        self.service_factory = service_factory
        self.out = out or sys.stdout
        self.service: ServiceApi | None = None
        self.server: HttpServer | None = None
        self._lock: ServeLock | None = None
        self._stopper: threading.Thread | None = None
        self._signals = 0
        self.heap_frozen = threading.Event()  # set once the start's heap is out of the collector's way

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def prepare(self) -> Listening:
        """Lock the store, bind the socket, start the service; after this, :meth:`serve` answers requests."""
        server_config = self.config.server
        certificate = None if server_config.plain_http else server_certificate(server_config)
        service = self.service_factory(self.config)
        self._lock = ServeLock(service.store)
        self._lock.acquire()
        try:
            host, port = host_port(server_config.listen)
            app = create_app(service)
            server = HttpServer(
                app,
                host,
                port or 8443,
                ssl_context=None if certificate is None else tls_context(certificate),
                threads=server_config.threads,
                limits=Limits(
                    max_connections=server_config.max_connections,
                    header_timeout_s=server_config.header_timeout_s,
                    body_timeout_s=server_config.body_timeout_s,
                    idle_timeout_s=server_config.idle_timeout_s,
                    queue_limit=max(128, 8 * server_config.threads),
                ),
                shutdown_grace_s=server_config.shutdown_grace_s,
            )
            server.bind()  # a port in use fails here, before the service starts
            self.server = server
            try:
                service.start()
            except BaseException:
                service.shutdown(wait=False)
                raise
            self.service = service
        except BaseException:
            if self.server is not None:
                self.server.close()
            self._lock.release()
            raise
        bound_host, bound_port = server.bind_addr[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        scheme = "http" if certificate is None else "https"
        return Listening(f"{scheme}://{shown}:{bound_port}", certificate)

    def banner(self, listening: Listening) -> None:
        base = listening.base_url
        self._say(
            f"basil serve: API {base}/api/v1/ (OpenAPI {base}/api/v1/openapi.json, metrics {base}/metrics)"
        )
        if "basil.api.plugin_assets" in sys.modules:
            self._say(f"basil serve: vSphere Client plugin manifest {base}/plugin/plugin.json")
        cert = listening.certificate
        if cert is None:
            self._say(
                "basil serve: WARNING: plain HTTP (server.plain_http): API tokens and vCenter sessions "
                "cross the network in clear"
            )
        else:
            kind = (
                "self-signed, generated now"
                if cert.generated
                else ("self-signed" if cert.self_signed else "given")
            )
            self._say(
                f"basil serve: TLS certificate {cert.cert} ({kind}, valid until {cert.not_after:%Y-%m-%d})"
            )
            self._say(f"basil serve:   SHA-1   {cert.sha1}")
            self._say(f"basil serve:   SHA-256 {cert.sha256}")
        self._say(READY_LINE)

    def serve(self) -> None:
        """Answer requests until :meth:`stop`; then shut the service down. Returns when all is stopped."""
        assert self.server is not None
        assert self.service is not None
        if self.freeze_heap:
            threading.Thread(
                target=self._freeze_heap, args=(self.service,), name="basil-heap-freeze", daemon=True
            ).start()
        try:
            self.server.serve()
        finally:
            if self._stopper is not None:
                self._stopper.join()  # running requests have finished (or their grace ran out)
            else:
                self.server.stop()
            self._say("basil serve: requests drained; stopping the service (running moves finish)")
            try:
                self.service.shutdown(wait=True)
            finally:
                if self._lock is not None:
                    self._lock.release()
            self._say("basil serve: stopped")

    def _freeze_heap(self, service: ServiceApi) -> None:
        """Once every vCenter's first connection attempt has ended (its inventory read), move every object
        alive to the collector's permanent generation (``gc.freeze``), after one full collection.

        CPython's full collections hold the interpreter while they walk every tracked object: with the
        modules, pyVmomi's types, the inventories and the store's metadata (about 200,000 objects in
        ``bench_api.py``'s service) each took 100-350 ms beside the API, about every 20 s (after each
        collection's allocations), a stall of every request at once. Most of the start's objects live as
        long as the process, so they need never be walked again; frozen, a full collection took 8-67 ms
        (mostly 10-30 ms) in the same bench (docs/frontend.md). The cost: a frozen object that later ends
        in a reference cycle is never freed (reference counting still frees the others), at most what was
        alive at the start, such as the first copy of an inventory.
        """
        service.wait_connected(HEAP_FREEZE_WAIT_S)
        gc.collect()
        gc.freeze()
        self._say(
            f"basil serve: heap frozen: {gc.get_freeze_count()} objects out of the garbage collector's way"
        )
        self.heap_frozen.set()

    def stop(self) -> None:
        """Stop accepting and drain running requests, from another thread (safe in a signal handler)."""
        if self._stopper is None and self.server is not None:
            self._stopper = threading.Thread(target=self.server.stop, name="basil-serve-stop")
            self._stopper.start()

    def install_signal_handlers(self) -> None:
        def handle(signum: int, _frame: FrameType | None) -> None:
            self._signals += 1
            if self._signals == 1:
                self._say(f"basil serve: {signal.Signals(signum).name}: stopping gracefully")
                self.stop()
            else:
                self._say("basil serve: already stopping; waiting for running requests and moves")

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)
        # SIGUSR2 writes every thread's stack to standard error and changes nothing: what a process that
        # does not stop (or answer) is waiting on, without a debugger (docs/api.md).
        faulthandler.register(signal.SIGUSR2, all_threads=True)


def run(config: BasilConfig, service_factory: Callable[[BasilConfig], ServiceApi]) -> int:
    """Serve until SIGTERM/SIGINT; 0 after a graceful stop."""
    server = BasilServer(config, service_factory, freeze_heap=True)
    listening = server.prepare()
    server.install_signal_handlers()
    server.banner(listening)
    server.serve()
    return 0
