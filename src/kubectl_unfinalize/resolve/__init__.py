"""What the user named (CRDs, groups, categories, TYPE NAME, manifests, namespaces) -> Targets
that exist in the cluster. Reads only.

One module per way of naming: crds.py (names, groups, categories, labels), documents.py
(-f manifests, read by manifests.py), named_objects.py (TYPE NAME, TYPE/NAME, TYPE -l);
`resolve` combines them in the order a run needs. A namespace is a target as named: one
that is gone may still hold objects (removed through /finalize), which only the engine's
look inside can tell.
"""

from __future__ import annotations

from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import NAMESPACE_RESOURCE, Targets
from ..options import Selection
from .crds import in_categories, list_crds, resolve_names
from .documents import resolve_documents
from .manifests import Document
from .named_objects import resolve_named_objects


def resolve(cluster: Cluster, selection: Selection, documents: list[Document], namespace: str) -> Targets:
    """Turn what the user named into existing CRDs and objects. `namespace` is where
    manifest objects without one live (the kubeconfig's, or -n)."""
    targets = Targets()
    if selection.crds:
        targets.crds = resolve_names(cluster, list(selection.crds))
        if selection.group:
            targets.crds = [c for c in targets.crds if c.resource.group == selection.group]
    elif selection.group or selection.crd_selector or selection.categories:
        crds = list_crds(cluster, selection.crd_selector)
        targets.crds = [c for c in crds if not selection.group or c.resource.group == selection.group]
    if selection.categories:
        targets.crds = [c for c in targets.crds if in_categories(c, selection.categories)]
    if selection.namespaces:
        targets.namespaces = list(dict.fromkeys(selection.namespaces))  # one gone: the engine looks inside
    elif selection.namespace_selector:
        query = ListQuery(label_selector=selection.namespace_selector)
        targets.namespaces = [m.ref.name for page in cluster.list_meta(NAMESPACE_RESOURCE, query) for m in page]
    if documents:
        declared = resolve_documents(cluster, documents, namespace)
        known = {c.name for c in targets.crds}
        targets.crds += [c for c in declared.crds if c.name not in known]
        targets.objects = declared.objects
        targets.missing += declared.missing
        targets.namespaces += [n for n in declared.namespaces if n not in targets.namespaces]
    if selection.resource or selection.objects:
        resolve_named_objects(cluster, selection, namespace, targets)
    return targets
