"""What one run saw and freed, kept in memory for the run's own end: the report's count
of objects scanned, where the final check looks for finalizers that came back, and the
owners held by foregroundDeletion or orphan the run's end waits on and names (owners.py)."""

from __future__ import annotations

import threading
import time
from collections import Counter

from ..model import ObjectMeta, ObjectRef, Resource

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"  # propagationPolicy=Orphan: the collector takes the owner out of its dependents, then lets it go
KEPT = 20  # owners followed per run (owners.py names what holds each)


class Sightings:
    """In memory, for this run only (nothing here is written anywhere). Filled from the
    listing threads, the workers and the bulk sender at once."""

    def __init__(self) -> None:
        self.seen: set[str] = set()  # uids listed or read: the report's "scanned"
        # Freed while not terminating (their finalizers may come back): uid -> the object and
        # the resourceVersion this run's patch left it at ("" unknown), as the final check reads them.
        self.live: dict[str, tuple[ObjectRef, str]] = {}
        self.live_places: Counter[tuple[Resource, str | None]] = Counter()  # how many in each (type, namespace)
        self.first_live: float | None = None  # when the first of them was freed
        self.owners: dict[str, ObjectMeta] = {}  # uid -> held by foregroundDeletion or orphan, being deleted
        self._lock = threading.Lock()

    def saw(self, meta: ObjectMeta) -> None:
        self.seen.add(meta.uid)
        if (
            meta.terminating
            and (FOREGROUND in meta.finalizers or ORPHAN in meta.finalizers)
            and len(self.owners) < KEPT
        ):
            self.owners[meta.uid] = meta  # a dict's item assignment needs no lock

    def freed_live(self, meta: ObjectMeta, version: str) -> None:
        """`meta` was freed while not being deleted; `version`: the resourceVersion the patch left."""
        if self.first_live is None:
            self.first_live = time.monotonic()
        with self._lock:  # a count must not be lost
            if meta.uid not in self.live:
                self.live_places[(meta.ref.resource, meta.ref.namespace)] += 1
            self.live[meta.uid] = (meta.ref, version)
