"""How a scan is asked for: what it reads and how long a deletion may wait unjudged."""

from __future__ import annotations

from dataclasses import dataclass

from .evidence import GRACE


@dataclass(frozen=True)
class ScanOptions:
    namespace: str | None = None  # None: every namespace (and the cluster-scoped types)
    include_live: bool = False  # --all: also objects with finalizers that are not being deleted
    older_than: float = 0.0  # seconds since the deletionTimestamp
    concurrency: int = 16  # lists in flight
    chunk_size: int = 500
    grace: float = GRACE
