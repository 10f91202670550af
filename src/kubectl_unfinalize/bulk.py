"""The finalizer PATCHes of a bulk run, from one thread over many connections.

A thread per request in flight costs more client CPU than the request: each answer wakes
a thread, which takes the GIL from the others. Measured on 2,000 merge patches with 64 in
flight: 0.25-0.30 ms of client CPU per request with threads, 0.14-0.17 ms from one thread
waiting on all the sockets at once. So the common write (remove every finalizer: a merge
patch that is idempotent and needs no precondition) is sent here, and anything else
- an answer that is not 2xx, a dropped connection, a timeout, an answer this module does
not read (chunked, or closing the connection) - hands the object to the workers' threads,
which send it again with every retry rule, diagnosis and log line. Sending it twice is
harmless: the patch only ever removes finalizers.

Connections are opened (TCP, TLS resuming the session) on short-lived threads, so a far
cluster opens them all in one round trip, then read and written without blocking here.
Each stays registered with the selector while it is open (registering it per request was
two more system calls per object), so an idle one the server closes is noticed and
dropped before a patch is sent on it.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .connections import Connections
from .wire import Wire, request_head

WAKE = b"."
LOOK_EVERY = 0.1  # seconds between looks for overdue answers


@dataclass(slots=True)
class BulkPatch:
    """One object's finalizer patch. Called, it is the whole job on a worker thread."""

    path: str
    body: bytes
    done: Callable[[], object]  # the answer was 2xx: record the outcome
    fallback: Callable[[], object]  # anything else: the whole job, with retries and diagnosis

    def __call__(self) -> object:
        return self.fallback()


class Sink(Protocol):
    """What the workers are told about the patches sent here."""

    def finished(self, started: float) -> None: ...

    def requeue(self, job: Callable[[], object]) -> None: ...

    def failed(self, exc: BaseException) -> None: ...


@dataclass(slots=True)
class _Exchange:
    job: BulkPatch
    started: float
    due: float
    data: bytearray


class Bulk:
    def __init__(
        self,
        connections: Connections,
        headers: Callable[[], bytes],
        timeout: Callable[[], float],
        on_pushback: Callable[[], None],
        sink: Sink,
        cap: int,
    ) -> None:
        self._connections = connections
        self._headers = headers
        self._timeout = timeout
        self._on_pushback = on_pushback
        self._sink = sink
        self._cap = cap
        self._incoming: queue.SimpleQueue[BulkPatch] = queue.SimpleQueue()
        self._opened: queue.SimpleQueue[Wire | None] = queue.SimpleQueue()
        self._waiting: deque[BulkPatch] = deque()
        self._idle: list[Wire] = []
        self._busy: dict[Wire, _Exchange] = {}
        self._opening = 0
        self._wires = 0  # open: idle, busy, or being opened
        self._closed = False
        self._stopped = False  # the thread has ended, or is ending
        self._woken = False  # a wake-up byte is on its way: put() need not send another
        self._releasing: threading.Event | None = None  # release() waits on it
        self._next_look = 0.0  # when _expire() looks at the exchanges under way again
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="unfinalize-bulk", daemon=True)
        self._thread.start()

    def put(self, job: BulkPatch) -> None:
        self._incoming.put(job)
        if self._stopped:  # after a bug here, or close(): the workers send it
            self._hand_back_incoming()
        elif not self._woken:  # one wake-up for a burst of puts, not a system call each
            self._woken = True
            self._wake()

    def _hand_back_incoming(self) -> None:
        while True:
            try:
                self._sink.requeue(self._incoming.get_nowait().fallback)
            except queue.Empty:
                return

    def release(self, timeout: float = 1.0) -> None:
        """Give the idle connections to `connections` when nothing is waiting or in flight
        here: the threads that list next (the final check) need not open their own. A
        patch put later takes or opens one again."""
        if self._stopped:
            return
        done = self._releasing = threading.Event()
        self._wake()
        done.wait(timeout)

    def close(self) -> None:
        """Stop; what is still in flight goes back to the workers (there are none left
        when the engine drained them)."""
        self._closed = True
        self._wake()
        self._thread.join(timeout=5)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full: it is awake anyway
            self._wake_w.send(WAKE)

    def _run(self) -> None:
        try:
            while not self._closed:
                for key, _ in self._selector.select(LOOK_EVERY if self._busy or self._opening else None):
                    if key.data is None:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                        self._woken = False  # before _take(): what is put from now on wakes it again
                    else:
                        self._readable(key.data)
                self._take()
                self._expire()
                if self._releasing is not None:
                    self._give_idle()
        except BaseException as exc:  # noqa: BLE001 - a bug here must reach the engine, not kill the run silently
            self._sink.failed(exc)
        finally:
            self._shut()

    def _take(self) -> None:
        incoming, opened = self._incoming, self._opened  # this thread is their only reader
        while not incoming.empty():  # not get_nowait() until Empty: an exception per look costs more
            self._waiting.append(incoming.get_nowait())
        while self._opening and not opened.empty():
            wire = opened.get_nowait()
            self._opening -= 1
            if wire is None:
                # The server cannot be reached now. What waits goes to the workers, which
                # retry by the rules and say why; waiting for another opener instead could
                # go on for ever, each failure starting the next one.
                self._wires -= 1
                while self._waiting:
                    self._sink.requeue(self._waiting.popleft().fallback)
            else:
                wire.sock.setblocking(False)
                self._selector.register(wire.sock, selectors.EVENT_READ, wire)  # until it is closed
                self._idle.append(wire)
        if self._waiting and self._idle:
            # Once per batch, not per patch: the headers (a plugin's token may change
            # between batches) and when the batch's answers are due.
            headers, host, now = self._headers(), self._connections.host, time.monotonic()
            due = now + self._timeout()
            while self._waiting and self._idle:
                job = self._waiting.popleft()
                try:
                    head = request_head("PATCH", job.path, host, headers, len(job.body))
                except ValueError:  # a line break in it: the workers refuse it and say so
                    self._sink.requeue(job.fallback)
                    continue
                try:
                    self._send(job, self._idle.pop(), head, now, due)
                except BaseException:
                    self._sink.requeue(job.fallback)  # not lost to a bug here
                    raise
        for _ in range(min(len(self._waiting) - self._opening, self._cap - self._wires)):
            self._opening += 1
            self._wires += 1
            threading.Thread(target=self._open, daemon=True).start()

    def _open(self) -> None:
        try:
            wire: Wire | None = self._connections.open_wire(self._timeout())
        except OSError:
            wire = None
        self._opened.put(wire)
        self._wake()

    def _send(self, job: BulkPatch, wire: Wire, head: bytes, now: float, due: float) -> None:
        exchange = _Exchange(job, now, due, bytearray())
        try:
            data = head + job.body
            if wire.sock.send(data) != len(data):
                raise BlockingIOError("partial write")
        except OSError:
            self._drop(wire, exchange)
            return
        self._busy[wire] = exchange

    def _readable(self, wire: Wire) -> None:
        exchange = self._busy.get(wire)
        if exchange is None:  # an idle connection the server closed (or spoke out of turn)
            self._idle.remove(wire)
            self._close(wire)
            return
        try:
            while True:
                chunk = wire.sock.recv(32768)
                if not chunk:
                    raise ConnectionResetError("closed")
                exchange.data += chunk
                if not isinstance(wire.sock, ssl.SSLSocket) or not wire.sock.pending():
                    break
        except (ssl.SSLWantReadError, BlockingIOError):
            pass
        except OSError:
            self._drop(wire, exchange)
            return
        answer = _complete(exchange.data)
        if answer is None:
            return
        status, whole = answer
        if status < 0 or not whole:  # not read here (chunked, closing, more than one answer): start afresh
            self._drop(wire, exchange)
            return
        del self._busy[wire]
        self._idle.append(wire)
        if not 200 <= status < 300:
            if status == 429:
                self._on_pushback()
            self._sink.requeue(exchange.job.fallback)
            return
        try:
            exchange.job.done()
        finally:
            self._sink.finished(exchange.started)

    def _give_idle(self) -> None:
        done, self._releasing = self._releasing, None
        if not self._waiting and not self._busy:
            for wire in self._idle:
                self._selector.unregister(wire.sock)
                self._wires -= 1
                self._connections.give(wire)
            self._idle = []
        if done is not None:
            done.set()

    def _expire(self) -> None:
        now = time.monotonic()
        if now < self._next_look:  # not at every wake-up: that was a look at every exchange per answer
            return
        self._next_look = now + LOOK_EVERY
        for wire, exchange in list(self._busy.items()):
            if exchange.due < now:
                self._drop(wire, exchange)

    def _drop(self, wire: Wire, exchange: _Exchange) -> None:
        """Close the connection; its object goes back to the workers."""
        self._busy.pop(wire, None)
        self._close(wire)
        self._sink.requeue(exchange.job.fallback)

    def _close(self, wire: Wire) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(wire.sock)
        wire.close()
        self._wires -= 1

    def _shut(self) -> None:
        self._stopped = True
        self._hand_back_incoming()
        for wire, exchange in list(self._busy.items()):
            self._drop(wire, exchange)
        while self._waiting:
            self._sink.requeue(self._waiting.popleft().fallback)
        for wire in self._idle:
            wire.close()
        self._idle = []
        while self._opening:  # the openers still under way end soon; close what they bring
            opened = self._opened.get(timeout=60)
            self._opening -= 1
            if opened is not None:
                opened.close()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


def _complete(data: bytearray) -> tuple[int, bool] | None:
    """(status, True) once `data` holds one whole answer with a Content-Length; (status,
    False) or (-1, False) for an answer read elsewhere; None while it is incomplete.

    Only what decides whether the answer is complete and the connection reusable is read,
    from the bytes: wire.parse_head (every header into a dict) took 12 us per answer
    against 5 here, once per object; whatever this does not read goes to the workers,
    whose Wire parses it fully."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(data[:end]).lower()
    if not head.startswith(b"http/1.1 ") or not head[9:12].isdigit():
        return -1, False
    status = int(head[9:12])
    at = head.find(b"\r\ncontent-length:")
    if at < 0 or b"\r\nconnection: close" in head or 100 <= status < 200:
        return status, False
    line_end = head.find(b"\r\n", at + 2)
    try:
        length = int(head[at + 17 : line_end if line_end > 0 else None])
    except ValueError:
        return -1, False
    have = len(data) - end - 4
    if have < length:
        return None
    return status, have == length
