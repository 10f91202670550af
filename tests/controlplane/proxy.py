#!/usr/bin/env python3
"""A loopback TCP proxy for tests and benchmarks: latency and connection resets on demand.

It forwards bytes untouched (TLS included: clients keep verifying the API server's
certificate, which has the IP SAN 127.0.0.1), so a kubeconfig whose ``server`` is
``proxy.url`` reaches the same API server through it.

Python API::

    with LoopbackProxy("127.0.0.1", 6443, delay=0.05) as proxy:   # ~100 ms round trip
        use(proxy.url)            # https://127.0.0.1:PORT
        proxy.reset_all()         # RST every open connection
        proxy.reset_new(2)        # RST the next 2 accepted connections at once
        proxy.reset_after_bytes(1, 4096)  # cut 1 pooled connection after 4 KiB more of response
        proxy.accepted, proxy.resets

Command line::

    python tests/controlplane/proxy.py --listen 8443 --target 127.0.0.1:6443 --delay 0.05

``delay`` is added to every chunk in each direction without serializing the stream:
each chunk is forwarded, in order, ``delay`` seconds after it arrived, so a 50 ms delay
gives a ~100 ms round trip however many chunks are in flight. One thread runs a
selector loop for every connection; pure standard library.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import queue
import selectors
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["LoopbackProxy"]

_CHUNK = 256 * 1024
_HIGH_WATER = 4 * 1024 * 1024  # stop reading a side while this much is queued for the other
_LINGER_0 = struct.pack("ii", 1, 0)


def _rst(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a TCP RST instead of a FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_0)
    with contextlib.suppress(OSError):
        sock.close()


class _Pipe:
    """One direction of a connection: bytes read from `src` and written to `dst`."""

    __slots__ = ("src", "dst", "pending", "out", "queued", "eof_read", "eof_due", "shut", "budget")

    def __init__(self, src: socket.socket, dst: socket.socket) -> None:
        self.src, self.dst = src, dst
        self.pending: deque[bytes | None] = deque()  # waiting for their delay; None is EOF
        self.out = bytearray()  # due, not yet written
        self.queued = 0  # bytes in pending + out
        self.eof_read = False  # src said EOF (or we stopped reading it)
        self.eof_due = False  # the EOF has waited its delay: shut dst down once out is empty
        self.shut = False  # dst was shut down for writing
        self.budget: int | None = None  # reset the connection after this many more bytes


class _Conn:
    __slots__ = ("client", "upstream", "up", "down", "closed", "opened")

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client, self.upstream = client, upstream
        self.up = _Pipe(client, upstream)  # requests
        self.down = _Pipe(upstream, client)  # responses
        self.closed = False
        self.opened = time.monotonic()


class LoopbackProxy:
    """Forward 127.0.0.1:port to target_host:target_port, with optional latency and resets."""

    def __init__(
        self,
        target_host: str,
        target_port: int,
        delay: float = 0.0,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        connect_timeout: float = 5.0,
    ) -> None:
        if delay < 0:
            raise ValueError("delay must be >= 0")
        self.target = (target_host, int(target_port))
        self.delay = float(delay)
        self.listen_host, self._listen_port = listen_host, listen_port
        self.connect_timeout = connect_timeout
        self.accepted = 0  # connections accepted (including those reset at once)
        self.resets = 0  # connections reset on purpose (reset_all, reset_new, reset_after_bytes)
        self.bytes_up = 0  # client -> target
        self.bytes_down = 0  # target -> client
        self.port: int | None = None
        self._lock = threading.Lock()
        self._reset_new = 0
        self._cut: list[int] = []  # byte budgets for the next connections to arm (reset_after_bytes)
        self._conns: dict[int, _Conn] = {}  # by id()
        self._sel: selectors.BaseSelector | None = None
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._timers: list[tuple[float, int, _Pipe, _Conn]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._running = False

    # ------------------------------------------------------------------ public API
    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the proxy is not started")
        host = "127.0.0.1" if self.listen_host in ("", "0.0.0.0") else self.listen_host
        return f"https://{host}:{self.port}"

    @property
    def connections(self) -> int:
        """Connections open right now."""
        return len(self._conns)

    def start(self) -> LoopbackProxy:
        if self._thread is not None:
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.listen_host, self._listen_port))
        listener.listen(512)
        listener.setblocking(False)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(listener, selectors.EVENT_READ, "accept")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._running = True
        self._thread = threading.Thread(target=self._loop, name=f"proxy:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close every connection (FIN, not RST) and end the loop thread."""
        thread = self._thread
        if thread is None:
            return
        self._running = False
        self._wake()
        thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> LoopbackProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reset_all(self) -> int:
        """RST every open connection (both sides); returns how many were reset."""

        def run() -> int:
            conns = list(self._conns.values())
            for conn in conns:
                self._abort(conn, injected=True)
            return len(conns)

        return self._call(run)

    def reset_new(self, n: int = 1) -> None:
        """Reset the next `n` accepted connections at once (the target is never contacted)."""
        with self._lock:
            self._reset_new += n

    def reset_after_bytes(self, n_connections: int, nbytes: int) -> int:
        """Cut connections mid-stream: each of `n_connections` connections is reset once it has
        forwarded `nbytes` more bytes of response (target -> client). Open connections are
        armed first, oldest first (the pooled ones); the rest arm the next accepted ones.
        Returns how many open connections were armed."""
        if nbytes < 0 or n_connections < 0:
            raise ValueError("n_connections and nbytes must be >= 0")

        def run() -> int:
            armed = 0
            for conn in sorted(self._conns.values(), key=lambda c: c.opened):
                if armed == n_connections:
                    break
                if conn.down.budget is None:
                    conn.down.budget = nbytes
                    armed += 1
            with self._lock:
                self._cut.extend([nbytes] * (n_connections - armed))
            for conn in list(self._conns.values()):
                if conn.down.budget == 0:
                    self._abort(conn, injected=True)
            return armed

        return self._call(run)

    # ------------------------------------------------------------------ loop thread
    def _wake(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self._wake_w.send(b"x")

    def _call(self, fn: Callable[[], int]) -> int:
        """Run fn on the loop thread (it owns the sockets) and return its result."""
        if self._thread is None or threading.current_thread() is self._thread:
            return fn()
        done = threading.Event()
        box: list = []

        def wrapped() -> None:
            try:
                box.append(fn())
            finally:
                done.set()

        self._calls.put(wrapped)
        self._wake()
        if not done.wait(timeout=10):
            raise TimeoutError("the proxy loop did not answer")
        return box[0]

    def _loop(self) -> None:
        sel = self._sel
        try:
            while self._running:
                timeout = None
                if self._timers:
                    timeout = max(0.0, self._timers[0][0] - time.monotonic())
                for key, mask in sel.select(timeout):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wake":
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                        while True:
                            try:
                                fn = self._calls.get_nowait()
                            except queue.Empty:
                                break
                            fn()
                    else:
                        conn, pipe_out, pipe_in = key.data
                        if conn.closed:
                            continue
                        if mask & selectors.EVENT_WRITE:
                            self._write(conn, pipe_in)
                        if not conn.closed and mask & selectors.EVENT_READ:
                            self._read(conn, pipe_out)
                self._fire_timers()
        finally:
            for conn in list(self._conns.values()):
                self._close(conn)
            for sock in (self._listener, self._wake_r, self._wake_w):
                with contextlib.suppress(OSError, AttributeError):
                    sock.close()
            with contextlib.suppress(OSError, AttributeError):
                sel.close()
            while True:  # release callers waiting on a call that will not run
                try:
                    self._calls.get_nowait()()
                except queue.Empty:
                    break

    def _accept(self) -> None:
        for _ in range(64):
            try:
                client, _addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.accepted += 1
            with self._lock:
                reset = self._reset_new > 0
                if reset:
                    self._reset_new -= 1
            if reset:
                self.resets += 1
                _rst(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=self.connect_timeout)
            except OSError:
                _rst(client)  # the client sees what a dead server would do
                continue
            for sock in (client, upstream):
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(client, upstream)
            with self._lock:
                if self._cut:
                    conn.down.budget = self._cut.pop(0)
            self._conns[id(conn)] = conn
            self._sel.register(client, selectors.EVENT_READ, (conn, conn.up, conn.down))
            self._sel.register(upstream, selectors.EVENT_READ, (conn, conn.down, conn.up))
            if conn.down.budget == 0:
                self.resets += 1
                self._abort(conn)

    def _interest(self, conn: _Conn, sock: socket.socket) -> None:
        """(Re-)register `sock` for what it needs now: read while its outgoing pipe has
        room, write while its incoming pipe has due bytes or a due EOF; nothing: unregister."""
        if conn.closed:
            return
        pipe_out, pipe_in = (conn.up, conn.down) if sock is conn.client else (conn.down, conn.up)
        events = 0
        if not pipe_out.eof_read and pipe_out.queued < _HIGH_WATER:
            events |= selectors.EVENT_READ
        if pipe_in.out or (pipe_in.eof_due and not pipe_in.shut):
            events |= selectors.EVENT_WRITE
        try:
            key = self._sel.get_key(sock)
        except KeyError:
            key = None
        if events == 0:
            if key is not None:
                self._sel.unregister(sock)
        elif key is None:
            self._sel.register(sock, events, (conn, pipe_out, pipe_in))
        elif key.events != events:
            self._sel.modify(sock, events, key.data)

    def _read(self, conn: _Conn, pipe: _Pipe) -> None:
        if pipe.eof_read or pipe.queued >= _HIGH_WATER:  # a stale event
            self._interest(conn, pipe.src)
            return
        try:
            data = pipe.src.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._abort(conn)  # a reset on one side is passed on as a reset to the other
            return
        if data:
            if pipe is conn.up:
                self.bytes_up += len(data)
            else:
                self.bytes_down += len(data)
            pipe.queued += len(data)
        else:
            pipe.eof_read = True
            data = None
        if self.delay > 0:
            pipe.pending.append(data)
            heapq.heappush(self._timers, (time.monotonic() + self.delay, next(self._seq), pipe, conn))
        else:
            self._due(pipe, data)
        self._interest(conn, pipe.src)
        self._interest(conn, pipe.dst)

    def _due(self, pipe: _Pipe, data: bytes | None) -> None:
        if data is None:
            pipe.eof_due = True
        else:
            pipe.out += data

    def _fire_timers(self) -> None:
        now = time.monotonic()
        touched: dict[int, tuple[_Conn, _Pipe]] = {}
        while self._timers and self._timers[0][0] <= now:
            _, _, pipe, conn = heapq.heappop(self._timers)
            if conn.closed:
                continue
            self._due(pipe, pipe.pending.popleft())
            touched[id(pipe)] = (conn, pipe)
        for conn, pipe in touched.values():
            if not conn.closed:
                self._write(conn, pipe)  # try at once; EVENT_WRITE covers the rest

    def _write(self, conn: _Conn, pipe: _Pipe) -> None:
        while pipe.out:
            view = pipe.out if pipe.budget is None else memoryview(pipe.out)[: pipe.budget]
            if pipe.budget == 0:
                self.resets += 1
                self._abort(conn)
                return
            try:
                sent = pipe.dst.send(view)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._abort(conn)
                return
            finally:
                if isinstance(view, memoryview):
                    view.release()
            del pipe.out[:sent]
            pipe.queued -= sent
            if pipe.budget is not None:
                pipe.budget -= sent
                if pipe.budget == 0:
                    self.resets += 1
                    self._abort(conn)
                    return
        if not pipe.out and pipe.eof_due and not pipe.shut:
            pipe.shut = True
            with contextlib.suppress(OSError):
                pipe.dst.shutdown(socket.SHUT_WR)
        if conn.up.shut and conn.down.shut:
            self._close(conn)
            return
        self._interest(conn, pipe.dst)
        self._interest(conn, pipe.src)

    def _abort(self, conn: _Conn, injected: bool = False) -> None:
        if conn.closed:
            return
        if injected:
            self.resets += 1
        self._close(conn, rst=True)

    def _close(self, conn: _Conn, rst: bool = False) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.pop(id(conn), None)
        for sock in (conn.client, conn.upstream):
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._sel.unregister(sock)
            if rst:
                _rst(sock)
            else:
                with contextlib.suppress(OSError):
                    sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=int, default=0, metavar="PORT", help="port on 127.0.0.1 (default: any)")
    parser.add_argument("--target", required=True, metavar="HOST:PORT", help="where to forward to")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds added to each chunk, each way")
    args = parser.parse_args(argv)
    host, _, port = args.target.rpartition(":")
    if not host or not port.isdigit():
        parser.error("--target must be HOST:PORT")
    proxy = LoopbackProxy(host.strip("[]"), int(port), args.delay, listen_port=args.listen)
    with proxy:
        print(f"{proxy.url} -> {args.target} (delay {args.delay * 1000:.0f} ms each way); Ctrl-C stops", flush=True)
        try:
            while True:
                time.sleep(5)
        except KeyboardInterrupt:
            pass
    print(f"accepted {proxy.accepted} connections; {proxy.bytes_up} bytes up, {proxy.bytes_down} down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
