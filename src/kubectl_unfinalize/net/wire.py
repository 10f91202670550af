"""HTTP/1.1 to the API server: one incremental response parser, and a socket that uses it.

The tool speaks to one kind of peer, Go's net/http in the API server (or a proxy in
front of it), so the framing read here is that server's: Content-Length or chunked
bodies (Go chunks any answer the handler writes past its small buffer without a length,
which is every object of a few KiB), no compression unless asked, 1xx interim answers
skipped. http.client was not used because it builds a new buffered file and an email
message per response, which cost more client CPU than the request.

`Parser` keeps its place in a connection's buffer, so a caller may feed it bytes as they
arrive (the bulk sender, waiting on many sockets at once) or read until it has a whole
answer (`Wire`, one blocking socket per thread). Both read every answer the same way.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

MAX_HEAD = 1 << 20  # a response head (or a chunk-size line) larger than this is not an API server's
READ_SIZE = 32768  # a TLS record is at most 16 KiB; a larger read buffer is allocated by mmap and freed each time
_FIELD = re.compile(r"^([^:\r\n]+):[ \t]*(.*)$", re.MULTILINE)

_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _TRAILERS, _EOF = range(6)


class ProtocolError(OSError):
    """The peer's answer is not HTTP/1.1 as the tool reads it."""


class Headers(Mapping[str, str]):
    """A response's header fields, names lower-cased, a repeated one keeping its last value.
    Read into a dict only when asked: the answers to bulk patches are read for their framing
    alone, and a dict of their seven fields per answer was a fifth of the parsing."""

    __slots__ = ("_fields", "_parsed")

    def __init__(self, fields: str) -> None:
        self._fields = fields
        self._parsed: dict[str, str] | None = None

    def _all(self) -> dict[str, str]:
        if self._parsed is None:
            self._parsed = {name.lower(): value.rstrip() for name, value in _FIELD.findall(self._fields)}
        return self._parsed

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def _field(lowered: str, name: str) -> str | None:
    """The last value of header `name` in `lowered`, the head's fields lower-cased after a
    line break; None when absent. A name counts only at the start of a line."""
    start = lowered.rfind(f"\r\n{name}:")
    if start < 0:
        return None
    start += len(name) + 3
    end = lowered.find("\r\n", start)
    return lowered[start : end if end >= 0 else len(lowered)].strip(" \t")


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    reason: str
    headers: Mapping[str, str]  # names lower-cased; a repeated header keeps its last value
    data: bytes
    will_close: bool = False


class Parser:
    """Whole responses out of a connection's bytes, one after another.

    `feed(buf)` consumes from `buf` what it has read and returns a Response once one is
    complete, else None (feed it again when more bytes have arrived). A body that runs
    to the end of the connection (no length, no chunks) is ended by `at_eof(buf)`.
    `expect_body` is False for the answer to a request that has none (CONNECT)."""

    __slots__ = ("_chunks", "_close", "_headers", "_need", "_reason", "_state", "_status", "expect_body", "on_chunk")

    def __init__(self) -> None:
        self.expect_body = True
        # A watch's events as they come (chunked bodies only): each chunk goes here instead
        # of into the body; True ends the answer there, its body empty and the connection
        # not to be used again (the rest of the stream is never read).
        self.on_chunk: Callable[[bytes], bool] | None = None
        self._start()

    def _start(self) -> None:
        self._state = _HEAD
        self._status = 0
        self._reason = ""
        self._headers: Mapping[str, str] = {}
        self._close = False
        self._need = 0
        self._chunks: list[bytes] = []

    def feed(self, buf: bytearray) -> Response | None:
        while True:
            state = self._state
            if state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD:
                        raise ProtocolError("response head too large")
                    return None
                head = buf[:end].decode("latin-1")
                del buf[: end + 4]
                if self._head(head):
                    return self._done(b"")
            elif state == _LENGTH:
                if len(buf) < self._need:
                    return None
                data = bytes(memoryview(buf)[: self._need])  # one copy, not a slice and then a copy of it
                del buf[: self._need]
                return self._done(data)
            elif state == _CHUNK_SIZE or state == _TRAILERS:
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD:
                        raise ProtocolError("line too long")
                    return None
                line = bytes(buf[:end])
                del buf[: end + 2]
                if state == _TRAILERS:
                    if not line:  # the blank line after the trailers ends the answer
                        return self._done(b"".join(self._chunks))
                    continue
                field = line.split(b";", 1)[0].strip()
                try:
                    size = int(field, 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size {field[:20]!r}") from None
                if size < 0:
                    raise ProtocolError(f"bad chunk size {field[:20]!r}")
                if size == 0:
                    self._state = _TRAILERS
                else:
                    self._state, self._need = _CHUNK_DATA, size + 2
            elif state == _CHUNK_DATA:
                need = self._need
                if len(buf) < need:
                    return None
                if buf[need - 2 : need] != b"\r\n":
                    raise ProtocolError("chunk not followed by CRLF")
                data = bytes(memoryview(buf)[: need - 2])
                del buf[:need]
                self._state = _CHUNK_SIZE
                if self.on_chunk is None or not 200 <= self._status < 300:  # an error's body is read whole
                    self._chunks.append(data)
                elif self.on_chunk(data):
                    self._close = True
                    return self._done(b"")
            else:  # _EOF: everything up to the end of the connection
                return None

    def at_eof(self, buf: bytearray) -> Response:
        """The server closed the connection: the body read to the end, if that is how it
        was framed. Raises ConnectionResetError for an answer cut short."""
        if self._state != _EOF:
            raise ConnectionResetError("the server closed the connection")
        data = bytes(buf)
        buf.clear()
        return self._done(data)

    def _head(self, text: str) -> bool:
        """Read a head; True when the answer has no body."""
        first, _, fields = text.partition("\r\n")
        version, _, rest = first.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.1 response: {first[:80]!r}")
        status = int(code)
        if 100 <= status < 200:
            return False  # interim: the tool never asks for one, but they are legal; the answer follows
        lowered = "\r\n" + fields.lower()  # the framing fields, found without a dict of them all
        connection = _field(lowered, "connection") or ""
        self._status, self._reason, self._headers = status, reason, Headers(fields)
        self._close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        if not self.expect_body or status in (204, 304):
            return True
        if _field(lowered, "transfer-encoding") == "chunked":  # it wins over a length (RFC 9112 6.3)
            self._state = _CHUNK_SIZE
            return False
        declared = _field(lowered, "content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                length = -1
            if length < 0:
                raise ProtocolError(f"bad Content-Length {declared!r}")
            if length == 0:
                return True
            self._state, self._need = _LENGTH, length
            return False
        self._state, self._close = _EOF, True
        return False

    def _done(self, data: bytes) -> Response:
        response = Response(self._status, self._reason, self._headers, data, self._close)
        self._start()
        return response


class Wire:
    """A blocking socket, its parser and what was read past the last response."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = bytearray()
        self._parser = Parser()
        self.due: float | None = None  # when the exchange under way times out (connections.Connections watches)
        self.expired = False  # the watch shut it down: what failed is a timeout
        self.generation = 0  # the TLS settings it was opened with (Connections.renew_tls counts them)

    def close(self) -> None:
        self.sock.close()

    def exchange(
        self,
        head: bytes,
        body: bytes | None,
        *,
        expect_body: bool = True,
        on_chunk: Callable[[bytes], bool] | None = None,
    ) -> Response:
        """Send one request (head ends with the blank line) and read its whole response,
        or, with `on_chunk`, until it returns True (Parser.on_chunk)."""
        self.sock.sendall(head + body if body else head)
        parser, buf = self._parser, self._buf
        parser.expect_body, parser.on_chunk = expect_body, on_chunk
        try:
            while (response := parser.feed(buf)) is None:
                chunk = self.sock.recv(READ_SIZE)
                if not chunk:
                    return parser.at_eof(buf)
                buf += chunk
            return response
        finally:
            parser.on_chunk = None


def header_lines(headers: Iterable[tuple[str, str]]) -> bytes:
    """Header lines, each ending with CRLF; a repeated header (Impersonate-Group) stays one
    line each. Built once per kind of request, not per request. Raises ValueError when a
    value would break the head (a token with a newline in it)."""
    lines = []
    for name, value in headers:
        if "\n" in value or "\r" in value:
            raise ValueError(f"invalid value for the {name} header: it contains a line break")
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode("latin-1")


def request_head(method: str, target: str, host: str, headers: bytes, length: int | None) -> bytes:
    """The request line, Host, `headers` (from header_lines) and the body's length."""
    if "\n" in target or "\r" in target:
        raise ValueError("invalid request target: it contains a line break")
    head = f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n".encode("latin-1") + headers
    if length is not None:
        head += b"Content-Length: %d\r\n" % length
    return head + b"\r\n"


def read_ready(sock: socket.socket, buf: bytearray) -> bool:
    """Add to `buf` what a non-blocking socket has ready, a TLS record's buffered rest
    too (select() does not see it); False when the connection was reset or closed."""
    try:
        while True:
            chunk = sock.recv(READ_SIZE)
            if not chunk:
                return False
            buf += chunk
            if not isinstance(sock, ssl.SSLSocket) or not sock.pending():
                return True
    except (ssl.SSLWantReadError, BlockingIOError):
        return True
    except OSError:
        return False
