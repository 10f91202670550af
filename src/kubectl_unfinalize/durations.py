"""Durations spelled the way kubectl and Go spell them (90s, 2m, 1h30m, 500ms), read from
the command line and written in reports; the command line and scan share them. And the
API server's RFC 3339 times, as seconds."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from .errors import InputError

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Return seconds. A bare number means seconds, as kubectl's --request-timeout allows."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    pos, total = 0, 0.0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(value) or not value:
        raise InputError(f"invalid duration {text!r}: use a number with a unit, e.g. 90s, 2m, 1h30m")
    return total


def format_seconds(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    return f"{seconds:.0f}s"


def ago(seconds: float) -> str:
    """3d, 5h, 12m, 4s: the largest unit, as kubectl prints ages."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def timestamp(text: object) -> float | None:
    """Seconds since the epoch from an RFC 3339 time (with or without a zone, which is UTC)."""
    if not text or not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()
