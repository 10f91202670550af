"""--with-dependents' judge (engine/dependents.py): which finalizers of an owner's blocking
dependents a dead controller holds, by scan's own evidence, so that the run never frees a
live controller's finalizer because its object happens to block an owner.

A finalizer goes when scan judges its group `stuck`, or, for a Kubernetes controller's own
finalizer, when the run's --finalizer names it and it has held the deletion past the grace:
the rule scan --free follows (scanning/remedy.py). A dependent deleted moments ago is
`pending`: the scan is repeated until its verdict comes or the run's deadline is near. Reads
only; on the run's connection."""

from __future__ import annotations

import time
from collections.abc import Callable

from .deadline import Deadline
from .engine.dependents import Judge, Verdict
from .errors import UnfinalizeError
from .kube.metadata import MetadataCluster
from .kube.transport import Transport
from .model import ObjectMeta
from .options import Options
from .scanning.model import Group, State
from .scanning.options import ScanOptions
from .scanning.patience import GRACE
from .scanning.survey import scan

POLL = 3.0  # seconds between scans while a dependent's verdict is pending


def judge(transport: Transport, deadline: Deadline, options: Options) -> Judge:
    cluster = MetadataCluster(transport, deadline)

    def verdicts(dependents: list[ObjectMeta]) -> list[Verdict]:
        try:
            groups = _groups(cluster, dependents, deadline)
        except UnfinalizeError as exc:
            return [Verdict(m, (), f"scan could not judge what holds it: {exc}") for m in dependents]
        return [_verdict(meta, groups, options) for meta in dependents]

    return verdicts


def _groups(
    cluster: MetadataCluster,
    dependents: list[ObjectMeta],
    deadline: Deadline,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[tuple[str, str], Group]:
    """scan's groups by (resource, finalizer), scanned again while one the dependents are in
    is pending."""
    spaces = {m.ref.namespace for m in dependents}
    namespace = next(iter(spaces)) if len(spaces) == 1 else None
    wanted = {(m.ref.resource.qualified, f) for m in dependents for f in m.finalizers}
    while True:
        report = scan(cluster, ScanOptions(namespace=namespace))
        groups = {(g.resource, g.finalizer): g for g in report.groups if g.terminating}
        pending = [key for key in wanted if key in groups and groups[key].state is State.PENDING]
        if not pending or deadline.remaining() < 2 * POLL:
            return groups
        sleep(POLL)


def _verdict(meta: ObjectMeta, groups: dict[tuple[str, str], Group], options: Options) -> Verdict:
    free: list[str] = []
    left: list[str] = []
    for finalizer in meta.finalizers:
        group = groups.get((meta.ref.resource.qualified, finalizer))
        if group is None:
            left.append(f"{finalizer}: not seen by the scan")
        elif group.state is State.STUCK or (
            group.state is State.BUILTIN and finalizer in options.finalizers and group.oldest_seconds > GRACE
        ):
            free.append(finalizer)
        else:
            left.append(f"{finalizer}: {group.verdict}")
    return Verdict(meta, tuple(free), "; ".join(left))
