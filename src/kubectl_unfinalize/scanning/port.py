"""What a scan asks of a cluster: reads only. No write verb is here, so mypy holds scan to
its promise; unit tests fake these four verbs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from ..kube.paging import ListQuery
from ..model import Resource


class ScanCluster(Protocol):
    def api_discovery(self) -> list[dict[str, Any]]: ...

    def list_metadata(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]: ...

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]: ...

    def get(self, ref: Any) -> dict[str, Any] | None: ...
