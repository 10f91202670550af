"""The terminal summary's section: what was freed (per phase) and what is still held,
grouped by finalizer, each type with its count, namespaces, verdict and evidence; and the
strict verdict. Lines only: plugin.py writes them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .. import Group, ScanReport
from .settings import Settings
from .teardown import Freed, Ledger

PHASES = {"start": "at session start (left by an earlier run)", "teardown": "during the teardown", "end": "after it"}
SHOWN_NAMESPACES = 5


@dataclass
class Verdict:
    """The plugin's last word on the session."""

    held: list[Group]  # in scope, after the session (any verdict)
    stuck: list[str]  # what is stuck, blocked or still pending in scope: groups, CRDs, namespaces, in words
    failed: bool  # strict: the session fails


def judge(settings: Settings, ledger: Ledger, final: ScanReport | None) -> Verdict:
    narrowing = settings.narrowing
    held = [g for g in final.groups if g.terminating and narrowing.covers(g)] if final else []
    held_on = [g for g in held if g.held]
    stuck = [f"{g.count} {g.resource} held by {g.finalizer}: {g.verdict}" for g in held_on]
    if final is not None:
        stuck += [f"CRD {c.name}: {c.verdict}" for c in final.crds if c.held and narrowing.covers_crd(c)]
        stuck += [
            f"namespace {n.name}: {n.verdict}" for n in final.namespaces if n.held and narrowing.covers_namespace(n)
        ]
        stuck += [
            f"unreadable: {c.resource} {c.namespace + '/' if c.namespace else ''}{c.name} ({c.message})"
            for c in final.corrupt
            if not c.namespace or narrowing.namespace(c.namespace)
        ]
        stuck += [f"not read: {line}" for line in final.failing]  # it may hold anything of the session's
    freed = ledger.objects_freed("teardown", "end")
    failed = settings.mode == "strict" and bool(freed or stuck or ledger.failures or final is None)
    return Verdict(held, stuck, failed)


def _namespaces(names: list[str]) -> str:
    spaces = sorted({n.split("/", 1)[0] for n in names if "/" in n})
    shown = ", ".join(spaces[:SHOWN_NAMESPACES]) + (f" +{len(spaces) - SHOWN_NAMESPACES}" if len(spaces) > 5 else "")
    return shown or "(cluster)"


def _freed(entries: list[Freed]) -> Iterator[str]:
    finalizer = None
    for entry in sorted(entries, key=lambda f: (f.finalizer, f.resource)):
        if entry.finalizer != finalizer:
            finalizer = entry.finalizer
            yield f"  {finalizer}"
        yield f"    {entry.resource}  {entry.count}  {_namespaces(entry.objects)}  freed; was {entry.verdict}"
        more = f" (+{entry.count - len(entry.objects)} more)" if entry.count > len(entry.objects) else ""
        yield f"        objects: {', '.join(sorted(entry.objects))}{more}"
        for item in entry.evidence:
            yield f"        evidence: {item}"


def _held(groups: list[Group], settings: Settings) -> Iterator[str]:
    finalizer = None
    for group in sorted(groups, key=lambda g: (g.finalizer, g.resource)):
        if group.finalizer != finalizer:
            finalizer = group.finalizer
            yield f"  {finalizer}  (owner: {group.owner.split('; ')[0]})"
        spaces = settings.narrowing.in_namespaces(group) if group.namespaced else []
        where = ", ".join(spaces[:SHOWN_NAMESPACES]) + (f" +{len(spaces) - 5}" if len(spaces) > 5 else "")
        yield f"    {group.resource}  {group.count}  {where or '(cluster)'}  {group.verdict}"
        if group.sample:
            yield f"        objects: {', '.join(group.sample)}" + (" ..." if group.count > len(group.sample) else "")
        for item in group.evidence:
            yield f"        evidence: {item}"
        for command in group.commands:
            yield f"        free: {command}"


def lines(settings: Settings, ledger: Ledger, final: ScanReport | None, verdict: Verdict) -> Iterator[str]:
    if settings.frees:
        for phase, words in PHASES.items():
            entries = [f for f in ledger.freed.values() if f.phase == phase]
            if entries:
                yield f"freed {words}: {sum(f.count for f in entries)} objects"
                yield from _freed(entries)
        if not ledger.freed:
            yield "freed nothing: no deletion was held past the grace by a finalizer without a live controller"
    if ledger.records:
        yield f"records (kubectl unfinalize history; undo ID puts back what one freed): {', '.join(ledger.records)}"
    for phase, why in ledger.unreachable.items():
        yield f"could not read the cluster {PHASES[phase].split(' (')[0]}: {why}"
    for failure in ledger.failures:
        yield f"could not free: {failure}"
    if final is not None:
        waited = f", waited {final.waited:.1f}s for pending deletions" if final.waited >= 0.05 else ""
        if verdict.held:
            yield f"held by finalizers after the session (scanned {final.types} types{waited}):"
            yield from _held(verdict.held, settings)
        else:
            yield f"nothing held by finalizers after the session (scanned {final.types} types{waited})"
        yield from (
            f"  {line}"
            for line in verdict.stuck
            if line.startswith(("CRD ", "namespace ", "unreadable: ", "not read: "))
        )
    if verdict.failed:
        freed = ledger.objects_freed("teardown", "end")
        whose = sorted({f.finalizer for f in ledger.freed.values() if f.phase != "start"})
        reasons = [f"{freed} objects had to be freed from {', '.join(whose)}"] * bool(freed)
        unread = [line for line in verdict.stuck if line.startswith(("unreadable: ", "not read: "))]
        held = len(verdict.stuck) - len(unread)
        reasons += [f"{held} still held"] * bool(held) + [f"{len(unread)} could not be read"] * bool(unread)
        if final is None:
            reasons.append("the cluster could not be checked after the session")
        if ledger.failures:
            reasons.append(f"{len(ledger.failures)} could not be freed")
        yield f"FAILED (--unfinalize=strict): {', '.join(reasons)}"
