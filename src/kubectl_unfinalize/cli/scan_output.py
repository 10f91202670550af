"""ScanReport -> what a person (text, wide) or a script (json, yaml) reads."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..durations import ago, format_seconds
from ..finalizers import CRD_CLEANUP
from ..model import Action
from ..options import context_flag
from ..scanning.model import Group, State

if TYPE_CHECKING:
    from .. import ContextScans, ScanReport

SHOWN_NAMESPACES = 3
SHOWN_FAILURES = 10
UNSAFE = (
    "removing them skips their finalizers and admission, and may break the cluster if anything depends on"
    " them; back them up first if they matter (their bytes are in etcd)"
)
ALIVE = (
    "its controller is alive and still writing: freeing skips the cleanup it cannot finish (fix the cause if you can)"
)
LOST = (
    "no finalizer holds these pods: their kubelet must confirm they stopped; on a partitioned node the containers"
    " may still run, and a StatefulSet could then run two pods of one identity"
)
LOST_COMMANDS = ("remedy, once the node is known to be down", "or force-delete it")
SILENT = (
    "its controller shows a sign of life: scan --free leaves it; free it only if you know the controller"
    " will not finish (a live controller may be backing off a failing cleanup)"
)


def render_contexts(scans: ContextScans, output: str) -> str:
    """Several contexts: one document with a `contexts` list (docs/scan.schema.json), or
    each context's text under a line naming it (an error in its place when it was not read)."""
    if output in ("json", "yaml"):
        return _document(scans.to_dict(), output)
    text = []
    for name in scans.contexts:
        text.append(f"== context {name} ==\n")
        if name in scans.reports:
            text.append(render(scans.reports[name], output))
        else:
            text.append(f"error: {scans.errors[name]}\n")
    return "".join(text)


def contexts_stderr_lines(scans: ContextScans, waited: bool = False) -> Iterator[str]:
    """Each context's summary lines, naming it; an error, for one not read."""
    for name in scans.contexts:
        if name in scans.errors:
            yield f"context {name}: error: {scans.errors[name]}"
        else:
            yield from (f"context {name}: {line}" for line in stderr_lines(scans.reports[name], waited, name))


def _document(document: dict[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(document, indent=2) + "\n"
    import yaml

    return str(yaml.safe_dump(document, sort_keys=False, default_flow_style=False))


def render(report: ScanReport, output: str) -> str:
    if output in ("json", "yaml"):
        return _document(report.to_dict(), output)
    return "".join(line + "\n" for line in lines(report, wide=output == "wide"))


def _namespaces(group: Group) -> str:
    if not group.namespaced:
        return "(cluster)"
    shown = ", ".join(group.namespaces[:SHOWN_NAMESPACES])
    more = len(group.namespaces) - SHOWN_NAMESPACES
    return shown + (f" +{more}" if more > 0 else "")


def lines(report: ScanReport, wide: bool = False) -> Iterator[str]:
    """Groups under their finalizer, then Terminating CRDs and namespaces; each stuck
    entry is followed by the commands that free it, or, where the report has a fix for
    them (one command for many CRDs), its finalizer's groups and the CRDs by it, once."""
    if not (report.groups or report.crds or report.namespaces or report.corrupt or report.lost_pods):
        yield "nothing is stuck: no object is being deleted and held by finalizers"
        return
    fixes = {fix.finalizer: fix.commands for fix in report.fixes}
    sections: tuple[tuple[list[Any], Callable[[], Iterator[str]]], ...] = (
        (report.groups, lambda: _groups(report, fixes, wide)),
        (report.crds, lambda: _crds(report, fixes, wide)),
        (report.namespaces, lambda: _namespace_lines(report, wide)),
        (report.corrupt, lambda: _corrupt_lines(report)),
        (report.lost_pods, lambda: _lost_pod_lines(report)),
    )
    shown = [section for entries, section in sections if entries]
    for index, section in enumerate(shown):
        if index:
            yield ""  # between sections, never before the first
        yield from section()


def _groups(report: ScanReport, fixes: dict[str, list[str]], wide: bool) -> Iterator[str]:
    width = max(max(len(g.resource) for g in report.groups) + 2, 18)
    yield f"{'FINALIZER / RESOURCE':<{width + 2}} {'COUNT':>6}  {'OLDEST':<7} {'NAMESPACES':<28} VERDICT"
    finalizer, owed = None, None  # the fix of the finalizer under way, printed after its stuck groups
    for group in sorted(report.groups, key=lambda g: (g.finalizer, not g.stuck, g.resource)):
        if group.finalizer != finalizer or not group.stuck:
            yield from _fix(owed)
            owed = None
        if group.finalizer != finalizer:
            finalizer = group.finalizer
            owed = fixes.get(finalizer)
            yield f"{finalizer}  (owner: {group.owner.split('; ')[0]})"
        oldest = ago(group.oldest_seconds) if group.terminating else "-"
        yield f"  {group.resource:<{width}} {group.count:>6}  {oldest:<7} {_namespaces(group):<28} {group.verdict}"
        if wide:
            yield from _wide(group)
        if group.blocked and group.commands:
            yield f"      warning: {ALIVE}"
        if group.state is State.ALIVE and group.stuck:
            yield f"      warning: {SILENT}"
        if not (group.stuck and group.finalizer in fixes):
            yield from (f"      free: {command}" for command in group.commands)
    yield from _fix(owed)


def _wide(group: Group) -> Iterator[str]:
    yield f"      owner: {group.owner}"
    for item in group.evidence:
        yield f"      evidence: {item}"
    for manager in group.managers:
        yield (
            f"      manager {manager.name}: finalizer on {manager.objects},"
            f" written {manager.finalizer_write}, last write {manager.last_write},"
            f" {manager.writes_after_deletion} written after deletion"
        )
    yield f"      objects: {', '.join(group.sample)}" + (" ..." if group.count > len(group.sample) else "")


def _crds(report: ScanReport, fixes: dict[str, list[str]], wide: bool) -> Iterator[str]:
    width = max(len(c.name) for c in report.crds) + 2
    yield f"{'CRD (Terminating)':<{width}} {'AGE':<6} {'OBJECTS':>8}  {'CONVERSION':<11} VERDICT"
    for crd in report.crds:
        conversion = crd.conversion + (f" ({crd.webhook})" if wide and crd.webhook else "")
        instances = str(crd.instances) if crd.instances >= 0 else "?"
        yield f"{crd.name:<{width}} {ago(crd.seconds):<6} {instances:>8}  {conversion:<11} {crd.verdict}"
        if not (crd.stuck and CRD_CLEANUP in fixes):
            yield from (f"      free: {command}" for command in crd.commands)
    yield from _fix(fixes.get(CRD_CLEANUP))


def _namespace_lines(report: ScanReport, wide: bool) -> Iterator[str]:
    width = max(max(len(n.name) for n in report.namespaces) + 2, 25)
    yield f"{'NAMESPACE (Terminating)':<{width}} {'AGE':<6} VERDICT"
    for ns in report.namespaces:
        yield f"{ns.name:<{width}} {ago(ns.seconds):<6} {ns.verdict}"
        if wide:
            for condition in ns.conditions:
                yield f"      condition {condition}"
        for command in ns.commands:
            yield f"      free: {command}"


def _corrupt_lines(report: ScanReport) -> Iterator[str]:
    width = max(max(len(c.resource) for c in report.corrupt) + 2, 18)
    yield f"{'CORRUPT (unreadable)':<{width}} {'NAMESPACE':<20} {'NAME':<30} THE API SERVER SAID"
    for item in report.corrupt:
        yield f"{item.resource:<{width}} {item.namespace or '(cluster)':<20} {item.name:<30} {item.message}"
        for command in item.commands:
            yield f"      remove: {command}"
    yield f"      warning: {UNSAFE}"


def _lost_pod_lines(report: ScanReport) -> Iterator[str]:
    width = max(max(len(p.namespace) + len(p.name) + 1 for p in report.lost_pods) + 2, 22)
    yield f"{'POD (on a lost node)':<{width}} {'NODE':<20} SILENT  WHY"
    for pod in report.lost_pods:
        silent = "gone" if pod.silent is None else ago(pod.silent)
        yield f"{pod.namespace + '/' + pod.name:<{width}} {pod.node:<20} {silent:<7} {pod.reason}"
        for said, command in zip(LOST_COMMANDS, pod.commands, strict=False):  # an older document may hold one
            yield f"      {said}: {command}"
    yield f"      warning: {LOST}"


def _fix(commands: list[str] | None) -> Iterator[str]:
    for command in commands or ():
        yield f"    free: {command}"


def freed_lines(report: ScanReport, context: str | None = None) -> Iterator[str]:
    """scan --free: what each planned call did, then where its record is (the commands
    that read it naming `context`, one of several the scan was of)."""
    for call in report.freed or ():
        done = call.report
        if done is None:
            continue
        would = "would free" if done.dry_run.value != "none" else "freed"
        counted = (
            done.count(Action.UNFINALIZED) + done.count(Action.DELETED) if would == "freed" else len(done.outcomes)
        )
        failed = f", {done.failures} failed" if done.failures else ""
        yield f"{would} {counted} {call.resource} ({', '.join(call.finalizers) or 'the CRD'}){failed}"
        for outcome in done.failed[:SHOWN_FAILURES]:
            where = f"{outcome.namespace}/" if outcome.namespace else ""
            yield f"  could not free {where}{outcome.name}: {outcome.message}"
        if done.error:
            yield f"  {done.error}"
    if report.freed is not None and not report.freed:
        yield "freed nothing: nothing in scope was judged stuck"
    if report.record:
        flag = context_flag(context)
        yield f"record: {report.record} (kubectl unfinalize history{flag}; undo ID{flag} puts back what it freed)"


def stderr_lines(report: ScanReport, waited: bool = False, context: str | None = None) -> Iterator[str]:
    """`waited`: scan --wait was asked for (report.waited is how long it took); `context`:
    the one of several contexts this report is of."""
    yield from freed_lines(report, context)
    for line in report.not_scanned:
        yield f"not scanned: {line}"
    counts = {
        "stuck": len(report.stuck),
        "blocked": len(report.blocked),
        "corrupt": len(report.corrupt),
        "on a lost node": len(report.lost_pods),
        "not read": len(report.failing),
        "pending": len(report.pending),
    }
    verdict = ", ".join(f"{n} {word}" for word, n in counts.items() if n) or "nothing held"
    pending = counts["pending"]
    wait = f" after waiting {format_seconds(report.waited)}" if waited else ""
    yield (
        f"scanned {report.types} types, {report.objects} objects in {format_seconds(report.seconds)}{wait}: "
        f"{len(report.groups)} groups, {len(report.crds)} Terminating CRDs, "
        f"{len(report.namespaces)} Terminating namespaces; {verdict}"
    )
    if counts["corrupt"]:
        yield "corrupt: the API server cannot read these objects from storage; no controller can finish them (exit 1)"
    if counts["on a lost node"]:
        yield (
            "on a lost node: pods being deleted whose node's kubelet is gone; nothing the tool frees ends them, and"
            " the remedy is for a person who knows the node is down (exit 1)"
        )
    if counts["not read"]:
        yield (
            "not read: a type whose list failed, or an API that is unavailable, may hold anything; the scan cannot"
            " say nothing is held (exit 1)"
        )
    if counts["blocked"]:
        yield "blocked: a controller keeps writing, but says it cannot finish until its cause is fixed (exit 1)"
    if pending:
        then = "--timeout ran out before they were judged" if waited else "scan --wait waits for the verdict"
        yield f"pending: deleted moments ago and held, with no controller seen yet; {then} (exit 3)"
