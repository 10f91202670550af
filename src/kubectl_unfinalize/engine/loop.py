"""The loop: the order of the sweeps, bounded concurrent jobs, waiting by uid until what was
deleted is gone, what to say when the deadline passes. Returns a Report; never prints.

Each sweep owns one kind of target (crd_instances, namespace_sweep, object_sweep); freeing
does the writes. With --delete, namespaces are deleted first, CRD instances and manifest
objects are deleted as they are freed, and a CRD once its instances are gone or going;
the loop then re-lists until everything deleted is gone (comparing uids) or the deadline
passes, catching objects created or cascade-deleted meanwhile. Many CRDs are one job
(crds): their lists run at once, each CRD is deleted as soon as its own instances are
done, and the wait reads them all with one list of CRDs per poll.

Containment: what fails on one object or CRD becomes its outcome and the rest goes on; run()
raises only for a permission missing before the first write. Credentials rejected for good
end the deadline (kube.transport); the Report's stopped_by says so beside what was done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial

from .. import finalizers
from ..deadline import Deadline
from ..errors import UnfinalizeError
from ..journal import NO_JOURNAL, Journal
from ..kube.port import Cluster, PlumbedCluster
from ..model import Action, ObjectRef, Progress, Report, Targets, namespace_ref
from ..options import DryRun, Options
from . import dependents, diagnose, lasting, namespace_reads, object_sweep
from .admission import Admission
from .background import Gate
from .cap import Cap, over_cap
from .context import RunContext
from .crd_instances import CrdInstances, CrdState
from .crds import CLEANUP_SECONDS, CrdPass, due, too_long
from .final_check import FinalCheck
from .freeing import Freer
from .lost_pods import LostPods
from .namespace_sweep import NamespaceState, NamespaceSweep
from .object_sweep import ObjectState, ObjectSweep
from .outcomes import OutcomeBook, OutcomeListener
from .pacing import START, Pacing
from .preflight import ask_ahead, preflight
from .revival import Revivals
from .sightings import Sightings
from .unreadable import Unreadable
from .workers import Workers
from .writes import Writes

DIAGNOSIS_GRACE = 5.0  # the deadline has passed; reading what blocks gets this much more
FIRST_POLL = 0.01  # a small teardown's CRD is often gone within tens of ms; doubling reaches --poll soon

ProgressListener = Callable[[Progress], None]


@dataclass
class _Targets:
    """What is still pending, by kind."""

    crds: list[CrdState]
    objects: list[ObjectState]
    spaces: list[NamespaceState]

    def __bool__(self) -> bool:
        return bool(self.crds or self.objects or self.spaces)


class Engine:
    """One run: construct, call run() once."""

    def __init__(
        self,
        cluster: PlumbedCluster,
        options: Options,
        deadline: Deadline,
        on_outcome: OutcomeListener | None = None,
        on_progress: ProgressListener | None = None,
        retain: bool = True,
        on_warning: Callable[[str], None] | None = None,
        journal: Journal = NO_JOURNAL,
        judge: dependents.Judge | None = None,  # --with-dependents: which of a dependent's finalizers may go
    ) -> None:
        self.cluster = cluster
        self._judge = judge
        self.options = options
        self.deadline = deadline
        self.book = OutcomeBook(options.dry_run, on_outcome, retain)
        self.cap = Cap(options.max_objects)
        writes = Writes(cluster, journal, self.cap)  # every write: capped, recorded (and guarded)
        self.admission = Admission(cluster, writes, options, self.book)
        self._context = run = RunContext(cluster, writes.guarded(self.admission), options, self.book, deadline)
        self.sightings = Sightings()
        self.gate = Gate()  # started by run(): the RBAC preflight
        self.revivals = Revivals(run, warn := on_warning or (lambda _: None))
        self.freer = Freer(run, self.admission, self.sightings, self.revivals, self.gate)
        self._writes_through = partial(Writes, journal=journal, cap=self.cap)  # a created namespace's deletes
        unreadable, lost = Unreadable(run, warn), LostPods(run, warn)
        self.namespaces = NamespaceSweep(run, self.freer, self.sightings, unreadable, lost)
        self.objects = ObjectSweep(run, self.freer, unreadable, lost)
        start = options.concurrency if cluster.far() else START
        # a refusal's cut starts there
        self.pacing = Pacing(options.concurrency, start, load=lambda: self.workers.in_flight_now())
        bulk_only = self.freer.bulk_writes and not options.delete  # --delete: most writes go to the workers
        self.workers = Workers(
            options.concurrency,
            lambda: self.pacing.limit,
            self._job_done,
            self.pacing.wake_at,
            bulk=partial(cluster.bulk, cap=options.concurrency, warm=self.pacing.limit if bulk_only else 0),
        )
        self.crds = CrdPass(run, CrdInstances(run, self.freer, self.sightings, unreadable), self.workers)
        cluster.pace(self.pacing.refused, self.workers.parked)
        self._on_progress = on_progress  # None: a -q run, the API without one
        self._on_warning = on_warning or (lambda _: None)
        self._done = self._total = 0
        self._crds: list[CrdState] = []  # every CRD of the run, for the progress of their deletion

    @staticmethod
    def prepare(cluster: Cluster, options: Options, declared: Targets) -> None:
        """Before the targets are resolved: start the RBAC reviews the run will ask first,
        for the CRDs `declared` (named or in manifests, not read yet), so that they are
        answered while the CRDs are read."""
        ask_ahead(cluster, declared, options)

    def run(self, targets: Targets, skipped: Iterable[str] = ()) -> Report:
        """Free (and delete) `targets`; `on_warning` is told first when the timeout looks
        too short for the API server to remove the CRDs to delete (a provider's hundreds)."""
        options = self.options
        if options.delete and options.wait and options.dry_run is DryRun.NONE:
            if warning := too_long(len(targets.crds), options.deadline_seconds):
                self._on_warning(warning)
        over_cap(self.cluster, [(options, targets)], options.max_objects, "this run")  # before the first write
        started = time.monotonic()
        report = Report(dry_run=self.options.dry_run, skipped=list(skipped))
        pending = _Targets(
            [CrdState(c) for c in targets.crds],
            [ObjectState(r) for r in targets.objects],
            [NamespaceState(n) for n in targets.namespaces],
        )
        self._crds = pending.crds if self.options.delete else []
        self.cluster.hand_over()  # the first list takes this thread's connection: no new handshake
        try:
            # The reviews are answered while the first list page is read; nothing is
            # written, nor reported, before they passed (Freer.cleared).
            self.gate.start(preflight, self.cluster, targets, self.options, self.workers)
            self._run(pending, report)
            again = {
                n: NamespaceState(n, uid)
                for n, uid in self.revivals.delete_again(lambda: self._writes_through(self.cluster))
            }
            self.revivals.sweep(
                list(again),
                self.cluster,
                self.deadline,
                lambda left: self._pass(_Targets([], [], [again[n] for n in left])),
            )
        except KeyboardInterrupt:
            report.interrupted = True
        finally:
            grace = partial(self.cluster.bounded, Deadline(DIAGNOSIS_GRACE))  # made only if a namespace was created
            self.revivals.delete_again(lambda: self._writes_through(grace()))  # what this run created never stays
            self.workers.close()
            self.namespaces.close(wait=not report.interrupted)
            self.revivals.report(grace)
        report.outcomes = self.book.outcomes()
        report.counts = self.book.counts
        report.scanned = len(self.sightings.seen)
        report.cleanup_seconds = self.book.counts[Action.DELETING] * CLEANUP_SECONDS
        report.seconds = time.monotonic() - started
        report.skipped += [namespace_ref(name).display for name in self.namespaces.missing]
        report.skipped += [f"{gv} unavailable" for gv in self.namespaces.unavailable]
        return report

    def _run(self, pending: _Targets, report: Report) -> None:
        options = self.options
        waiting = options.delete and options.wait and options.dry_run is DryRun.NONE
        if options.delete and pending.spaces:
            self.freer.cleared()
            self.namespaces.delete(pending.spaces)
        if options.delete and (first := object_sweep.blockers(pending.objects)):
            self.freer.cleared()  # -f webhook configurations and APIServices would refuse or hide the rest
            self.objects.delete_first(first)
        poll = FIRST_POLL
        while True:
            if not self._pass(pending):
                report.timed_out = True
                break
            if not waiting:
                break
            pending = self._unheld(pending)
            went = None if pending.objects or pending.spaces else self.crds.wait_gone(pending.crds)
            pending = _Targets([], [], []) if went else self._still_there(pending)
            self._progress(pending.crds)
            if not pending:
                return
            if self.deadline.expired():
                report.timed_out = True
                break
            if went is None:
                time.sleep(min(poll, self.deadline.remaining()))
                poll = min(poll * 2, options.poll)
        if report.timed_out and self.deadline.cause is not None:  # nothing more can be asked: no diagnosis
            report.timed_out, report.stopped_by, report.error = False, self.deadline.cause, str(self.deadline.cause)
        elif report.timed_out and self.deadline.interrupted:
            report.timed_out, report.interrupted = False, True
        elif report.timed_out:
            self._diagnose(pending, "timed out")
        elif not options.delete and options.dry_run is DryRun.NONE:
            self._final_check(pending, report)

    def _unheld(self, pending: _Targets) -> _Targets:
        """What is still worth waiting on, as far as the run knows without a read: not a
        lasting refusal, not held by what the run could not free."""
        return _Targets(
            [
                c
                for c in pending.crds
                if not c.refused and not lasting.crd_held(self.admission, self.freer, self.book, c) and c.uid != ""
            ],
            [o for o in pending.objects if o.uid and not lasting.object_held(self.admission, self.freer, o)],
            [n for n in pending.spaces if n.uid and not lasting.namespace_held(self.admission, self.book, n)],
        )

    def _still_there(self, pending: _Targets) -> _Targets:
        """Of what _unheld() kept, what a read still finds with the uid this run deleted."""
        exists = self._exists
        there = self.crds.still_there(pending.crds)  # one list of CRDs for them all
        return _Targets(
            [c for c in pending.crds if c.uid is None or c in there],
            [o for o in pending.objects if o.uid and exists(o.ref, o.uid)],
            [n for n in pending.spaces if n.uid and exists(namespace_ref(n.name), n.uid)],
        )

    def _exists(self, ref: ObjectRef, uid: str) -> bool:
        """Still there with the uid this run deleted; a re-created object is reported,
        not waited on (kubectl's wait compares uids the same way)."""
        try:
            meta = self.cluster.get_meta(ref)
        except UnfinalizeError:
            return True  # cannot tell now; the next round asks again, the deadline bounds it
        if meta is None:
            return False
        if meta.uid != uid:
            self.book.add(ref, Action.RECREATED, message=f"deleted, then re-created (new uid {meta.uid})")
            return False
        return True

    def _pass(self, pending: _Targets) -> bool:
        """One sweep over every target, as many jobs in flight as the pacing allows;
        False when the deadline cut it short."""
        now = time.monotonic()
        seen = any(c.began is not None for c in self._crds)  # the cleanup controller at work on one of them
        listing = [c for c in pending.crds if due(c, now, seen)]  # a deleted CRD only when overdue
        self.namespaces.begin_pass()
        self.admission.begin_pass()
        self.freer.begin_pass()
        for job in self._jobs(pending, listing):
            if self.deadline.expired():
                break
            self._total += 1
            self.workers.submit(job)
            self._progress(pending.crds)
        self.workers.drain()
        self._progress(pending.crds)
        if self.deadline.expired():
            return False
        for crd in listing:
            crd.blocked = crd.counting
        return True

    def _jobs(self, pending: _Targets, crds: list[CrdState]) -> Iterator[Callable[[], object]]:
        # Each CRD is deleted as soon as its instances are done (crds); the lists
        # wait for the preflight once under way.
        jobs = self.crds.jobs(crds)
        try:
            yield from jobs
        finally:
            jobs.close()  # the deadline or an interrupt: stop the lists
        self.freer.cleared()
        for space in pending.spaces:
            yield from self.namespaces.jobs(space)
        for obj in pending.objects:
            yield self.objects.job(obj)

    def _progress(self, there: list[CrdState]) -> None:
        """Objects done of those found; with --delete, the CRDs deleted and gone too (`there`:
        the CRDs not known to be gone yet). A provider's hundreds of CRDs take longer than
        their objects: the line would otherwise stand still while the API server cleans up."""
        if self._on_progress is not None:  # None: no counts are built
            deleted = sum(1 for c in self._crds if c.uid is not None)
            gone = deleted - sum(1 for c in there if c.uid) if self._crds else 0
            self._on_progress(Progress("unfinalize", self._done, self._total, len(self._crds), deleted, gone))

    def _job_done(self, latency: float, counted: bool) -> None:
        """On a worker, after each job (the preflight's, CRD deletes' and final lists'
        are not the pass's objects: not counted in its progress)."""
        self.pacing.completed(latency)
        if counted:
            self._done += 1  # read only for progress: an occasional lost count is harmless

    def _final_check(self, pending: _Targets, report: Report) -> None:
        self.workers.release_connections()  # its lists run on the workers' threads
        try:
            check = FinalCheck(self.cluster, self.options, self.book, self.sightings, self.workers)
            crds = [state.crd.resource for state in pending.crds]
            check.run(crds, self.namespaces.live_lists, [o.ref for o in pending.objects])
            dependents.settle(self._context, self.admission, self.sightings, self.revivals, self.gate, self._judge)
        except UnfinalizeError as exc:
            report.error = f"cannot check whether finalizers came back: {exc}"
        terminating = [n for n in pending.spaces if n.terminating]
        if terminating and self.namespaces.unavailable:  # the namespace controller cannot finish on its own
            self._diagnose(_Targets([], [], terminating), "not finished")

    def _diagnose(self, pending: _Targets, why: str) -> None:
        grace = self.cluster.bounded(Deadline(DIAGNOSIS_GRACE))
        if pending.spaces:
            held = [n.name for n in pending.spaces]
            down = bool(self.namespaces.unavailable) and namespace_reads.report_apiservices(grace, self.book, held, why)
            for space in pending.spaces:
                namespace_reads.blocking(grace, self.book, space.name, space.contents, down, why)
                for meta in space.held:  # what the tool leaves to Kubernetes' own controllers
                    message = f"{why}: {finalizers.blocker(meta.finalizers) or f'finalizers {list(meta.finalizers)}'}"
                    self.book.of(meta, Action.BLOCKING, meta.finalizers, message)
        crds = [c for c in pending.crds if not c.refused]  # a lasting refusal is its CRD's one failure already
        unknown = self.crds.left_at_deadline(crds, why)
        diagnose.blocking(grace, self.options, self.book, unknown, [o.ref for o in pending.objects], why)
