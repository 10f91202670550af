"""`scan --free` (Python `scan(free=True)`): run the calls scanning.remedy planned from a
scan, on the scan's own connection, as one run with one record.

Each planned call is what `unfinalize(**call.kwargs)` would do, run by the Engine itself
rather than through unfinalize(): every call shares the transport the scan opened (one
process, one connection pool, one set of credentials) and the journal (one record for the
whole --free, `history` lists it once). Every call is resolved before the first write, so
--max-objects counts what all of them would change together and refuses before any
write. A call that fails (a 403 on its preflight, a CRD gone since the scan) is a FreedCall
entry saying so and the others still run; when none freed anything and one raised, that
error is raised, so "nothing was changed" keeps its exit status (a missing RBAC verb).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .deadline import Deadline
from .engine import Engine
from .engine.recording import changes
from .errors import InputError, UnfinalizeError
from .kube.cluster import HttpCluster
from .kube.config import connect
from .kube.metadata import MetadataCluster
from .kube.transport import Transport
from .model import Action, Report, Targets
from .options import ConnectionOptions, DryRun, Options, Selection
from .records.start import finish, report_counts, start
from .resolve import resolve
from .resolve.documents import declared_crds
from .scanning.model import FreedCall, ScanReport
from .scanning.options import FreeOptions, ScanOptions
from .scanning.remedy import Call, plan
from .scanning.settle import settle
from .scanning.survey import scan as survey

SELECTION_FIELDS = {f.name for f in dataclasses.fields(Selection)}


def scan_and_free(
    options: ScanOptions,
    connection: ConnectionOptions,
    interrupt: threading.Event | None,
    warn: Callable[[str], None],
) -> ScanReport:
    """The scan (waited out with options.wait); with options.free, the frees, then the
    scan again, all on one connection and within one deadline."""
    with connect(connection) as transport:
        deadline = Deadline(options.deadline_seconds, interrupt)
        cluster = MetadataCluster(transport, deadline)

        def look() -> ScanReport:
            if not options.wait:
                return survey(cluster, options)
            return settle(lambda: survey(cluster, options), options.grace, deadline.remaining, deadline.interrupt.wait)

        report = look()
        if options.free is None:
            return report
        freed, record = free_stuck(transport, report, options, deadline, warn)
        if freed and options.free.dry_run is DryRun.NONE and not (deadline.interrupted or deadline.expired()):
            try:  # else no time for it: the scan before, with what was freed (never lost)
                report = look()
            except UnfinalizeError as exc:
                report.not_scanned.append(f"the scan after the frees: {exc}")
        report.freed, report.record = freed, record
        return report


def request(call: Call, free: FreeOptions, chunk_size: int) -> tuple[Selection, Options]:
    """The Selection and Options unfinalize(**call.kwargs) would build."""
    kwargs: dict[str, Any] = dict(call.kwargs)
    chosen: dict[str, Any] = {
        k: tuple(kwargs.pop(k)) for k in list(kwargs) if k in SELECTION_FIELDS and k != "resource"
    }
    selection = Selection(resource=kwargs.pop("resource", None), **chosen)
    options = Options(**kwargs, dry_run=free.dry_run, chunk_size=chunk_size)
    return selection, options


def free_stuck(
    transport: Transport,
    report: ScanReport,
    options: ScanOptions,
    deadline: Deadline,
    warn: Callable[[str], None],
) -> tuple[list[FreedCall], str]:
    """Free what `report` judges stuck in the scope of options.free; (what each call did,
    the record's path or "")."""
    free = options.free
    assert free is not None
    calls = plan(report, free.scope, options.grace, free.settle, free.include_blocked)
    if not calls:
        return [], ""
    cluster = HttpCluster(transport, deadline)
    runs, gone = [], []
    for call in calls:
        selection, run_options = request(call, free, options.chunk_size)
        Engine.prepare(cluster, run_options, Targets(crds=declared_crds(selection, [])))
        try:
            targets = resolve(cluster, selection, [], run_options.namespace or transport.namespace)
        except InputError as exc:  # a CRD gone since the scan: nothing of it to free
            gone.append(
                FreedCall(call.resource, [], list(call.groups), Report(dry_run=free.dry_run, skipped=[str(exc)]))
            )
            continue
        runs.append((call, run_options, targets))
    _refuse_over_cap(cluster, free, runs)
    journal = start(
        free.record,
        command=free.command,
        context=transport.context,
        server=transport.host,
        selection=None,
        options=None,
        warn=warn,
        dry_run=free.dry_run,
    )
    started, counts, freed = time.monotonic(), Counter[str](), []
    raised: UnfinalizeError | None = None
    try:
        for call, run_options, targets in runs:
            capped = _capped(run_options, free.max_objects, counts)
            try:
                result = Engine(cluster, capped, deadline, on_warning=warn, journal=journal).run(
                    targets, skipped=targets.missing
                )
            except UnfinalizeError as exc:
                raised = raised or exc
                result = Report(dry_run=free.dry_run, error=f"{type(exc).__name__}: {exc}")
            counts.update(report_counts(result))
            freed.append(FreedCall(call.resource, list(call.kwargs.get("finalizers", [])), list(call.groups), result))
    finally:
        ok = all(f.report is not None and f.report.ok for f in freed) and len(freed) == len(runs)
        record = finish(journal, dict(counts), ok, time.monotonic() - started)
    if raised is not None and not any(f.report and f.report.count(Action.UNFINALIZED) for f in freed):
        raise raised
    return freed + gone, record


def _capped(options: Options, limit: int | None, counts: Counter[str]) -> Options:
    """What is left of --max-objects after the calls before this one."""
    if limit is None:
        return options
    taken = counts["unfinalized"] + counts["deleted"]
    return dataclasses.replace(options, max_objects=max(0, limit - taken))


def _refuse_over_cap(cluster: HttpCluster, free: FreeOptions, runs: list[tuple[Call, Options, Targets]]) -> None:
    if free.max_objects is None or free.dry_run is not DryRun.NONE:
        return
    count = 0
    for call, run_options, targets in runs:
        count += changes(cluster, run_options, targets)
        if "namespaces" in call.kwargs:  # their own finalizers (their contents are held to the cap as they go)
            count += len(targets.namespaces)
    if count > free.max_objects:
        raise InputError(
            f"scan --free would change {count} objects, more than --max-objects {free.max_objects}; nothing was changed"
        )
