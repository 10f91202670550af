"""When a request is sent again, and after how long: the retry rules of one request.

Apart from the transport's loop, which sends and decodes, so that a new case is a rule
here and not another branch there. The numbers fit an API server under a teardown's load:
it restarts in seconds, a 500 from a conversion webhook that is down lasts, and API
Priority and Fairness asks for longer waits than a client that paces itself needs.
"""

from __future__ import annotations

import time
from typing import Protocol

from ..deadline import Deadline
from ..errors import ApiError, CorruptObjects, DeadlineExceeded, NoAnswer, Unreachable
from ..net.connections import NotSent
from ..net.connections import reason as failure

RETRY_STATUSES = {429, 500, 502, 503, 504}
UNAVAILABLE = {502, 503, 504}  # what an aggregated API that is down answers through the API server
MAX_ATTEMPTS = 8  # without a deadline (completion, tools): a few seconds of retrying
MAX_ATTEMPTS_500 = 3  # a 500 is often lasting (a dead conversion webhook)
MAX_CONNECT_ATTEMPTS = 4  # a server never reached in this process is more likely a wrong address than an outage
MAX_BACKOFF = 2.0  # an API server restart takes seconds: notice its return quickly
MAX_RETRY_AFTER = 30.0
# A 429's Retry-After is waited at most this long: API Priority and Fairness asks for up to
# 30 s, sized for clients that do not pace themselves; the request is sent again only
# within the pacing's limit, which the refusal has already lowered.
MAX_THROTTLED = 1.0
MIN_TIME = 0.01  # a request with less time than this left is not sent: it could only time out


class Sender(Protocol):
    """What the rules read of the transport, and tell it."""

    host: str
    reached: bool  # the server has answered in this process: an outage is waited out until the deadline

    def pushed_back(self, sent: float) -> None: ...


class Attempts:
    """The retry rules of one request. What the server refused (429, 5xx) or never saw
    (no connection) is sent again until the deadline; what failed after it may have
    reached the server, only when the verb says it is `idempotent`. Without a deadline
    (completion, tools), MAX_ATTEMPTS in all. A 500 is often lasting (a dead conversion
    webhook): MAX_ATTEMPTS_500. A server never reached in this process is more likely a
    wrong address than an outage: MAX_CONNECT_ATTEMPTS; one that has answered is waited
    for until the deadline. A 429 is counted (the pacing slows down), its Retry-After
    waited at most MAX_THROTTLED, and it is waited out until the deadline, which then
    ends the request unsent. `probe` (seconds) asks for an answer now or not at all, for
    a caller that takes "unavailable" as an answer (discovery of a group version an
    aggregated API serves): no answer within that many seconds, or a 502/503/504, is
    raised at once (NoAnswer, ApiError); a 429, or a connection never opened, is retried
    as usual."""

    def __init__(self, transport: Sender, what: str, deadline: Deadline, idempotent: bool, probe: float | None) -> None:
        self._transport = transport
        self._what = what  # "GET /api": the request, for its errors
        self._deadline = deadline
        self._bounded = deadline.at is not None
        self._idempotent = idempotent
        self._probe = probe
        self._internal_errors = 0  # 500 answers so far
        self.count = 0
        self.started = 0.0  # when the current attempt was sent (time.monotonic())
        self.ambiguous = False  # an attempt may have reached the server: its error says so

    def begin(self) -> float:
        """The next attempt, and when it starts. Raises DeadlineExceeded when too little
        time is left for an answer."""
        self.count += 1
        if self._deadline.remaining() < MIN_TIME:
            raise DeadlineExceeded(f"out of time before {self._what} could be sent")
        self.started = time.monotonic()
        return self.started

    def after_error(self, exc: OSError) -> float:
        """The seconds to wait before sending again after `exc`, or raise."""
        host = self._transport.host
        sent = not isinstance(exc, NotSent)
        self.ambiguous = self.ambiguous or sent
        delay = _backoff(self.count)
        if sent and self._probe:
            raise NoAnswer(f"no answer to {self._what} within {self._probe:g}s ({failure(exc)})") from exc
        if sent and not self._idempotent:
            raise Unreachable(
                f"lost the connection to the API server at {host} during {self._what}"
                f" ({failure(exc)}); not sent again, since it may have been applied"
            ) from exc
        patient = (self._bounded and self._transport.reached) or self.count < MAX_CONNECT_ATTEMPTS
        if not patient or delay >= self._deadline.remaining():
            raise Unreachable(f"cannot reach the API server at {host}: {failure(exc)}") from exc
        return delay

    def after_status(self, error: ApiError) -> float:
        """The seconds to wait before sending again after the error answer `error`, or raise it."""
        status = error.status
        throttled = status == 429
        if throttled:
            self._transport.pushed_back(self.started)
        self._internal_errors += status == 500
        if status not in RETRY_STATUSES:  # a 404 or a 409 is the caller's answer: no delay to draw
            raise error
        delay = _retry_delay(error, self.count)
        retry = (
            not isinstance(error, CorruptObjects)  # what storage holds does not change by asking again
            and not (self._probe and status in UNAVAILABLE)
            and self._internal_errors < MAX_ATTEMPTS_500
            and (self._bounded or self.count < MAX_ATTEMPTS)
            # a 429 is waited out until the deadline, which then ends the request unsent
            and (delay < self._deadline.remaining() or (throttled and self._bounded))
        )
        if not retry:
            raise error
        return min(delay, self._deadline.remaining())


def _backoff(attempt: int) -> float:
    import random  # here: a run that retries nothing does not pay its import (hashlib, bisect) at start-up

    base: float = min(0.1 * 2 ** (attempt - 1), MAX_BACKOFF)
    return base * (0.5 + random.random() / 2)


def throttled_wait(retry_after: str | float | None) -> float:
    """A 429's Retry-After as this client waits it: at most MAX_THROTTLED; 0 without one
    (the caller's own retry rules apply then)."""
    try:
        return min(max(float(retry_after or 0), 0.0), MAX_THROTTLED)
    except ValueError:
        return 0.0


def _retry_delay(error: ApiError, attempt: int) -> float:
    if error.retry_after is not None:
        if error.status == 429:
            return throttled_wait(error.retry_after)
        return min(max(float(error.retry_after), 0.0), MAX_RETRY_AFTER)
    return _backoff(attempt)
