"""Slow, idle and flooding clients against `basil serve`'s front end: none of them delays another client;
deadlines end a late head or body with 408, idle connections are closed, too many connections get 503,
oversized heads and bodies (chunked or not) 431 and 413. A real Service (SQLite, no vCenter) serves."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_server import Running, _config


@pytest.fixture
def plain(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Running]:
    settings: dict[str, Any] = getattr(request, "param", {})
    running = Running(_config(tmp_path, plain_http=True, **settings))
    try:
        yield running
    finally:
        running.stop()


def _address(running: Running) -> tuple[str, int]:
    host, port = running.listening.base_url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(60)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def _json_body(raw: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    return body


def _health(host: str, port: int, context: ssl.SSLContext | None = None) -> int:
    if context is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection(host, port, timeout=120)
    else:
        conn = http.client.HTTPSConnection(host, port, timeout=120, context=context)
    try:
        conn.request("GET", "/api/v1/health")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _still_open(sock: socket.socket) -> bool:
    """True while the server has not closed *sock* (nothing to read, no end of stream)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def test_idle_and_slow_clients_delay_nobody(tmp_path: Path) -> None:
    """20 TCP connections that never start TLS and 20 TLS clients dribbling their headers, with fewer
    worker threads than slow clients: normal clients are answered while all 40 are still attached."""
    running = Running(_config(tmp_path, threads=4, header_timeout_s=600))
    stop_dribbling = threading.Event()
    idle: list[socket.socket] = []
    slow: list[ssl.SSLSocket] = []
    try:
        host, port = _address(running)
        assert running.listening.certificate is not None
        context = ssl.create_default_context(cafile=str(running.listening.certificate.cert))
        idle = [socket.create_connection((host, port)) for _ in range(20)]
        for _ in range(20):
            tls = context.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
            tls.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
            slow.append(tls)

        def dribble() -> None:
            while not stop_dribbling.wait(0.2):
                for tls in slow:
                    tls.sendall(b"X")

        dribbler = threading.Thread(target=dribble)
        dribbler.start()
        try:
            assert [_health(host, port, context) for _ in range(10)] == [200] * 10
            assert all(_still_open(s) for s in idle)
        finally:
            stop_dribbling.set()
            dribbler.join()
    finally:
        for s in [*idle, *slow]:
            s.close()
        running.stop()


def _open_sockets() -> int:
    """Sockets open in this process (server and clients alike): /proc's links of its descriptors."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, gone by now
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


def _steady_open_sockets() -> int:
    """:func:`_open_sockets` once it has not moved for half a second (closes still under way end)."""
    counts = [_open_sockets()]
    while len(counts) < 5 or len(set(counts[-5:])) > 1:
        threading.Event().wait(0.1)
        counts.append(_open_sockets())
        assert len(counts) < 600
    return counts[-1]


def _cut_off(sock: socket.socket) -> bytes:
    """What the server sent before it closed *sock* (a reset counts as a close)."""
    with contextlib.suppress(ConnectionResetError):
        return _read_all(sock)
    return b""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through Linux's /proc")
def test_the_server_closes_the_sockets_of_the_clients_it_cuts_off(tmp_path: Path) -> None:
    """Idle and slow clients cut off by the deadlines, then a stop with connections arriving: every
    socket the server accepted is closed (none left open for the garbage collector)."""
    before_start = _open_sockets()
    running = Running(_config(tmp_path, header_timeout_s=1))
    stopped = False
    try:
        host, port = _address(running)
        assert running.listening.certificate is not None
        context = ssl.create_default_context(cafile=str(running.listening.certificate.cert))
        server = running.server.server
        assert server is not None

        def wait_for_connections(n: int) -> None:
            for _ in range(600):
                if server.open_connections == n:
                    break
                threading.Event().wait(0.05)
            assert server.open_connections == n

        assert _health(host, port, context) == 200
        wait_for_connections(0)
        serving = _steady_open_sockets()  # the listening socket, the loop's own; no client's end or server's
        idle = [socket.create_connection((host, port)) for _ in range(10)]
        slow = []
        for _ in range(10):
            tls = context.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
            tls.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
            slow.append(tls)
        try:
            wait_for_connections(20)  # the front end has taken the twenty in
            assert [_cut_off(s) for s in idle] == [b""] * 10  # no TLS handshake within the deadline
            assert [_status(_cut_off(s)) for s in slow] == [408] * 10  # no complete head within it
        finally:
            for s in [*idle, *slow]:
                s.close()
        for _ in range(200):  # the server closes its ends as it drops them, not at a garbage collection
            if _open_sockets() == serving:
                break
            threading.Event().wait(0.05)
        assert _open_sockets() == serving

        # Connections arriving while the server stops are closed too.
        stopper = threading.Thread(target=running.stop)
        arriving: list[socket.socket] = []
        stopper.start()
        while stopper.is_alive() and len(arriving) < 200:
            try:
                arriving.append(socket.create_connection((host, port), timeout=1))
            except OSError:
                break  # the listening socket is closed
        for s in arriving:
            s.close()
        stopper.join(timeout=120)
        stopped = not stopper.is_alive()
        assert stopped
        assert _open_sockets() == before_start
    finally:
        if not stopped:
            running.stop()


@pytest.mark.parametrize("plain", [{"header_timeout_s": 1}], indirect=True)
def test_a_late_request_head_is_answered_408_and_closed(plain: Running) -> None:
    with socket.create_connection(_address(plain)) as sock:
        sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        raw = _read_all(sock)
    assert _status(raw) == 408
    assert _json_body(raw)["error"] == "request_timeout"


@pytest.mark.parametrize("plain", [{"body_timeout_s": 1}], indirect=True)
def test_a_late_request_body_is_answered_408_and_closed(plain: Running) -> None:
    with socket.create_connection(_address(plain)) as sock:
        sock.sendall(
            b"POST /api/v1/pools/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"name": '
        )
        raw = _read_all(sock)
    assert _status(raw) == 408
    assert "body" in _json_body(raw)["message"]


@pytest.mark.parametrize("plain", [{"idle_timeout_s": 1}], indirect=True)
def test_an_idle_kept_alive_connection_is_closed(plain: Running) -> None:
    with socket.create_connection(_address(plain)) as sock:
        sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        raw = _read_all(sock)  # the answer, then the close once the connection idled
    assert _status(raw) == 200
    assert raw.count(b"HTTP/1.1 ") == 1


def test_a_connection_that_never_starts_tls_is_closed(tmp_path: Path) -> None:
    running = Running(_config(tmp_path, header_timeout_s=1))
    try:
        with socket.create_connection(_address(running)) as sock:
            assert _read_all(sock) == b""
    finally:
        running.stop()


@pytest.mark.parametrize("plain", [{"max_connections": 5}], indirect=True)
def test_a_connection_flood_is_answered_503(plain: Running) -> None:
    host, port = _address(plain)
    held = [socket.create_connection((host, port)) for _ in range(5)]
    try:
        server = plain.server.server
        assert server is not None
        for _ in range(600):  # until the front end has taken the five in
            if server.open_connections == 5:
                break
            threading.Event().wait(0.05)
        assert server.open_connections == 5
        with socket.create_connection((host, port)) as extra:
            extra.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = _read_all(extra)
        assert _status(raw) == 503
        assert b"\r\nretry-after: " in raw.lower()
        assert _json_body(raw)["error"] == "overloaded"
        assert server.refused_connections == 1
        assert all(_still_open(s) for s in held)
    finally:
        for s in held:
            s.close()
    # The five gone, the service answers again.
    statuses = []
    for _ in range(200):
        statuses.append(_health(host, port))
        if statuses[-1] == 200:
            break
        threading.Event().wait(0.05)
    assert statuses[-1] == 200


def test_large_bodies_are_413_chunked_or_not(plain: Running) -> None:
    host, port = _address(plain)
    five_mib = b'{"name": "' + b"x" * (5 * 1024 * 1024) + b'"}'

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(five_mib), 65536):
            yield five_mib[start : start + 65536]

    for body in (five_mib, chunks()):
        conn = http.client.HTTPConnection(host, port, timeout=120)
        try:
            headers = {"Content-Type": "application/json"}
            if isinstance(body, bytes):
                conn.request("POST", "/api/v1/pools/validate", body=body, headers=headers)
            else:
                conn.request(
                    "POST", "/api/v1/pools/validate", body=body, headers=headers, encode_chunked=True
                )
            response = conn.getresponse()
            answer = json.loads(response.read())
        except (BrokenPipeError, ConnectionResetError):
            pytest.fail("the server closed the connection without answering 413")
        finally:
            conn.close()
        assert response.status == 413, answer
        assert answer["error"] == "too_large"


def test_a_huge_request_head_is_431(plain: Running) -> None:
    with socket.create_connection(_address(plain)) as sock:
        sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 * 1024) + b"\r\n\r\n")
        raw = _read_all(sock)
    assert _status(raw) == 431


def test_keep_alive_head_and_pipelining(plain: Running) -> None:
    with socket.create_connection(_address(plain)) as sock:
        sock.sendall(
            b"HEAD /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        raw = _read_all(sock)
    first, second = raw.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200")
    assert first.endswith(b"\r\n\r\n")  # HEAD: no body
    assert second.startswith(b"200")
    assert json.loads(second.split(b"\r\n\r\n", 1)[1])["status"]
