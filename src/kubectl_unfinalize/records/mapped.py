"""A record file written through a window of memory mapped onto it: a line is in the
kernel's page cache, which outlives the process, the moment it is copied there, with no
system call and no release of the interpreter lock by the thread that reports the write.

Those threads are the run's busiest (the bulk sender's event loop, the workers), and a
thread that gives up the interpreter lock, for a write or to let a writer thread of the
record's own take its turn, waits to get it back behind the threads parsing list pages:
a system call per write made a 10,000-object run 1.4 times as long, a writer thread that
wrote every 50 ms still cost it several percent. Here the copy is all they do.

The file grows a WINDOW at a time, reserved on disk before a line is copied into it
(posix_fallocate): a full disk is an OSError then, never a SIGBUS when a page of the map
is first written, and never half a line. Only
one window is mapped at once, so the record adds at most WINDOW to the run's memory. A
run killed by SIGKILL leaves its file padded with zeros up to the window's end (readers
stop at the first NUL); one that ends cuts the file to what it wrote."""

from __future__ import annotations

import mmap
import os

WINDOW = 1 << 20  # bytes mapped, and reserved on disk, at a time (a multiple of the page size)


def mappable() -> bool:
    """Whether this platform can reserve a file's blocks (macOS has no posix_fallocate): a
    map of blocks not reserved faults with SIGBUS on a full disk, so without it the record
    is written by a thread (writer.py)."""
    return hasattr(os, "posix_fallocate")


class MappedFile:
    """Not thread-safe: the writer holds its lock around put() and close()."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._map: mmap.mmap | None = None
        self._base = -WINDOW  # the file offset of the mapped window
        self._pos = WINDOW  # where the next byte goes in it
        self.used = 0  # bytes written: the file's length at close
        self._reserved = 0  # bytes reserved on disk

    def put(self, data: bytes) -> None:
        """Raises OSError when the file cannot grow (no space, a file size limit), before
        any of `data` is copied: the file holds whole lines only."""
        end = self.used + len(data)
        if end > self._reserved:
            reserve = -(-end // WINDOW) * WINDOW
            os.posix_fallocate(self._fd, self._reserved, reserve - self._reserved)
            self._reserved = reserve
        view = memoryview(data)
        while view:
            if self._pos == WINDOW:
                self._next_window()
            n = min(len(view), WINDOW - self._pos)
            assert self._map is not None
            self._map[self._pos : self._pos + n] = view[:n]
            self._pos += n
            self.used += n
            view = view[n:]

    def _next_window(self) -> None:
        self._unmap()
        base = self._base + WINDOW
        self._map = mmap.mmap(self._fd, WINDOW, offset=base)
        self._base, self._pos = base, 0

    def close(self) -> None:
        """Unmap and cut the file to what was written (the reserved rest goes back)."""
        self._unmap()
        os.ftruncate(self._fd, self.used)

    def _unmap(self) -> None:
        if self._map is not None:
            current, self._map = self._map, None
            current.close()
