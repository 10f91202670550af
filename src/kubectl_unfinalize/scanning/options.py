"""How a scan is asked for: what it reads, how long a deletion may wait unjudged, and how
long the scan may take. Validated here, for the command line and the Python API alike."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..options import check_bounds
from .evidence import GRACE

SCAN_TIMEOUT = 300.0


@dataclass(frozen=True)
class ScanOptions:
    namespace: str | None = None  # None: every namespace (and the cluster-scoped types)
    include_live: bool = False  # --all: also objects with finalizers that are not being deleted
    older_than: float = 0.0  # seconds since the deletionTimestamp
    concurrency: int = 16  # lists in flight
    chunk_size: int = 500
    grace: float = GRACE
    timeout: float | None = None  # seconds for the whole scan; None: SCAN_TIMEOUT
    wait: bool = False  # scan again while something is pending (settle.py), within the timeout

    def __post_init__(self) -> None:
        check_bounds(self.concurrency, self.chunk_size, self.timeout)
        if self.older_than < 0:
            raise InputError("--older-than must not be negative")
        if self.grace < 0:
            raise InputError("grace must not be negative")

    @property
    def deadline_seconds(self) -> float:
        return SCAN_TIMEOUT if self.timeout is None else self.timeout
