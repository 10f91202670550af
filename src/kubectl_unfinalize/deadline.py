"""One deadline for a whole run, carried into every request, retry and wait; Ctrl-C
brings it forward to now, so an interrupted run stops the same way a timed-out one does:
no new request, retries end, the jobs in flight finish, and the report says what was done."""

from __future__ import annotations

import threading
import time


class Deadline:
    """A point on the monotonic clock. `None` seconds means no limit (only for callers
    outside a run, such as shell completion, which bound themselves per request)."""

    def __init__(self, seconds: float | None, interrupt: threading.Event | None = None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds
        self.interrupt = interrupt or threading.Event()

    @property
    def interrupted(self) -> bool:
        return self.interrupt.is_set()

    def remaining(self) -> float:
        if self.interrupted:
            return 0.0
        if self.at is None:
            return float("inf")
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return self.interrupted or (self.at is not None and time.monotonic() >= self.at)

    def cap(self, seconds: float) -> float:
        """`seconds`, or what is left of the deadline if that is less."""
        return min(seconds, self.remaining())


NO_DEADLINE = Deadline(None)
