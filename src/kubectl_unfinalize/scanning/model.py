"""What `scan` found: plain data the scan returns and the command line renders.

The field names of `to_dict` are the stable `-o json|yaml` document, described by
docs/scan.schema.json; a field is added there before it is added here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..errors import ExitStatus, IncompleteError
from ..model import Action, Report

SCHEMA_VERSION = "kubectl-unfinalize.scan/v1"


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


@dataclass
class FreedCall:
    """What a freeing scan did with one planned call (remedy.plan): the finalizers it
    removed from which groups, and the run's Report (None when it was not sent)."""

    resource: str
    finalizers: list[str]
    groups: list[Group]
    report: Report | None = None

    def to_dict(self) -> dict[str, Any]:
        report = self.report or Report(error="not sent")
        failed = [f"{o.namespace + '/' if o.namespace else ''}{o.name}: {o.message}" for o in report.failed]
        return {
            "resource": self.resource,
            "finalizers": list(self.finalizers),
            "verdicts": sorted({g.state.value for g in self.groups}),
            "unfinalized": report.count(Action.UNFINALIZED),
            "deleted": report.count(Action.DELETED),
            "failed": report.failures,
            "failures": failed[:20],
            "ok": report.ok,
            "error": report.error,
            "dryRun": report.dry_run.value != "none",
        }


@dataclass
class ScanReport:
    """Everything `scan` found. A CI gate fails on `stuck`, on `blocked` (a live controller
    that says it cannot finish) and on `pending` (deleted moments ago and held, with no
    evidence either way yet: right after a teardown, that is what a dead operator's
    objects look like, never "clean"); `not_scanned` says what
    could not be read (a 403 on a type, an unavailable group version), so an empty
    `stuck` is never mistaken for "checked everything" when it was not."""

    groups: list[Group] = field(default_factory=list)
    crds: list[TerminatingCrd] = field(default_factory=list)
    namespaces: list[TerminatingNamespace] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)  # per finalizer: its stuck groups' commands, CRDs merged
    not_scanned: list[str] = field(default_factory=list)  # one line per type or group version
    types: int = 0  # resource types listed
    objects: int = 0  # objects seen in them
    seconds: float = 0.0
    namespace: str | None = None  # -n
    include_live: bool = False  # --all
    older_than: float = 0.0
    waited: float = 0.0  # seconds spent re-scanning while something was pending (wait=True)
    freed: list[FreedCall] | None = None  # free=True: what was freed before this (the scan after it)
    record: str = ""  # free=True: the one record of the frees ("" for none: a dry run, nothing sent)

    @property
    def stuck(self) -> list[Group | TerminatingCrd | TerminatingNamespace]:
        return [*(g for g in self.groups if g.stuck), *(c for c in self.crds if c.stuck), *self._stuck_namespaces]

    @property
    def _stuck_namespaces(self) -> list[TerminatingNamespace]:
        return [n for n in self.namespaces if n.stuck]

    @property
    def pending(self) -> list[Group | TerminatingCrd | TerminatingNamespace]:
        return [*(g for g in self.groups if g.pending), *(c for c in self.crds if c.pending), *self._pending_namespaces]

    @property
    def _pending_namespaces(self) -> list[TerminatingNamespace]:
        return [n for n in self.namespaces if n.pending]

    @property
    def blocked(self) -> list[Group]:
        """Held by a controller that writes but says it cannot finish: held like stuck
        (exit 1), but never freed with the stuck, since the controller is alive."""
        return [g for g in self.groups if g.blocked]

    @property
    def held(self) -> list[Group | TerminatingCrd | TerminatingNamespace]:
        """What the gate does not pass: everything stuck, blocked or pending."""
        return [*self.stuck, *self.blocked, *self.pending]

    @property
    def ok(self) -> bool:
        """Nothing held (the command line's exit 0)."""
        return not self.held

    @property
    def exit_status(self) -> ExitStatus:
        """The gate's one rule: 1 while something is stuck or blocked, 3 while what is
        held is only pending (it may still go on its own: scan --wait waits), else 0."""
        held = self.held
        if not held:
            return ExitStatus.OK
        return ExitStatus.PENDING if all(item.pending for item in held) else ExitStatus.FAILED

    def raise_for_failure(self) -> ScanReport:
        """For a test session's final check: fail with what is stuck or still pending and
        how to free it (scan(wait=True) first waits for the pending to be judged). Named
        as Report's: a teardown ends `unfinalize(...)` and `scan(...)` the same way."""
        if held := self.held:
            raise IncompleteError("; ".join(_stuck_line(item) for item in held))
        return self

    def raise_if_stuck(self) -> ScanReport:
        """The earlier name of raise_for_failure, which the README taught: warns, then does the same."""
        warnings.warn("ScanReport.raise_if_stuck() is deprecated: use raise_for_failure()", DeprecationWarning, 2)
        return self.raise_for_failure()

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": SCHEMA_VERSION,
            "ok": self.ok,
            "stuck": len(self.stuck),
            "pending": len(self.pending),
            "blocked": len(self.blocked),
            "waitedSeconds": round(self.waited, 1),
            "namespace": self.namespace,
            "all": self.include_live,
            "olderThanSeconds": self.older_than,
            "seconds": round(self.seconds, 3),
            "scanned": {"types": self.types, "objects": self.objects},
            "notScanned": list(self.not_scanned),
            "groups": [g.to_dict() for g in self.groups],
            "crds": [c.to_dict() for c in self.crds],
            "namespaces": [n.to_dict() for n in self.namespaces],
            "fixes": [f.to_dict() for f in self.fixes],
        } | ({} if self.freed is None else {"freed": [f.to_dict() for f in self.freed], "record": self.record})


def _stuck_line(item: Group | TerminatingCrd | TerminatingNamespace) -> str:
    if isinstance(item, Group):
        what = f"{item.count} {item.resource} held by {item.finalizer}"
    elif isinstance(item, TerminatingCrd):
        what = f"CRD {item.name}"
    else:
        what = f"namespace {item.name}"
    fix = f" (free: {' && '.join(item.commands)})" if item.commands else ""
    return f"{what}: {item.verdict}{fix}"
