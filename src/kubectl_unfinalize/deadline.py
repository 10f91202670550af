"""One deadline for a whole run, carried into every request, retry and wait."""

from __future__ import annotations

import time


class Deadline:
    """A point on the monotonic clock. `None` seconds means no limit (only for callers
    outside a run, such as shell completion, which bound themselves per request)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float:
        if self.at is None:
            return float("inf")
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at

    def cap(self, seconds: float) -> float:
        """`seconds`, or what is left of the deadline if that is less."""
        return min(seconds, self.remaining())


NO_DEADLINE = Deadline(None)
