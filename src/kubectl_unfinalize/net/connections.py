"""Keep-alive HTTPS connections to the API server, one per worker thread.

A pool (urllib3's) costs more client CPU per request than the request itself; a bulk run
makes thousands of small requests from a fixed set of threads, so each thread keeping its
own connection is all the pooling it needs. The HTTP itself is wire.py's.

An open connection's socket blocks, and one watch thread shuts down any whose exchange
is past its time: a socket with a timeout costs a poll() before each TLS read and write,
each releasing and taking back the GIL, which with many threads is a large share of the
client's CPU. (A kernel receive timeout does not help: Python's TLS read retries a
blocking socket's EAGAIN for ever.)
"""

from __future__ import annotations

import base64
import dataclasses
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

from .wire import ProtocolError, Response, Wire, header_lines, request_head

__all__ = ["Connections", "Endpoint", "NotSent", "ProtocolError", "Response", "header_lines", "reason"]


FAR = 0.02  # seconds: a round trip this long or longer is a far server's (the bulk sender, the pacing)
WATCH_EVERY = 0.1  # seconds between looks for overdue exchanges: how late a timeout may fire


class NotSent(OSError):
    """The connection could not be opened: the server never saw the request."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect: the server URL, TLS settings, an optional proxy."""

    url: str
    context: ssl.SSLContext | None = None
    server_hostname: str | None = None  # --tls-server-name: the name the certificate must carry
    proxy: str | None = None  # http://[user:password@]host:port (proxies.proxy_for), tunnelled with CONNECT

    def __post_init__(self) -> None:
        if self.proxy and urlsplit(self.proxy).scheme != "http":  # never a plaintext CONNECT to another kind
            raise ValueError(f"not an http:// proxy: {urlsplit(self.proxy).scheme}")

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
            # bytes are what getaddrinfo takes unconverted; typeshed's create_connection says str only
            sock = socket.create_connection((ascii_bytes(address[0]), address[1]), timeout)  # type: ignore[arg-type]
        except OSError as exc:
            raise NotSent(str(exc)) from (_at_proxy(via, exc) if via else exc)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if via:
                try:
                    _tunnel(sock, f"[{host}]:{port}" if ":" in host else f"{host}:{port}", via)
                except OSError as exc:
                    raise _at_proxy(via, exc) from exc
            if target.scheme != "http":
                context = self.context or ssl.create_default_context()
                name = ascii_bytes(self.server_hostname or host)
                sock = context.wrap_socket(sock, server_hostname=name, session=session)
        except OSError as exc:
            sock.close()
            raise NotSent(str(exc)) from exc
        return Wire(sock)


def ascii_bytes(host: str) -> str | bytes:
    """A host name for getaddrinfo, SNI and the certificate check. An ASCII name goes as
    bytes: given a str, socket and ssl run every name through the idna codec, whose import
    (stringprep, unicodedata) was a measurable part of a short run's start-up; the codec
    leaves ASCII labels as they are, so the bytes are what it would give."""
    return host.encode("ascii") if host.isascii() else host


def _tunnel(sock: socket.socket, authority: str, via: SplitResult) -> None:
    """Ask the proxy for a tunnel to `authority` (host:port, the port always written, as
    CONNECT requires). The proxy URL's user and password go as Basic credentials,
    percent-decoded the way Go's net/url reads them, so kubectl's proxy URLs work as they are."""
    head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    if via.username is not None:
        pair = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
        head += f"Proxy-Authorization: Basic {base64.b64encode(pair).decode('ascii')}\r\n"
    answer = Wire(sock).exchange((head + "\r\n").encode("latin-1"), None, expect_body=False)
    if answer.status != 200:
        raise ProtocolError(f"refused the tunnel to {authority}: {answer.status} {answer.reason}".strip())


def _at_proxy(via: SplitResult, exc: OSError) -> OSError:
    """`exc` as one line naming the proxy (never its credentials): a failure there is not the API server's."""
    return OSError(f"proxy http://{via.netloc.rpartition('@')[2]}: {reason(exc)}")


class Connections:
    """One connection per thread, opened on first use and after any failure.

    A full TLS handshake with a client certificate costs as much client CPU as freeing
    several objects; the connections after the first resume its TLS session, which skips
    the certificate signature and the chain verification. A renewed client certificate
    (renew_tls) starts a new generation: an older connection serves no further request."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.generation = 0  # of the TLS settings new connections are opened with
        self._session: ssl.SSLSession | None = None
        self._host = endpoint.host_header
        self._local = threading.local()
        self._all: set[Wire] = set()
        self._spare: list[Wire] = []  # open and idle, owned by no thread (given back by the bulk sender)
        self._lent: list[Wire] = []  # open and idle, for the next thread's request (lend())
        self._owners: dict[Wire, threading.Thread] = {}  # each thread's own, to take over once it ended
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._watch: threading.Thread | None = None
        self.round_trip: float | None = None  # the quickest exchange so far: how far the server is

    @property
    def host(self) -> str:
        return self._host

    def open_wire(self, timeout: float) -> Wire:
        """A connection owned by the caller: a spare one, or a new one resuming the TLS
        session. Its socket may be left blocking or not. Raises NotSent."""
        return self._take_spare() or self._open(timeout)

    def _open(self, timeout: float) -> Wire:
        with self._lock:
            endpoint, generation, session = self.endpoint, self.generation, self._session
        wire = endpoint.open(timeout, session)
        wire.generation = generation
        return wire

    def renew_tls(self, context: ssl.SSLContext) -> None:
        """A new client certificate (an exec plugin's, renewed): the connections opened
        from now on present it, and do not resume the TLS session of the old one. The
        idle ones are closed; one under way finishes, and is closed before its thread's
        next request (the bulk sender checks `generation` too)."""
        with self._lock:
            self.endpoint = dataclasses.replace(self.endpoint, context=context)
            self.generation += 1
            self._session = None
            idle, self._spare, self._lent = self._spare + self._lent, [], []
            self._all.difference_update(idle)
        for wire in idle:
            wire.close()

    def give(self, wire: Wire) -> None:
        """An open, idle connection for the next thread or caller that needs one: a new
        one costs a TLS handshake, even when resumed."""
        wire.sock.setblocking(True)
        with self._lock:
            if not self._closed.is_set() and wire.generation == self.generation:
                self._spare.append(wire)
                return
        wire.close()

    def _take_spare(self) -> Wire | None:
        with self._lock:
            return self._spare.pop() if self._spare else None

    def lend(self) -> None:
        """The calling thread is done with its connection for now: the next request of
        another thread takes it (and this thread's next one takes another, or opens one).
        The bulk sender never takes these: on a far server it opens its own at the start,
        and a lent one is then what spares the first list or review a round trip."""
        wire: Wire | None = getattr(self._local, "wire", None)
        if wire is None:
            return
        self._local.wire = None
        with self._lock:
            self._owners.pop(wire, None)
            if not self._closed.is_set() and wire.due is None:
                self._lent.append(wire)
                return
            self._all.discard(wire)
        wire.close()

    def _orphan(self) -> Wire | None:
        """The connection of a thread that has ended (a list's read-ahead, the preflight's
        thread), for the next thread that has none: a --delete run's wait for its CRDs,
        on the main thread, opened a new one after the last write (a handshake; two
        round trips far away) while those sat idle. Under the lock."""
        for wire, thread in self._owners.items():
            if not thread.is_alive():
                del self._owners[wire]
                return wire
        return None

    def send(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: bytes,
        timeout: float,
        on_chunk: Callable[[bytes], bool] | None = None,
    ) -> Response:
        """One request and its whole response; `headers` are wire.header_lines(); a
        watch's chunks go to `on_chunk` as they come (wire.Parser.on_chunk). Raises
        NotSent when no connection could be opened, another OSError when it failed after
        being sent, ValueError when the target cannot be sent."""
        head = request_head(method, target, self._host, headers, None if body is None else len(body))
        wire: Wire | None = getattr(self._local, "wire", None)
        if wire is not None and wire.generation != self.generation:  # the client certificate was renewed
            self._drop(wire)
            wire = None
        fresh = False
        if wire is None:
            with self._lock:
                wire = self._lent.pop() if self._lent else self._orphan()  # already among _all
            if wire is not None and wire.generation != self.generation:
                self._drop(wire)
                wire = None
            wire = wire or self._take_spare()
            if wire is None:
                if self._closed.is_set():  # a review asked ahead, still retrying as the run ends
                    raise NotSent("the run's connections are closed")
                fresh = True
                wire = self._open(timeout)  # connect and handshake under `timeout`
            wire.sock.settimeout(None)
            with self._lock:
                self._all.add(wire)
                self._owners[wire] = threading.current_thread()
                if self._watch is None:
                    self._watch = threading.Thread(target=self._expire, name="unfinalize-watch", daemon=True)
                    self._watch.start()
            self._local.wire = wire
        started = time.monotonic()
        wire.due = started + timeout
        try:
            answer = wire.exchange(head, body, on_chunk=on_chunk)
        except BaseException as exc:
            self._drop(wire)
            if wire.expired:
                raise TimeoutError("timed out") from exc
            raise
        finally:
            wire.due = None
        took = time.monotonic() - started
        if self.round_trip is None or took < self.round_trip:  # threads may race here: any of theirs will do
            self.round_trip = took
        if fresh and isinstance(wire.sock, ssl.SSLSocket) and not wire.sock.session_reused:
            with self._lock:
                if wire.generation == self.generation:  # not a session of a certificate renewed since
                    self._session = wire.sock.session  # its ticket arrived with the first answer
        if answer.will_close:
            self._drop(wire)
        return answer

    def _drop(self, wire: Wire) -> None:
        wire.close()
        self._local.wire = None
        with self._lock:
            self._all.discard(wire)
            self._owners.pop(wire, None)

    def close(self) -> None:
        """Close every connection; an exchange still under way (the run was interrupted)
        is woken, not left blocked on a descriptor the process may reuse."""
        self._closed.set()
        with self._lock:
            wires, self._all = self._all, set()
            spare, self._spare = self._spare, []
            self._lent, self._owners = [], {}  # among `wires`
        for wire in wires:
            if wire.due is not None:
                _shut(wire)
            wire.close()
        for wire in spare:
            wire.close()

    def _expire(self) -> None:
        """Shut down the connections whose exchange is overdue: the blocked read or write
        returns, and send() reports a timeout."""
        while not self._closed.wait(WATCH_EVERY):
            now = time.monotonic()
            with self._lock:
                overdue = [wire for wire in self._all if (due := wire.due) is not None and due < now]
            for wire in overdue:
                wire.expired = True
                _shut(wire)


def _shut(wire: Wire) -> None:
    """End the connection under a thread blocked on it: its read or write returns."""
    try:
        socket.socket.shutdown(wire.sock, socket.SHUT_RDWR)  # the descriptor, not the TLS session
    except OSError:
        pass


def reason(exc: BaseException) -> str:
    """The useful part of a connection error, in one line."""
    inner = exc.__cause__ if isinstance(exc, NotSent) and exc.__cause__ else exc
    if isinstance(inner, socket.timeout):
        return "timed out"
    if isinstance(inner, ssl.SSLError):
        return str(getattr(inner, "reason", None) and inner) or "TLS error"
    text = getattr(inner, "strerror", None) or str(inner) or type(inner).__name__
    return " ".join(str(text).split())
