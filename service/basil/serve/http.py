"""The HTTP(S) front end of ``basil serve``: one asyncio loop holds every connection, a thread pool runs
the WSGI application on complete requests only.

Why not a thread per connection (cheroot, as before): there a connection costs a thread from its
first byte, so sixteen clients sending their headers a byte a second held all sixteen threads, and
the TLS handshake ran on the one accepting thread, so three idle TCP connections stalled every new
client for the socket timeout. Here a connection costs a coroutine and a buffer while it is shaken
hands with, sends its headers or its body, and waits between requests; each of those steps has a
deadline of its own. Only a request read in full goes to a worker thread, so a slow or idle client
delays nobody but itself.

Limits (``server.*`` in ``basil.yaml``): at most ``max_connections`` connections are served; the ones
beyond are answered ``503`` (after their TLS handshake, within a short deadline) and closed, and
beyond twice that number closed at once. The TLS handshake and the request head must each complete
within ``header_timeout_s``, a body within ``body_timeout_s``, the next request on a kept-alive
connection must start within ``idle_timeout_s``; a late head is answered ``408``. A head larger than
64 KiB is ``431``, a body larger than 4 MiB ``413`` (chunked or not), and a request that would wait
behind more than ``queue_limit`` others for a worker thread ``503``. Responses are written with a
deadline too, so a client that never reads cannot hold a worker.

HTTP/1.1 parsing (framing, chunked bodies, ``Expect: 100-continue``, keep-alive) is h11's.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes

import h11

log = logging.getLogger(__name__)

T = TypeVar("T")
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

MAX_HEAD_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024
SWITCH_INTERVAL_S = 0.0005
# A refused connection (over max_connections) gets this long to finish its handshake and send its head.
REFUSAL_S = 2.0
# Connections accepted per wake-up of the listening socket, and the pause after an accept failed (EMFILE).
ACCEPT_BATCH = 64
ACCEPT_RETRY_S = 1.0


@dataclass(frozen=True)
class Limits:
    """Deadlines and bounds of the front end (see the module docstring)."""

    max_connections: int = 256
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    idle_timeout_s: float = 30.0
    write_timeout_s: float = 30.0
    max_body_bytes: int = 4 * 1024 * 1024
    queue_limit: int = 128


class _RefusedError(Exception):
    """A request that is answered with an error status and then the connection closed."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


@dataclass
class _Answer:
    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


def _error_answer(status: int, code: str, message: str, *, close: bool = True) -> _Answer:
    body = (json.dumps({"error": code, "message": message}) + "\n").encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
    ]
    if status == 503:
        headers.append((b"retry-after", b"1"))
    if close:
        headers.append((b"connection", b"close"))
    return _Answer(status, b"", headers, body)


def _same(protocol: asyncio.StreamReaderProtocol) -> asyncio.StreamReaderProtocol:
    return protocol


async def _within(awaitable: Coroutine[Any, Any, T], seconds: float) -> T:
    """*awaitable* or TimeoutError after *seconds*; unlike wait_for (3.11), no task of its own."""
    async with asyncio.timeout(seconds):
        return await awaitable


class HttpServer:
    """Serves *app* on a socket bound by :meth:`bind`, from :meth:`serve` until :meth:`stop`."""

    def __init__(
        self,
        app: WSGIApp,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        threads: int = 16,
        limits: Limits | None = None,
        shutdown_grace_s: float = 30.0,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.threads = threads
        self.limits = limits or Limits()
        self.shutdown_grace_s = shutdown_grace_s
        self.bind_addr: tuple[str, int] = (host, port)
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_asked = threading.Event()
        self._connections: dict[asyncio.Task[None], str] = {}  # task -> "reading", "busy" or "idle"
        self._refusing = 0
        self._queued = 0
        self._executor: ThreadPoolExecutor | None = None
        self._transports: set[asyncio.Transport] = set()  # every accepted TCP transport not yet closed
        self._accepted: set[socket.socket] = set()  # every accepted socket whose transport is not made yet
        self._adopting: set[asyncio.Task[None]] = set()
        self._accept_retry: asyncio.TimerHandle | None = None
        self.refused_connections = 0  # answered 503 because of max_connections (for tests and logs)

    @property
    def open_connections(self) -> int:
        """Connections being served now (idle, reading, or running a request); refused ones not counted."""
        return len(self._connections)

    # --- life cycle --------------------------------------------------------------------------------

    def bind(self) -> tuple[str, int]:
        """Bind and listen now, so that a port in use fails before anything else starts."""
        infos = socket.getaddrinfo(
            self.host or None, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(address)
            sock.listen(1024)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        bound = sock.getsockname()
        self.bind_addr = (str(bound[0]), int(bound[1]))
        return self.bind_addr

    def serve(self) -> None:
        """Answer requests until :meth:`stop`, then let running requests finish (within the grace)."""
        if self._sock is None:
            self.bind()
        # The loop thread takes the GIL twice a request (to read it, to write the answer) while worker
        # threads run the app. At CPython's default 5 ms switch interval, every one of those takes can
        # wait a whole interval behind a busy worker, which caps the loop at a few hundred wake-ups a
        # second; 0.5 ms lets it in ten times sooner (and costs the workers little).
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        asyncio.run(self._main())

    def stop(self) -> None:
        """Stop accepting and drain; safe from any thread and from a signal handler."""
        self._stop_asked.set()
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                loop.call_soon_threadsafe(stopping.set)
        elif self._sock is not None and loop is None:
            self._sock.close()

    def close(self) -> None:
        """Release the socket of a server that never served (a start that failed after bind)."""
        if self._sock is not None and self._loop is None:
            self._sock.close()

    async def _main(self) -> None:
        assert self._sock is not None
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_asked.is_set():
            self._stopping.set()
        self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="basil-http")
        self._listen()
        try:
            await self._stopping.wait()
        finally:
            self._unlisten()  # no connection is accepted after this
            self._sock.close()  # new connections are refused from here on
            await self._drain()
            await self._settle()
            self._executor.shutdown(wait=False, cancel_futures=True)

    # Connections are accepted in the loop's reader callback, not by awaiting sock_accept in a task: a
    # task cancelled at the stop right after its accept had completed dropped the accepted socket unclosed
    # (found by ResourceWarnings in the stop tests). Here nothing can be cancelled between an accept and the
    # socket being remembered in _accepted, and _settle closes every socket whose transport never came.

    def _listen(self) -> None:
        assert self._sock is not None
        assert self._loop is not None
        self._loop.add_reader(self._sock.fileno(), self._accept_ready)

    def _unlisten(self) -> None:
        assert self._sock is not None
        assert self._loop is not None
        if self._accept_retry is not None:
            self._accept_retry.cancel()
        self._loop.remove_reader(self._sock.fileno())

    def _accept_ready(self) -> None:
        """Accept the connections waiting (a bounded batch), each handed to a task that makes its stream."""
        assert self._sock is not None
        assert self._loop is not None
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as err:
                # Out of file descriptors or memory: stop listening for a moment rather than spin (the
                # pending connections wait in the backlog), as asyncio's own servers do.
                log.warning("accepting connections paused for %.0f s: %s", ACCEPT_RETRY_S, err)
                self._loop.remove_reader(self._sock.fileno())
                self._accept_retry = self._loop.call_later(ACCEPT_RETRY_S, self._listen)
                return
            conn.setblocking(False)
            self._accepted.add(conn)
            adopting = self._loop.create_task(self._adopt(conn))
            self._adopting.add(adopting)  # the loop holds tasks weakly
            adopting.add_done_callback(self._adopting.discard)

    async def _adopt(self, conn: socket.socket) -> None:
        """Make *conn*'s stream, served by :meth:`_connection`; a socket that cannot have one is closed."""
        assert self._loop is not None
        protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader(limit=READ_CHUNK), self._connection)
        try:
            transport, _ = await self._loop.connect_accepted_socket(partial(_same, protocol), sock=conn)
        except OSError:
            conn.close()
            return
        finally:
            self._accepted.discard(conn)  # closed, or owned by its transport from here on
        if not transport.is_closing():  # not already served and closed by _connection
            self._transports.add(transport)

    async def _settle(self) -> None:
        """Let connections accepted just before the stop end (they close at once, the server stopping),
        then close whatever is left, so that no socket outlives the loop."""
        current = asyncio.current_task()
        for _ in range(3):
            others = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
            if not others:
                break
            await asyncio.wait(others, timeout=1.0)
        for transport in list(self._transports):
            transport.abort()
        for _ in range(3):
            await asyncio.sleep(0)  # aborted transports close their sockets on the next turn
        for conn in list(self._accepted):  # accepted, its transport never made
            conn.close()
        self._accepted.clear()
        self._transports.clear()

    async def _drain(self) -> None:
        """Close connections that are not running a request; give running ones the grace to finish."""
        for task, state in list(self._connections.items()):
            if state != "busy":
                task.cancel()
        running = set(self._connections)
        if running:
            _, late = await asyncio.wait(running, timeout=self.shutdown_grace_s)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=5)

    # --- one connection ----------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        raw = writer.transport  # the TCP transport (TLS, once started, runs over it)
        limits = self.limits
        peer = writer.get_extra_info("peername") or ("", 0)
        try:
            if self._stopping is not None and self._stopping.is_set():
                return
            if len(self._connections) >= limits.max_connections:
                await self._refuse(reader, writer)
                return
            self._connections[task] = "reading"
            if self.ssl_context is not None:
                await writer.start_tls(self.ssl_context, ssl_handshake_timeout=limits.header_timeout_s)
            await self._requests(reader, writer, task, (str(peer[0]), int(peer[1])))
        except (TimeoutError, OSError, ssl.SSLError, asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away, or broke the TLS handshake or a deadline: nothing to answer
        except asyncio.CancelledError:
            pass  # the server stops
        except Exception:
            log.exception("connection from %s ended by an unexpected error", peer[0])
        finally:
            self._connections.pop(task, None)
            await self._close(writer)
            raw.abort()
            self._transports.discard(raw)

    @staticmethod
    async def _close(writer: asyncio.StreamWriter) -> None:
        """Close after what was written has gone out (a TLS close_notify included), briefly; then abort."""
        try:
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), 2.0)
        except (OSError, ssl.SSLError, TimeoutError, asyncio.CancelledError):
            pass
        finally:
            writer.transport.abort()

    @staticmethod
    async def _linger(reader: asyncio.StreamReader) -> None:
        """Read and drop what the client still sends, for a moment, before closing on a refused request:
        closing with unread data would reset the connection, and the client might never see the answer."""
        with contextlib.suppress(OSError, ssl.SSLError, TimeoutError, ConnectionError):
            async with asyncio.timeout(1.0):
                while await reader.read(READ_CHUNK):
                    pass

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Over max_connections: a short-lived 503 (or, in a flood beyond twice that, a bare close)."""
        if self._refusing >= self.limits.max_connections:
            return
        self._refusing += 1
        self.refused_connections += 1
        try:
            async with asyncio.timeout(REFUSAL_S):
                if self.ssl_context is not None:
                    await writer.start_tls(self.ssl_context, ssl_handshake_timeout=REFUSAL_S)
                conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
                with contextlib.suppress(_RefusedError):
                    await self._read_head(conn, reader, self._loop_time() + REFUSAL_S)
                answer = _error_answer(
                    503, "overloaded", "the service has too many connections open; retry in a moment"
                )
                await self._send(conn, writer, answer, head_only=False)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, h11.ProtocolError):
            pass
        finally:
            self._refusing -= 1

    def _loop_time(self) -> float:
        assert self._loop is not None
        return self._loop.time()

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, task: asyncio.Task[None],
        peer: tuple[str, int],
    ) -> None:  # fmt: skip
        limits = self.limits
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        first = True
        while True:
            self._connections[task] = "idle" if not first else "reading"
            # The first request's head is due within the header deadline of the connection; a later one
            # may wait idle_timeout_s to begin, then has the header deadline to complete.
            if not first and not await self._wait_for_bytes(conn, reader, limits.idle_timeout_s):
                return
            self._connections[task] = "reading"
            if self._stopping is not None and self._stopping.is_set():
                return
            try:
                request = await self._read_head(conn, reader, self._loop_time() + limits.header_timeout_s)
                if request is None:
                    return
                body = await self._read_body(conn, reader, writer, request)
            except _RefusedError as refused:
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    answer = _error_answer(refused.status, refused.code, refused.message)
                    await self._send(conn, writer, answer, head_only=False)
                    await self._linger(reader)
                return
            if self._queued >= limits.queue_limit:
                answer = _error_answer(
                    503, "overloaded", "the service is busy; retry in a moment", close=False
                )
            else:
                self._connections[task] = "busy"
                self._queued += 1
                loop = asyncio.get_running_loop()
                try:
                    answer = await loop.run_in_executor(self._executor, self._call_app, request, body, peer)
                finally:
                    self._queued -= 1
            stopping = self._stopping is not None and self._stopping.is_set()
            if stopping:
                answer.headers.append((b"connection", b"close"))
            await self._send(conn, writer, answer, head_only=request.method == b"HEAD")
            if stopping or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()
            first = False

    async def _wait_for_bytes(
        self, conn: h11.Connection, reader: asyncio.StreamReader, timeout: float
    ) -> bool:
        """Wait (at most *timeout*) for the next request to begin; False when it does not come."""
        if conn.trailing_data[0]:
            return True  # pipelined: already here
        try:
            data = await _within(reader.read(READ_CHUNK), timeout)
        except TimeoutError:
            return False
        conn.receive_data(data)
        return bool(data)

    async def _read_head(
        self, conn: h11.Connection, reader: asyncio.StreamReader, deadline: float
    ) -> h11.Request | None:
        """The next request's head, complete before *deadline*; None when the client closed instead."""
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as err:
                status = err.error_status_hint
                if status == 431:
                    raise _RefusedError(431, "the request head is larger than 64 KiB", "too_large") from None
                raise _RefusedError(status, f"malformed request: {err}", "bad_request") from None
            if isinstance(event, h11.Request):
                # h11 bounds a head still arriving; one that arrived whole in a read is measured here.
                if len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers) > MAX_HEAD_BYTES:
                    raise _RefusedError(431, "the request head is larger than 64 KiB", "too_large")
                return event
            if isinstance(event, h11.ConnectionClosed):
                return None
            await self._receive(conn, reader, deadline, "head")

    async def _read_body(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        request: h11.Request,
    ) -> bytes:  # fmt: skip
        limits = self.limits
        length = next((v for k, v in request.headers if k == b"content-length"), None)
        too_large = f"the request body is larger than {limits.max_body_bytes // (1024 * 1024)} MiB"
        if length is not None and int(length) > limits.max_body_bytes:
            raise _RefusedError(413, too_large, "too_large")
        if conn.they_are_waiting_for_100_continue:
            writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
        deadline = self._loop_time() + limits.body_timeout_s
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as err:
                raise _RefusedError(
                    err.error_status_hint, f"malformed request body: {err}", "bad_request"
                ) from None
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > limits.max_body_bytes:
                    raise _RefusedError(413, too_large, "too_large")
                parts.append(bytes(event.data))
                continue
            if isinstance(event, h11.EndOfMessage):
                return b"".join(parts)
            if isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("the client closed the connection in the middle of a body")
            await self._receive(conn, reader, deadline, "body")

    async def _receive(
        self, conn: h11.Connection, reader: asyncio.StreamReader, deadline: float, part: str
    ) -> None:
        """Feed h11 the next bytes of the request's *part* (head or body), or 408 at *deadline*."""
        remaining = deadline - self._loop_time()
        late = _RefusedError(408, f"the request {part} did not arrive in time", "request_timeout")
        if remaining <= 0:
            raise late
        try:
            data = await _within(reader.read(READ_CHUNK), remaining)
        except TimeoutError:
            raise late from None
        conn.receive_data(data)

    async def _send(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, answer: _Answer, *, head_only: bool
    ) -> None:
        """Write a whole answer, within write_timeout_s (a client that does not read is dropped)."""
        headers = [(k, v) for k, v in answer.headers if k.lower() not in (b"transfer-encoding",)]
        if answer.status not in (204, 304) and not any(k.lower() == b"content-length" for k, _ in headers):
            headers.append((b"content-length", str(len(answer.body)).encode()))
        # One write of head and body: one TLS record run and one send, not three.
        parts = [conn.send(h11.Response(status_code=answer.status, headers=headers, reason=answer.reason))]
        if answer.body and not head_only:
            parts.append(conn.send(h11.Data(data=answer.body)))
        parts.append(conn.send(h11.EndOfMessage()))
        writer.write(b"".join(p for p in parts if p))
        await _within(writer.drain(), self.limits.write_timeout_s)

    # --- the WSGI call (on a worker thread) --------------------------------------------------------

    def _call_app(self, request: h11.Request, body: bytes, peer: tuple[str, int]) -> _Answer:
        environ = self._environ(request, body, peer)
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if exc_info is not None and started:
                raise exc_info[1].with_traceback(exc_info[2])
            started[:] = [status, headers]
            return chunks.append

        chunks: list[bytes] = []
        try:
            result = self.app(environ, start_response)
            try:
                for chunk in result:
                    if chunk:
                        chunks.append(chunk)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception:
            log.exception("the WSGI application failed on %s %s", request.method, request.target)
            return _error_answer(500, "internal", "internal error; the service log has the details")
        status, headers = started
        code, _, reason = status.partition(" ")
        return _Answer(
            int(code),
            reason.encode("latin-1"),
            [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            b"".join(chunks),
        )

    def _environ(self, request: h11.Request, body: bytes, peer: tuple[str, int]) -> dict[str, Any]:
        target = bytes(request.target)
        path, _, query = target.partition(b"?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.method.decode("ascii"),
            "SCRIPT_NAME": "",
            # PEP 3333: the path percent-decoded, its bytes carried as latin-1.
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
            "QUERY_STRING": query.decode("latin-1"),
            "RAW_URI": target.decode("latin-1"),
            "SERVER_NAME": self.bind_addr[0],
            "SERVER_PORT": str(self.bind_addr[1]),
            "SERVER_PROTOCOL": f"HTTP/{request.http_version.decode('ascii')}",
            "REMOTE_ADDR": peer[0],
            "REMOTE_PORT": str(peer[1]),
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "https" if self.ssl_context is not None else "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.input_terminated": True,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in request.headers:
            key = name.decode("latin-1").upper()
            if "_" in key:
                continue  # Foo_Bar would pass for Foo-Bar: a way to forge headers past a proxy
            text = value.decode("latin-1")
            if key == "CONTENT-TYPE":
                environ["CONTENT_TYPE"] = text
                continue
            if key in ("CONTENT-LENGTH", "TRANSFER-ENCODING"):
                continue  # the body is handed over whole, its length above
            wsgi_key = "HTTP_" + key.replace("-", "_")
            environ[wsgi_key] = f"{environ[wsgi_key]}, {text}" if wsgi_key in environ else text
        return environ
