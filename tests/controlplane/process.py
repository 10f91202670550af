"""Child processes that never outlive the test run, can be stopped and restarted on purpose.

Each child runs in its own session (a terminal's Ctrl-C reaches only the Python parent,
which then stops the children in order) and, on Linux, gets SIGKILL when its parent
dies, so a killed pytest leaves no etcd or kube-apiserver behind.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

try:
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:  # pragma: no cover
    _LIBC = None


def _child_setup() -> None:  # runs in the forked child, before exec
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


class _Forker:
    """Forks from threads that live as long as the interpreter.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process:
    a kube-apiserver restarted from a test's short-lived thread would be killed as soon
    as that thread returned. The main thread forks directly; any other thread hands the
    fork to one daemon thread started on first use.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def call(self, fn):
        if threading.current_thread() is threading.main_thread():
            return fn()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="controlplane-forker", daemon=True)
                self._thread.start()
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return future.result()

    def _loop(self) -> None:
        while True:
            fn, future = self._jobs.get()
            try:
                future.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                future.set_exception(e)


_FORKER = _Forker()


class Process:
    """One control plane component: its argv, its log, and whether it is down on purpose.

    ``argv`` and ``cwd`` are kept so ``start()`` after ``stop()`` brings back the same
    server (same port, same data, same certificates). ``exit_code()`` is what a watchdog
    asks: it is None while the process runs *and* while it is stopped on purpose, so a
    planned restart never looks like a crash.
    """

    def __init__(self, name: str, argv: list[str], log: Path, cwd: Path):
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.cwd = cwd
        self.popen: subprocess.Popen | None = None
        self.starts = 0
        self._logf = None
        self._stopped = True
        self._lock = threading.Lock()
        self.start()

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    @property
    def stopped(self) -> bool:
        """True between stop() and the next start()."""
        return self._stopped

    def start(self) -> None:
        """(Re)start with the same argv; appends to the same log."""
        with self._lock:
            if not self._stopped:
                raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
            logf = open(self.log, "ab")
            try:
                logf.write(f"$ {shlex.join(self.argv)}\n".encode())
                logf.flush()
                popen = _FORKER.call(lambda: self._popen(logf))
            except BaseException:
                logf.close()
                raise
            self._logf, self.popen, self._stopped = logf, popen, False
            self.starts += 1

    def _popen(self, logf) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group; a terminal's Ctrl-C goes to us only
            preexec_fn=_child_setup,
        )

    def stop(self, timeout: float) -> int | None:
        """SIGTERM the process group, SIGKILL it after `timeout` s; returns the exit code.

        Marked stopped *before* the signal, so a watchdog polling meanwhile sees a planned
        stop, never an exit.
        """
        with self._lock:
            if self._stopped:
                return self.popen.returncode if self.popen is not None else None
            self._stopped = True
        popen = self.popen
        self.signal_group(signal.SIGTERM)
        try:
            popen.wait(timeout=max(0.1, timeout))
        except subprocess.TimeoutExpired:
            self.signal_group(signal.SIGKILL)
            popen.wait()
        self.signal_group(signal.SIGKILL)  # stragglers in the group, if any
        with self._lock:
            if self._logf is not None:
                self._logf.close()
                self._logf = None
        return popen.returncode

    def exit_code(self) -> int | None:
        """The exit code if the process ended by itself; None if it runs or was stopped on purpose."""
        with self._lock:
            if self._stopped or self.popen is None:
                return None
            return self.popen.poll()

    def signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)


def interrupt(proc: subprocess.Popen, grace: float = 20.0) -> None:
    """Ctrl-C for a child (an operator shuts down cleanly on it), then a kill if it is
    still there after `grace` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def free_port() -> int:
    """A loopback port free right now; several sessions may run side by side."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie counts as dead, since only its exit status is left."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def cmdline(pid: int) -> str:
    """The command line of `pid`, to tell our own process from one that reused its pid."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def tail(path: Path, lines: int) -> str:
    """The last lines of a log, for error messages that explain a failed start."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 200 * lines))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(cannot read: {e})"
    return "\n".join(data.splitlines()[-lines:])


@contextlib.contextmanager
def deferred_signals():
    """Hold SIGINT/SIGTERM until the block ends (main thread only), so cleanup completes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old[sig] = signal.signal(sig, lambda s, _f: pending.append(s))
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in pending[:1]:
            os.kill(os.getpid(), sig)
