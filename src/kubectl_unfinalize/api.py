"""The public Python API. The command line is a thin layer over `unfinalize`.

Typical use, in an operator test suite's teardown after the operator has stopped::

    from kubectl_unfinalize import unfinalize
    unfinalize(files=["manifests/crds"], delete=True, timeout=60).raise_for_failure()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .connection import ConnectionOptions, connect
from .engine import Engine, Options, OutcomeListener, ProgressListener
from .errors import InputError
from .manifests import read_manifests
from .model import Report, Targets
from .targets import list_crds, resolve_documents, resolve_names
from .transport import Transport


def resolve(
    transport: Transport,
    crds: Sequence[str] = (),
    *,
    group: str | None = None,
    crd_selector: str | None = None,
    files: Sequence[str] = (),
    recursive: bool = False,
    namespace: str | None = None,
    chunk_size: int = 500,
) -> Targets:
    """Turn what the user named into existing CRDs and objects (no writes)."""
    if not (crds or group or crd_selector or files):
        raise InputError("nothing selected: name CRDs (crd NAME..., --group, -l) or pass -f PATH")
    documents = read_manifests(list(files), recursive) if files else []
    available = list_crds(transport, crd_selector, chunk_size)
    targets = Targets()
    if crds:
        targets.crds = resolve_names(list(crds), available)
        if group:
            targets.crds = [c for c in targets.crds if c.resource.group == group]
    elif group or crd_selector:
        targets.crds = [c for c in available if not group or c.resource.group == group]
    if documents:
        declared = resolve_documents(transport, documents, available, namespace or transport.namespace)
        known = {c.name for c in targets.crds}
        targets.crds += [c for c in declared.crds if c.name not in known]
        targets.objects = declared.objects
        targets.missing = declared.missing
    return targets


def unfinalize(
    crds: Sequence[str] = (),
    *,
    group: str | None = None,
    crd_selector: str | None = None,
    files: Sequence[str] = (),
    recursive: bool = False,
    delete: bool = False,
    wait: bool = True,
    timeout: float | None = None,
    dry_run: str | None = None,
    namespace: str | None = None,
    selector: str | None = None,
    field_selector: str | None = None,
    only_terminating: bool = False,
    finalizers: Sequence[str] = (),
    concurrency: int = 16,
    chunk_size: int = 500,
    kubeconfig: str | None = None,
    context: str | None = None,
    connection: ConnectionOptions | None = None,
    on_outcome: OutcomeListener | None = None,
    on_progress: ProgressListener | None = None,
    confirm: Callable[[Targets], bool] | None = None,
) -> Report:
    """Free the custom resources of the selected CRDs (and the selected objects).

    Raises InputError / ConfigError for bad input (nothing was changed), ClusterError
    when the cluster refuses; per-object failures are in the Report instead, so a
    teardown can decide whether a partial result is acceptable.
    """
    if dry_run in ("none", ""):
        dry_run = None
    if dry_run not in (None, "client", "server"):
        raise InputError(f"invalid dry run {dry_run!r}: use none, client or server")
    if concurrency < 1 or chunk_size < 1:
        raise InputError("--concurrency and --chunk-size must be at least 1")
    connection = connection or ConnectionOptions(kubeconfig=kubeconfig, context=context)
    connection.pool_size = max(connection.pool_size, concurrency + 2)
    transport = connect(connection)
    targets = resolve(
        transport,
        crds,
        group=group,
        crd_selector=crd_selector,
        files=files,
        recursive=recursive,
        namespace=namespace,
        chunk_size=chunk_size,
    )
    options = Options(
        delete=delete,
        wait=wait,
        timeout=timeout,
        dry_run=dry_run,
        namespace=namespace,
        label_selector=selector,
        field_selector=field_selector,
        only_terminating=only_terminating,
        finalizers=tuple(finalizers),
        concurrency=concurrency,
        chunk_size=chunk_size,
    )
    if confirm is not None and targets and not confirm(targets):
        return Report(dry_run=options.dry_run, skipped=list(targets.missing), aborted=True)
    engine = Engine(transport, options, on_outcome, on_progress)
    return engine.run(targets)
