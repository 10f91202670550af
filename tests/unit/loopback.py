"""What the HTTP unit tests share: an HTTP/1.1 server on 127.0.0.1 scripted per request,
and a sink that records what the bulk sender tells the workers."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@dataclass(frozen=True)
class Late:
    """An answer sent after `seconds`."""

    seconds: float
    data: bytes


Answer = bytes | Late | None  # the bytes to send; b"": close the connection; None: never answer


def chunked(body: bytes, piece: int = 2048, status: bytes = b"200 OK") -> bytes:
    """An answer as Go's net/http frames one larger than its buffer: chunks, no length."""
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + piece]), body[i : i + piece]) for i in range(0, len(body), piece)
    )
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunks
        + b"0\r\n\r\n"
    )


class LoopbackServer:
    """Answers each request with `script(method, path)`, in order on each connection
    (as HTTP/1.1 does: nothing after an answer that never comes). Counts connections and
    records every request."""

    def __init__(self, script: Callable[[str, str], Answer]) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[tuple[str, str]] = []
        self.pipelined = 0  # requests that arrived while one was still unanswered on their connection
        self.close_after_answer = False
        self._accepted: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            self._accepted.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        with conn, contextlib.suppress(OSError):
            while chunk := conn.recv(65536):
                data += chunk
                while b"\r\n\r\n" in data:
                    head, _, rest = data.partition(b"\r\n\r\n")
                    fields = head.lower().split(b"content-length: ")
                    length = int(fields[1].split(b"\r\n")[0]) if len(fields) > 1 else 0
                    if len(rest) < length:
                        break
                    data = rest[length:]
                    if data:
                        self.pipelined += 1
                    method, path = head.split(b" ")[:2]
                    self.requests.append((method.decode(), path.decode()))
                    answer = self.script(method.decode(), path.decode())
                    if isinstance(answer, Late):
                        time.sleep(answer.seconds)
                        answer = answer.data
                    if answer is None:
                        while conn.recv(65536):
                            pass
                        return
                    if answer == b"":
                        return
                    conn.sendall(answer)
                    if self.close_after_answer:
                        return

    def close(self) -> None:
        self.listener.close()
        for conn in self._accepted:
            with contextlib.suppress(OSError):
                conn.close()


class RecordingSink:
    """The bulk sender's Sink: the start times of what finished, what was handed back
    (each handed-back job is run, and what it returns recorded), and any bug.
    `wait(n)` waits for n of these events."""

    def __init__(self) -> None:
        self.started: list[float] = []
        self.finished_at: list[float] = []  # when each finished() came
        self.requeued: list[object] = []
        self.waits: list[float] = []  # the Retry-After each handed-back job is to wait first
        self.failures: list[BaseException] = []
        self.returns: list[object] = []  # what returned() was given (never had a place), run
        self.room: int | None = None  # places left to give (places()); None: as many as asked
        self._events = threading.Semaphore(0)

    def places(self, wanted: int) -> int:
        granted = wanted if self.room is None else max(0, min(wanted, self.room))
        if self.room is not None:
            self.room -= granted
        return granted

    def finished(self, started: float) -> None:
        self.started.append(started)
        self.finished_at.append(time.monotonic())
        self._events.release()

    def returned(self, job: Callable[[], object]) -> None:
        self.returns.append(job())
        self._events.release()

    def requeue(self, job: Callable[[], object], wait: float = 0.0) -> None:
        self.requeued.append(job())
        self.waits.append(wait)
        self._events.release()

    def failed(self, exc: BaseException) -> None:
        self.failures.append(exc)
        self._events.release()

    def wait(self, events: int, timeout: float = 10.0) -> bool:
        return all(self._events.acquire(timeout=timeout) for _ in range(events))
