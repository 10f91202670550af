"""What a controller's own words say when it is alive but cannot finish a deletion: the
status conditions of the object and the Warning Events about it that carry an answer the
API server will keep giving (the namespace is being terminated, a 403 from RBAC, a 422 on
its update). Pure functions over plain objects, so the verdict is unit-tested on data.

Why these answers and no others: each one repeats on every retry until a person acts (the
namespace cannot stop terminating, RBAC does not grant itself, the same update stays
invalid), so a controller that keeps writing them keeps the deletion held forever while
scan would read it as `working`. A timeout or a conflict passes; those are not looked for.

Only what the controller said after the object's deletion counts, and only when it kept
saying it for longer than the grace: a condition by its lastTransitionTime, an Event by its
occurrences after the deletion (first to last, which the Event's count aggregates). A
condition that changed before the deletion may be a leftover the deletion path never
touches; it is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..durations import ago
from .model import Blocking
from .tally import timestamp

QUOTE = 60  # characters of the controller's words in a verdict
MESSAGE = 300  # characters of them kept as evidence
# An Event last seen longer ago than this says nothing of now: controller-runtime retries a
# failing object at least every 1000 s, client-go's recorder aggregates each repeat.
RECENT = 1200.0
HEALTHY = frozenset({"ready", "synced", "available", "healthy", "succeeded", "established", "reconciled"})

CAUSES = (
    (re.compile(r"being terminated|\bNamespaceTerminating\b", re.I), "the namespace is being deleted"),
    (re.compile(r"forbidden: User \"[^\"]*\" cannot|\bcannot \w+ resource \"", re.I), "forbidden by RBAC"),
    (re.compile(r"\bforbidden\b|\b403\b", re.I), "forbidden"),
    (re.compile(r"\bis invalid\b|\b422\b|Unprocessable Entity", re.I), "refused as invalid"),
)
VERBS = "create|update|patch|delete|get|list|watch|apply"
ACTION = re.compile(
    rf"\b(?:cannot|can't|failed to|unable to|could not)\s+({VERBS})\s+(?:resource\s+)?\"?([A-Za-z][\w.-]*)",
    re.I,
)
REFUSED = re.compile(r"([A-Za-z][\w.-]*)(?: \"[^\"]*\")? is (?:forbidden|invalid)")
NEW_CONTENT = re.compile(r"unable to create new content", re.I)


@dataclass(frozen=True)
class Refusal:
    """One answer a controller keeps getting, in its own words, and for how long."""

    cause: str  # in words: "the namespace is being deleted", "forbidden by RBAC", ...
    action: str  # what was refused: "ProviderConfigUsage create refused", or "refused"
    message: str  # the controller's words, at most MESSAGE characters
    source: str  # "condition Synced=False (ReconcileError)" or "Warning Event ReconcileError"
    since: float  # the first time it was said after the deletion
    last: float  # the latest time it was said

    @property
    def seconds(self) -> float:
        """How long it was said, from the deletion on."""
        return self.last - self.since


def quote(text: str) -> str:
    """The controller's words, brief enough for a one-line verdict."""
    return text if len(text) <= QUOTE else text[: QUOTE - 1].rstrip() + "…"


def cause(text: str) -> str | None:
    """The cause a refusal names, or None when the text carries none of the answers."""
    return next((words for pattern, words in CAUSES if pattern.search(text)), None)


def action(text: str) -> str:
    """What the controller tried and was refused, from its words: "X create refused"."""
    for match in ACTION.finditer(text):
        verb, what = match.group(1).lower(), match.group(2)
        if what.lower() != "new":
            return f"{what} {verb} refused"
    refused = REFUSED.search(text)
    verb = "create" if NEW_CONTENT.search(text) else ""
    if refused:
        return f"{refused.group(1)} {verb} refused".replace("  ", " ")
    return f"{verb} refused".strip()


def _refusal(text: str, words: str, source: str, since: float, last: float) -> Refusal | None:
    """`text` is classified (reason and message); `words` are quoted (the message)."""
    found = cause(text)
    if found is None:
        return None
    message = " ".join(words.split())[:MESSAGE]
    return Refusal(found, action(words), message, source, since, last)


def from_conditions(obj: dict[str, Any], deletion: float, now: float) -> list[Refusal]:
    """The refusals in the object's status.conditions that changed after its deletion; a
    condition is the controller's latest word, so it is said until now."""
    found = []
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if not isinstance(condition, dict):
            continue
        kind, status = str(condition.get("type") or ""), str(condition.get("status") or "")
        if status == "True" and kind.lower() in HEALTHY:
            continue
        since = timestamp(condition.get("lastTransitionTime") or condition.get("lastUpdateTime"))
        if since is None or since < deletion:
            continue
        reason, message = str(condition.get("reason") or ""), str(condition.get("message") or "")
        source = f"condition {kind}={status}" + (f" ({reason})" if reason else "")
        refusal = _refusal(f"{reason} {message}", message or reason, source, since, now)
        if refusal is not None:
            found.append(refusal)
    return found


def about(event: dict[str, Any]) -> tuple[str, str, str, str]:
    """(namespace, kind, name, uid) of the object an Event is about, core/v1 (involvedObject)
    or events.k8s.io/v1 (regarding)."""
    ref = event.get("involvedObject") or event.get("regarding") or {}
    namespace = str(ref.get("namespace") or "")
    return namespace, str(ref.get("kind") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")


def occurrences(event: dict[str, Any]) -> tuple[float | None, float | None]:
    """(first, last) time an Event happened, from whichever fields its API set: core/v1's
    first/lastTimestamp, events.k8s.io/v1's eventTime and series.lastObservedTime."""
    series = event.get("series") or {}
    first = timestamp(event.get("firstTimestamp") or event.get("deprecatedFirstTimestamp") or event.get("eventTime"))
    last = timestamp(
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("deprecatedLastTimestamp")
        or event.get("eventTime")
    )
    if first is None:
        first = last
    return first, last if last is not None else first


def from_events(events: Iterable[dict[str, Any]], deletion: float, now: float) -> list[Refusal]:
    """The refusals among Warning Events about one object, counted from its deletion on;
    one last seen before the deletion, or longer than RECENT ago, is ignored."""
    found = []
    for event in events:
        if str(event.get("type") or "Warning") != "Warning":
            continue
        first, last = occurrences(event)
        if first is None or last is None or last < deletion or now - last > RECENT:
            continue
        reason = str(event.get("reason") or "")
        message = str(event.get("message") or event.get("note") or "")
        source = f"Warning Event {reason}".rstrip()
        refusal = _refusal(f"{reason} {message}", message or reason, source, max(first, deletion), last)
        if refusal is not None:
            found.append(refusal)
    return found


def lasting(refusals: Iterable[Refusal], grace: float) -> Refusal | None:
    """The refusal said for longest, if that is longer than the grace."""
    long = [r for r in refusals if r.seconds > grace]
    return max(long, key=lambda r: r.seconds) if long else None


def of_object(obj: dict[str, Any], events: Iterable[dict[str, Any]], now: float, grace: float) -> Refusal | None:
    """The refusal one object being deleted says it keeps getting, from its conditions and
    the Warning Events about it (about its uid, when the Event names one), if any was said
    for longer than the grace."""
    meta = obj.get("metadata") or {}
    deletion = timestamp(meta.get("deletionTimestamp"))
    if deletion is None:
        return None
    uid = str(meta.get("uid") or "")
    mine = [e for e in events if not uid or about(e)[3] in ("", uid)]
    return lasting([*from_conditions(obj, deletion, now), *from_events(mine, deletion, now)], grace)


NAMED = 3  # objects named in a blocked group's evidence


def blocked_verdict(blocking: Blocking) -> tuple[str, str]:
    """A blocked group's verdict and its first line of evidence."""
    some = (
        f"; {len(blocking.objects)} of {blocking.looked_at} looked at"
        if len(blocking.objects) < blocking.looked_at
        else ""
    )
    said = (
        f'blocked: {blocking.cause}; {blocking.action} for {ago(blocking.seconds)}{some} ("{quote(blocking.message)}")'
    )
    shown = ", ".join(blocking.objects[:NAMED]) + (" ..." if len(blocking.objects) > NAMED else "")
    return said, f'{blocking.source} on {shown}, for {ago(blocking.seconds)}: "{blocking.message}"'
