"""What still blocks at the deadline, and why a request was refused.

Reads only; records its findings in the outcome book. Streams lists and keeps only the
first few examples, so a diagnosis of a huge CRD costs no more memory than a page.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .. import finalizers
from ..errors import ApiError, CorruptObjects, DeadlineExceeded, Forbidden, Invalid, UnfinalizeError
from ..kube import corrupt
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import CRD, CRD_RESOURCE, STILL_BLOCKING, Action, ObjectMeta, ObjectRef, Resource, crd_ref
from ..options import Options
from .outcomes import OutcomeBook

EXAMPLES = 5
CONDITIONS = ("Terminating", "NamesAccepted", "Established")
STATIC = ".static.k8s.io"  # the names of admission objects loaded from files; the API refuses them
_POLICY = re.compile(r"\b((?:Validating|Mutating)AdmissionPolicy) '([^']+)'")
_WEBHOOK = re.compile(r'(?:admission webhook|failed calling webhook) "([^"]+)"')


def explain(
    exc: UnfinalizeError, verb: str, resource: Resource, listed: Callable[[str], bool | None] | None = None
) -> str:
    """One line on why `verb` failed, from the server's Status rather than its wording.
    `listed(name)`: whether an admission webhook of that name is in a configuration the
    API lists (None when that cannot be read)."""
    if isinstance(exc, ApiError) and (hidden := _hidden_admission(exc, listed)):
        return hidden
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
        return f"{exc.status} {exc.reason}: {exc}{_storage_hint(exc)}"
    return str(exc)


def _storage_hint(exc: ApiError) -> str:
    """A 500 the server does not explain may be an object it cannot read from storage, which
    it names as such only with a feature gate on (kube.corrupt)."""
    if exc.status != 500 or isinstance(exc, CorruptObjects) or "webhook" in str(exc):
        return ""
    return f"; {corrupt.without_gate_hint()}"


def _failing_fields(exc: Invalid) -> list[tuple[str, str]]:
    """(field, message) from a 422's causes when each names a field of the object outside
    its metadata (which is all a finalizer patch writes): the schema refuses the object as
    it is, not the patch. [] otherwise."""
    causes = [c for c in exc.details.get("causes") or [] if isinstance(c, dict)]
    fields = [(str(c.get("field") or ""), str(c.get("message") or c.get("reason") or "")) for c in causes]
    if exc.status != 422 or not fields or any(not f or f.startswith("metadata.") for f, _ in fields):
        return []
    return fields


def _hidden_admission(exc: ApiError, listed: Callable[[str], bool | None] | None) -> str:
    """The line for a refusal by a webhook or policy no configuration the API lists holds:
    admission configured from files on the API server (manifest-based, alpha in 1.36),
    whose objects' names end in STATIC (a suffix the API refuses). "" for any other."""
    text = str(exc)
    if found := _POLICY.search(text):
        kind, name = found.group(1), found.group(2)
        if not name.endswith(STATIC):
            return ""
        what, why = f"{kind} '{name}'", f"its name ends in {STATIC}, which the API refuses"
    elif found := _WEBHOOK.search(text):
        name = found.group(1)
        try:
            seen = listed(name) if listed is not None else None
        except UnfinalizeError:  # the listing failed (unreachable, out of time): the name alone decides
            seen = None
        if seen or (seen is None and not name.endswith(STATIC)):
            return ""
        what = f'admission webhook "{name}"'
        why = "no webhook configuration the API lists holds it" if seen is False else f"its name ends in {STATIC}"
    else:
        return ""
    return (
        f"refused by {what}, which is configured from files on the API server (manifest-based admission), not"
        f" through the API ({why}): it can be neither seen nor changed with kubectl; ask the cluster's"
        f' administrators. The API server said: "{text}"'
    )


def list_failure(exc: UnfinalizeError, resource: Resource) -> str:
    hint = ""
    if isinstance(exc, ApiError) and exc.status == 500 and "conversion webhook" in str(exc):
        hint = (
            "; the CRD's conversion webhook is failing, so its objects can be neither listed nor"
            " patched: bring the webhook back, or set spec.conversion.strategy to None, and run again"
        )
    if isinstance(exc, ApiError) and not hint:
        hint = _storage_hint(exc)
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
