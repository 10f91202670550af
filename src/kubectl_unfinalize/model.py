"""Plain data shared by the layers: what was selected, and what happened to it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from .errors import UnfinalizeError


class IncompleteError(UnfinalizeError):
    """Raised by Report.raise_for_failure: something is still blocked."""


CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
CRD_RESOURCE_GROUP = "apiextensions.k8s.io"

DryRun = Literal["client", "server"] | None


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

    @property
    def display(self) -> str:
        """kubectl's `kind.group` spelling, e.g. daskcluster.kubernetes.dask.org."""
        kind = self.kind.lower()
        return f"{kind}.{self.group}" if self.group else kind

    @property
    def qualified(self) -> str:
        """plural.group, the resource name RBAC and kubectl get use."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


CRD_RESOURCE = Resource(CRD_RESOURCE_GROUP, "v1", "customresourcedefinitions", "CustomResourceDefinition", False)


@dataclass
class CRD:
    """A CustomResourceDefinition and the resource it serves."""

    name: str
    resource: Resource
    singular: str = ""
    short_names: tuple[str, ...] = ()
    terminating: bool = False
    conditions: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class ObjectRef:
    """One object a manifest declared (any kind, built-in or custom)."""

    resource: Resource
    name: str
    namespace: str | None = None


@dataclass
class Targets:
    """Resolved selection: CRDs whose custom resources are freed, and single objects."""

    crds: list[CRD] = field(default_factory=list)
    objects: list[ObjectRef] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.crds or self.objects)


Action = Literal["unfinalized", "deleted", "gone", "failed", "refinalized", "blocking"]


@dataclass
class Outcome:
    """What happened to one object. `action` values are stable for -o json consumers."""

    resource: str
    name: str
    action: Action
    namespace: str | None = None
    finalizers: list[str] = field(default_factory=list)
    message: str = ""
    dry_run: DryRun = None

    @property
    def ref(self) -> str:
        return f"{self.resource}/{self.name}"


@dataclass
class Report:
    """Everything a run did; returned by the API, rendered by report.py."""

    outcomes: list[Outcome] = field(default_factory=list)
    scanned: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    dry_run: DryRun = None
    skipped: list[str] = field(default_factory=list)
    aborted: bool = False

    def count(self, action: Action) -> int:
        return sum(1 for outcome in self.outcomes if outcome.action == action)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.action in ("failed", "refinalized", "blocking")]

    @property
    def ok(self) -> bool:
        return not self.timed_out and not self.failed

    def raise_for_failure(self) -> Report:
        """For test teardowns: turn a partial result into an exception that says why."""
        if not self.ok:
            lines = [f"{o.ref}: {o.action} {o.message}".strip() for o in self.failed]
            if self.timed_out:
                lines.insert(0, "timed out")
            raise IncompleteError("; ".join(lines))
        return self

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "dryRun": self.dry_run or "none",
            "timedOut": self.timed_out,
            "seconds": round(self.seconds, 3),
            "summary": {
                "scanned": self.scanned,
                "unfinalized": self.count("unfinalized"),
                "deleted": self.count("deleted"),
                "gone": self.count("gone"),
                "failed": len(self.failed),
            },
            "skipped": list(self.skipped),
            "items": [{k: v for k, v in asdict(o).items() if k != "dry_run"} for o in self.outcomes],
        }


@dataclass
class Progress:
    """Periodic engine progress; the CLI decides whether and how to show it."""

    phase: str
    done: int
    total: int
