"""How long the bulk sender lets answers gather before it reads them.

Near, a busy API server's CPU (on a machine it may share with the tool) limits a run:
its patches wait in its queue, and it answers them one at a time. The sender that read
each answer as it came woke once per answer, and ran each answer's outcome (its record
line, its printed line) on cold caches; gathered, they are read in one round. A wait
of an eighth of the time a patch spends queued keeps the server busy meanwhile. Far,
the round trip limits the run (the pacing fills the pipe), and each answer is read as
it comes."""

from __future__ import annotations

from .connections import FAR

GATHER = 0.01  # seconds at most
LEAST = 0.001  # a shorter wait saves less than the sleep costs


def gather_window(latency: float, round_trip: float | None, busy: bool) -> float:
    """`latency`: the answers' typical latency; `round_trip`: the quickest exchange (None:
    none yet); `busy`: a quarter of the cap or more in flight (fewer may be all the run
    has: a small teardown's patches are read at once)."""
    if not busy or round_trip is None or round_trip >= FAR:
        return 0.0
    window = min(GATHER, (latency - round_trip) / 8)
    return window if window >= LEAST else 0.0
