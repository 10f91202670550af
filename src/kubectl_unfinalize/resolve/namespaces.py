"""Namespaces named by the user, as they exist now. Reads only."""

from __future__ import annotations

from collections.abc import Iterable

from ..kube.port import Cluster
from ..model import NAMESPACE_RESOURCE, namespace_ref


def existing_namespaces(cluster: Cluster, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the namespaces that exist, "namespace/NAME" for those that do not): one
    metadata-only GET each. A namespace already gone is skipped, not an error: the
    teardown it was named in has nothing left to do there."""
    found: list[str] = []
    missing: list[str] = []
    for name in dict.fromkeys(names):
        if cluster.get_meta(namespace_ref(name)) is None:
            missing.append(f"{NAMESPACE_RESOURCE.display}/{name}")
        else:
            found.append(name)
    return found, missing
