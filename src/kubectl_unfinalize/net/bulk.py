"""The finalizer PATCHes of a bulk run, from one thread over many connections.

A thread per request in flight costs more client CPU than the request: each answer wakes
a thread, which takes the GIL from the others. So the common write (remove every
finalizer: a merge patch that is idempotent and needs no precondition) is sent from one
thread waiting on all the sockets at once, and anything but a 2xx answer hands the object
to the workers' threads, which send it again with every retry rule, diagnosis and log
line. An answer that came is read whole, whatever its size or framing (wire.Parser), so
the normal case is one PATCH per object (with --delete, its DELETE, then the PATCH in
the same place). A job handed back after its request went out and no answer came (a
reset, a timeout) says so: the server may have applied it, and a 404 on the re-send then
means "freed, and gone since".

One request per connection, as many connections as requests in flight (`cap`), opened
(TCP, TLS resuming the session) on short-lived threads so a far cluster opens them all in
one round trip. Each stays registered with the selector while open: an idle one the
server closes is dropped before a patch is sent on it.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable

from .bulk_patch import BulkPatch, Sink
from .connections import Connections
from .gathering import gather_window
from .wire import Parser, ProtocolError, Wire, read_ready, request_head

WAKE = b"."
LOOK_EVERY = 0.1  # seconds between looks for overdue answers


class _Connection:
    """An open connection, what it has read, and the patch it waits on (None: idle)."""

    __slots__ = ("buf", "due", "job", "parser", "started", "wire")

    def __init__(self, wire: Wire) -> None:
        self.wire, self.buf, self.parser = wire, bytearray(), Parser()
        self.job: BulkPatch | None = None
        self.started = self.due = 0.0


class Bulk:
    def __init__(
        self,
        connections: Connections,
        headers: Callable[[str, str], bytes],  # (accept, content type) -> the header lines, a token's too
        timeout: Callable[[], float],
        on_pushback: Callable[[float, str | None], float],  # a 429: when it was sent, its Retry-After -> the wait
        sink: Sink,
        cap: int,
    ) -> None:
        self._connections, self._headers, self._timeout = connections, headers, timeout
        self._on_pushback, self._sink = on_pushback, sink
        self._cap = cap  # requests in flight, one per connection (the workers' limit keeps to it too)
        self._incoming: queue.SimpleQueue[BulkPatch] = queue.SimpleQueue()
        self._opened: queue.SimpleQueue[Wire | None] = queue.SimpleQueue()
        self._waiting: deque[BulkPatch] = deque()
        self._placed = 0  # the first of _waiting that the sink gave a place
        self._open: dict[Wire, _Connection] = {}  # every open connection
        self._idle: list[_Connection] = []
        self._in_flight = 0
        self._opening = 0
        self._warm = 0  # connections to have open before patches need them (warm())
        self._closed = False
        self._stopped = False  # the thread has ended, or is ending
        self._woken = False  # a wake-up byte is on its way: put() need not send another
        self._releasing: threading.Event | None = None  # release() waits on it
        self._next_look = 0.0  # when _expire() looks at the patches under way again
        self._latency = 0.0  # of the answers, a moving average (0: none yet)
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
        else:
            self.nudge()

    def nudge(self) -> None:
        """Put, or a place freed elsewhere: the sender looks at its waiting patches again."""
        if not self._woken:  # one wake-up for a burst, not a system call each
            self._woken = True
            self._wake()

    def warm(self, count: int) -> None:
        """Open up to `count` connections now, before the first patch: on a far cluster a
        new connection costs a round trip (TLS) before its first request, and the first
        list page takes one or more anyway."""
        self._warm = min(count, self._cap)
        self._wake()

    def _hand_back_incoming(self) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self._sink.returned(self._incoming.get_nowait())

    def _hand_back_waiting(self) -> None:
        while self._waiting:
            job = self._waiting.popleft()
            if self._placed:
                self._placed -= 1
                self._sink.requeue(job)
            else:
                self._sink.returned(job)

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
                ready = self._selector.select(LOOK_EVERY if self._in_flight or self._opening else None)
                if ready and (wait := gather_window(self._latency, self._connections.round_trip, self._busy())) > 0:
                    time.sleep(wait)  # what comes meanwhile is read with what came
                    ready = self._selector.select(0)
                for key, _ in ready:
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
                self._hand_back_waiting()
            else:
                wire.sock.setblocking(False)
                conn = self._open[wire] = _Connection(wire)
                self._selector.register(wire.sock, selectors.EVENT_READ, conn)  # until it is closed
                self._idle.append(conn)
        if (wanted := min(len(self._waiting), self._cap - self._in_flight) - self._placed) > 0:
            self._placed += self._sink.places(wanted)
        if self._placed and self._idle:
            # Once per batch, not per patch: the headers (a plugin's token may change
            # between batches) and when the batch's answers are due.
            headers: dict[tuple[str, str], bytes] = {}
            host, now = self._connections.host, time.monotonic()
            due = now + self._timeout()
            while self._placed and self._idle and self._in_flight < self._cap:
                if self._idle[-1].wire.generation != self._connections.generation:
                    self._drop(self._idle.pop())  # opened with a client certificate renewed since
                    continue
                job = self._waiting.popleft()
                self._placed -= 1
                kind = (job.accept, job.content_type)
                try:
                    try:
                        lines = headers.get(kind) or headers.setdefault(kind, self._headers(*kind))
                        head = request_head(job.method, job.path, host, lines, len(job.body))
                    except ValueError:  # a line break in it: the workers refuse it and say so
                        self._sink.requeue(job)  # with its place: the next round asks for another
                        self._wake()
                        continue
                    self._send(self._idle.pop(), job, head, now, due)
                except BaseException:
                    self._sink.requeue(job)  # not lost to a bug here
                    raise
        opening = max(self._placed - self._opening, self._warm - len(self._open) - self._opening)
        for _ in range(min(opening, self._cap - len(self._open) - self._opening)):
            self._opening += 1
            threading.Thread(target=self._open_one, daemon=True).start()

    def _busy(self) -> bool:
        return self._in_flight * 4 >= self._cap

    def _open_one(self) -> None:
        try:
            wire: Wire | None = self._connections.open_wire(self._timeout())
        except OSError:
            wire = None
        self._opened.put(wire)
        self._wake()

    def _send(self, conn: _Connection, job: BulkPatch, head: bytes, now: float, due: float) -> None:
        conn.job, conn.started, conn.due = job, now, due
        self._in_flight += 1
        try:
            data = head + job.body
            if conn.wire.sock.send(data) != len(data):
                raise BlockingIOError("partial write")
        except OSError:
            self._drop(conn)

    def _readable(self, conn: _Connection) -> None:
        if conn.wire not in self._open:  # dropped earlier in this round
            return
        buf = conn.buf
        if not read_ready(conn.wire.sock, buf):  # reset, or closed by the server (when idle: nothing goes back)
            self._drop(conn)
            return
        job = conn.job
        if job is None:
            if buf:  # an answer to nothing asked: the connection is not in a state to reuse
                self._drop(conn)
            return  # TLS 1.3 session tickets, read after the handshake: an opened idle connection stays
        try:
            answer = conn.parser.feed(buf)
        except ProtocolError:
            self._drop(conn)
            return
        if answer is None:
            return
        conn.job = None
        self._in_flight -= 1
        took = time.monotonic() - conn.started
        self._latency = took if not self._latency else self._latency + (took - self._latency) / 16
        if buf or answer.will_close:  # more than was asked for, or the server is closing it
            self._drop(conn)
        else:
            self._idle.append(conn)
        if not 200 <= answer.status < 300:
            if answer.status == 429:  # that patch waits its Retry-After out, not the others
                self._sink.requeue(job, self._on_pushback(conn.started, answer.headers.get("retry-after")))
                return
            self._sink.requeue(job)  # answered: not applied, the workers send it afresh
            return
        follow: object = None
        try:
            follow = job.done(answer.data)
        finally:
            if isinstance(follow, BulkPatch):  # the job's next write, in the place it has
                self._waiting.appendleft(follow)
                self._placed += 1
            elif callable(follow):  # the rest of the job is a worker's, in that place
                self._sink.requeue(follow)
            else:
                self._sink.finished(conn.started)

    def _give_idle(self) -> None:
        done, self._releasing = self._releasing, None
        self._warm = 0  # those given away are not to be opened again, as the run ends
        if not self._waiting and not self._in_flight:
            for conn in self._idle:
                self._forget(conn)
                self._connections.give(conn.wire)
            self._idle = []
        if done is not None:
            done.set()

    def _expire(self) -> None:
        now = time.monotonic()
        if now < self._next_look:  # not at every wake-up: that would be a look at every patch per answer
            return
        self._next_look = now + LOOK_EVERY
        for conn in list(self._open.values()):
            if conn.job is not None and conn.due < now:
                self._drop(conn)

    def _drop(self, conn: _Connection) -> None:
        """Close the connection; the object it had in flight goes back to the workers,
        marked as sent."""
        self._forget(conn)
        with contextlib.suppress(ValueError):
            self._idle.remove(conn)
        conn.wire.close()
        if (job := conn.job) is not None:
            self._in_flight -= 1
            conn.job = None
            self._sink.requeue(job.resend)

    def _forget(self, conn: _Connection) -> None:
        """No longer this sender's connection (closed, or given away)."""
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.wire.sock)
        self._open.pop(conn.wire, None)

    def _shut(self) -> None:
        self._stopped = True
        self._hand_back_incoming()
        for conn in list(self._open.values()):
            self._drop(conn)
        self._hand_back_waiting()
        while self._opening:  # the openers still under way end soon; close what they bring
            opened = self._opened.get(timeout=60)
            self._opening -= 1
            if opened is not None:
                opened.close()
        for closable in (self._selector, self._wake_r, self._wake_w):
            closable.close()
