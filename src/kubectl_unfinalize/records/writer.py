"""Writing one record: a header, then one JSON line per write as its answer comes, then a
trailer. Each line goes to the kernel at once (os.write on an unbuffered descriptor), so a
run killed by SIGKILL leaves every answered write readable; nothing is held in memory, so
a run over 100,000 objects costs the same memory with or without its record."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Warn = Callable[[str], None]


class RecordWriter:
    """Thread-safe: the workers and the bulk sender report writes at once. The file is made
    at the first write (a run that changes nothing leaves no record), its header first. A
    failure to write (no space, a path under a file, a read-only home) is told once to
    `warn` and turns the writer off: the run goes on, its exit status its own."""

    def __init__(self, path: Path, warn: Warn, header: dict[str, Any]) -> None:
        self.path = path
        self._warn = warn
        self._header: dict[str, Any] | None = header
        self._fd: int | None = None
        self._lock = threading.Lock()
        self.lines = 0
        self.failed = False

    @property
    def written(self) -> bool:
        """Whether the record exists and holds everything told to it."""
        return self._header is None and not self.failed

    def _open(self) -> None:
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
        self._put(_line(header))

    def write(self, entry: dict[str, Any]) -> None:
        line = _line(entry)
        with self._lock:
            if self._header is not None:
                self._open()
            self._put(line)

    def _put(self, line: bytes) -> None:
        """Under the lock."""
        if self._fd is None:
            return
        try:
            _write_all(self._fd, line)
        except OSError as exc:
            self._close_fd()
            self._fail(exc)
            return
        self.lines += 1

    def close(self, trailer: dict[str, Any] | None = None) -> None:
        """End the record with `trailer`; a record never begun stays unmade."""
        with self._lock:
            if trailer is not None and self._fd is not None:
                self._put(_line(trailer))
            self._close_fd()

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
