"""Per group (one finalizer on one resource type), what `scan` keeps of the objects it
lists: counts, the oldest deletion, namespaces, a few names, and per field manager the
times that tell whether it still writes. Bounded whatever the number of objects, so a
scan of a large cluster holds a page at a time plus these."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..durations import timestamp

__all__ = ["Tally", "rfc3339", "timestamp"]  # timestamp: the scan's modules read it from here

NAMES = 50  # names kept per group: enough for the commands that free a few objects by name
NAMESPACES = 1000  # namespaces named per group; beyond, only counted
MANAGERS = 20  # field managers followed per group


def rfc3339(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ManagerTally:
    objects: int = 0
    finalizer_write: float | None = None
    last_write: float | None = None
    writes_after_deletion: int = 0
    last_after_deletion: float | None = None


@dataclass
class Tally:
    """One group's running totals."""

    count: int = 0
    oldest: float | None = None  # the earliest deletionTimestamp (epoch seconds)
    namespaces: set[str] = field(default_factory=set)
    more_namespaces: int = 0
    names: list[tuple[str | None, str]] = field(default_factory=list)
    managers: dict[str, ManagerTally] = field(default_factory=dict)

    def add(self, meta: dict[str, Any], deletion: float | None) -> None:
        self.count += 1
        if deletion is not None and (self.oldest is None or deletion < self.oldest):
            self.oldest = deletion
        namespace = meta.get("namespace") or None
        if namespace and namespace not in self.namespaces:
            if len(self.namespaces) < NAMESPACES:
                self.namespaces.add(namespace)
            else:
                self.more_namespaces += 1
        if len(self.names) < NAMES:
            self.names.append((namespace, str(meta.get("name") or "")))
        self._managers(meta.get("managedFields") or [], deletion)

    def _managers(self, entries: list[dict[str, Any]], deletion: float | None) -> None:
        """The managers whose entry owns f:metadata/f:finalizers, and each one's latest
        write of anything on this object (its entries for the main resource and for
        subresources such as status are separate; a retrying controller touches one)."""
        owners: dict[str, float | None] = {}
        for entry in entries:
            fields = (entry.get("fieldsV1") or {}).get("f:metadata") or {}
            if "f:finalizers" in fields:
                name = str(entry.get("manager") or "")
                written = timestamp(entry.get("time"))
                owners[name] = _latest(owners.get(name), written)
        for name, finalizer_write in owners.items():
            tally = self.managers.get(name)
            if tally is None:
                if len(self.managers) >= MANAGERS:
                    continue
                tally = self.managers[name] = ManagerTally()
            last = None
            for entry in entries:
                if entry.get("manager") == name:
                    last = _latest(last, timestamp(entry.get("time")))
            tally.objects += 1
            tally.finalizer_write = _latest(tally.finalizer_write, finalizer_write)
            tally.last_write = _latest(tally.last_write, last)
            if deletion is not None and last is not None and last > deletion:
                tally.writes_after_deletion += 1
                tally.last_after_deletion = _latest(tally.last_after_deletion, last)

    def merge(self, other: Tally) -> None:
        """Add another tally of the same group (its objects were tallied apart), within the bounds."""
        self.count += other.count
        if other.oldest is not None and (self.oldest is None or other.oldest < self.oldest):
            self.oldest = other.oldest
        for namespace in sorted(other.namespaces - self.namespaces):
            if len(self.namespaces) < NAMESPACES:
                self.namespaces.add(namespace)
            else:
                self.more_namespaces += 1
        self.more_namespaces += other.more_namespaces
        self.names += other.names[: NAMES - len(self.names)]
        for name, theirs in other.managers.items():
            ours = self.managers.get(name)
            if ours is None:
                if len(self.managers) < MANAGERS:
                    self.managers[name] = theirs
                continue
            ours.objects += theirs.objects
            ours.finalizer_write = _latest(ours.finalizer_write, theirs.finalizer_write)
            ours.last_write = _latest(ours.last_write, theirs.last_write)
            ours.writes_after_deletion += theirs.writes_after_deletion
            ours.last_after_deletion = _latest(ours.last_after_deletion, theirs.last_after_deletion)

    @property
    def last_after_deletion(self) -> tuple[str, float] | None:
        """The manager that wrote last after a deletion, and when."""
        found = [(t.last_after_deletion, name) for name, t in self.managers.items() if t.last_after_deletion]
        if not found:
            return None
        when, name = max(found)
        assert when is not None
        return name, when

    @property
    def last_seen(self) -> tuple[str, float] | None:
        """Any write of a finalizer's manager: the last sign of life on these objects."""
        found = [(t.last_write, name) for name, t in self.managers.items() if t.last_write]
        if not found:
            return None
        when, name = max(found)
        assert when is not None
        return name, when


def _latest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)
