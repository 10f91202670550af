"""`TYPE NAME...`, `TYPE/NAME...` and `TYPE -l SELECTOR` -> what they select (reads only).

Named objects are not read here: the object sweep reads each one and reports one that
is not there as skipped, as it does for a -f document's object. A selector lists the
type metadata-only, in the namespace (or all of them with -A), and selects what it
returns. A TYPE that means CustomResourceDefinitions or Namespaces keeps the meaning of
`crd NAME` and `ns NAME` (their contents are freed), whatever spelling named it.
"""

from __future__ import annotations

from ..errors import InputError
from ..kube.discovery import Discovery
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE, ObjectRef, Resource, Targets
from ..options import Selection
from .crds import list_crds, resolve_names
from .types import resolve_type, split_type_name


def resolve_named_objects(cluster: Cluster, selection: Selection, namespace: str, targets: Targets) -> None:
    """Add what the TYPE forms of `selection` select to `targets`. `namespace` is the
    one named objects live in (the kubeconfig's, or -n)."""
    discovery = Discovery.from_groups(cluster.api_discovery())
    wanted: dict[Resource, list[str]] = {}
    if selection.resource:
        wanted[resolve_type(selection.resource, discovery)] = list(selection.names)
    resolved: dict[str, Resource] = {}
    for word in selection.objects:
        kind, name = split_type_name(word)
        key = kind.lower()
        if key not in resolved:
            resolved[key] = resolve_type(kind, discovery)
        wanted.setdefault(resolved[key], []).append(name)
    for resource, names in wanted.items():
        if names:
            _add_names(cluster, resource, names, namespace, targets)
        else:
            _add_selected(cluster, resource, selection, namespace, targets)


def _same(a: Resource, b: Resource) -> bool:
    return (a.group, a.plural) == (b.group, b.plural)


def _add_names(cluster: Cluster, resource: Resource, names: list[str], namespace: str, targets: Targets) -> None:
    if _same(resource, CRD_RESOURCE):
        known = {c.name for c in targets.crds}
        targets.crds += [c for c in resolve_names(cluster, names) if c.name not in known]
        return
    if _same(resource, NAMESPACE_RESOURCE):
        targets.namespaces += [n for n in dict.fromkeys(names) if n not in targets.namespaces]
        return
    ns = namespace if resource.namespaced else None
    seen = set(targets.objects)
    for name in dict.fromkeys(names):
        if not name.strip():
            raise InputError(f"empty {resource.kind} name")
        ref = ObjectRef(resource, name, ns)
        if ref not in seen:
            seen.add(ref)
            targets.objects.append(ref)


def _add_selected(cluster: Cluster, resource: Resource, selection: Selection, namespace: str, targets: Targets) -> None:
    if _same(resource, CRD_RESOURCE):
        if selection.field_selector:
            raise InputError("--field-selector does not apply to CRDs here: use crd -l SELECTOR")
        known = {c.name for c in targets.crds}
        targets.crds += [c for c in list_crds(cluster, selection.selector) if c.name not in known]
        return
    ns = None if selection.all_namespaces or not resource.namespaced else namespace
    query = ListQuery(
        namespace=ns,
        label_selector=selection.selector,
        field_selector=selection.field_selector,
    )
    listed = [meta.ref for page in cluster.list_meta(resource, query) for meta in page]
    if _same(resource, NAMESPACE_RESOURCE):
        targets.namespaces += [r.name for r in listed if r.name not in targets.namespaces]
        return
    seen = set(targets.objects)
    targets.objects += [r for r in listed if r not in seen]
