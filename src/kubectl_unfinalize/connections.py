"""Keep-alive HTTPS connections to the API server, one per worker thread.

urllib3's pool costs about 0.6 ms of CPU per request over a bare connection, more than
the request itself; a bulk run makes thousands of small requests from a fixed set of
threads, so each thread keeping its own connection is all the pooling it needs. The
HTTP itself is wire.py's.
"""

from __future__ import annotations

import socket
import ssl
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from .wire import ProtocolError, Response, Wire, header_lines, request_head

__all__ = ["Connections", "Endpoint", "NotSent", "ProtocolError", "Response", "header_lines", "reason"]


class NotSent(OSError):
    """The connection could not be opened: the server never saw the request."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect: the server URL, TLS settings, an optional proxy."""

    url: str
    context: ssl.SSLContext | None = None
    server_hostname: str | None = None  # --tls-server-name: the name the certificate must carry
    proxy: str | None = None  # http://host:port, tunnelled with CONNECT

    @property
    def host_header(self) -> str:
        target = urlsplit(self.url)
        host = target.hostname or ""
        host = f"[{host}]" if ":" in host else host
        return f"{host}:{target.port}" if target.port else host

    def open(self, timeout: float, session: ssl.SSLSession | None = None) -> Wire:
        """TCP, then the proxy's tunnel, then TLS (resuming `session` when the server
        agrees: no client-certificate signature and no chain to verify again). Raises NotSent."""
        target = urlsplit(self.url)
        host = target.hostname or ""
        port = target.port or (80 if target.scheme == "http" else 443)
        via = urlsplit(self.proxy) if self.proxy else None
        address = (via.hostname or "", via.port or 80) if via else (host, port)
        try:
            sock = socket.create_connection(address, timeout)
        except OSError as exc:
            raise NotSent(str(exc)) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if via:
                _tunnel(sock, self.host_header)
            if target.scheme != "http":
                context = self.context or ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self.server_hostname or host, session=session)
        except OSError as exc:
            sock.close()
            raise NotSent(str(exc)) from exc
        return Wire(sock)


def _tunnel(sock: socket.socket, authority: str) -> None:
    head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode("latin-1")
    answer = Wire(sock).exchange(head, None, expect_body=False)
    if answer.status != 200:
        raise ProtocolError(f"the proxy refused the tunnel: {answer.status} {answer.reason}".strip())


class Connections:
    """One connection per thread, opened on first use and after any failure.

    A full TLS handshake with a client certificate cost 2.4 ms of client CPU here (64 of
    them: 0.15 s, as much as freeing 300 objects); the connections after the first
    resume its TLS session (0.07 s for 64)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._session: ssl.SSLSession | None = None
        self._host = endpoint.host_header
        self._local = threading.local()
        self._all: set[Wire] = set()
        self._lock = threading.Lock()

    def send(self, method: str, target: str, body: bytes | None, headers: bytes, timeout: float) -> Response:
        """One request and its whole response; `headers` are wire.header_lines(). Raises
        NotSent when no connection could be opened, another OSError when it failed after
        being sent, ValueError when the target cannot be sent."""
        head = request_head(method, target, self._host, headers, None if body is None else len(body))
        wire: Wire | None = getattr(self._local, "wire", None)
        fresh = wire is None
        if wire is None:
            wire = self.endpoint.open(timeout, self._session)
            with self._lock:
                self._all.add(wire)
            self._local.wire = wire
        try:
            wire.set_timeout(timeout)
            answer = wire.exchange(head, body)
        except BaseException:
            self._drop(wire)
            raise
        if fresh and isinstance(wire.sock, ssl.SSLSocket) and not wire.sock.session_reused:
            self._session = wire.sock.session  # its ticket arrived with the first answer
        if answer.will_close:
            self._drop(wire)
        return answer

    def _drop(self, wire: Wire) -> None:
        wire.close()
        self._local.wire = None
        with self._lock:
            self._all.discard(wire)

    def close(self) -> None:
        with self._lock:
            wires, self._all = self._all, set()
        for wire in wires:
            wire.close()


def reason(exc: BaseException) -> str:
    """The useful part of a connection error, in one line."""
    inner = exc.__cause__ if isinstance(exc, NotSent) and exc.__cause__ else exc
    if isinstance(inner, socket.timeout):
        return "timed out"
    if isinstance(inner, ssl.SSLError):
        return str(getattr(inner, "reason", None) and inner) or "TLS error"
    text = getattr(inner, "strerror", None) or str(inner) or type(inner).__name__
    return " ".join(str(text).split())
