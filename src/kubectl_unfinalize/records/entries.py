"""The record's lines, one shape each, written and read here alone. docs/record.schema.json
describes them for other readers; a line of a type this version does not know is skipped,
so a newer writer's record still reads."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from json.encoder import encode_basestring_ascii as _string  # what the record's encoder makes of a str
from typing import Any

from ..journal import Write
from ..model import ObjectRef, Resource

FORMAT = "kubectl-unfinalize.record/v1"

# What the API server sets on an object and refuses (or overwrites) on create.
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")
TERMINATION = ("deletionTimestamp", "deletionGracePeriodSeconds")


def resource_dict(resource: Resource) -> dict[str, Any]:
    return {
        "group": resource.group,
        "version": resource.version,
        "plural": resource.plural,
        "kind": resource.kind,
        "namespaced": resource.namespaced,
    }


def resource_of(raw: dict[str, Any]) -> Resource:
    return Resource(
        str(raw.get("group") or ""),
        str(raw["version"]),
        str(raw["plural"]),
        str(raw.get("kind") or ""),
        bool(raw.get("namespaced")),
    )


def write_line(write: Write) -> dict[str, Any]:
    """A write as a record line, and as history's documents show it (one dict shape)."""
    ref = write.ref
    line: dict[str, Any] = {
        "type": "write",
        "op": write.op,
        "resource": resource_dict(ref.resource),
        "namespace": ref.namespace,
        "name": ref.name,
        "uid": write.uid,
        "resourceVersion": write.version,
        "newResourceVersion": write.new_version,
        "finalizers": list(write.finalizers),
        "removed": list(write.removed),
        "outcome": write.outcome,
    }
    if write.message:
        line["message"] = write.message
    if write.leaks:
        line["leaks"] = write.leaks
    if write.added:
        line["added"] = list(write.added)
    return line


# One encoder for every line: json.dumps with arguments builds a new one per call, a third
# of the time a record line took.
_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode


def encode_line(line: dict[str, Any] | None) -> bytes:
    """A line of the record as it is written: compact JSON, its newline included."""
    return (_ENCODE(line) + "\n").encode()


def write_bytes(write: Write) -> bytes:
    """encode_line(write_line(write)), without the dict: the bulk sender's thread writes
    one per object freed, and encoding the dict was half of what reporting a freed
    object cost it."""
    try:
        return _write_bytes(write)
    except TypeError:  # a field of a caller's that is not a str: what the encoder makes of it
        return encode_line(write_line(write))


def _write_bytes(write: Write) -> bytes:
    ref = write.ref
    namespace = "null" if ref.namespace is None else _string(ref.namespace)
    parts = [
        '{"type":"write","op":',
        _string(write.op),
        ',"resource":',
        _resource_json(ref.resource),
        ',"namespace":',
        namespace,
        ',"name":',
        _string(ref.name),
        ',"uid":',
        _string(write.uid),
        ',"resourceVersion":',
        _string(write.version),
        ',"newResourceVersion":',
        _string(write.new_version),
        ',"finalizers":',
        _strings(write.finalizers),
        ',"removed":',
        _strings(write.removed),
        ',"outcome":',
        _string(write.outcome),
    ]
    if write.message:
        parts += (',"message":', _string(write.message))
    if write.leaks:
        parts += (',"leaks":', _string(write.leaks))
    if write.added:
        parts += (',"added":', _strings(write.added))
    parts.append("}\n")
    return "".join(parts).encode()


@lru_cache(maxsize=256)
def _resource_json(resource: Resource) -> str:
    """The same for every object of a type: encoded once."""
    return json.dumps(resource_dict(resource), separators=(",", ":"))


def _strings(values: tuple[str, ...]) -> str:
    return "[" + ",".join(map(_string, values)) + "]"


def kept_line(kind: str, ref: ObjectRef, body: dict[str, Any]) -> dict[str, Any]:
    """A body kept before a delete: a CRD's manifest as it is (small, and a person reads it),
    a custom resource's compressed (a backup of 10,000 objects stays a few MiB)."""
    line: dict[str, Any] = {
        "type": kind,
        "resource": resource_dict(ref.resource),
        "namespace": ref.namespace,
        "name": ref.name,
        "uid": str((body.get("metadata") or {}).get("uid") or ""),
    }
    if kind == "backup":
        packed = zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 6)
        line["body"] = base64.b64encode(packed).decode()
    else:
        line["manifest"] = body
    return line


def read_write(line: dict[str, Any]) -> Write:
    """A write line read back as the run told it (journal.Write): one shape for a write,
    whether it is being written or read."""
    return Write(
        op=str(line["op"]),
        ref=ObjectRef(resource_of(line["resource"]), str(line["name"]), line.get("namespace") or None),
        uid=str(line.get("uid") or ""),
        version=str(line.get("resourceVersion") or ""),
        new_version=str(line.get("newResourceVersion") or ""),
        finalizers=tuple(line.get("finalizers") or ()),
        removed=tuple(line.get("removed") or ()),
        outcome=str(line.get("outcome") or ""),
        message=str(line.get("message") or ""),
        leaks=str(line.get("leaks") or ""),
        added=tuple(line.get("added") or ()),
    )


@dataclass(frozen=True)
class KeptBody:
    """A CRD's manifest or a custom resource's body, kept before the run deleted it."""

    kind: str  # "crd" or "backup"
    ref: ObjectRef
    uid: str
    packed: str = ""
    manifest: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, line: dict[str, Any]) -> KeptBody:
        ref = ObjectRef(resource_of(line["resource"]), str(line["name"]), line.get("namespace") or None)
        return cls(
            str(line["type"]),
            ref,
            str(line.get("uid") or ""),
            str(line.get("body") or ""),
            dict(line.get("manifest") or {}),
        )

    def body(self) -> dict[str, Any]:
        if self.kind == "crd":
            return dict(self.manifest)
        decoded: dict[str, Any] = json.loads(zlib.decompress(base64.b64decode(self.packed)))
        return decoded


def for_create(body: dict[str, Any]) -> dict[str, Any]:
    """The body to create again: what the API server sets, and the deletion, dropped; the
    status too (a create ignores it where a status subresource exists, and it is stale)."""
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in SERVER_SET + TERMINATION}
    clean = {k: v for k, v in body.items() if k != "status"}
    clean["metadata"] = meta
    return clean
