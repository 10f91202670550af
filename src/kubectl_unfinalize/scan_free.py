"""`scan --free` (Python `scan(free=True)`): run the calls scanning.remedy planned from a
scan, on the scan's own connection, as one run with one record.

Each planned call is what `unfinalize(...)` with its Selection and options would do, run by the Engine itself
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
from collections.abc import Callable

from .deadline import Deadline
from .engine import Engine
from .engine.cap import over_cap
from .errors import InputError, UnfinalizeError
from .kube.cluster import HttpCluster
from .kube.config import connect
from .kube.metadata import MetadataCluster
from .kube.port import PlumbedCluster
from .model import Action, Report, Targets
from .options import ConnectionOptions, DryRun, Options
from .records.recorded import Header, recorded, report_counts
from .resolve import resolve
from .resolve.documents import declared_crds
from .scanning.freed_events import announce
from .scanning.options import ScanOptions
from .scanning.remedy import Call, plan
from .scanning.report import FreedCall, ScanReport
from .scanning.settle import settle
from .scanning.survey import scan as survey


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
        header = Header(options.free.command, transport.context, transport.host)
        writes = HttpCluster(transport, deadline)
        freed, record = free_stuck(writes, report, options, deadline, warn, header, transport.namespace)
        if freed and options.free.dry_run is DryRun.NONE and not (deadline.interrupted or deadline.expired()):
            try:  # else no time for it: the scan before, with what was freed (never lost)
                report = look()
            except UnfinalizeError as exc:
                report.not_scanned.append(f"the scan after the frees: {exc}")
        report.freed, report.record = freed, record
        return report


def free_stuck(
    cluster: PlumbedCluster,
    report: ScanReport,
    options: ScanOptions,
    deadline: Deadline,
    warn: Callable[[str], None],
    header: Header,
    namespace: str,
) -> tuple[list[FreedCall], str]:
    """Free what `report` judges stuck in the scope of options.free, on `cluster` (the
    scan's connection); (what each call did, the record's path or ""). `namespace`: the
    context's, for a call that names none."""
    free = options.free
    assert free is not None
    calls = plan(report, free.scope, options.grace, free.settle, free.include_blocked, free.force_lost_pods)
    if not calls:
        return [], ""
    runs: list[tuple[Call, Options, Targets]] = []
    gone: list[FreedCall] = []
    for call in calls:
        run_options = call.options(free.dry_run, options.chunk_size)
        Engine.prepare(cluster, run_options, Targets(crds=declared_crds(call.selection, [])))
        try:
            targets = resolve(cluster, call.selection, [], run_options.namespace or namespace)
        except InputError as exc:  # a CRD gone since the scan: nothing of it to free
            skipped = Report(dry_run=free.dry_run, skipped=[str(exc)])
            gone.append(FreedCall(call.resource, [], list(call.groups), skipped))
            continue
        runs.append((call, run_options, targets))
    over_cap(cluster, [(o, t) for _, o, t in runs], free.max_objects, "scan --free")
    freed: list[FreedCall] = []
    raised: UnfinalizeError | None = None
    with recorded(free.record, header, warn, free.dry_run) as recording:
        for call, run_options, targets in runs:
            capped = _capped(
                run_options, free.max_objects, recording.counts["unfinalized"] + recording.counts["deleted"]
            )
            try:
                engine = Engine(cluster, capped, deadline, on_warning=warn, journal=recording.journal)
                result = engine.run(targets, skipped=targets.missing)
            except UnfinalizeError as exc:
                raised = raised or exc
                result = Report(dry_run=free.dry_run, error=f"{type(exc).__name__}: {exc}")
            recording.count(report_counts(result))
            freed.append(FreedCall(call.resource, list(call.finalizers), list(call.groups), result))
        recording.ok = all(f.report is not None and f.report.ok for f in freed)
    if free.events and free.dry_run is DryRun.NONE:  # a report of what was done: never part of the frees
        announce(cluster, freed, recording.id, warn)
    if raised is not None and not any(f.report and f.report.count(Action.UNFINALIZED) for f in freed):
        raise raised
    return freed + gone, recording.path


def _capped(options: Options, limit: int | None, taken: int) -> Options:
    """What is left of --max-objects after the calls before this one."""
    if limit is None:
        return options
    return dataclasses.replace(options, max_objects=max(0, limit - taken))
