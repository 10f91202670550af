"""Keep-alive HTTPS connections to the API server, one per worker thread, on http.client.

urllib3's pool costs about 0.6 ms of CPU per request over http.client's own, more than
the request itself; a bulk run makes thousands of small requests from a fixed set of
threads, so each thread keeping its own connection is all the pooling it needs.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: Message
    data: bytes


class NotSent(OSError):
    """The connection could not be opened: the server never saw the request."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect: the server URL, TLS settings, an optional proxy."""

    url: str
    context: ssl.SSLContext | None = None
    server_hostname: str | None = None  # --tls-server-name: the name the certificate must carry
    proxy: str | None = None  # http://host:port, tunnelled with CONNECT

    def new(self, timeout: float) -> http.client.HTTPConnection:
        target = urlsplit(self.url)
        host, port = target.hostname or "", target.port
        via = urlsplit(self.proxy) if self.proxy else None
        connect_host, connect_port = (via.hostname or "", via.port) if via else (host, port)
        if target.scheme == "http":
            conn = http.client.HTTPConnection(connect_host, connect_port, timeout=timeout)
        else:
            conn = _TLSConnection(
                connect_host, connect_port, timeout=timeout, context=self.context, server_hostname=self.server_hostname
            )
        if via:
            conn.set_tunnel(host, port)
        return conn


class _TLSConnection(http.client.HTTPSConnection):
    """HTTPSConnection that can verify the certificate against another name (SNI too)."""

    def __init__(
        self,
        host: str,
        port: int | None,
        *,
        timeout: float,
        context: ssl.SSLContext | None,
        server_hostname: str | None,
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_hostname = server_hostname

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        tunnel: str | None = getattr(self, "_tunnel_host", None)
        name = self._server_hostname or tunnel or self.host
        self.sock = self._context.wrap_socket(self.sock, server_hostname=name)  # type: ignore[attr-defined]


class Connections:
    """One connection per thread, opened on first use and after any failure."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def send(
        self, method: str, target: str, body: bytes | None, headers: Iterable[tuple[str, str]], timeout: float
    ) -> Response:
        """One request and its whole response. Raises NotSent when no connection could be
        opened, other OSError or HTTPException when it failed after being sent."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.endpoint.new(timeout)
            with self._lock:
                self._all.append(conn)
            self._local.conn = conn
        conn.timeout = timeout
        try:
            if conn.sock is None:
                try:
                    conn.connect()
                except (OSError, http.client.HTTPException) as exc:
                    raise NotSent(str(exc)) from exc
            else:
                conn.sock.settimeout(timeout)
            conn.putrequest(method, target, skip_accept_encoding=True)
            for name, value in headers:  # a repeated header (Impersonate-Group) stays separate lines
                conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            answer = conn.getresponse()
            data = answer.read()
        except BaseException:
            self._drop(conn)
            raise
        if answer.will_close:
            self._drop(conn)
        return Response(answer.status, answer.reason, answer.headers, data)

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        self._local.conn = None
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()


def reason(exc: BaseException) -> str:
    """The useful part of a connection error, in one line."""
    inner = exc.__cause__ if isinstance(exc, NotSent) and exc.__cause__ else exc
    if isinstance(inner, socket.timeout):
        return "timed out"
    if isinstance(inner, ssl.SSLError):
        return str(getattr(inner, "reason", None) and inner) or "TLS error"
    text = getattr(inner, "strerror", None) or str(inner) or type(inner).__name__
    return " ".join(str(text).split())
