"""HTTP/1.1 on one socket: write a request, read its response.

http.client parses every response's headers with the email package and wraps the
socket in a new buffered file per response; for the small answers of a bulk run that
was over half of the client's CPU per request. The API server speaks plain HTTP/1.1
(no compression unless asked, Content-Length or chunked bodies), so this is all the
protocol the tool needs.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

MAX_HEAD = 1 << 20  # a response head larger than this is not an API server's
READ_SIZE = 32768  # a TLS record is at most 16 KiB; a larger read buffer is allocated by mmap and freed each time
_FIELD = re.compile(r"^([^:\r\n]+):[ \t]*(.*)$", re.MULTILINE)


class ProtocolError(OSError):
    """The peer's answer is not HTTP/1.1 as the tool reads it."""


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: dict[str, str]  # names lower-cased; a repeated header keeps its last value
    data: bytes
    will_close: bool = False


class Wire:
    """A socket and what was read past the last response."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = bytearray()
        self.due: float | None = None  # when the exchange under way times out (connections.py watches)
        self.expired = False  # the watch shut it down: what failed is a timeout

    def close(self) -> None:
        self.sock.close()

    def exchange(self, head: bytes, body: bytes | None, *, expect_body: bool = True) -> Response:
        """Send one request (head ends with the blank line) and read its whole response."""
        self.sock.sendall(head + body if body else head)
        while True:
            status, reason, headers, version = self._head()
            if not 100 <= status < 200:
                break  # 1xx are interim answers; the tool never asks for them, but they are legal
        connection = headers.get("connection", "").lower()
        will_close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        if not expect_body or status in (204, 304):
            data = b""
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            data = self._chunked()
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise ProtocolError(f"bad Content-Length {headers['content-length']!r}") from None
            data = self._exactly(length)
        else:
            data, will_close = self._until_eof(), True
        return Response(status, reason, headers, data, will_close)

    def _fill(self) -> None:
        chunk = self.sock.recv(READ_SIZE)
        if not chunk:
            raise ConnectionResetError("the server closed the connection")
        self._buf += chunk

    def _line(self) -> bytes:
        buf = self._buf
        while (end := buf.find(b"\r\n")) < 0:
            if len(buf) > MAX_HEAD:
                raise ProtocolError("line too long")
            self._fill()
        line = bytes(buf[:end])
        del buf[: end + 2]
        return line

    def _head(self) -> tuple[int, str, dict[str, str], str]:
        buf = self._buf
        while (end := buf.find(b"\r\n\r\n")) < 0:
            if len(buf) > MAX_HEAD:
                raise ProtocolError("response head too large")
            self._fill()
        text = buf[:end].decode("latin-1")
        del buf[: end + 4]
        first, _, fields = text.partition("\r\n")
        version, _, rest = first.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or not code.isdigit():
            raise ProtocolError(f"not an HTTP response: {first[:80]!r}")
        headers = {name.lower(): value.rstrip() for name, value in _FIELD.findall(fields)}
        return int(code), reason, headers, version

    def _exactly(self, length: int) -> bytes:
        buf = self._buf
        while len(buf) < length:
            self._fill()
        data = bytes(memoryview(buf)[:length])  # one copy, not a slice and then a copy of it
        del buf[:length]
        return data

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_field = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_field, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size_field[:20]!r}") from None
            if size == 0:
                while self._line():  # trailers, up to the blank line
                    pass
                return b"".join(parts)
            parts.append(self._exactly(size))
            if self._exactly(2) != b"\r\n":
                raise ProtocolError("chunk not followed by CRLF")

    def _until_eof(self) -> bytes:
        try:
            while True:
                self._fill()
        except ConnectionResetError:
            pass
        data = bytes(self._buf)
        self._buf.clear()
        return data


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
