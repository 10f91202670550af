"""Plain data shared by the layers: what was selected, what was seen, what happened."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, NamedTuple

from .errors import IncompleteError, UnfinalizeError
from .finalizers import EXTERNAL_NAME
from .options import DryRun

CRD_RESOURCE_GROUP = "apiextensions.k8s.io"


@dataclass(frozen=True)
class Resource:
    """An API resource: enough to build its URLs and print it the way kubectl does."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base

    @cached_property
    def display(self) -> str:
        """kubectl's `kind.group` spelling, e.g. daskcluster.kubernetes.dask.org."""
        kind = self.kind.lower()
        return f"{kind}.{self.group}" if self.group else kind

    @cached_property  # asked for every outcome; a frozen dataclass may still cache in __dict__
    def qualified(self) -> str:
        """plural.group, the resource name RBAC and kubectl get use."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


CRD_RESOURCE = Resource(CRD_RESOURCE_GROUP, "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
NAMESPACE_RESOURCE = Resource("", "v1", "namespaces", "Namespace", False)
APISERVICE_RESOURCE = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", False)


@dataclass(frozen=True)
class CRD:
    """A CustomResourceDefinition and the resource it serves."""

    name: str
    resource: Resource
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()  # spec.names.categories, lower case


@dataclass(frozen=True)
class ObjectRef:
    """One object by name (any kind, built-in or custom); a CRD is one too."""

    resource: Resource
    name: str
    namespace: str | None = None

    @property
    def display(self) -> str:
        return f"{self.resource.display}/{self.name}"


def crd_ref(name: str) -> ObjectRef:
    return ObjectRef(CRD_RESOURCE, name)


def namespace_ref(name: str) -> ObjectRef:
    return ObjectRef(NAMESPACE_RESOURCE, name)


@dataclass(frozen=True)
class ObjectMeta:
    """One object as a metadata-only read shows it: only what the engine decides on."""

    ref: ObjectRef
    uid: str
    resource_version: str
    finalizers: tuple[str, ...]
    terminating: bool
    managers: tuple[str, ...] = ()
    external_name: str = ""  # crossplane.io/external-name: what an operator made outside the cluster
    blocks: tuple[str, ...] = ()  # uids of the owners whose deletion it blocks (blockOwnerDeletion)

    @classmethod
    def from_dict(cls, resource: Resource, obj: dict[str, Any]) -> ObjectMeta:
        meta = obj.get("metadata") or {}
        managers = [
            str(entry.get("manager") or "")
            for entry in meta.get("managedFields") or []
            if "f:finalizers" in ((entry.get("fieldsV1") or {}).get("f:metadata") or {})
        ]
        return cls(
            ref=ObjectRef(resource, str(meta.get("name", "")), meta.get("namespace") or None),
            uid=str(meta.get("uid", "")),
            resource_version=str(meta.get("resourceVersion", "")),
            finalizers=tuple(meta.get("finalizers") or ()),
            terminating=bool(meta.get("deletionTimestamp")),
            managers=tuple(m for m in managers if m),
            external_name=str((meta.get("annotations") or {}).get(EXTERNAL_NAME) or ""),
            blocks=_blocks(meta.get("ownerReferences")),
        )


def _blocks(references: list[dict[str, Any]] | None) -> tuple[str, ...]:
    if not references:
        return ()
    return tuple(str(r.get("uid")) for r in references if r.get("blockOwnerDeletion") is True and r.get("uid"))


@dataclass
class Targets:
    """Resolved selection: CRDs whose custom resources are freed, namespaces whose
    contents are freed, and single objects."""

    crds: list[CRD] = field(default_factory=list)
    objects: list[ObjectRef] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.crds or self.objects or self.namespaces)


class Action(str, Enum):
    """What happened to one object. The values are stable for -o json consumers."""

    UNFINALIZED = "unfinalized"
    DELETED = "deleted"
    GONE = "gone"
    RECREATED = "recreated"
    FAILED = "failed"
    REFINALIZED = "refinalized"
    BLOCKING = "blocking"
    RECONFIGURED = "reconfigured"  # a CRD's spec changed so its deletion can finish (a dead conversion webhook)
    DELETING = "deleting"  # a deleted CRD, every instance freed, left to the API server's cleanup at the deadline

    @property
    def is_failure(self) -> bool:
        return self in (Action.FAILED, Action.REFINALIZED, Action.BLOCKING)


STILL_BLOCKING = "blocking"  # the aspect of an object that says what still blocks it, beside its own outcome


class ObjectKey(NamedTuple):
    """Identity of one outcome: an object, or one aspect of it (a failed list of a CRD's
    objects, the diagnosis of what still blocks it) reported beside it. A tuple: one is
    made and hashed per outcome, and a frozen dataclass cost several times more."""

    resource: str
    namespace: str | None
    name: str
    aspect: str = ""

    @classmethod
    def of(cls, ref: ObjectRef, aspect: str = "") -> ObjectKey:
        return cls(ref.resource.qualified, ref.namespace, ref.name, aspect)


@dataclass
class Outcome:
    """What happened to one object."""

    resource: str
    name: str
    action: Action
    namespace: str | None = None
    finalizers: list[str] = field(default_factory=list)
    message: str = ""
    dry_run: DryRun = DryRun.NONE
    leaks: str = ""  # what removing the finalizers may have left behind, from what the object said

    def __post_init__(self) -> None:
        if type(self.action) is not Action:  # a str from a caller of the API
            self.action = Action(self.action)
        if type(self.dry_run) is not DryRun:
            self.dry_run = DryRun.parse(self.dry_run)

    @property
    def ref(self) -> str:
        return f"{self.resource}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "name": self.name,
            "action": self.action.value,
            "namespace": self.namespace,
            "finalizers": list(self.finalizers),
            "message": self.message,
            "leaks": self.leaks,
        }


@dataclass
class Report:
    """Everything a run did; returned by the API, rendered by cli.output.

    `counts` counts every outcome as it was reported (one per line a person saw), so the
    summary agrees with the lines even when an object was freed and then re-finalized;
    `outcomes` keeps the last word on each object.
    """

    outcomes: list[Outcome] = field(default_factory=list)
    counts: Counter[Action] = field(default_factory=Counter)
    scanned: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    interrupted: bool = False
    dry_run: DryRun = DryRun.NONE
    skipped: list[str] = field(default_factory=list)
    aborted: bool = False
    error: str = ""  # what stopped progress, when something did
    # What ended the run before its deadline (credentials the API server rejects for
    # good): `error` says it, and its exit status is the run's.
    stopped_by: UnfinalizeError | None = None
    cleanup_seconds: float = 0.0  # about how long the API server's cleanup needs for the CRDs left `deleting`
    record: str = ""  # the record of this run's writes ("" when none was written: a dry run, --record=none)

    def __post_init__(self) -> None:
        if self.outcomes and not self.counts:  # a Report built by hand counts what it holds
            self.counts = Counter(o.action for o in self.outcomes)

    def count(self, action: Action) -> int:
        return self.counts[action]

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.action.is_failure]

    @property
    def failures(self) -> int:
        return sum(n for action, n in self.counts.items() if action.is_failure)

    @property
    def ok(self) -> bool:
        return not (self.timed_out or self.interrupted or self.error or self.failed)

    def raise_for_failure(self) -> Report:
        """For test teardowns: turn a partial result into an exception that says why
        (the error that ended the run, when one did)."""
        if self.stopped_by is not None:
            raise self.stopped_by
        if not self.ok:
            lines = [f"{o.ref}: {o.action.value} {o.message}".strip() for o in self.failed]
            if self.error:
                lines.insert(0, self.error)
            if self.timed_out:
                lines.insert(0, "timed out")
            raise IncompleteError("; ".join(lines))
        return self

    def to_dict(self) -> dict[str, Any]:
        items = sorted(self.outcomes, key=lambda o: (o.resource, o.namespace or "", o.name, o.action.value))
        return {
            "ok": self.ok,
            "dryRun": self.dry_run.value,
            "timedOut": self.timed_out,
            "seconds": round(self.seconds, 3),
            "summary": {
                "scanned": self.scanned,
                "unfinalized": self.count(Action.UNFINALIZED),
                "deleted": self.count(Action.DELETED),
                "gone": self.count(Action.GONE),
                "failed": self.failures,
                "reconfigured": self.count(Action.RECONFIGURED),
                "deleting": self.count(Action.DELETING),
            },
            "error": self.error,
            "record": self.record or None,
            "skipped": list(self.skipped),
            "items": [o.to_dict() for o in items],
        }


@dataclass(frozen=True)
class Progress:
    """Periodic engine progress; the CLI decides whether and how to show it."""

    phase: str
    done: int
    total: int
    crds: int = 0  # CRDs this run deletes (--delete): a provider's hundreds take longer than their objects
    deleted: int = 0  # of them, deleted so far
    gone: int = 0  # of them, gone (the API server's cleanup is done)
