"""What still blocks at the deadline, and why a request was refused.

Reads only; records its findings in the outcome book. Streams lists and keeps only the
first few examples, so a diagnosis of a huge CRD costs no more memory than a page.
"""

from __future__ import annotations

from .. import finalizers
from ..errors import ApiError, DeadlineExceeded, Forbidden, Invalid, UnfinalizeError
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import CRD, CRD_RESOURCE, STILL_BLOCKING, Action, ObjectMeta, ObjectRef, Resource, crd_ref
from ..options import Options
from .outcomes import OutcomeBook

EXAMPLES = 5
CONDITIONS = ("Terminating", "NamesAccepted", "Established")


def explain(exc: UnfinalizeError, verb: str, resource: Resource) -> str:
    """One line on why `verb` failed, from the server's Status rather than its wording."""
    if isinstance(exc, Forbidden):
        return f"forbidden: cannot {verb} {resource.qualified} (RBAC or admission): {exc}"
    if isinstance(exc, Invalid) and resource != CRD_RESOURCE and (fields := _failing_fields(exc)):
        return (
            f"invalid: the object fails its current schema ({'; '.join(f'{f}: {m}' for f, m in fields)}); without"
            " validation ratcheting (Kubernetes before 1.30, or a rule that does not ratchet) the API server refuses"
            " every write to an object that fails it, even one that only removes finalizers: fix"
            f" {'that field' if len(fields) == 1 else 'those fields'} on the object, or relax the schema (a custom"
            " resource's CRD), and run again"
        )
    if isinstance(exc, Invalid) and (exc.reason == "Invalid" or exc.causes or "denied" in str(exc)):
        by = "an admission webhook" if "webhook" in str(exc) else "admission"
        return f"rejected by {by}: {exc}"
    if isinstance(exc, ApiError):
        return f"{exc.status} {exc.reason}: {exc}"
    return str(exc)


def _failing_fields(exc: Invalid) -> list[tuple[str, str]]:
    """(field, message) from a 422's causes when each names a field of the object outside
    its metadata (which is all a finalizer patch writes): the schema refuses the object as
    it is, not the patch. [] otherwise."""
    causes = [c for c in exc.details.get("causes") or [] if isinstance(c, dict)]
    fields = [(str(c.get("field") or ""), str(c.get("message") or c.get("reason") or "")) for c in causes]
    if exc.status != 422 or not fields or any(not f or f.startswith("metadata.") for f, _ in fields):
        return []
    return fields


def list_failure(exc: UnfinalizeError, resource: Resource) -> str:
    hint = ""
    if isinstance(exc, ApiError) and exc.status == 500 and "conversion webhook" in str(exc):
        hint = (
            "; the CRD's conversion webhook is failing, so its objects can be neither listed nor"
            " patched: bring the webhook back, or set spec.conversion.strategy to None, and run again"
        )
    return f"cannot list {resource.qualified}: {exc}{hint}"


def blocking(
    cluster: Cluster, options: Options, book: OutcomeBook, crds: list[CRD], objects: list[ObjectRef], why: str
) -> None:
    """Say exactly what still blocks: objects (first few, with finalizers), CRD
    conditions and finalizers, and why the run stopped."""
    for crd in crds:
        try:
            _crd_blocking(cluster, options, book, crd, why)
        except DeadlineExceeded:  # the grace is spent: the CRD is named, what blocks it is not read
            book.add(crd_ref(crd.name), Action.BLOCKING, message=f"{why}: not read again", aspect=STILL_BLOCKING)
        except UnfinalizeError as exc:
            book.add(
                crd_ref(crd.name),
                Action.BLOCKING,
                message=f"{why}; cannot tell what blocks: {exc}",
                aspect=STILL_BLOCKING,
            )
    for ref in objects:
        try:
            meta = cluster.get_meta(ref)
        except UnfinalizeError as exc:
            book.add(ref, Action.BLOCKING, message=f"{why}; cannot read it: {exc}", aspect=STILL_BLOCKING)
            continue
        if meta is not None:
            message = (
                f"finalizers {list(meta.finalizers)}"
                if meta.finalizers
                else "still terminating (no finalizers; waiting for the garbage collector?)"
            )
            if left := finalizers.blocker(meta.finalizers):
                message += f"; {left}"
            book.add(ref, Action.BLOCKING, meta.finalizers, f"{why}: {message}", aspect=STILL_BLOCKING)


def _crd_blocking(cluster: Cluster, options: Options, book: OutcomeBook, crd: CRD, why: str) -> None:
    remaining = 0
    examples: list[ObjectMeta] = []
    for page in cluster.list_meta(crd.resource, _query(options, namespaced=False)):
        remaining += len(page)
        examples += page[: EXAMPLES - len(examples)]
    obj = cluster.get(crd_ref(crd.name)) or {}
    shown = [f"{m.ref.namespace + '/' if m.ref.namespace else ''}{m.ref.name} {list(m.finalizers)}" for m in examples]
    more = f" and {remaining - len(examples)} more" if remaining > len(examples) else ""
    parts = [f"{remaining} {crd.resource.qualified} remain" + (": " + ", ".join(shown) + more if shown else "")]
    parts += [
        f"{c.get('type')}={c.get('status')}: {c.get('message', '')}".strip()
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("type") in CONDITIONS and c.get("message")
    ]
    finalizers = (obj.get("metadata") or {}).get("finalizers") or []
    if finalizers and not remaining:
        parts.append(f"CRD finalizers {finalizers}")
    book.add(crd_ref(crd.name), Action.BLOCKING, message=f"{why}: " + "; ".join(parts), aspect=STILL_BLOCKING)


def _query(options: Options, namespaced: bool = True) -> ListQuery:
    return ListQuery(
        namespace=options.namespace if namespaced else None,
        label_selector=options.label_selector if namespaced else None,
        field_selector=options.field_selector if namespaced else None,
        limit=options.chunk_size,
    )
