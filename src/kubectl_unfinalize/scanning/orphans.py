"""Objects left in a namespace that is gone: removed through /finalize (the most-quoted fix
for a stuck namespace) while they were held, they stay in etcd, and NamespaceLifecycle
refuses every update of them until the namespace exists again. scan calls them orphaned,
whatever their controller did, and the gate fails on them. Reads only."""

from __future__ import annotations

from ..errors import UnfinalizeError
from ..kube.paging import ListQuery
from ..model import NAMESPACE_RESOURCE, Resource, namespace_ref
from .port import ScanCluster
from .tally import Tally

Key = tuple[str, bool, bool]  # a type's tally: (finalizer, terminating, orphaned)


def existing(cluster: ScanCluster, resources: list[Resource], namespace: str | None) -> set[str] | None:
    """The names of the namespaces that exist (only `namespace` is asked about, by a read,
    when the scan is narrowed to it); None when they cannot be read (then no object is
    called orphaned)."""
    namespaces = next((r for r in resources if r.qualified == NAMESPACE_RESOURCE.qualified), None)
    try:
        if namespace:
            return {namespace} if cluster.get(namespace_ref(namespace)) is not None else set()
        if namespaces is None:
            return None
        return {str(m.get("name") or "") for page in cluster.list_metadata(namespaces, ListQuery()) for m in page}
    except UnfinalizeError:
        return None


def still_gone(cluster: ScanCluster, lists: list[dict[Key, Tally]]) -> None:
    """A namespace the list did not have is read once more: one created since is no
    orphan's, and its objects are judged as any others."""
    seen = {ns for tallies in lists for key, tally in tallies.items() if key[2] for ns in tally.namespaces}
    back = set()
    for name in seen:
        try:
            if cluster.get(namespace_ref(name)) is not None:
                back.add(name)
        except UnfinalizeError:
            back.add(name)  # cannot tell: not called orphaned
    if not back:
        return
    for tallies in lists:  # rare: a race with a namespace made meanwhile
        for key in [k for k, tally in tallies.items() if k[2] and tally.namespaces & back]:
            tally = tallies.pop(key)
            judged = tallies.setdefault((key[0], key[1], False), tally)
            if judged is not tally:
                judged.merge(tally)


def verdict(tally: Tally) -> str:
    """The group's verdict, naming the namespaces (scan keeps up to tally.NAMESPACES)."""
    listed = ", ".join(sorted(tally.namespaces))
    if tally.more_namespaces:
        listed += f" and {tally.more_namespaces} more"
    return (
        f"orphaned: namespace {listed} is gone (removed while these objects were held); nothing, their"
        " controller included, can change them until it exists again"
    )
