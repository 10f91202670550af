"""Threads running one job per object, fed through a queue, with as many jobs in flight
as the pacing allows. A thread is started when the jobs in flight first outnumber the
threads: a small teardown starts a few threads (and opens a few connections), not 64.

A Future per object and concurrent.futures.wait() (which locks every future in flight
on each call) cost more client CPU than the requests themselves; a queue, a counter and
one condition are all the engine needs. The submitter is woken when several places are
free, not after every job: one wake-up refills several slots. How many is the pacing's
to say (`wake_at`): a quarter of the limit near the server, where each wake-up costs
client CPU the server's own work competes with, a sixteenth far away, where the rate is
what is in flight per round trip and a quarter costs a share of it.

A RemoveAll job goes to the bulk sender when the cluster offers one (kube.port), and
ahead of its place: up to two refills wait there (the backlog), and the sender takes a
place for one (places()) as an answer frees it, on its own thread. So far away too the
submitter is woken once per refill, not per answer, with no place left empty meanwhile:
each wake-up had cost a thread switch and a wake of the sender (far, the client CPU per
object was twice a near run's). A request waiting for a place elsewhere (a list page, a
job on a thread) is served before the backlog. What the sender hands back runs here,
still counted in flight.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Protocol, TypeVar, cast

from ..kube.port import BulkSender, RemoveAll, Sink

Job = Callable[[], object]
T = TypeVar("T")
R = TypeVar("R")
REFILL = 4  # the bulk sender's backlog is refilled a quarter of the limit at a time, and holds two refills at most


class Mapper(Protocol):
    """fn over items concurrently, results in order: the engine's workers, or an Executor."""

    def map(self, fn: Callable[[T], R], items: Iterable[T], /) -> Iterable[R]: ...


class Workers:
    def __init__(
        self,
        size: int,
        limit: Callable[[], int],
        on_done: Callable[[float, bool], None],
        wake_at: Callable[[], int] | None = None,
        bulk: Callable[[Sink], BulkSender | None] | None = None,
    ) -> None:
        self._limit = limit
        self._wake_at = wake_at or (lambda: limit() * 3 // 4)  # wake the submitter at this many in flight
        self._on_done = on_done
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._inflight = 0
        self._changed = threading.Condition()
        self._error: BaseException | None = None
        self._size = size
        self._threads: list[threading.Thread] = []  # started as the jobs on threads first need them
        self._on_threads = 0  # jobs queued for the threads and not finished
        self._parked = 0  # jobs waiting out a Retry-After, not counted in flight
        self._thread = threading.local()  # seconds the job on this thread spent parked
        self._draining = False  # drain() waits: no job is submitted meanwhile
        self._backlog = 0  # RemoveAll jobs put to the bulk sender that have no place yet (places())
        self._holding = 0  # callers waiting for a place in _take_place(): served before the backlog
        self._filling = False  # the submitter waits for room in the backlog
        # Where RemoveAll jobs go, when the cluster offers a sender; it answers to these workers.
        self.bulk: BulkSender | None = bulk(self) if bulk is not None else None

    def submit(self, job: Job) -> None:
        """Queue a job once fewer than the pacing's limit are in flight, or a RemoveAll
        once the bulk sender's backlog has room."""
        if self.bulk is not None and isinstance(job, RemoveAll):
            with self._changed:
                self._filling = True
                while self._inflight + self._backlog >= self._limit() + 2 * self._refill():
                    self._changed.wait()
                self._filling = False
                self._backlog += 1
            self.bulk.put(job)
            return
        with self._changed:
            self._take_place(first=False)
        self.requeue(job)

    def places(self, wanted: int) -> int:
        """Places for up to `wanted` jobs of the bulk sender's backlog (Sink): as many as
        the limit has free, less one for each caller waiting for a place elsewhere."""
        with self._changed:
            granted = max(0, min(wanted, self._backlog, self._limit() - self._inflight - self._holding))
            self._inflight += granted
            self._backlog -= granted
            return granted

    def returned(self, job: Job) -> None:
        """A job the bulk sender had no place for and will not send (it stopped, or the
        server cannot be reached): it runs on a thread, counted in flight at once, as push() does."""
        with self._changed:
            self._backlog -= 1
            self._inflight += 1
        self.requeue(job)

    def _refill(self) -> int:
        return max(1, self._limit() // REFILL)

    def _take_place(self, first: bool = True) -> None:
        """Under the condition: wait for a place within the limit, and take it. `first`:
        before the bulk sender's backlog, which the submitter refills meanwhile (a list
        page waiting behind it would wait for the list's end); the submitter's own jobs
        wait their turn, at most the backlog."""
        self._holding += first
        try:
            while self._inflight >= self._limit():
                self._changed.wait()
        finally:
            self._holding -= first
        self._inflight += 1

    def _place_freed(self) -> None:
        """Under the condition, after a place was given up: wake whoever it is for."""
        limit = self._limit()
        if self._holding and self._inflight < limit:
            self._changed.notify_all()
        elif self._filling:
            if self._inflight + self._backlog <= limit + self._refill():
                self._changed.notify_all()
        elif self._inflight <= self._wake_at():
            self._changed.notify_all()

    def _nudge(self) -> None:
        """A place freed off the bulk sender's thread: the sender takes it for its backlog."""
        if self._backlog and self.bulk is not None:
            self.bulk.nudge()

    def push(self, job: Job) -> None:
        """Run `job` without waiting for a place, counted in flight (even above the limit)
        but not in the run's progress: a job that one ending elsewhere starts (a CRD's
        delete, when its last instance is freed), whose thread must not wait on itself."""
        with self._changed:
            self._inflight += 1
        self.requeue(_Uncounted(job))

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """A place within the limit, for a request that is not a job (a page of a list,
        on a thread of its own), so that lists and jobs share one limit; it waits for
        the place as submit() does."""
        with self._changed:
            self._take_place()
        try:
            yield
        finally:
            with self._changed:
                self._inflight -= 1
                self._changed.notify_all()
            self._nudge()

    def requeue(self, job: Job, wait: float = 0.0) -> None:
        """Run `job` on a thread; it is already counted in flight (a patch the bulk
        sender hands back). `wait`: seconds it first waits, parked (a 429's Retry-After)."""
        if wait > 0:
            job = partial(self._after, wait, job)
        with self._changed:
            self._on_threads += 1
            if len(self._threads) < min(self._on_threads, self._size):
                thread = threading.Thread(target=self._work, name=f"unfinalize-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        self._jobs.put(job)

    def finished(self, started: float, counted: bool = True) -> None:
        """A job in flight is done (on a thread, or answered to the bulk sender, which
        fills the place from its backlog itself). `counted`: one of the run's jobs, shown
        in its progress (map()'s are not)."""
        self._on_done(time.monotonic() - started, counted)
        with self._changed:
            self._inflight -= 1
            self._place_freed()

    def in_flight_now(self) -> int:
        """Jobs in flight, less those parked."""
        return self._inflight

    @contextlib.contextmanager
    def parked(self) -> Iterator[None]:
        """On one of these threads, the job gives its place up meanwhile (it waits out a
        Retry-After, the server is not asked) and takes one again, within the limit then
        in force, before it goes on: a refused request delays itself, not the others.
        Elsewhere (the read-ahead, the main thread), nothing."""
        if threading.current_thread() not in self._threads:
            yield
            return
        since = time.monotonic()
        with self._changed:
            self._inflight -= 1
            self._parked += 1
            self._changed.notify_all()
        self._nudge()
        try:
            yield
        finally:
            with self._changed:
                self._take_place()
                self._parked -= 1
            self._thread.parked += time.monotonic() - since

    def _after(self, wait: float, job: Job) -> object:
        """A patch the bulk sender had answered 429 waits its Retry-After, or less at the
        pass's end (drain()) once nothing else is in flight: the seats the run held are
        free then, and a refused patch left at the end cost the run a whole second
        (measured on a 3-seat level). Not before: retried early, the first burst's refusals
        were refused again and cut the limit anew. And only once: refused again, its job
        waits the full Retry-After in the transport."""
        with self.parked(), self._changed:
            self._changed.wait_for(lambda: self._draining and self._inflight == 0, wait)
        return job()

    def failed(self, exc: BaseException) -> None:
        """A bug where jobs run: raised again by drain()."""
        self._error = self._error or exc
        with self._changed:
            self._changed.notify_all()

    def drain(self, timeout: float | None = None) -> None:
        """Wait until every queued job has finished; re-raise a job's bug here."""
        with self._changed:
            self._draining = True  # nothing more is submitted: what is parked may go early (_after)
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: self._inflight == 0 and not self._parked and not self._backlog, timeout)
            finally:
                self._draining = False
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """fn over items on these threads, whose connections are already open (a far
        cluster charges a round trip for a new one); results in order, the first
        exception raised. Waits for these jobs only, not for the others in flight: the
        preflight's reviews, mapped while the first list pages are read ahead, need not
        wait for them (on a far cluster that was a round trip or two before any write)."""
        items = list(items)
        results: list[R | None] = [None] * len(items)
        errors: list[BaseException] = []
        left = len(items)
        done = threading.Condition()

        def one(index: int, item: T) -> None:
            nonlocal left
            try:
                results[index] = fn(item)
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                errors.append(exc)
            finally:
                with done:
                    left -= 1
                    done.notify()

        for index, item in enumerate(items):
            self.submit(_Uncounted(partial(one, index, item)))
        with done:
            done.wait_for(lambda: left == 0)
        if errors:
            raise errors[0]
        return cast(list[R], results)

    def release_connections(self) -> None:
        """Between passes: the bulk sender's idle connections go to the threads that need
        one next."""
        if self.bulk is not None:
            self.bulk.release()

    def close(self) -> None:
        if self.bulk is not None:
            self.bulk.close()
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            started, self._thread.parked = time.monotonic(), 0.0
            try:
                job()  # jobs contain their failures; what escapes is a bug
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                self.failed(exc)
            with self._changed:
                self._on_threads -= 1
            # Its latency leaves out the time parked: a Retry-After is not the server's answer
            # time, and counted in, the first burst's refusals coming back a second later
            # read as an overloaded server and halved the limit twice (a 3-seat level).
            self.finished(started + self._thread.parked, not isinstance(job, _Uncounted))
            self._nudge()


class _Uncounted:
    """A job of map(): it runs like any other but is not one of the run's objects."""

    __slots__ = ("_job",)

    def __init__(self, job: Job) -> None:
        self._job = job

    def __call__(self) -> object:
        return self._job()
