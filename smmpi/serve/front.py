"""serve's HTTP front: HTTP/1.1 with keep-alive, one thread per connection, one write per answer.

werkzeug's development server closes every connection after one answer
(``Connection: close``), so a client that polls pays a TCP handshake and a new
thread per request. This handler keeps werkzeug's (and moto's) WSGI environ, and:

- keeps the connection open between requests, unless the request's body was not
  read whole (an oversized or refused body): then what is left of it is read and
  dropped (up to 64 MiB, while it keeps coming) and the connection closes after the
  answer, so the client, still sending, gets the answer rather than a reset;
- writes the status line, headers and a body's first part in one ``sendall``,
  with Nagle's algorithm off, so a small answer is one segment;
- sends an answer without ``Content-Length`` chunked (never for HEAD, 1xx, 204, 304).
"""

from __future__ import annotations

import contextlib
import errno
import io
import ipaddress
import re
import socket
import sys
import threading
import traceback
from collections.abc import Iterable
from typing import Any

from moto.moto_server.werkzeug_app import MotoRequestHandler

from smmpi.errors import BadInput
from smmpi.serve.app import JOB_ENVIRON
from smmpi.serve.errors import ApiError, render

_NO_BODY = ("1", "204", "304")
IDLE = 300.0  # seconds a kept-alive connection may wait for its next request
DRAIN_MAX = 64 << 20  # bytes of a refused body read (and dropped) before closing
DRAIN_SECONDS = 2.0  # the longest wait for each part of it
_OPEN_LOCK = threading.Lock()
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)
#: The error type a request that is not HTTP gets, by its status.
_MALFORMED = {414: "RequestURITooLong", 431: "RequestHeaderFieldsTooLarge",
              505: "HTTPVersionNotSupported"}  # fmt: skip
_INTERNAL = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _Counted:
    """The request body, read at most to its ``Content-Length``; counts what was read."""

    def __init__(self, stream: io.BufferedIOBase, length: int) -> None:
        self.stream, self.left = stream, length

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        data = self.stream.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(data)
        if not data:
            self.left = 0
        return data

    def readline(self, size: int = -1) -> bytes:
        limit = self.left if size < 0 else min(size, self.left)
        data = self.stream.readline(limit) if limit > 0 else b""
        self.left -= len(data)
        return data


class Handler(MotoRequestHandler):
    """One connection: requests answered in turn until the client or a refusal closes it."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = IDLE  # an idle connection's thread ends

    def setup(self) -> None:
        super().setup()
        with _OPEN_LOCK:
            self.server.open_connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        with _OPEN_LOCK:
            self.server.open_connections.discard(self.connection)  # type: ignore[attr-defined]
            self.server.job_of.pop(self.connection, None)  # type: ignore[attr-defined]
        super().finish()

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        """One line per job event is what serve prints, not one per request."""

    def log_error(self, *args: Any) -> None:
        """A malformed request gets its 400; serve's output stays one line per job event."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A request that is not HTTP (a bad request line, version or header, a path or headers
        too long) gets SageMaker's JSON error shape, not http.server's HTML page; then the
        connection closes (where the next request would start is unknown)."""
        self.close_connection = True
        text = (message or self.responses.get(code, ("Bad request",))[0]).splitlines()[0][:200]
        error = ApiError(_MALFORMED.get(code, "MalformedHTTPRequestException"), text, code)
        status, headers, body = render(error, "sagemaker")
        reason = self.responses.get(code, ("Error",))[0]
        lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
        lines += [f"Content-Length: {len(body)}", f"Date: {self.date_time_string()}"]
        head = "\r\n".join([*lines, "Connection: close"]) + "\r\n\r\n"
        with contextlib.suppress(OSError):  # the client may be gone already
            self.wfile.write(head.encode("latin-1", "replace") + body)

    def run_wsgi(self) -> None:
        environ = self.make_environ()
        with _OPEN_LOCK:
            job = self.server.job_of.get(self.connection)  # type: ignore[attr-defined]
        if job is not None:  # a connection to a job's own endpoint, inside its instances
            environ[JOB_ENVIRON] = job
        length = str(environ.get("CONTENT_LENGTH") or "")
        body = _Counted(self.rfile, int(length) if length.isdigit() else 0)
        if "wsgi.input_terminated" in environ or (length and not length.isdigit()):
            self.close_connection = True  # a body the app refuses unread: its end is unknown
        else:
            environ["wsgi.input"] = body
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc: Any = None) -> Any:
            answer["status"], answer["headers"] = status, headers
            return lambda data: answer.setdefault("early", []).append(data)

        try:
            result = self.server.app(environ, start_response)  # type: ignore[attr-defined]
            try:
                self._send(answer, result, body)
                if body.left > 0:
                    self._drain(body)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception:  # a broken answer must not take the server down
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            if "sent" not in answer:
                self.wfile.write(_INTERNAL)

    def _send(self, answer: dict[str, Any], result: Iterable[bytes], body: _Counted) -> None:
        parts = iter([*answer.get("early", []), *result] if "early" in answer else result)
        first = next(parts, b"")
        status: str = answer["status"]
        headers: list[tuple[str, str]] = answer["headers"]
        names = {k.lower() for k, _ in headers}
        if body.left > 0:  # what the app did not read would be taken for the next request
            self.close_connection = True
        bodiless = self.command == "HEAD" or status.startswith(_NO_BODY)
        chunked = "content-length" not in names and not bodiless
        lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers)]
        if "date" not in names:
            lines.append(f"Date: {self.date_time_string()}")
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        answer["sent"] = True
        if bodiless:
            self.wfile.write(head)
            return
        self.wfile.write(head + (_chunk(first) if chunked else first))
        for part in parts:
            if part:
                self.wfile.write(_chunk(part) if chunked else part)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _drain(self, body: _Counted) -> None:
        """Read what is left of a refused body (a bounded amount, for a bounded time) before
        the connection closes: closing with unread bytes resets it, and the client, still
        sending, would never read its answer."""
        self.connection.settimeout(DRAIN_SECONDS)
        total = 0
        try:
            while body.left > 0 and total < DRAIN_MAX:
                data = body.read(1 << 16)
                if not data:
                    return
                total += len(data)
        except OSError:  # the client gave up, or stopped sending: close all the same
            return


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def listen(bind: str, port: int) -> socket.socket:
    """A socket listening on ``bind:port``; :class:`BadInput` naming ``--bind`` or ``--port``
    (one line, nothing started) where that cannot be."""
    from werkzeug.serving import select_address_family

    family = select_address_family(bind, port)
    address = _address(bind, port, family)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise BadInput("--port", port, f"a free port on {bind} (0: any free port)") from None
        raise BadInput(
            "--bind", bind, f"an address of this machine, such as 127.0.0.1 ({err.strerror})"
        ) from None
    return sock


def _address(bind: str, port: int, family: int) -> Any:
    """``bind:port`` as bind(2) takes it: an IP address as it is ("" is every address), a host
    name resolved; :class:`BadInput` for anything else."""
    try:
        return (str(ipaddress.ip_address(bind)) if bind else "", port)
    except ValueError:
        pass
    try:
        if not _HOST_NAME.match(bind):
            raise ValueError(bind)
        return socket.getaddrinfo(bind, port, family, socket.SOCK_STREAM)[0][4]
    except (OSError, UnicodeError, ValueError):
        raise BadInput("--bind", bind, "an IP address of this machine, or a host name that "
                       "resolves to one (such as 127.0.0.1 or 0.0.0.0)") from None  # fmt: skip


def make_server(bind: str, port: int, app: Any) -> Any:
    """A threaded server on ``bind:port`` answering with :class:`Handler` (:func:`listen`'s
    refusals for an address or port it cannot have)."""
    from werkzeug.serving import make_server as werkzeug_server

    sock = listen(bind, port)
    # werkzeug names the host only to resolve it, which the socket made by `listen` has done
    loopback = "::1" if sock.family == socket.AF_INET6 else "127.0.0.1"
    try:
        server = werkzeug_server(
            loopback, port, app, threaded=True, request_handler=Handler, fd=sock.fileno()
        )
        server.host = bind
    finally:
        sock.close()  # the server holds its own copy of the socket
    server.open_connections = set()  # type: ignore[attr-defined]
    server.job_of = {}  # type: ignore[attr-defined]  # connections to a job's own endpoint
    return server


def serve_job_connection(server: Any, conn: socket.socket, address: Any, job: str) -> None:
    """Answer ``conn``, accepted on job ``job``'s own endpoint, as the job's (its key only)."""
    with _OPEN_LOCK:
        server.job_of[conn] = job
    server.process_request(conn, address)


def close_connections(server: Any) -> None:
    """End every kept-alive connection (after ``shutdown``, no new one is accepted)."""
    with _OPEN_LOCK:
        connections = list(server.open_connections)
    for connection in connections:
        try:
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
