"""--with-dependents: the dependents that keep a selected owner held by foregroundDeletion,
freed of the finalizers a dead controller holds, so that the garbage collector lets the
owner go.

Which of a dependent's finalizers may go is not the engine's to judge: a live controller's
finalizer must stay (freeing it skips the cleanup it is still doing), and telling the two
apart is scan's evidence (Leases, kopf peering, the field managers' writes). The run is
given a `Judge` (dependent_verdicts.py builds it from a scan); the engine frees what it
says, through the run's own writes (capped, recorded, undoable like any run's), and names
each dependent it leaves with the reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ..model import STILL_BLOCKING, Action, ObjectMeta
from ..options import DryRun
from . import owners
from .admission import Admission
from .background import Gate
from .context import RunContext
from .freeing import Freer
from .revival import Revivals
from .sightings import FOREGROUND, Sightings

OWNER_WAIT = 60.0  # seconds the collector is given to delete an owner once its dependents went


@dataclass(frozen=True)
class Verdict:
    """One dependent: the finalizers a controller judged dead holds (freed), and why the
    others stay ("" when none does)."""

    meta: ObjectMeta
    free: tuple[str, ...]
    left: str = ""


Judge = Callable[[list[ObjectMeta]], list[Verdict]]


def free(
    run: RunContext,
    admission: Admission,
    sightings: Sightings,
    revivals: Revivals,
    gate: Gate,
    verdicts: list[Verdict],
) -> None:
    """Free each dependent of what its verdict frees; name it when something stays."""
    for verdict in verdicts:
        meta = verdict.meta
        if verdict.free:
            options = dataclasses.replace(run.options, finalizers=verdict.free, only_terminating=True)
            freer = Freer(dataclasses.replace(run, options=options), admission, sightings, revivals, gate)
            freer.contain(meta.ref, "free", partial(freer.free, meta))
        if verdict.left:
            message = f"blocks an owner's {FOREGROUND}; --with-dependents leaves it: {verdict.left}"
            run.book.add(meta.ref, Action.BLOCKING, meta.finalizers, message, aspect=STILL_BLOCKING)


def settle(
    run: RunContext,
    admission: Admission,
    sightings: Sightings,
    revivals: Revivals,
    gate: Gate,
    judge: Judge | None,
) -> None:
    """At the run's end, each owner still held by foregroundDeletion named with what holds
    it (owners.py); with --with-dependents (and a judge), its blocking dependents judged
    and freed first, and the owner waited on (OWNER_WAIT at most) and named gone."""
    found = list(sightings.owners.values())
    if judge is None or not run.options.with_dependents:
        owners.report(run.cluster, run.book, found, run.deadline)
        return
    if blocking := owners.dependents_of(run.cluster, found):
        free(run, admission, sightings, revivals, gate, judge(blocking))
    wait = OWNER_WAIT if run.options.dry_run is DryRun.NONE else 0.0  # a dry run's dependents are still there
    owners.report(run.cluster, run.book, found, run.deadline, settle=wait, said_gone=True)
