"""Metadata-only reads for `scan`: pages of raw object metadata (deletionTimestamp,
creationTimestamp and managedFields included), which ObjectMeta leaves out because the
freeing engine never decides on them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..model import Resource
from .cluster import METADATA_LIST, HttpCluster
from .paging import ListQuery


class MetadataCluster(HttpCluster):
    """HttpCluster plus raw metadata pages (PartialObjectMetadataList, paginated)."""

    def list_metadata(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]:
        """Each item is the object's `metadata` only; a 404 (the type went away) is no pages."""
        for page in self._pages(resource, query, METADATA_LIST):
            yield [obj.get("metadata") or {} for obj in page]
