"""The serving process in one piece: a real Service (SQLite, no vCenter) behind the front end, HTTPS with
the printed thumbprints, plain HTTP only when asked (and warned about), and a stop that lets a running
request finish while refusing new connections."""

from __future__ import annotations

import gc
import hashlib
import io
import socket
import ssl
import threading
import urllib.request
from pathlib import Path
from typing import Any

from basil.app import Service
from basil.config.schema import BasilConfig, ServerConfig, ServerTLSConfig, StoreConfig
from basil.serve import READY_LINE, BasilServer


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _config(tmp_path: Path, **server: Any) -> BasilConfig:
    return BasilConfig(
        store=StoreConfig(url=f"sqlite:///{tmp_path / 'basil.db'}"),
        server=ServerConfig(
            listen=f"127.0.0.1:{_port()}", tls=ServerTLSConfig(dir=str(tmp_path / "tls")), **server
        ),
    )


class Running:
    """A BasilServer serving in a thread, as `basil serve` does in its main thread."""

    def __init__(self, config: BasilConfig, factory: Any = Service.from_config) -> None:
        self.out = io.StringIO()
        self.server = BasilServer(config, factory, out=self.out)
        self.listening = self.server.prepare()
        self.server.banner(self.listening)
        self.thread = threading.Thread(target=self.server.serve)
        self.thread.start()

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive()


def test_https_serves_the_certificate_whose_thumbprints_it_printed(tmp_path: Path) -> None:
    running = Running(_config(tmp_path))
    try:
        cert = running.listening.certificate
        assert cert is not None
        banner = running.out.getvalue()
        assert cert.sha1 in banner
        assert cert.sha256 in banner
        assert banner.rstrip().endswith(READY_LINE)
        host, port = running.listening.base_url.removeprefix("https://").split(":")
        context = ssl.create_default_context(cafile=str(cert.cert))
        with (
            socket.create_connection((host, int(port))) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            assert cert.sha256 == ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
        # Nothing older than TLS 1.2 is offered (a TLS 1.1 client could not be built on every OpenSSL).
        assert running.server.server is not None
        assert running.server.server.ssl_context is not None
        assert running.server.server.ssl_context.minimum_version == ssl.TLSVersion.TLSv1_2
        with urllib.request.urlopen(f"{running.listening.base_url}/api/v1/health", context=context) as resp:
            assert resp.status == 200
            assert resp.headers["Strict-Transport-Security"].startswith("max-age=")
    finally:
        running.stop()
    assert "basil serve: stopped" in running.out.getvalue()


def test_plain_http_only_when_asked_and_warned(tmp_path: Path) -> None:
    running = Running(_config(tmp_path, plain_http=True))
    try:
        assert running.listening.base_url.startswith("http://")
        assert running.listening.certificate is None
        assert "WARNING: plain HTTP" in running.out.getvalue()
        assert not (tmp_path / "tls").exists()
        with urllib.request.urlopen(f"{running.listening.base_url}/api/v1/health") as resp:
            assert resp.status == 200
            assert "Strict-Transport-Security" not in resp.headers
    finally:
        running.stop()


def test_stop_lets_a_running_request_finish_and_refuses_new_ones(tmp_path: Path) -> None:
    in_flight = threading.Event()
    release = threading.Event()

    def slow_service(config: BasilConfig) -> Service:
        service = Service.from_config(config)
        health = service.health

        def slow_health() -> dict[str, Any]:
            in_flight.set()
            release.wait(timeout=60)
            return health()

        service.health = slow_health  # type: ignore[method-assign]
        return service

    running = Running(_config(tmp_path, plain_http=True), slow_service)
    url = f"{running.listening.base_url}/api/v1/health"
    answers: list[int] = []

    def ask() -> None:
        with urllib.request.urlopen(url, timeout=60) as response:  # read and closed: no socket left over
            response.read()
            answers.append(response.status)

    request = threading.Thread(target=ask)
    request.start()
    assert in_flight.wait(timeout=60)
    stopper = threading.Thread(target=running.stop)
    stopper.start()
    host, port = running.listening.base_url.removeprefix("http://").split(":")

    def refused() -> bool:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except OSError:
            return True
        return False

    for _ in range(100):
        if refused():
            break
        threading.Event().wait(0.1)
    assert refused()  # the listening socket is closed while the request still runs
    release.set()
    request.join(timeout=60)
    stopper.join(timeout=120)
    assert answers == [200]
    assert running.server.service is not None
    assert getattr(running.server.service, "scheduler", None) is None  # the service was shut down
    # A probe accepted as the server stopped was once dropped unclosed (basil.serve.http._accept_ready):
    # any socket left for the garbage collector is found here, as a ResourceWarning, an error.
    gc.collect()
