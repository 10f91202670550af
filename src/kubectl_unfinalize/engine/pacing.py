"""How many requests to keep in flight: enough to fill the pipe to a far cluster, no more
than the API server grants. --concurrency is the cap.

Slow start: from START (near) or the cap (far), the limit doubles each round trip until the server refuses (429) or is
overloaded; after that it grows by one per round trip. A "round trip" is `limit`
completed jobs; a job's latency is its wall time.

Refusals. API Priority and Fairness gives a user's priority level a few seats and
refuses at once what does not fit them (so does the server's max-in-flight), so the
refusals of what was in flight come back together, within a round trip of each other.
A refusal of a request sent after the last cut is a new signal: the limit is cut to what
was in flight then, minus one, and that count is remembered as the ceiling. A refusal of
a request sent before the last cut is not a new signal (no new cut, no new ceiling), but
one more request that was in flight and not granted: the limit goes down by one. So one
burst of refusals settles the limit on what the server granted (in flight minus
refused), where halving once per round trip would have cost a burst per halving and
ended at half the seats. The limit grows back by one per round trip to just under the
ceiling, holds there, then tries the ceiling again: the hold doubles each time that try
is refused again (a server that grants no more is asked rarely), and starts short when
the server refuses below the ceiling (it grants fewer now, for a while: another user's
requests, or this run's own lists, taking a seat). Growth goes on past a ceiling that a
round trip at it did not meet.

The request that was refused waits its Retry-After (at most a second: API Priority and
Fairness asks for up to 30, sized for clients that do not pace themselves) without
holding a place, then takes one again within the limit then in force
(workers.Workers.parked): the limit counts what the server is asked, not what waits to
ask again, and a refusal delays that request, not the run.

Overloaded means a round trip's typical latency is over OVERLOAD seconds and RISE times
the best seen: the limit halves. A lower bar was tried and measured: on a busy local
server latency moves with every request in flight, and cutting on it halved the
throughput. For the same reason latency is not read as queueing: a priority level that
queues (instead of refusing) holds the requests beyond its seats without costing
throughput, and refuses when its queues are full, which the refusals above answer.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from ..kube.port import FAR  # when even the quickest job took this long, the server is far (wake_at)

NEAR_REFILL = 4  # near, the submitter refills a quarter of the limit at a time; far, each free place
START = 32  # near; far, the cap (loop.Engine): slow start costs a round trip per doubling, refusals one burst
RISE = 10.0
OVERLOAD = 1.0
CUT = 0.5
FIRST_HOLD = 4  # round trips just under a ceiling before trying it again
MAX_HOLD = 256  # at most this many: a server that grants more later is noticed


class Pacing:
    """Thread-safe: completed() on the workers' threads, refused() wherever a 429 is read."""

    def __init__(
        self,
        cap: int,
        start: int = START,
        clock: Callable[[], float] = time.monotonic,
        load: Callable[[], int] | None = None,
    ) -> None:
        self.cap = cap
        self._load = load  # requests in flight now (the workers' count), where a refusal's cut starts; None: the limit
        self._clock = clock
        self._limit = float(min(start, cap))
        self._slow_start = True
        self._best: float | None = None
        self._quickest: float | None = None  # the quickest job so far
        self._window: list[float] = []
        self._cut = -math.inf  # when a refusal last cut the limit
        self._ceiling: int | None = None  # the concurrency the server last refused at
        self._hold = FIRST_HOLD
        self._held = 0
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        return max(1, int(self._limit))

    def wake_at(self) -> int:
        """In flight when the workers wake the submitter (workers.Workers). Far, the rate
        is what is in flight per round trip, so each free place is filled at once (a
        sixteenth at a time gave up throughput for little CPU); near, a quarter at a
        time, for the CPU."""
        limit = self.limit
        far = self._quickest is not None and self._quickest >= FAR  # a near server's queue makes jobs slow, not all
        return limit - 1 if far else limit - max(1, limit // NEAR_REFILL)

    @property
    def ceiling(self) -> int | None:
        return self._ceiling

    def refused(self, sent: float) -> None:
        """A request sent at `sent` (this clock) was answered 429."""
        with self._lock:
            if sent <= self._cut:  # in flight at the last cut: one more than the server granted
                self._limit = max(1.0, self._limit - 1)
                return
            level = self.limit
            if self._load is not None:
                level = max(1, min(level, self._load()))
            if self._ceiling is not None and level >= self._ceiling:
                self._hold = min(MAX_HOLD, self._hold * 2)  # refused where it was refused before
            elif self._ceiling is not None:
                self._hold = FIRST_HOLD  # refused below it: the server grants fewer now
            self._ceiling = level
            self._cut = self._clock()
            self._slow_start = False
            self._limit = max(1.0, min(self._limit, float(level - 1)))
            self._held = 0
            self._window = []

    def completed(self, latency: float) -> None:
        """One job finished after `latency` seconds."""
        with self._lock:
            if self._quickest is None or latency < self._quickest:
                self._quickest = latency
            self._window.append(latency)
            if len(self._window) < self.limit:
                return
            typical = sorted(self._window)[len(self._window) // 2]
            self._window = []
            if self._best is None or typical < self._best:
                self._best = typical
            if typical > OVERLOAD and typical > RISE * self._best:
                self._slow_start = False
                self._limit = max(1.0, self._limit * CUT)
            elif self._slow_start:
                self._limit = min(self.cap, self._limit * 2)
            else:
                self._grow()

    def _grow(self) -> None:
        ceiling = self._ceiling
        if ceiling is not None and self.limit + 1 == ceiling:
            self._held += 1
            if self._held < self._hold:
                return
        self._held = 0
        self._limit = min(self.cap, self._limit + 1)
