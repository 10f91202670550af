"""A list's pages fetched one ahead on a thread of their own, while the caller queues
the jobs of the page it has."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar, cast

T = TypeVar("T")


class ReadAhead(Iterator[T]):
    """The same items, fetched on a thread from the moment this is made: a list's first
    page is read while the RBAC preflight is answered, and each next page while this
    page's jobs are queued (on a far cluster each page is a round trip or more).
    close() stops the fetching after the item under way.

    What waits here is one page of ObjectMeta (names, uids, finalizers), not the page as
    the server sent it: list_meta drops the decoded objects before handing a page on, so
    read-ahead adds one page answer in flight (paging.PAGE_BYTES) to what the run holds."""

    def __init__(self, items: Iterator[T]) -> None:
        self._items = items
        self._ahead: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._done = False
        threading.Thread(target=self._fetch, name="unfinalize-read-ahead", daemon=True).start()

    def _fetch(self) -> None:
        try:
            for item in self._items:
                if not self._put((True, item)):
                    return
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            self._put((False, exc))
            return
        self._put((False, None))

    def _put(self, entry: tuple[bool, object]) -> bool:
        while not self._stop.is_set():
            try:
                self._ahead.put(entry, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        ok, value = self._ahead.get()
        if ok:
            return cast(T, value)
        self._done = True
        if isinstance(value, BaseException):
            raise value
        raise StopIteration

    def close(self) -> None:
        self._stop.set()
        self._done = True
