"""The public Python API. The command line is a thin layer over `run`; `scan()` is in
scan_api.py, `history()` and `undo()` in record_api.py.

Typical use, in an operator test suite's teardown after the operator has stopped::

    from kubectl_unfinalize import unfinalize
    unfinalize(files=["manifests/crds"], delete=True, timeout=60).raise_for_failure()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from .deadline import Deadline
from .engine import Engine, OutcomeListener, ProgressListener
from .kube.cluster import HttpCluster
from .kube.config import connect
from .model import Report, Targets
from .options import ConnectionOptions, DryRun, Options, Selection, connection_of
from .records.recorded import Header, recorded, report_counts
from .resolve import resolve
from .resolve.documents import declared_crds
from .resolve.manifests import read_manifests

Confirm = Callable[[Targets], bool]


def unfinalize(
    crds: Sequence[str] = (),
    *,
    group: str | None = None,
    crd_selector: str | None = None,
    files: Sequence[str] = (),
    recursive: bool = False,
    namespaces: Sequence[str] = (),
    namespace_selector: str | None = None,
    categories: Sequence[str] = (),
    resource: str | None = None,
    names: Sequence[str] = (),
    objects: Sequence[str] = (),
    all_namespaces: bool = False,
    delete: bool = False,
    wait: bool = True,
    timeout: float | None = None,
    dry_run: DryRun | str | None = None,
    namespace: str | None = None,
    selector: str | None = None,
    field_selector: str | None = None,
    only_terminating: bool = False,
    finalizers: Sequence[str] = (),
    concurrency: int = 64,
    chunk_size: int = 500,
    remove_dead_webhooks: bool = False,
    unsafe_delete_corrupt: bool = False,
    force_lost_pods: bool = False,
    with_dependents: bool = False,
    backup: bool = False,
    max_objects: int | None = None,
    record: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    connection: ConnectionOptions | None = None,
    on_outcome: OutcomeListener | None = None,
    on_progress: ProgressListener | None = None,
    confirm: Confirm | None = None,
    interrupt: threading.Event | None = None,
) -> Report:
    """Free the custom resources of the selected CRDs (and the selected objects), and
    everything with finalizers inside the selected namespaces (by name, or by label with
    `namespace_selector`): with delete=True each namespace is deleted first and waited on
    until it is gone, e.g. ``unfinalize(namespaces=["test-1"], delete=True, timeout=60)``.

    `timeout` (seconds, default 300) bounds the whole call, retries included. Raises
    InputError / ConfigError for bad input (nothing was changed), PermissionDenied when
    RBAC forbids a verb the plan needs (nothing was changed), ClusterError when the
    cluster cannot be reached before the first write, Unauthorized when it rejects the
    credentials even renewed. Once writing has started, every failure is an outcome in
    the returned Report, so a teardown can decide whether a partial result is acceptable
    (or call `raise_for_failure()`); credentials rejected then end the run, and the
    Report carries the error (`stopped_by`) beside what was done. Setting `interrupt`
    (from another thread) ends the call as its timeout would, and the Report says so.

    Objects of any type, as kubectl names them: ``unfinalize(resource="pvc", names=["data"],
    namespace="db")``, ``unfinalize(objects=["configmap/a", "secret/b"])``, or by label with
    ``unfinalize(resource="configmaps", selector="app=x", all_namespaces=True)`` (there
    `selector` and `field_selector` choose the objects). Without `namespace` they are in the
    kubeconfig's namespace; `all_namespaces` widens a selector to every namespace (with
    names it is refused: a name is looked up in one namespace). ``categories=["managed"]`` selects the CRDs listing that
    category (as ``kubectl get managed``), alone or with `group` and `crd_selector`.

    Every run that writes leaves a record (`Report.record`; `history()`, `undo()`): in
    $XDG_STATE_HOME/kubectl-unfinalize/, where `record` says (a folder or a file), or none
    with record="none". backup=True (with delete) keeps the body of every object deleted
    in it, so undo() can create it again. max_objects=N raises InputError, before any
    write, when the selection holds more than N objects to change, and writes no more than
    N whatever the run finds later (the rest are failures saying so).

    remove_dead_webhooks=True deletes the admission webhook configurations whose backend
    is gone and that refused a write of this run (each one is an outcome); without it such
    a configuration is named, and the writes it refuses are not sent again.
    unsafe_delete_corrupt=True deletes the selected objects the API server names as
    unreadable from storage, skipping their finalizers and admission (not undoable).
    force_lost_pods=True force-deletes (gracePeriodSeconds=0) the selected pods held by a
    lost node (lost_nodes.py), after one warning (not undoable); never implied.
    with_dependents=True: a selected owner held by foregroundDeletion has its blocking
    dependents freed of the finalizers scan judges stuck (a live controller's stay, named),
    and is waited on until the garbage collector deletes it.
    """
    selection = Selection(
        crds=tuple(crds),
        group=group,
        crd_selector=crd_selector,
        files=tuple(files),
        recursive=recursive,
        namespaces=(namespaces,) if isinstance(namespaces, str) else tuple(namespaces),
        namespace_selector=namespace_selector,
        categories=(categories,) if isinstance(categories, str) else tuple(categories),
        resource=resource,
        names=(names,) if isinstance(names, str) else tuple(names),
        objects=(objects,) if isinstance(objects, str) else tuple(objects),
        selector=selector if resource else None,
        field_selector=field_selector if resource else None,
        all_namespaces=all_namespaces,
    )
    options = Options(
        delete=delete,
        wait=wait,
        timeout=timeout,
        dry_run=DryRun.parse(dry_run),
        namespace=namespace,
        label_selector=None if resource else selector,
        field_selector=None if resource else field_selector,
        only_terminating=only_terminating,
        finalizers=tuple(finalizers),
        concurrency=concurrency,
        chunk_size=chunk_size,
        remove_dead_webhooks=remove_dead_webhooks,
        unsafe_delete_corrupt=unsafe_delete_corrupt,
        force_lost_pods=force_lost_pods,
        with_dependents=with_dependents,
        backup=backup,
        max_objects=max_objects,
    )
    connection = connection_of(connection, kubeconfig, context)
    return run(
        selection,
        options,
        connection,
        on_outcome=on_outcome,
        on_progress=on_progress,
        confirm=confirm,
        interrupt=interrupt,
        record=record,
    )


def run(
    selection: Selection,
    options: Options,
    connection: ConnectionOptions,
    *,
    on_outcome: OutcomeListener | None = None,
    on_progress: ProgressListener | None = None,
    confirm: Confirm | None = None,
    retain: bool = True,
    interrupt: threading.Event | None = None,
    on_warning: Callable[[str], None] | None = None,
    record: str | None = None,
    command: str | None = None,
) -> Report:
    """Read the manifests (before connecting: a bad one is reported even when the
    cluster is unreachable), resolve, ask, free. retain=False keeps only failures in the
    Report (the listener has seen every outcome), for memory flat in the object count.
    Setting `interrupt` ends the run as its deadline would, and the Report says so.
    `on_warning` is told, before anything is changed, when the timeout looks too short
    for the CRDs to delete (a provider's hundreds), and when the record cannot be written.

    Every write is recorded (`Report.record` is the file; `history()`, `undo()`): in
    $XDG_STATE_HOME/kubectl-unfinalize/, in the folder or file `record` names, or nowhere
    with record="none". `command` is what the record's header says was run."""
    documents = read_manifests(list(selection.files), selection.recursive) if selection.files else []
    with connect(connection) as transport:
        cluster = HttpCluster(transport, Deadline(options.deadline_seconds, interrupt))
        Engine.prepare(cluster, options, Targets(crds=declared_crds(selection, documents)))
        targets = resolve(cluster, selection, documents, options.namespace or transport.namespace)
        if confirm is not None and targets:
            if not confirm(targets):
                return Report(dry_run=options.dry_run, skipped=list(targets.missing), aborted=True)
            cluster = cluster.bounded(Deadline(options.deadline_seconds, interrupt))  # asking is not the run's time
        header = Header(command, transport.context, transport.host, selection, options)
        with recorded(record, header, on_warning or warn, options.dry_run, options.backup) as recording:
            judge = None
            if options.with_dependents:
                from . import dependent_verdicts  # scan's modules: imported by a run that asks alone

                judge = dependent_verdicts.judge(transport, cluster.deadline, options)
            engine = Engine(
                cluster,
                options,
                cluster.deadline,
                on_outcome,
                on_progress,
                retain,
                on_warning,
                recording.journal,
                judge,
            )
            report = engine.run(targets, skipped=targets.missing)
            recording.count(report_counts(report))
            recording.ok = report.ok
        report.record = recording.path
        return report


def warn(message: str) -> None:
    """A warning of a Python caller's run (the command line prints its own)."""
    import warnings

    warnings.warn(message, RuntimeWarning, stacklevel=3)


def names(kind: str, connection: ConnectionOptions, *, namespace: str | None = None, limit: int = 500) -> list[str]:
    """What shell completion offers: "crds" and "namespaces" (one metadata-only list),
    "contexts" (the kubeconfig's, no request), "types" (as kubectl api-resources -o name)
    and "categories" (discovery), or "objects:TYPE" (the first `limit` names of TYPE's
    objects in `namespace`, else the kubeconfig's)."""
    from .kube.discovery import Discovery
    from .kube.paging import ListQuery
    from .model import CRD_RESOURCE, NAMESPACE_RESOURCE
    from .resolve.types import resolve_type

    if kind == "contexts":
        from .kube.config import context_names

        return context_names(connection)
    with connect(connection) as transport:
        cluster = HttpCluster(transport, Deadline(None))
        if kind in ("crds", "namespaces"):
            listed = CRD_RESOURCE if kind == "crds" else NAMESPACE_RESOURCE
            return [meta.ref.name for page in cluster.list_meta(listed, ListQuery(limit=limit)) for meta in page]
        discovery = Discovery.from_groups(cluster.api_discovery())
        if kind == "types":
            return discovery.words()
        if kind == "categories":
            return sorted({c for t in discovery.types for c in t.categories})
        resource = resolve_type(kind.removeprefix("objects:"), discovery)
        query = ListQuery(namespace=(namespace or transport.namespace) if resource.namespaced else None, limit=limit)
        return [meta.ref.name for meta in next(iter(cluster.list_meta(resource, query)), [])]
