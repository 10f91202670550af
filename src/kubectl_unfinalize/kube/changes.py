"""What changed since a resourceVersion, read from a watch: which objects of one place were
written (without their contents), each object's resourceVersion now, and when the objects
waited on are all deleted.

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
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import Gone, NotFound, UnfinalizeError
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
    rows = _TableNames()
    for event in events or []:
        kind = event.get("type")
        if kind == "ERROR":
            return None  # 410 Expired, or any end of the history: read the objects instead
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            continue  # a BOOKMARK
        counts.update(rows.of(event.get("object") or {}))
    return counts


def all_deleted(request: Request, resource: Resource, uids: Mapping[str, str], since: str, seconds: int) -> bool | None:
    """Watch `resource` from `since` until each object of `uids` (name -> uid) was
    deleted (True, at once: the wait for a deleted CRD ends when it goes, as kubectl's
    does, not at the next poll), or until the server ends the watch after `seconds`
    (False). The DELETED event is the server's word that the object with that uid is
    gone: one of the same name with another uid (re-created, deleted again) does not
    count. None when the watch cannot tell: its history is gone (410), or it broke off.
    Metadata only: a CRD's schema can be hundreds of KiB, and its cleanup controller
    writes it twice."""
    left = dict(uids)
    failed = False

    def on_event(event: dict[str, Any]) -> bool:
        nonlocal failed
        kind = event.get("type")
        if kind == "ERROR":  # 410 Expired, or any end of the history
            failed = True
            return True
        if kind == "DELETED":
            meta = (event.get("object") or {}).get("metadata") or {}
            name, uid = str(meta.get("name") or ""), meta.get("uid")
            if uid and left.get(name) == uid:
                del left[name]
        return not left

    on_chunk = _EventLines(on_event)

    params = {
        "watch": "true",
        "resourceVersion": since,
        "timeoutSeconds": max(1, seconds),
        "fieldSelector": f"metadata.name={next(iter(uids))}" if len(uids) == 1 else None,
    }
    try:
        # A body that came whole (not chunked: a proxy that buffers) is read the same way.
        request("GET", resource.path(None), query=params, accept=METADATA_WATCH, on_chunk=on_chunk, parse=on_chunk)
    except (Gone, NotFound):
        return None
    return None if failed or on_chunk.broken else not left


METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def versions(
    request: Request, resource: Resource, query: ListQuery, seconds: int, on_row: Callable[[str, str], None]
) -> bool | None:
    """Each object's name and resourceVersion now, told to `on_row` as they come: a watch
    that sends the current objects first (sendInitialEvents, kube-apiserver's WatchList)
    and ends at the bookmark that closes them, as a Table without objects, a few hundred
    bytes per object whatever its metadata weighs, and needing no history. True when they
    all came; None when the server cannot (no WatchList, a refusal) or the watch ended
    first: the caller reads the objects instead."""
    done = failed = False
    rows = _TableNames()

    def on_event(event: dict[str, Any]) -> bool:
        nonlocal done, failed
        kind, table = event.get("type"), event.get("object") or {}
        if kind == "BOOKMARK":
            done = True  # the initial events end here (allowWatchBookmarks)
            return True
        if kind != "ADDED":
            failed = True  # an ERROR, or a change before the end of the initial events: not ours to read
            return True
        version = str((table.get("metadata") or {}).get("resourceVersion") or "")
        for name in rows.of(table):
            on_row(name, version)
        return False

    on_chunk = _EventLines(on_event)

    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "includeObject": "None",
        "timeoutSeconds": max(1, seconds),
        "labelSelector": query.label_selector,
        "fieldSelector": query.field_selector,
    }
    path = resource.path(query.namespace if resource.namespaced else None)
    try:
        request("GET", path, query=params, accept=TABLE, on_chunk=on_chunk, parse=on_chunk)
    except NotFound:
        return True  # the type is gone, and its objects with it
    except UnfinalizeError:
        return None  # no WatchList (400/422), no watch verb (403), a failure: read the objects
    return True if done and not (failed or on_chunk.broken) else None


def _lines(data: bytes) -> list[dict[str, Any]]:
    """A watch's body: one JSON event per line."""
    return [json.loads(line) for line in data.splitlines() if line.strip()]


class _TableNames:
    """The names in a Table watch's rows. Only the first event carries the column
    definitions; the later ones use the Name column it named."""

    def __init__(self) -> None:
        self._column = 0

    def of(self, table: dict[str, Any]) -> list[str]:
        headers = [c.get("name") for c in table.get("columnDefinitions") or []]
        if "Name" in headers:
            self._column = headers.index("Name")
        cells = [row.get("cells") or [] for row in table.get("rows") or []]
        return [str(row[self._column]) for row in cells if len(row) > self._column]


class _EventLines:
    """A watch body read as it arrives (or whole, when a proxy buffered it): each complete
    line is one JSON event, told to `on_event`, which says True to end the watch. A line
    that is not JSON ends it too, as `broken`: the rest of the stream cannot be trusted."""

    def __init__(self, on_event: Callable[[dict[str, Any]], bool]) -> None:
        self._on_event = on_event
        self._pending = bytearray()
        self.broken = False

    def __call__(self, data: bytes) -> bool:
        self._pending.extend(data)
        while (end := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:end])
            del self._pending[: end + 1]
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                self.broken = True
                return True
            if self._on_event(event):
                return True
        return False
