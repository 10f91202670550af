"""The public Python API's scan: `scan()` and `run_scan()` (the command line's). Apart
from api.py so that a teardown's `unfinalize()` imports nothing of scan's."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .api import warn
from .options import ConnectionOptions, DryRun, connection_of

if TYPE_CHECKING:
    from .scanning.options import ScanOptions
    from .scanning.report import ContextScans, ScanReport


def scan(
    *,
    namespace: str | None = None,
    include_live: bool = False,
    older_than: float = 0.0,
    grace: float | None = None,
    wait: bool = False,
    concurrency: int = 16,
    chunk_size: int = 500,
    timeout: float | None = None,
    free: bool = False,
    finalizers: Sequence[str] = (),
    exclude_namespaces: Sequence[str] = (),
    namespaces: Sequence[str] = (),
    groups: Sequence[str] = (),
    include_blocked: bool = False,
    force_lost_pods: bool = False,
    events: bool = False,
    dry_run: DryRun | str | None = None,
    max_objects: int | None = None,
    record: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    connection: ConnectionOptions | None = None,
    interrupt: threading.Event | None = None,
) -> ScanReport:
    """What is stuck: every object being deleted and still held by finalizers (in
    `namespace`, or everywhere, cluster-scoped types and Terminating CRDs included),
    grouped by finalizer and type, with its owner, the liveness evidence and the command
    that frees it (stuck and pending ones). Reads only. For a test session's final check::

        scan(kubeconfig=path, wait=True).raise_for_failure()

    `older_than` (seconds) leaves out what has waited less; `grace` (seconds, default
    scanning.evidence.GRACE) is how long after its deletion an object with no evidence
    either way is `pending` rather than stuck (0 in a final check that runs after every
    controller was stopped on purpose). `wait=True` scans again while something is
    pending, until it is judged or gone (`report.waited` says how long; what is still
    pending when the time is up stays in `report.pending`): `report.ok` is then "nothing
    held" rather than "nothing judged yet". `include_live` also reports objects that have
    finalizers and are not being deleted (never stuck). `timeout` (default 300 s) bounds
    the whole call, the wait included. Raises ConfigError/ClusterError when the cluster
    cannot be read at all; a type that cannot be listed is a line in `not_scanned`.

    free=True frees what this scan judges stuck (scanning.remedy's rules: only objects
    being deleted, only the stuck finalizers; `include_blocked` adds blocked groups; a
    built-in controller's finalizer only when `finalizers` names it), in the scope of
    `finalizers`, `namespaces` and `groups` (shell patterns of namespaces and API groups)
    and `exclude_namespaces` (patterns), with one record (`record` as unfinalize's), then
    scans again: the report is that second scan, `report.freed` what each call did and
    `report.record` the record. `max_objects` refuses (InputError, nothing changed) when
    all the calls together would change more; `dry_run` ("server", "client") frees nothing.
    `force_lost_pods` also force-deletes the pods the scan finds held by a lost node.
    `events` writes one Kubernetes Event per freed group and namespace (scanning.freed_events).
    """
    from .scanning.options import ScanOptions, free_options
    from .scanning.patience import GRACE

    options = ScanOptions(
        namespace=namespace,
        include_live=include_live,
        older_than=older_than,
        concurrency=concurrency,
        chunk_size=chunk_size,
        grace=GRACE if grace is None else grace,
        timeout=timeout,
        wait=wait,
        free=free_options(
            free,
            namespaces=namespaces,
            groups=groups,
            finalizers=finalizers,
            exclude_namespaces=exclude_namespaces,
            include_blocked=include_blocked,
            dry_run=dry_run,
            max_objects=max_objects,
            record=record,
            force_lost_pods=force_lost_pods,
            events=events,
        ),
    )
    connection = connection_of(connection, kubeconfig, context)
    return run_scan(options, connection, interrupt=interrupt)


def run_scan(
    options: ScanOptions,
    connection: ConnectionOptions,
    *,
    interrupt: threading.Event | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ScanReport:
    """scan() over options already made (the command line makes them from its flags);
    with options.free, the frees on the same connection, then a scan again (scan_free.py)."""
    from .scan_free import scan_and_free

    return scan_and_free(options, connection, interrupt, on_warning or warn)


def scan_each(contexts: Sequence[str] = (), *, all_contexts: bool = False, **asked: Any) -> ContextScans:
    """scan() (the same keyword arguments, `context` aside) in each of `contexts`, or in
    every context of the kubeconfig with all_contexts=True: each on its own connection
    and credentials, a few at a time. One ScanReport per context that could be read,
    `errors` for each that could not (it fails the whole, and the others still run);
    with free=True, one record per context. An unknown context is a ConfigError before
    anything is sent."""
    from .each_context import chosen

    if "context" in asked:
        raise TypeError("scan_each() takes contexts=, not context=")
    connection = connection_of(asked.pop("connection", None), asked.pop("kubeconfig", None), None)
    return _in_each(connection, chosen(connection, contexts, all_contexts), lambda c: scan(**asked, connection=c))


def run_scans(
    options: ScanOptions,
    connection: ConnectionOptions,
    contexts: Sequence[str],
    *,
    interrupt: threading.Event | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ContextScans:
    """run_scan in each of `contexts` (as each_context.chosen gives them); a warning names its context."""
    warn_of = on_warning or warn

    def one(connection: ConnectionOptions) -> ScanReport:
        context = connection.context
        return run_scan(
            options, connection, interrupt=interrupt, on_warning=lambda m: warn_of(f"context {context}: {m}")
        )

    return _in_each(connection, list(contexts), one)


def _in_each(
    connection: ConnectionOptions, names: list[str], job: Callable[[ConnectionOptions], ScanReport]
) -> ContextScans:
    from .each_context import run_each
    from .scanning.report import ContextScans

    scans = ContextScans(names)
    for outcome in run_each(names, connection, job):
        if outcome.result is None:
            scans.errors[outcome.context] = str(outcome.error)
        else:
            scans.reports[outcome.context] = outcome.result.naming_context(outcome.context)
    return scans
