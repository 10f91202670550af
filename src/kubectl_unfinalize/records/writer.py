"""Writing one record: a header, then one JSON line per write as its answer comes, then a
trailer.

The writes are reported from the run's busiest threads (the bulk sender's event loop, the
workers): a system call there per write released the interpreter lock 10,000 times in a
10,000-object run, and each time the reporting thread waited its turn to get it back (a
run took 1.4 times as long). So reporting only appends the entry to a list; a writer
thread of its own turns what came in the last FLUSH_EVERY seconds into lines and writes
them with one call. A run killed by SIGKILL leaves every write answered until then, less
those of its last FLUSH_EVERY seconds (writes in flight, as undo's guarantee says); a run
that ends normally leaves all of them. What waits is at most that much: a run over 100,000
objects costs the same memory with or without its record."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Warn = Callable[[str], None]
Entry = dict[str, Any] | Callable[[], dict[str, Any]]  # a line, or what makes it (on the writer's thread)

FLUSH_EVERY = 0.05  # seconds an answered write may wait before it is on disk
FLUSH_AT = 2000  # entries: written at once when this many wait, whatever the time


class RecordWriter:
    """Thread-safe. The file is made at the first write (a run that changes nothing leaves
    no record), its header first. A failure to write (no space, a path under a file, a
    read-only home) is told once to `warn` and turns the writer off: the run goes on, its
    exit status its own."""

    def __init__(self, path: Path, warn: Warn, header: dict[str, Any]) -> None:
        self.path = path
        self._warn = warn
        self._header: dict[str, Any] | None = header
        self._fd: int | None = None
        self._lock = threading.Lock()  # the pending entries, the header, the thread
        self._io = threading.Lock()  # the descriptor: a write of lines never holds the reporters up
        self._pending: list[Entry] = []
        self._due = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        self.lines = 0
        self.failed = False

    @property
    def written(self) -> bool:
        """Whether the record exists and holds everything told to it."""
        return self._header is None and not self.failed

    def write(self, entry: Entry) -> None:
        with self._lock:
            if self._header is not None:
                self._open()
            if self._fd is None or self._closing:
                return
            self._pending.append(entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._flusher, name="unfinalize-record", daemon=True)
                self._thread.start()
            elif len(self._pending) >= FLUSH_AT:
                self._due.set()

    def close(self, trailer: dict[str, Any] | None = None) -> None:
        """Write what waits, then `trailer`; a record never begun stays unmade."""
        with self._lock:
            self._closing = True
            thread = self._thread
        if thread is not None:
            self._due.set()
            thread.join()
        self._flush()  # what came after the thread's last look
        with self._io:
            if trailer is not None and self._fd is not None:
                self._put([_line(trailer)])
            self._close_fd()

    def _open(self) -> None:
        """Under the lock, at the first write."""
        header, self._header = self._header, None
        try:
            _private_folder(self.path.parent)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
        except OSError as exc:
            self._fail(exc)
            return
        self._fd = fd
        with self._io:
            self._put([_line(header)])

    def _flusher(self) -> None:
        while True:
            self._due.wait(FLUSH_EVERY)
            self._due.clear()
            self._flush()
            if self._closing:
                return

    def _flush(self) -> None:
        with self._lock:
            entries, self._pending = self._pending, []
        if not entries:
            return
        lines = [_line(entry() if callable(entry) else entry) for entry in entries]
        with self._io:
            self._put(lines)

    def _put(self, lines: list[bytes]) -> None:
        """Under the descriptor's lock."""
        if self._fd is None:
            return
        try:
            _write_all(self._fd, b"".join(lines))
        except OSError as exc:
            self._close_fd()
            self._fail(exc)
            return
        self.lines += len(lines)

    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass

    def _fail(self, exc: OSError) -> None:
        if not self.failed:
            self.failed = True
            reason = exc.strerror or str(exc)
            if isinstance(exc, (FileExistsError, NotADirectoryError)) and exc.filename:
                reason = f"{exc.filename} is a file, not a folder"  # mkdir's words for a path under a file
            self._warn(f"cannot write the record {self.path}: {reason}; the run goes on without it")


def _line(entry: dict[str, Any] | None) -> bytes:
    return (json.dumps(entry, separators=(",", ":"), default=str) + "\n").encode()


def _private_folder(folder: Path) -> None:
    """Create the folder 0700; tighten one of ours that is wider (records name objects)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077 and folder.name == "kubectl-unfinalize":
        os.chmod(folder, 0o700)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
