"""What `scan` found, one record per thing held: plain data the scan returns and the
command line renders (scanning/report.py holds them all, and the gate's rule).

The field names of `to_dict` are the stable `-o json|yaml` document, described by
docs/scan.schema.json; a field is added there before it is added here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class State(str, Enum):
    """A group's verdict, one word first (the values are stable for -o json)."""

    STUCK = "stuck"  # nothing says a controller will remove it
    WORKING = "working"  # the finalizer's manager wrote after the deletion, recently
    BLOCKED = "blocked"  # it writes, but its own conditions or Events say it cannot finish
    ALIVE = "alive"  # a Lease or kopf peering entry of the controller is fresh
    PENDING = "pending"  # deleted moments ago, no evidence either way yet
    BUILTIN = "built-in"  # a Kubernetes controller's finalizer, waiting for something real
    HELD = "held"  # --all: has finalizers, not being deleted (nothing to do)
    ORPHANED = "orphaned"  # in a namespace that is gone: nothing can change it until the namespace exists again


@dataclass
class Manager:
    """A field manager that owns `f:metadata/f:finalizers` on objects of a group."""

    name: str
    objects: int = 0  # how many objects of the group its entry covers
    finalizer_write: str = ""  # latest time its finalizers entry was written (RFC 3339)
    last_write: str = ""  # its latest write of anything on these objects
    writes_after_deletion: int = 0  # objects it wrote after their deletionTimestamp


@dataclass
class Blocking:
    """Why a controller that keeps writing cannot finish: the refusal it keeps getting,
    in its own words, on the objects of the group that say so."""

    cause: str  # "the namespace is being deleted", "forbidden by RBAC", "forbidden", "refused as invalid"
    action: str  # "ProviderConfigUsage create refused"
    message: str  # the controller's words
    source: str  # the condition or Warning Event that says it
    seconds: float  # how long it has been said since the deletion
    objects: list[str]  # namespace/name (or name) of the objects that say it, of those looked at
    looked_at: int  # objects of the group looked at

    def to_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "action": self.action,
            "message": self.message,
            "source": self.source,
            "seconds": round(self.seconds, 1),
            "objects": list(self.objects),
            "lookedAt": self.looked_at,
        }


@dataclass
class Dependent:
    """An object whose ownerReference (blockOwnerDeletion) holds a foregroundDeletion owner,
    with the state of the group that holds it ("held" when no group of this scan does)."""

    resource: str
    namespace: str | None
    name: str
    finalizers: list[str]
    state: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
            "finalizers": list(self.finalizers),
            "state": self.state,
        }


@dataclass
class Group:
    """One finalizer on one resource type: how much it holds, who owns it, the verdict."""

    finalizer: str
    resource: str  # plural.group (plural for the core group)
    kind: str
    api_version: str
    namespaced: bool
    count: int
    terminating: bool  # False only for the --all groups of objects not being deleted
    oldest_seconds: float  # how long the oldest has waited since its deletionTimestamp
    oldest_deletion: str
    namespaces: list[str]
    sample: list[str]  # namespace/name or name, bounded
    owner: str  # in words, as far as the evidence goes
    owner_kind: str  # builtin | crd | apiservice | manager | unknown
    crd: str = ""  # the CRD that serves the type, if a CRD does
    managers: list[Manager] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    state: State = State.STUCK
    verdict: str = ""
    stuck: bool = False
    commands: list[str] = field(default_factory=list)  # for a stuck, pending or blocked group
    names: list[tuple[str | None, str]] = field(default_factory=list)  # (namespace, name), bounded like commands'
    blocking: Blocking | None = None  # for a blocked group
    dependents: list[Dependent] = field(default_factory=list)  # for foregroundDeletion: what blocks its owners

    @property
    def pending(self) -> bool:
        return self.terminating and self.state is State.PENDING

    @property
    def blocked(self) -> bool:
        return self.state is State.BLOCKED

    @property
    def held(self) -> bool:
        """What the gate does not pass: stuck, blocked or pending."""
        return self.stuck or self.pending or self.blocked

    def to_dict(self) -> dict[str, Any]:
        return {
            "finalizer": self.finalizer,
            "resource": self.resource,
            "kind": self.kind,
            "apiVersion": self.api_version,
            "namespaced": self.namespaced,
            "count": self.count,
            "terminating": self.terminating,
            "oldestSeconds": round(self.oldest_seconds, 1),
            "oldestDeletion": self.oldest_deletion,
            "namespaces": list(self.namespaces),
            "sample": list(self.sample),
            "owner": {"kind": self.owner_kind, "name": self.owner, "crd": self.crd},
            "managers": [
                {
                    "name": m.name,
                    "objects": m.objects,
                    "finalizerWrite": m.finalizer_write,
                    "lastWrite": m.last_write,
                    "writesAfterDeletion": m.writes_after_deletion,
                }
                for m in self.managers
            ],
            "evidence": list(self.evidence),
            "state": self.state.value,
            "verdict": self.verdict,
            "stuck": self.stuck,
            "commands": list(self.commands),
            "blocked": self.blocking.to_dict() if self.blocking else None,
            "dependents": [d.to_dict() for d in self.dependents],
        }


@dataclass
class TerminatingCrd:
    """A CRD being deleted: what it still holds and how its objects are converted."""

    name: str
    seconds: float
    instances: int  # objects of it the scan listed (-1: they could not be listed)
    conversion: str  # None | Webhook
    webhook: str = ""  # the webhook's service or URL
    verdict: str = ""
    stuck: bool = False
    commands: list[str] = field(default_factory=list)
    pending: bool = False  # Terminating moments ago, or every group of its objects is pending

    @property
    def held(self) -> bool:
        return self.stuck or self.pending

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "terminatingSeconds": round(self.seconds, 1),
            "instances": self.instances,
            "conversion": self.conversion,
            "webhook": self.webhook,
            "verdict": self.verdict,
            "stuck": self.stuck,
            "pending": self.pending,
            "commands": list(self.commands),
        }


@dataclass
class TerminatingNamespace:
    """A namespace being deleted: the namespace controller's conditions and what blocks it."""

    name: str
    seconds: float
    conditions: list[str]
    finalizers: list[str]  # metadata.finalizers (spec.finalizers are the controller's)
    apiservices: list[str]  # unavailable APIServices (they block every namespace's deletion)
    verdict: str = ""
    stuck: bool = False
    commands: list[str] = field(default_factory=list)
    pending: bool = False  # Terminating, not judged yet

    @property
    def held(self) -> bool:
        return self.stuck or self.pending

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "terminatingSeconds": round(self.seconds, 1),
            "conditions": list(self.conditions),
            "finalizers": list(self.finalizers),
            "apiServices": list(self.apiservices),
            "verdict": self.verdict,
            "stuck": self.stuck,
            "pending": self.pending,
            "commands": list(self.commands),
        }


@dataclass
class CorruptObject:
    """An object the API server names as unreadable from storage (KEP-3926): no controller
    can read, change or finish it, so it is held for good and the gate fails on it; only a
    delete that skips its finalizers and admission removes it."""

    resource: str  # plural.group (plural for the core group)
    namespace: str | None
    name: str
    message: str  # what the server said of it
    commands: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
            "message": self.message,
            "commands": list(self.commands),
        }


@dataclass
class LostPod:
    """A pod being deleted past its grace period on a node that is gone or not Ready since
    before (lost_nodes.py): no finalizer holds it, so nothing the tool frees ends it; the
    command is Kubernetes' own remedy, for a person who knows the node is down."""

    namespace: str
    name: str
    node: str
    silent: float | None  # seconds the node's kubelet has been silent (None: the node is gone)
    overdue: float  # seconds past its deletion deadline
    reason: str
    commands: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "node": self.node,
            "silentSeconds": None if self.silent is None else round(self.silent, 1),
            "overdueSeconds": round(self.overdue, 1),
            "reason": self.reason,
            "commands": list(self.commands),
        }


@dataclass
class Fix:
    """The commands that free one finalizer's stuck groups, the ones of CRD-served types as
    one command whatever their number (or that free every stuck Terminating CRD, under
    the CRDs' own finalizer): what a person runs, where each group's own commands are
    one per type."""

    finalizer: str
    resources: list[str]  # the stuck groups' resources (the CRDs' names for Terminating CRDs)
    commands: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"finalizer": self.finalizer, "resources": list(self.resources), "commands": list(self.commands)}
