"""Which objects of one place were written since a resourceVersion, without their contents.

A watch from that resourceVersion, answered as a Table without objects
(includeObject=None): each event is a name and an age, a few hundred bytes, where a
metadata-only watch or list carries every annotation again (100 KiB each, for objects
`kubectl apply` or an operator annotated). The watch ends on the server after `seconds`
(timeoutSeconds); the events before it, already in the API server's watch cache, come at
once. Table rows do not carry the namespace, so one place is a namespace (or a
cluster-scoped resource)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..errors import Gone, NotFound
from ..model import Resource
from .paging import ListQuery

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

Request = Callable[..., Any]


def written_since(
    request: Request, resource: Resource, query: ListQuery, since: str, seconds: int
) -> Counter[str] | None:
    """How many writes each object named had since `since` (every write is one event);
    None when the server no longer holds that history (410: too old), and the caller
    must read the objects instead."""
    params = {
        "watch": "true",
        "resourceVersion": since,
        "timeoutSeconds": max(1, seconds),
        "includeObject": "None",
        "labelSelector": query.label_selector,
        "fieldSelector": query.field_selector,
    }
    path = resource.path(query.namespace if resource.namespaced else None)
    try:
        events = request("GET", path, query=params, accept=TABLE, parse=_lines)
    except Gone:
        return None
    except NotFound:
        return Counter()
    counts: Counter[str] = Counter()
    column = 0
    for event in events or []:
        obj = event.get("object") or {}
        kind = event.get("type")
        if kind == "ERROR":
            return None  # 410 Expired, or any end of the history: read the objects instead
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            continue  # a BOOKMARK
        names = [c.get("name") for c in obj.get("columnDefinitions") or []]
        if "Name" in names:  # the first event only; the rest come without headers
            column = names.index("Name")
        for row in obj.get("rows") or []:
            cells = row.get("cells") or []
            if len(cells) > column:
                counts[str(cells[column])] += 1
    return counts


def _lines(data: bytes) -> list[dict[str, Any]]:
    """A watch's body: one JSON event per line."""
    return [json.loads(line) for line in data.splitlines() if line.strip()]
