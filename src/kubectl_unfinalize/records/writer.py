"""Writing one record: a header, then one JSON line per write as its answer comes, then a
trailer.

A record that is a file of its own (the default, or --record PATH) is written through a
memory map (mapped.py): the thread that reports a write makes its line and copies it
there, with no system call, and a run killed by SIGKILL leaves every write answered
before it. A record sent to a pipe or a device (`--record /dev/stdout`, the janitor's)
cannot be mapped (nor a file on a platform that cannot reserve its blocks: macOS): there
the reporting threads only append the entry to a list, and a
writer thread of its own turns what came in the last FLUSH_EVERY seconds into lines and
writes them with one call (a run killed by SIGKILL loses those seconds' lines). Either
way nothing more waits in memory: a run over 100,000 objects costs the same memory with
or without its record."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .entries import encode_line
from .mapped import MappedFile, mappable

Warn = Callable[[str], None]
Line = dict[str, Any] | bytes  # bytes: the line already encoded, its newline included
Entry = Line | Callable[[], Line]  # a line, or what makes it (when it is written)

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
        self._mapped: MappedFile | None = None  # a regular file's; None: a stream's writer thread
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
            if self._mapped is None:
                self._queue(entry)
                return
        line = _line(entry() if callable(entry) else entry)  # a memory copy from here: no system call
        with self._io:
            self._put([line])

    def _queue(self, entry: Entry) -> None:
        """A stream's: under the lock, for the writer thread."""
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
            if _stream(self.path):  # a pipe, a terminal, /dev/stdout: appended to, never cut
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            else:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
                if mappable():
                    self._mapped = MappedFile(fd)
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
            if self._mapped is not None:
                self._mapped.put(b"".join(lines))
            else:
                _write_all(self._fd, b"".join(lines))
        except OSError as exc:
            self._close_fd()
            self._fail(exc)
            return
        self.lines += len(lines)

    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            mapped, self._mapped = self._mapped, None
            try:
                if mapped is not None:
                    mapped.close()
            except OSError:
                pass  # the lines are written: only the reserved zeros after them stay
            finally:
                os.close(fd)

    def _fail(self, exc: OSError) -> None:
        if not self.failed:
            self.failed = True
            reason = exc.strerror or str(exc)
            if isinstance(exc, (FileExistsError, NotADirectoryError)) and exc.filename:
                reason = f"{exc.filename} is a file, not a folder"  # mkdir's words for a path under a file
            self._warn(f"cannot write the record {self.path}: {reason}; the run goes on without it")


def _line(entry: Line | None) -> bytes:
    return entry if isinstance(entry, bytes) else encode_line(entry)


def _stream(path: Path) -> bool:
    """Whether the record goes to something that exists and is not a regular file of its
    own: a pipe or a device, or a name for one (/dev/stdout is a link through /proc to
    whatever the run's stdout is, a log file too: never cut, never mapped)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return False
    names = (os.path.abspath(path), os.path.realpath(path))
    return not stat.S_ISREG(info.st_mode) or any(name.startswith(("/dev/", "/proc/")) for name in names)


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
