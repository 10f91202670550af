"""`scan --wait`: scan again while something is pending, until each pending item is
judged (stuck, working, alive) or gone, within the time the caller has.

Why a wait at all: right after a teardown, a dead operator's objects were deleted seconds
ago, and with no evidence either way they are `pending` for the grace. A gate run then
would learn nothing; waiting at most the grace past the youngest deletion turns the answer
into "nothing held" or "stuck". Objects deleted during the wait (a cascade, a namespace's
content) are pending in their turn, so the wait ends when nothing is pending, or when the
time left would not cover another look (the report then still says pending).

Each look is a whole scan: the next deletion may be anywhere, and a look costs what the
first did. Looks are spaced by the time until the next verdict can change by time alone
(a pending item reaching the grace), and never further apart than POLL, since a live
controller or the garbage collector may finish sooner.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .report import ScanReport

POLL = 2.0  # seconds between looks at most
PAST = 0.1  # looked at this long after an item reaches the grace, so it is judged by then


def settle(
    survey: Callable[[], ScanReport],
    grace: float,
    time_left: Callable[[], float],
    pause: Callable[[float], bool],
) -> ScanReport:
    """`survey()` once, then again while the report has pending items. `pause(seconds)`
    returns True when the caller was interrupted (the last report is returned)."""
    started = time.monotonic()
    report = survey()
    while report.pending:
        delay = next_look(report, grace)
        if time_left() < delay + 2 * report.seconds:  # another look would not finish in time
            break
        if pause(delay):
            break
        report = survey()
    report.waited = time.monotonic() - started
    return report


def next_look(report: ScanReport, grace: float) -> float:
    """Seconds until a pending item reaches the grace (and so is judged), at most POLL
    (and no less than a scan takes, so a large cluster is not scanned back to back)."""
    ages = [g.oldest_seconds for g in report.groups if g.pending]
    ages += [c.seconds for c in report.crds if c.pending] + [n.seconds for n in report.namespaces if n.pending]
    due = [grace - age + PAST for age in ages if age < grace]
    return min([max(POLL, report.seconds), *due])
