"""One deadline for a whole run, carried into every request, retry and wait; Ctrl-C
brings it forward to now, so an interrupted run stops the same way a timed-out one does:
no new request, retries end, the jobs in flight finish, and the report says what was done.
A lasting error that no further request can get past (credentials the API server rejects
even fresh) ends it the same way, and is kept as its `cause`."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .errors import UnfinalizeError


class Deadline:
    """A point on the monotonic clock. `None` seconds means no limit (only for callers
    outside a run, such as shell completion, which bound themselves per request)."""

    def __init__(self, seconds: float | None, interrupt: threading.Event | None = None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds
        self.interrupt = interrupt or threading.Event()
        self.cause: UnfinalizeError | None = None  # what ended it before its time (end())

    @property
    def interrupted(self) -> bool:
        return self.interrupt.is_set()

    def end(self, cause: UnfinalizeError) -> None:
        """End it now because of `cause` (the first cause is kept)."""
        if self.cause is None:
            self.cause = cause

    def remaining(self) -> float:
        if self.interrupted or self.cause is not None:
            return 0.0
        if self.at is None:
            return float("inf")
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def cap(self, seconds: float) -> float:
        """`seconds`, or what is left of the deadline if that is less."""
        return min(seconds, self.remaining())


NO_DEADLINE = Deadline(None)
