"""scan --free --events: one Kubernetes Event per freed group and namespace, so that what
the janitor did is seen where people look (`kubectl events`, `kubectl describe`, k9s, a
dashboard) and not only in its pod's log.

As client-go's events.k8s.io recorder writes them: type Normal, reason FinalizersRemoved,
action RemoveFinalizers, reportingController kubectl-unfinalize, regarding one of the
objects freed there, the note naming the finalizers, how many objects, the verdict and
the record's ID. Aggregated (one per group and namespace, never one per object) and
bounded (MOST per run). The Events are a report, never part of the free: a refusal (no
`create` on events, a quota, an admission webhook) is one warning and no more Events,
and the run's outcome is the frees'."""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import ApiError, ClusterError
from ..kube.port import Cluster
from ..model import Action, Resource
from ..options import DryRun
from .report import FreedCall

EVENTS = Resource("events.k8s.io", "v1", "events", "Event", namespaced=True)
CONTROLLER = "kubectl-unfinalize"
REASON = "FinalizersRemoved"
ACTION = "RemoveFinalizers"
MOST = 100  # Events per run: a run that freed thousands of groups says the rest in its record
NOTE = 1024  # the API's limit on a note


@dataclass(frozen=True)
class Freed:
    """One freed group in one namespace (None: cluster-scoped): what its Event says."""

    namespace: str | None
    api_version: str
    kind: str
    name: str  # one of the objects freed there: the Event's `regarding`
    count: int
    finalizers: tuple[str, ...]
    resource: str
    verdict: str


def freed_groups(freed: list[FreedCall]) -> Iterator[Freed]:
    """Per call, per group, per namespace: the objects the call unfinalized there."""
    for call in freed:
        if call.report is None:
            continue
        done = [o for o in call.report.outcomes if o.action is Action.UNFINALIZED]
        for group in call.groups:
            by_namespace: dict[str | None, list[str]] = {}
            for outcome in done:
                if outcome.finalizers and group.finalizer not in outcome.finalizers:
                    continue
                if group.namespaced != (outcome.namespace is not None):
                    continue
                if group.namespaced and outcome.namespace not in group.namespaces:
                    continue
                by_namespace.setdefault(outcome.namespace, []).append(outcome.name)
            for namespace, names in by_namespace.items():
                yield Freed(
                    namespace,
                    group.api_version,
                    group.kind,
                    names[0],
                    len(names),
                    tuple(call.finalizers) or (group.finalizer,),
                    group.resource,
                    group.verdict,
                )


def body(freed: Freed, namespace: str, record: str, now: float) -> dict[str, object]:
    regarding = {"apiVersion": freed.api_version, "kind": freed.kind, "name": freed.name}
    if freed.namespace:
        regarding["namespace"] = freed.namespace
    what = f"{freed.count} {freed.resource}" if freed.count > 1 else f"{freed.resource} {freed.name}"
    note = f"removed {', '.join(freed.finalizers)} from {what} (record {record or 'none'}): {freed.verdict}"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{freed.name}.{secrets.token_hex(8)}", "namespace": namespace},
        "eventTime": stamp,
        "type": "Normal",
        "reason": REASON,
        "action": ACTION,
        "reportingController": CONTROLLER,
        "reportingInstance": instance(),
        "regarding": regarding,
        "note": note[:NOTE],
    }


def instance() -> str:
    """This run's place: the janitor's pod (its hostname) or the machine, and the process."""
    return f"{socket.gethostname()}-{os.getpid()}"[:128]


def announce(
    cluster: Cluster,
    freed: list[FreedCall],
    record: str,
    warn: Callable[[str], None],
    clock: Callable[[], float] = time.time,
) -> int:
    """Write the Events of what `freed` did; how many were written. `record`: its ID."""
    written = 0
    for group in freed_groups(freed):
        if written == MOST:
            warn(f"wrote {MOST} Events, the most a run writes: the record lists every freed object")
            break
        namespace = group.namespace or "default"  # a cluster-scoped object's Events are in default
        event = body(group, namespace, record, clock())
        try:
            cluster.create(EVENTS, namespace, event, DryRun.NONE)
        except ApiError as exc:
            why = "may not create events.k8s.io events" if exc.status == 403 else f"was refused ({exc})"
            warn(f"no Event written: this user {why} in namespace {namespace}; the frees are done")
            break
        except ClusterError as exc:
            warn(f"no Event written: {exc}; the frees are done")
            break
        written += 1
    return written
