"""The plugin's work on the cluster, through the public API only: a scan that frees what
it judges stuck (`scan(free=True)`, the same code as `kubectl unfinalize scan --free`), and
what came of it kept in a Ledger.

While the session tears down, the work runs on a thread of its own (Teardown): the main
thread is then inside a fixture's teardown, often blocked in `kubectl delete -f crds/`
until the CRDs' objects are gone, and only someone else can free them. It looks every
POLL seconds (more apart when a scan takes long, so a big cluster is not listed back to
back) until the session's teardown is over.

The cluster is the one the connection rules find when the work starts (KUBECONFIG, then
~/.kube/config, then in-cluster), never earlier: cluster fixtures set KUBECONFIG late.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import kubectl_unfinalize

from .. import Action, ClusterError, ConfigError, FreedCall, InputError, ScanReport, UnfinalizeError
from .settings import Settings

POLL = 1.0  # seconds between looks during the teardown, at least
SCAN_TIMEOUT = 30.0  # an unreachable cluster delays the session by at most this, at start and at the end
CALL_TIMEOUT = 60.0  # added to a scan's when it frees
SHOWN = 20  # object names kept per group for the summary


@dataclass
class Freed:
    """What one phase freed of one group (one finalizer on one type)."""

    phase: str
    finalizer: str
    resource: str
    verdict: str  # scan's, when it was freed
    evidence: list[str]
    count: int = 0
    objects: list[str] = field(default_factory=list)  # namespace/name, at most SHOWN

    def add(self, name: str) -> None:
        self.count += 1
        if len(self.objects) < SHOWN:
            self.objects.append(name)


@dataclass
class Ledger:
    """What the plugin did and met, per phase (session start, teardown, session end)."""

    freed: dict[tuple[str, str, str], Freed] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # objects it could not free, calls that failed
    unreachable: dict[str, str] = field(default_factory=dict)  # phase -> why the cluster could not be read
    reached: set[str] = field(default_factory=set)  # phases that read the cluster
    records: list[str] = field(default_factory=list)  # the record of each call that wrote (undo reads them)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def objects_freed(self, *phases: str) -> int:
        return sum(f.count for f in self.freed.values() if not phases or f.phase in phases)

    def record(self, phase: str, scan: ScanReport) -> None:
        with self.lock:
            if scan.record:
                self.records.append(scan.record)
        for call in scan.freed or ():
            self._call(phase, call)

    def _call(self, phase: str, call: FreedCall) -> None:
        report = call.report
        if report is None:
            return
        with self.lock:
            for outcome in report.outcomes:
                name = f"{outcome.namespace}/{outcome.name}" if outcome.namespace else outcome.name
                if outcome.action is Action.UNFINALIZED:
                    for group in call.groups:
                        if group.finalizer in outcome.finalizers:
                            key = (phase, group.finalizer, group.resource)
                            if key not in self.freed:
                                self.freed[key] = Freed(phase, *key[1:], group.verdict, list(group.evidence))
                            self.freed[key].add(name)
                elif outcome.action.is_failure:
                    self.failures.append(f"{outcome.ref} ({outcome.namespace or 'cluster'}): {outcome.message}")
            if report.error or report.timed_out:
                self.failures.append(f"unfinalize {call.resource}: {report.error or 'timed out'}")

    def failed(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def cannot_reach(self, phase: str, exc: UnfinalizeError) -> None:
        with self.lock:
            self.unreachable.setdefault(phase, str(exc))


def look(
    settings: Settings,
    ledger: Ledger,
    phase: str,
    wait: bool = False,
    interrupt: threading.Event | None = None,
    free: bool = False,
) -> ScanReport | None:
    """One scan with the settings' grace (wait: until nothing is pending; free: freeing
    what it judges stuck in the settings' scope, within the session's cap, then scanning
    again); None when the cluster could not be read, which the ledger keeps (not when
    `interrupt` cut it short)."""
    timeout = SCAN_TIMEOUT + (settings.grace if wait else 0.0) + (CALL_TIMEOUT if free else 0.0)
    asked: dict[str, Any] = {}
    if free:
        scope, cap = settings.narrowing, settings.max_objects
        left = None if cap is None else max(0, cap - ledger.objects_freed())
        asked = {"free": True, "namespaces": scope.namespaces, "groups": scope.groups, "finalizers": scope.finalizers}
        asked["max_objects"] = left
    try:
        try:
            report = kubectl_unfinalize.scan(
                grace=settings.grace, wait=wait, timeout=timeout, interrupt=interrupt, **asked
            )
        except InputError as exc:  # the session's cap: nothing was freed; what is held is still worth a look
            if not free:
                raise
            ledger.failed(f"scan --free: not sent, unfinalize_max_objects {settings.max_objects}: {exc}")
            return look(settings, ledger, phase, wait, interrupt)
    except (ConfigError, ClusterError) as exc:
        if interrupt is None or not interrupt.is_set():
            ledger.cannot_reach(phase, exc)
        return None
    except UnfinalizeError as exc:
        ledger.failed(f"scan: {exc}")
        return None
    ledger.reached.add(phase)
    ledger.record(phase, report)
    return report


class Teardown:
    """Looks and frees on a thread from start() until stop(); at most one thread."""

    def __init__(self, settings: Settings, ledger: Ledger) -> None:
        self.settings = settings
        self.ledger = ledger
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="unfinalize-teardown", daemon=True)
            self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(CALL_TIMEOUT + SCAN_TIMEOUT)

    def _run(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                look(self.settings, self.ledger, "teardown", interrupt=self.stopping, free=True)
            except Exception as exc:  # noqa: BLE001 - a thread that dies says nothing: say it in the summary
                self.ledger.failed(f"unexpected {type(exc).__name__} during the teardown: {exc}")
            self.stopping.wait(max(POLL, 3 * (time.monotonic() - started)))
