"""Everything one `scan` found, and the gate's one rule: what is held (stuck, blocked or
pending), the exit status it makes, the failure a test session raises.

The field names of `to_dict` are the stable `-o json|yaml` document, described by
docs/scan.schema.json; a field is added there before it is added here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import ExitStatus, IncompleteError, worst_status
from ..model import Action, Report
from ..options import context_flag
from .model import CorruptObject, Fix, Group, LostPod, TerminatingCrd, TerminatingNamespace

SCHEMA_VERSION = "kubectl-unfinalize.scan/v1"


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
    `stuck` is never mistaken for "checked everything" when it was not. It fails on
    `corrupt` too (objects the API server cannot read, which nothing but an unsafe delete
    removes) and on `failing`: a type whose list failed, or a group version discovery marks
    unavailable, may hold anything. A type the user may not list (403) only is named: the
    gate passes what it was allowed to read, and says what it was not."""

    groups: list[Group] = field(default_factory=list)
    crds: list[TerminatingCrd] = field(default_factory=list)
    namespaces: list[TerminatingNamespace] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)  # per finalizer: its stuck groups' commands, CRDs merged
    not_scanned: list[str] = field(default_factory=list)  # one line per type or group version
    corrupt: list[CorruptObject] = field(default_factory=list)
    lost_pods: list[LostPod] = field(default_factory=list)  # held by a node whose kubelet is gone
    failing: list[str] = field(default_factory=list)  # the not_scanned lines that fail the gate
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
    def unread(self) -> bool:
        """Something could not be read that may hold anything: corrupt objects, a failing type."""
        return bool(self.corrupt or self.failing)

    @property
    def ok(self) -> bool:
        """Nothing held, everything read (the command line's exit 0)."""
        return not self.held and not self.unread and not self.lost_pods

    @property
    def exit_status(self) -> ExitStatus:
        """The gate's one rule: 1 while something is stuck, blocked, corrupt or could not be
        read, 3 while what is held is only pending (it may still go on its own: scan --wait
        waits), else 0."""
        held = self.held
        if self.unread or self.lost_pods:
            return ExitStatus.FAILED
        if not held:
            return ExitStatus.OK
        return ExitStatus.PENDING if all(item.pending for item in held) else ExitStatus.FAILED

    def raise_for_failure(self) -> ScanReport:
        """For a test session's final check: fail with what is stuck or still pending and
        how to free it (scan(wait=True) first waits for the pending to be judged). Named
        as Report's: a teardown ends `unfinalize(...)` and `scan(...)` the same way."""
        lines = [_stuck_line(item) for item in self.held] + [_corrupt_line(item) for item in self.corrupt]
        lines += [f"pod {p.namespace}/{p.name}: {p.reason} (remedy: {p.commands[0]})" for p in self.lost_pods]
        lines += [f"not read: {line}" for line in self.failing if not line.startswith(tuple(_types(self.corrupt)))]
        if lines:
            raise IncompleteError("; ".join(lines))
        return self

    def naming_context(self, context: str) -> ScanReport:
        """Each command the report prints, with `--context CONTEXT` (in place): in a scan
        of several contexts, a command without it would act on the kubeconfig's current one."""
        flag = context_flag(context)
        lists = [g.commands for g in self.groups] + [c.commands for c in self.crds]
        lists += [n.commands for n in self.namespaces] + [c.commands for c in self.corrupt]
        lists += [p.commands for p in self.lost_pods] + [f.commands for f in self.fixes]
        for commands in lists:
            commands[:] = [c + flag if c.startswith("kubectl ") else c for c in commands]
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
            "failing": list(self.failing),
            "corrupt": [c.to_dict() for c in self.corrupt],
            "lostPods": [p.to_dict() for p in self.lost_pods],
            "groups": [g.to_dict() for g in self.groups],
            "crds": [c.to_dict() for c in self.crds],
            "namespaces": [n.to_dict() for n in self.namespaces],
            "fixes": [f.to_dict() for f in self.fixes],
        } | ({} if self.freed is None else {"freed": [f.to_dict() for f in self.freed], "record": self.record})


@dataclass
class ContextScans:
    """scan over several kubeconfig contexts: one ScanReport per context that was read, the
    error of each that was not (unreachable, refused credentials). It passes only when
    every context was read and passes; its exit status is the worst of theirs, an error
    counting as a failure (errors.worst_status)."""

    contexts: list[str]  # in the order they were asked for
    reports: dict[str, ScanReport] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and all(report.ok for report in self.reports.values())

    @property
    def statuses(self) -> dict[str, ExitStatus]:
        """Each context's own exit status: its report's, FAILED for one that was not read."""
        return {
            name: self.reports[name].exit_status if name in self.reports else ExitStatus.FAILED
            for name in self.contexts
        }

    @property
    def exit_status(self) -> ExitStatus:
        return worst_status(self.statuses.values())

    def raise_for_failure(self) -> ContextScans:
        """As ScanReport's, each line naming its context."""
        lines = [f"context {name}: {self.errors[name]}" for name in self.contexts if name in self.errors]
        for name in self.contexts:
            try:
                if name in self.reports:
                    self.reports[name].raise_for_failure()
            except IncompleteError as exc:
                lines.append(f"context {name}: {exc}")
        if lines:
            raise IncompleteError("; ".join(lines))
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": SCHEMA_VERSION,
            "ok": self.ok,
            "contexts": [
                {
                    "context": name,
                    "ok": name in self.reports and self.reports[name].ok,
                    "exitStatus": int(self.statuses[name]),
                    "error": self.errors.get(name),
                    "scan": self.reports[name].to_dict() if name in self.reports else None,
                }
                for name in self.contexts
            ],
        }


def _stuck_line(item: Group | TerminatingCrd | TerminatingNamespace) -> str:
    if isinstance(item, Group):
        what = f"{item.count} {item.resource} held by {item.finalizer}"
    elif isinstance(item, TerminatingCrd):
        what = f"CRD {item.name}"
    else:
        what = f"namespace {item.name}"
    fix = f" (free: {' && '.join(item.commands)})" if item.commands else ""
    return f"{what}: {item.verdict}{fix}"


def _corrupt_line(item: CorruptObject) -> str:
    where = f"{item.namespace}/" if item.namespace else ""
    remove = f"; remove: {item.commands[0]}" if item.commands else ""
    return f"{item.resource} {where}{item.name}: the API server cannot read it ({item.message}{remove})"


def _types(corrupt: list[CorruptObject]) -> set[str]:
    """The failing lines of these types' lists are said by their corrupt objects' lines."""
    return {f"{item.resource}: " for item in corrupt}
