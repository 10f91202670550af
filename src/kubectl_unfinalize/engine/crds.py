"""Many CRDs as one job (an uninstalled crossplane provider leaves hundreds).

Listing. The instances of several CRDs are listed at once, each list on a thread of its
own (CrdInstances.jobs, with its read-ahead), and their jobs reach the main thread through
one bounded queue as the pages arrive: the frees of one CRD start while others are still
listed, and an empty CRD costs one list in the shadow of the others. At most LISTS lists
are under way, and each page is read holding a place among the requests in flight the
pacing allows (Workers.hold): lists and writes share one limit, so a throttled server
that grants a few seats is asked no more than it grants.

Deleting. With --delete a CRD is deleted as soon as its own list has ended and each of
its instance jobs has finished, every one freed or gone (crd_instances.CrdState.finished):
a CRD with no instances is deleted at once, while the others are still freed. The order
rule holds per CRD: each instance got its deletionTimestamp before its finalizers went,
and a CRD with an instance that could not be freed is not deleted (not in this pass).

Waiting. One metadata-only list of CRDs per poll tells which of those deleted by this
run are still there (the same uid), gone, or re-created (another uid), instead of a GET
per CRD per poll. Their instances are not listed again at every poll. Why that is
enough: when the CRD was deleted every instance listed was gone or going. The API
server's cleanup controller (apiextensions' CRDFinalizer) then first sets the CRD's
Terminating condition (a status write: its resourceVersion changes), and from then on
creates are refused; it deletes every instance left (a DeleteCollection per namespace)
and lists them at once: with nothing holding them, the CRD goes within that round. What
can hold it is an instance the run did not see: created between its list and the
moment the controller began (creates are still accepted until then), or one whose
finalizer the run could not know of; the controller then polls every 5 s. So a CRD
whose controller has been at work on it for RELIST_AFTER seconds (its resourceVersion
changed since the DELETE's answer) and that is still there has its instances listed and
freed again, once: caught before the controller's next poll, and since creates are
refused from then on, no later list could find more (it is listed again only while some
of them could not be freed). A
CRD the controller has not reached yet (hundreds deleted at once queue up behind its 5
workers) is not re-listed: objects may still be created until it begins, and a list
then would have to be repeated anyway. When that work is never seen (another server),
UNSEEN_AFTER seconds after the DELETE stand for it.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Generator
from functools import partial

from ..durations import ago, format_seconds
from ..errors import UnfinalizeError
from ..kube.paging import ListQuery
from ..model import CRD, CRD_RESOURCE, STILL_BLOCKING, Action, ObjectMeta, crd_ref
from .context import RunContext
from .crd_instances import CrdInstances, CrdState
from .workers import Job, Workers

LISTS = 16  # CRD instance lists under way at once, at most (a list of 3 objects takes a round trip as a write does)
QUEUED = 1000  # jobs listed ahead of the workers, at most (the lists wait meanwhile)
RELIST_AFTER = 3.0  # seconds of the cleanup controller's work before a CRD still there has its instances listed again
UNSEEN_AFTER = 10.0  # the same, from its DELETE, when that work is never seen
ONE_LIST_FROM = 2  # CRDs waited on: from this many, one list of CRDs instead of a GET each
# What the API server's cleanup takes per deleted CRD, one after another: its storage torn
# down, discovery and the OpenAPI documents rebuilt. A provider's CRDs (tens of KB of schema
# each) went at 0.16 s each on a quiet machine, 0.4-0.6 s on a busy 2-core one.
CLEANUP_SECONDS = 0.3
WATCH_SECONDS = 1  # the longest one watch for deleted CRDs lasts; it ends as soon as they are all gone

_END = object()


class CrdPass:
    """The CRDs' part of each pass: construct once per run."""

    def __init__(self, run: RunContext, instances: CrdInstances, workers: Workers) -> None:
        self.run = run
        self.instances = instances
        self.workers = workers
        self._watching = True  # until a watch could not tell: then the loop polls

    def wait_gone(self, states: list[CrdState]) -> bool | None:
        """Between passes, when what is left is CRDs this run deleted: wait for them by a
        watch, which ends the moment the last one goes (a poll came up to a poll interval
        late, a large share of a small teardown), or after WATCH_SECONDS, when the loop
        goes on as after a poll. From the resourceVersion of the earliest DELETE's answer:
        each CRD goes after its own DELETE, so every deletion, even one before the watch
        began, is in its history. True when every one went, with the uid this run deleted:
        the DELETED events are the server's word, and no read follows (a round trip, on a
        far cluster); False when some may be left, for the loop to read. None when the
        loop must sleep instead: some were not deleted, or a watch could not tell (its
        history was gone, another server refused it), which stops the watching for the run."""
        deleted = [s for s in states if s.uid and s.version]
        if not self._watching or not deleted or len(deleted) < len(states):
            return None
        since = min(deleted, key=lambda s: s.deleted_at).version
        uids = {s.crd.name: s.uid or "" for s in deleted}
        went = self.run.cluster.all_deleted(CRD_RESOURCE, uids, since, WATCH_SECONDS)
        if went is None:
            self._watching = False
        return went

    def jobs(self, states: list[CrdState]) -> Generator[Job, None, None]:
        """On the main thread: every instance job of `states`, as their lists bring them.
        A failure of the listing threads (the preflight's refusal, a bug) is raised here;
        closing this iterator (the deadline, an interrupt) stops the lists."""
        if not states:
            return
        todo = iter(states)
        take = threading.Lock()
        feed: queue.Queue[object] = queue.Queue(QUEUED)
        stop = threading.Event()
        for state in states:
            state.begin(self._settled if self.run.options.delete else None)

        def put(item: object) -> bool:
            while not stop.is_set():
                try:
                    feed.put(item, timeout=0.2)
                    return True
                except queue.Full:
                    continue
            return False

        def lister() -> None:
            try:
                while not stop.is_set():
                    with take:
                        state = next(todo, None)
                    if state is None:
                        break
                    self._list(state, put, stop)
            except BaseException as exc:  # noqa: BLE001 - raised again on the main thread
                put(exc)
            put(_END)

        threads = min(LISTS, len(states))
        for i in range(threads):
            threading.Thread(target=lister, name=f"unfinalize-list-{i}", daemon=True).start()
        ended = 0
        try:
            while ended < threads:
                item = feed.get()
                if item is _END:
                    ended += 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item  # type: ignore[misc]
        finally:
            stop.set()

    def _list(self, state: CrdState, put: Callable[[object], bool], stop: threading.Event) -> None:
        jobs = self.instances.jobs(state, self.workers.hold)
        try:
            for job in jobs:
                if not put(job):
                    state.finished(failed=True)  # never to run: the CRD is not deleted this pass
                    return
        finally:
            jobs.close()
        if not stop.is_set():
            state.ended()

    def _settled(self, state: CrdState) -> None:
        """Its list ended and each of its jobs finished: delete it now when they all went well."""
        if state.ready:
            self.workers.push(partial(self._delete, state))

    def _delete(self, state: CrdState) -> None:
        state.deleted_at, state.relist_every = time.monotonic(), RELIST_AFTER
        self.instances.delete(state)

    def still_there(self, states: list[CrdState]) -> list[CrdState]:
        """Of the CRDs this run deleted, those still there with the uid it deleted; one list
        of CRDs (metadata only) for them all, or a GET for a single one. A CRD re-created
        meanwhile is reported, not waited on. A resourceVersion other than the DELETE's
        answer's says the cleanup controller has begun (due() counts from then). When the
        reads fail, all are kept: the next poll asks again, and the deadline bounds it."""
        deleted = [s for s in states if s.uid]
        try:
            found = self._read(deleted)
        except UnfinalizeError:
            return deleted
        now = time.monotonic()
        kept = []
        for state in deleted:
            meta = found.get(state.crd.name)
            if meta is None:
                continue
            if meta.uid != state.uid:
                message = f"deleted, then re-created (new uid {meta.uid})"
                self.run.book.add(crd_ref(state.crd.name), Action.RECREATED, message=message)
                continue
            if state.began is None and meta.resource_version != state.version:
                state.began = now
            kept.append(state)
        return kept

    def _read(self, states: list[CrdState]) -> dict[str, ObjectMeta]:
        if len(states) < ONE_LIST_FROM:
            metas = [self.run.cluster.get_meta(crd_ref(s.crd.name)) for s in states]
            return {m.ref.name: m for m in metas if m is not None}
        query = ListQuery(limit=self.run.options.chunk_size)
        return {meta.ref.name: meta for page in self.run.cluster.list_meta(CRD_RESOURCE, query) for meta in page}

    def left_at_deadline(self, states: list[CrdState], why: str) -> list[CRD]:
        """What the deadline left of the CRDs, said from what the run knows: one not deleted
        (--delete: some of its objects could not be freed) is still blocking; one deleted
        with every instance freed of every finalizer is `deleting`, not a failure: only the
        API server's cleanup keeps it, and it goes on its own (a provider's hundreds queue
        there, and reading each one again would only say so, or run out of time). The CRDs
        whose blocking only a read can tell are returned."""
        unknown = []
        now = time.monotonic()
        for state in states:
            if self.run.options.delete and state.uid is None:
                message = f"{why}: not deleted"
                if state.blocked:
                    message += f", because {state.blocked} of its objects could not be freed"
            elif state.uid and not state.blocked and state.listed and not state.kept:
                cleanup = f"at work for {ago(now - state.began)}" if state.began is not None else "not at it yet"
                message = (
                    f"deleted {ago(now - state.deleted_at)} ago with every instance freed;"
                    f" the API server's cleanup is {cleanup} (it removes deleted CRDs a few at a time)"
                )
                self.run.book.add(crd_ref(state.crd.name), Action.DELETING, message=message, aspect=STILL_BLOCKING)
                continue
            else:
                unknown.append(state.crd)
                continue
            self.run.book.add(crd_ref(state.crd.name), Action.BLOCKING, message=message, aspect=STILL_BLOCKING)
        return unknown


def due(state: CrdState, now: float, seen: bool = False) -> bool:
    """Whether this pass lists the CRD's instances: always before it is deleted. Once
    deleted, once more when the cleanup controller has been at work on it for
    RELIST_AFTER seconds and it is still there: from then on no instance can be created,
    so that list sees every one that can hold it, and the CRD is listed again only while
    some of them could not be freed. When that work is never seen (another server),
    UNSEEN_AFTER seconds after its DELETE, then at doubling intervals; but not while it
    waits its turn and the controller was `seen` at work on others of the run's CRDs
    (a provider's hundreds queue behind its few workers: listing each of them every few
    seconds meanwhile only loaded the server that was cleaning up)."""
    if state.uid is None:
        return True
    if state.began is None and seen:
        return False
    if state.began is None:
        start = state.deleted_at + UNSEEN_AFTER
    elif not state.final_list:
        start = state.began + RELIST_AFTER
    elif state.blocked:
        start = state.relist_at
    else:
        return False
    if now < max(start, state.relist_at):
        return False
    state.final_list = state.began is not None
    state.relist_at = now + state.relist_every
    state.relist_every *= 2
    return True


def too_long(crds: int, timeout: float) -> str:
    """What to say before a run that waits for `crds` deleted CRDs when the API server's
    cleanup of them alone would take longer than `timeout`; "" when it fits."""
    needed = crds * CLEANUP_SECONDS
    if needed <= timeout:
        return ""
    return (
        f"deleting {crds} CRDs takes the API server about {math.ceil(needed / 60)}m (it removes them one after"
        f" another); --timeout {format_seconds(timeout)} may end first: --timeout {math.ceil(2 * needed / 60)}m"
        " would cover a busy server"
    )
