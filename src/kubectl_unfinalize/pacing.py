"""How many requests to keep in flight: enough to fill the pipe to a far cluster, no more
than a busy one takes. Slow start, then additive increase, multiplicative decrease
(as TCP does): the limit doubles each round trip until the API server pushes back (429
from API Priority and Fairness) or is overloaded, then grows by one per round trip and
is cut when either happens again. --concurrency is the cap.

Overloaded means a round trip's typical latency is over OVERLOAD seconds and RISE times
the best seen. A lower bar was tried and measured: on a busy local server latency moves
with every request in flight, and cutting on it halved the throughput (2,000 objects:
8.1 s against 6.2 s with the cuts on 429s only).

A "round trip" here is `limit` completed jobs; a job's latency is its wall time.
"""

from __future__ import annotations

import threading

START = 32  # a far cluster fills 64 in one round trip less than from 16; APF 429s halve it at once
RISE = 10.0
OVERLOAD = 1.0
CUT = 0.5


class Pacing:
    def __init__(self, cap: int, start: int = START) -> None:
        self.cap = cap
        self._limit = float(min(start, cap))
        self._slow_start = True
        self._best: float | None = None
        self._window: list[float] = []
        self._pushbacks_seen = 0
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        return max(1, int(self._limit))

    def completed(self, latency: float, pushbacks: int) -> None:
        """One job finished after `latency` seconds; `pushbacks` is the cluster's running
        count of 429 answers."""
        with self._lock:
            if pushbacks > self._pushbacks_seen:
                self._pushbacks_seen = pushbacks
                self._decrease()
                return
            self._window.append(latency)
            if len(self._window) < self.limit:
                return
            typical = sorted(self._window)[len(self._window) // 2]
            self._window = []
            if self._best is None or typical < self._best:
                self._best = typical
            if typical > OVERLOAD and typical > RISE * self._best:
                self._decrease()
            elif self._slow_start:
                self._limit = min(self.cap, self._limit * 2)
            else:
                self._limit = min(self.cap, self._limit + 1)

    def _decrease(self) -> None:
        self._slow_start = False
        self._limit = max(1.0, self._limit * CUT)
        self._window = []
