"""What the API server says of objects it cannot read from storage, and the one request that
removes such an object (KEP-3926).

With kube-apiserver's feature gate AllowUnsafeMalformedObjectDeletion on, a list of a type
that holds one fails whole with reason StorageReadError, each cause's `field` the storage key
of an object it could not read; a read of one says "StorageError: corrupt object" with its key.
Without the gate the server says only what its decoder said, so a type is all it can name.
A key ends in NAMESPACE/NAME (NAME for a cluster-scoped type) whatever prefix the type's
storage uses, and neither may hold a "/": it is read from the right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ApiError
from ..model import ObjectRef, Resource

FEATURE_GATE = "AllowUnsafeMalformedObjectDeletion"
UNSAFE_DELETE_OPTION = "ignoreStoreReadErrorWithClusterBreakingPotential"
UNSAFE_DELETE_VERB = "unsafe-delete-ignore-read-errors"
LIST_REASON = "StorageReadError"
_READ = "StorageError: corrupt object"
_KEY = re.compile(r"Key: (\S+?),")
# The KEP's warning, said before such a delete: the server skips what protects the object.
WARNING = (
    "a delete with ignoreStoreReadErrorWithClusterBreakingPotential removes the object from storage without"
    " running its finalizers or admission, and may break the cluster if anything depends on it"
)


def is_corrupt_answer(status: int, reason: str, message: str) -> bool:
    """The server's own words for an object it cannot read (only with the feature gate on)."""
    return status == 500 and (reason == LIST_REASON or _READ in message)


@dataclass(frozen=True)
class Named:
    """The objects one answer names, each with what the server said of it, and whether the
    server stopped naming (it names at most 100)."""

    said: dict[ObjectRef, str]
    more: bool

    @property
    def refs(self) -> tuple[ObjectRef, ...]:
        return tuple(self.said)


def named(exc: ApiError, resource: Resource) -> Named:
    """The objects of `resource` `exc` says cannot be read."""
    said: dict[ObjectRef, str] = {}
    more = False
    for cause in exc.details.get("causes") or []:
        if not isinstance(cause, dict):
            continue
        message = str(cause.get("message") or "")
        key = str(cause.get("field") or "")
        if not key and (found := _KEY.search(message)):
            key = found.group(1)
        if key and (ref := _ref(key, resource)) is not None:
            said.setdefault(ref, _said(message or str(exc)))
        elif cause.get("reason") == "TooMany":
            more = True
    if not said and (found := _KEY.search(str(exc))) and (ref := _ref(found.group(1), resource)) is not None:
        said[ref] = _said(str(exc))
    return Named(said, more)


def _said(message: str) -> str:
    """The decoder's own words, without the storage error's bookkeeping around them."""
    return message.split("AdditionalErrorMsg: ", 1)[-1].strip()


def _ref(key: str, resource: Resource) -> ObjectRef | None:
    parts = [p for p in key.split("/") if p]
    if resource.namespaced:
        return ObjectRef(resource, parts[-1], parts[-2]) if len(parts) >= 2 else None
    return ObjectRef(resource, parts[-1]) if parts else None


def without_gate_hint() -> str:
    """What to say of a type whose list fails with a 500 the server does not explain."""
    return (
        f"if this is an object the API server cannot read from storage (a lost encryption key, bytes that do not"
        f" decode), kube-apiserver's feature gate {FEATURE_GATE}=true lets it name each one, and"
        f" --unsafe-delete-corrupt delete them"
    )
