"""How a scan is asked for: what it reads, how long a deletion may wait unjudged, and how
long the scan may take. Validated here, for the command line and the Python API alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..options import DryRun, check_bounds, check_cap
from .patience import GRACE
from .remedy import Scope

SCAN_TIMEOUT = 300.0


@dataclass(frozen=True)
class FreeOptions:
    """`scan --free`: what the scan judges stuck is freed (remedy.plan), within `scope`, in
    one record (`record` as unfinalize's: None the default place, "none" no record)."""

    scope: Scope = Scope()
    include_blocked: bool = False
    dry_run: DryRun = DryRun.NONE
    max_objects: int | None = None  # over every planned call together
    record: str | None = None
    command: str | None = None  # what the record's header says was run
    settle: bool = True  # a Terminating CRD whose objects are freed is waited on until it is gone
    force_lost_pods: bool = False  # the pods scan finds held by a lost node, force-deleted (never implied)
    events: bool = False  # one Kubernetes Event per freed group and namespace (freed_events)

    def __post_init__(self) -> None:
        check_cap(self.max_objects)


@dataclass(frozen=True)
class ScanOptions:
    """What scan() reads and how it judges: every object with finalizers that is being
    deleted (or every one, include_live), a deletion judged only after `grace` seconds
    without a sign of life, the whole scan within `timeout`; `wait` and `free` make it the
    unattended gate and janitor."""

    namespace: str | None = None  # None: every namespace (and the cluster-scoped types)
    include_live: bool = False  # --all: also objects with finalizers that are not being deleted
    older_than: float = 0.0  # seconds since the deletionTimestamp
    concurrency: int = 16  # lists in flight
    chunk_size: int = 500
    grace: float = GRACE
    timeout: float | None = None  # seconds for the whole scan; None: SCAN_TIMEOUT
    wait: bool = False  # scan again while something is pending (settle.py), within the timeout
    free: FreeOptions | None = None  # --free: free what is stuck, then scan again

    def __post_init__(self) -> None:
        check_bounds(self.concurrency, self.chunk_size, self.timeout)
        if self.older_than < 0:
            raise InputError("--older-than must not be negative")
        if self.grace < 0:
            raise InputError("grace must not be negative")
        if self.free is not None and self.include_live:
            raise InputError("--free frees only objects being deleted: it does not go with --all")

    @property
    def deadline_seconds(self) -> float:
        return SCAN_TIMEOUT if self.timeout is None else self.timeout


def free_options(
    free: bool,
    *,
    namespaces: Sequence[str],
    groups: Sequence[str],
    finalizers: Sequence[str],
    exclude_namespaces: Sequence[str],
    include_blocked: bool,
    dry_run: DryRun | str | None,
    max_objects: int | None,
    record: str | None,
    force_lost_pods: bool = False,
    events: bool = False,
) -> FreeOptions | None:
    """scan()'s keywords of free=True; given without it they are refused, not ignored."""
    if not free:
        asked = {
            "namespaces": namespaces,
            "groups": groups,
            "finalizers": finalizers,
            "exclude_namespaces": exclude_namespaces,
            "include_blocked": include_blocked,
            "dry_run": dry_run not in (None, "none", DryRun.NONE),
            "max_objects": max_objects is not None,
            "record": record is not None,
            "force_lost_pods": force_lost_pods,
            "events": events,
        }
        given = [name for name, value in asked.items() if value]
        if given:
            raise InputError(f"{', '.join(given)}: only with free=True (scan reads only)")
        return None
    scope = Scope(_tuple(namespaces), _tuple(groups), _tuple(finalizers), _tuple(exclude_namespaces))
    return FreeOptions(
        scope,
        include_blocked,
        DryRun.parse(dry_run),
        max_objects,
        record,
        force_lost_pods=force_lost_pods,
        events=events,
    )


def _tuple(values: Sequence[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)
