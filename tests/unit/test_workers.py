"""The engine's threads: bounded jobs in flight, and map() over the same threads."""

import threading
import time

import pytest

from kubectl_unfinalize.engine.workers import Workers


def workers(size=4, limit=4):
    return Workers(size, lambda: limit, lambda latency, counted: None)


def test_map_keeps_the_order_and_runs_on_the_workers_threads():
    pool = workers()
    names = set()

    def slow_square(x):
        names.add(threading.current_thread().name)
        time.sleep(0.01 * (5 - x))  # later items finish first
        return x * x

    try:
        assert pool.map(slow_square, range(5)) == [0, 1, 4, 9, 16]
        assert names and all(name.startswith("unfinalize-") for name in names)
    finally:
        pool.close()


def test_map_raises_the_first_failure_after_every_job_finished():
    pool = workers()
    done = []

    def fail_on_two(x):
        if x == 2:
            raise ValueError("two")
        time.sleep(0.02)
        done.append(x)

    try:
        with pytest.raises(ValueError, match="two"):
            pool.map(fail_on_two, range(4))
        assert sorted(done) == [0, 1, 3]
    finally:
        pool.close()


def test_never_more_jobs_in_flight_than_the_limit():
    pool = workers(size=8, limit=3)
    lock = threading.Lock()
    running, peak = [0], [0]

    def job():
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1

    try:
        for _ in range(20):
            pool.submit(job)
        pool.drain()
        assert peak[0] == 3
    finally:
        pool.close()


def test_read_ahead_fetches_from_the_start_and_stops_when_closed():
    from kubectl_unfinalize.engine.read_ahead import ReadAhead

    fetched = []

    def pages():
        for i in range(1000):
            fetched.append(i)
            yield i

    ahead = ReadAhead(pages())
    deadline = time.monotonic() + 2
    while not fetched and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fetched, "nothing was fetched before the first next()"
    assert next(ahead) == 0
    ahead.close()
    time.sleep(0.7)
    count = len(fetched)
    time.sleep(0.7)
    assert len(fetched) == count < 10
    assert list(ahead) == []


def test_threads_are_started_only_as_the_jobs_in_flight_need_them():
    pool = workers(size=64, limit=64)
    names = set()

    def job():
        names.add(threading.current_thread().name)
        time.sleep(0.05)

    try:
        for _ in range(3):
            pool.submit(job)
        pool.drain()
        for _ in range(2):  # fewer than the threads already there: none is added
            pool.submit(job)
        pool.drain()
        assert len(pool._threads) == 3
        assert names == {"unfinalize-0", "unfinalize-1", "unfinalize-2"}
    finally:
        pool.close()


def test_map_jobs_are_not_counted_as_the_runs_jobs():
    """Progress counts the pass's objects; the preflight's, the CRD deletes' and the
    final check's jobs run on the same threads but showed as 609/600 objects."""
    counted: list[bool] = []
    lock = threading.Lock()

    def on_done(latency, is_counted):
        with lock:
            counted.append(is_counted)

    pool = Workers(4, lambda: 4, on_done)
    try:
        pool.map(lambda x: x, range(3))
        for _ in range(2):
            pool.submit(lambda: None)
        pool.drain()
    finally:
        pool.close()
    assert sorted(counted) == [False, False, False, True, True]


def test_map_waits_for_its_own_jobs_not_for_a_list_page_in_flight():
    # The preflight's reviews are mapped while the first list pages are read ahead, each
    # holding a place: waiting for those too made every first write wait for page two.
    pool = workers(size=4, limit=4)
    page_read = threading.Event()
    holding = threading.Event()

    def read_page():
        with pool.hold():
            holding.set()
            page_read.wait(10)

    reader = threading.Thread(target=read_page, daemon=True)
    reader.start()
    try:
        assert holding.wait(5)
        started = time.monotonic()
        assert pool.map(lambda x: x + 1, [1, 2]) == [2, 3]
        assert time.monotonic() - started < 2, "map() waited for the page in flight"
        assert not page_read.is_set()
        assert pool.map(lambda x: x, []) == []
    finally:
        page_read.set()
        reader.join(5)
        pool.close()


@pytest.mark.parametrize("quickest, freed", [(0.1, 1), (0.002, 16)], ids=["far", "near"])
def test_the_submitter_is_woken_by_one_free_place_far_away_and_a_quarter_of_the_limit_near(quickest, freed):
    # Far, the rate is what is in flight per round trip: waking the submitter only once a
    # quarter of the limit was free kept 3/4 to all of it in flight (15% of the rate), a
    # sixteenth 3% less than each place. Near, the wake-ups' client CPU is what the server
    # competes with: a quarter.
    from kubectl_unfinalize.engine.pacing import Pacing

    limit = 64
    pacing = Pacing(limit, start=limit)
    pacing.completed(quickest)
    pool = Workers(limit + 1, lambda: limit, lambda latency, counted: None, pacing.wake_at)
    gates = [threading.Event() for _ in range(limit)]
    submitted = threading.Event()
    try:
        for gate in gates:
            pool.submit(lambda gate=gate: gate.wait(10))

        def one_more():
            pool.submit(lambda: None)
            submitted.set()

        threading.Thread(target=one_more, daemon=True).start()
        for gate in gates[: freed - 1]:
            gate.set()
        assert not submitted.wait(0.3), f"woken with {freed - 1} free places"
        gates[freed - 1].set()
        assert submitted.wait(5), f"{freed} free places out of 64 did not wake the submitter"
    finally:
        for gate in gates:
            gate.set()
        pool.drain(5)
        pool.close()


def test_a_patch_refused_429_goes_again_before_its_retry_after_once_nothing_else_is_in_flight():
    """At a run's end on a 3-seat level, the last refused patch waited out its second
    of Retry-After with nothing else in flight: the run ended a second late."""
    pool = workers(size=4, limit=4)
    gate, ran = threading.Event(), threading.Event()
    try:
        pool.submit(lambda: gate.wait(10))  # one of the run's requests, still in flight
        with pool._changed:
            pool._inflight += 1  # the refused patch's place, as the bulk sender hands it back
        started = time.monotonic()
        pool.requeue(lambda: ran.set(), wait=5.0)
        assert not ran.wait(0.3), "it went while another request was in flight"
        gate.set()
        assert not ran.wait(0.3), "it went before the pass's end: more may still be submitted"
        draining = threading.Thread(target=pool.drain, args=(5,))
        draining.start()
        assert ran.wait(2), "the pass is ending, nothing else in flight, and it still waited its Retry-After"
        assert time.monotonic() - started < 2.5
        draining.join()
    finally:
        gate.set()
        pool.close()


def test_a_jobs_latency_leaves_out_the_time_it_was_parked():
    """The pacing reads a job's latency as the server's answer time: a second spent waiting
    out a Retry-After counted in read as an overloaded server and halved the limit."""
    latencies = []
    pool = Workers(2, lambda: 2, lambda latency, counted: latencies.append(latency))

    def refused_once():
        with pool.parked():  # as the transport waits out a 429's Retry-After
            time.sleep(0.3)
        time.sleep(0.01)  # the request sent again

    try:
        pool.submit(refused_once)
        with pool._changed:
            pool._inflight += 1  # the refused patch's place, as the bulk sender hands it back
        pool.requeue(lambda: time.sleep(0.01), wait=0.3)  # a patch the bulk sender had answered 429
        time.sleep(0.5)  # both waited out their Retry-After before the pass's end (drain)
        pool.drain(timeout=5)
        assert len(latencies) == 2
        assert all(0.005 < latency < 0.2 for latency in latencies), latencies
    finally:
        pool.close()


class Sender:
    """A bulk sender that only records: what was put (the backlog), and each nudge."""

    def __init__(self):
        self.put_jobs = []
        self.nudged = threading.Event()

    def put(self, job):
        self.put_jobs.append(job)

    def nudge(self):
        self.nudged.set()

    def release(self, timeout=1.0):
        pass

    def close(self):
        pass


def remove_all(name="o"):
    from kubectl_unfinalize.kube.port import RemoveAll
    from kubectl_unfinalize.model import ObjectMeta, ObjectRef, Resource

    ref = ObjectRef(Resource("example.com", "v1", "widgets", "Widget", True), name, "ns")
    return RemoveAll(ObjectMeta(ref, "u", "1", ("x",), False), lambda version: None, lambda sent: None)


def bulk_workers(limit, wake_at=None):
    sender = Sender()
    pool = Workers(limit, lambda: limit, lambda latency, counted: None, wake_at, bulk=lambda sink: sender)
    return pool, sender


def eventually(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_far_away_each_answer_is_refilled_from_the_backlog_and_the_submitter_wakes_once_per_quarter():
    """Far, the submitter was woken at every answer (a thread switch and a wake of the
    sender each: twice a near run's client CPU per object). Now up to two quarters of
    the limit wait at the sender, which fills a freed place itself."""
    limit = 8
    pool, sender = bulk_workers(limit, wake_at=lambda: limit - 1)  # far: Pacing.wake_at
    submitter = threading.Thread(target=lambda: [pool.submit(remove_all(f"o{i}")) for i in range(100)], daemon=True)
    submitter.start()
    try:
        assert eventually(lambda: len(sender.put_jobs) == limit + 4)  # the limit and two refills of 2
        time.sleep(0.1)
        assert len(sender.put_jobs) == limit + 4, "more put than the limit and two refills"
        assert pool.places(limit + 4) == limit, "placed beyond the limit"
        assert pool.in_flight_now() == limit
        pool.finished(time.monotonic())  # one answer
        assert pool.places(1) == 1, "the freed place was not the backlog's at once"
        time.sleep(0.2)
        assert len(sender.put_jobs) == limit + 4, "the submitter was woken for one free place"
        pool.finished(time.monotonic())
        assert pool.places(1) == 1
        pool.finished(time.monotonic())  # the backlog is down to one refill: time to refill it
        assert eventually(lambda: len(sender.put_jobs) == limit + 4 + 3)
    finally:
        while submitter.is_alive():  # let it end: places for all, each answered
            while pool.places(limit):
                pass
            for _ in range(pool.in_flight_now()):
                pool.finished(time.monotonic())
            submitter.join(0.01)
        while pool.places(limit):
            pool.finished(time.monotonic())
        for _ in range(pool.in_flight_now()):
            pool.finished(time.monotonic())
        pool.drain(5)
        pool.close()


def test_a_list_page_waiting_for_a_place_goes_before_the_backlog():
    """The submitter refills the backlog as it drains: a list page's read-ahead behind
    it would wait for the list's end, one round trip per page on a far cluster."""
    pool, sender = bulk_workers(2)
    for i in range(4):
        pool.submit(remove_all(f"o{i}"))  # two placed below, two in the backlog
    assert pool.places(4) == 2
    held = threading.Event()

    def page():
        with pool.hold():
            held.set()

    reader = threading.Thread(target=page, daemon=True)
    reader.start()
    try:
        assert not held.wait(0.2)
        pool.finished(time.monotonic())  # a bulk answer frees a place
        assert pool.places(2) == 0, "the backlog took the place a list page waits for"
        assert held.wait(5), "the list page did not get the freed place"
        reader.join(5)
        assert pool.places(2) == 1  # its place, given back
    finally:
        for _ in range(pool.in_flight_now()):
            pool.finished(time.monotonic())
        while pool.places(2):
            pool.finished(time.monotonic())
        pool.drain(5)
        pool.close()


def test_a_place_freed_on_a_thread_nudges_the_sender_and_drain_waits_for_the_backlog():
    pool, sender = bulk_workers(1)
    gate = threading.Event()
    pool.submit(lambda: gate.wait(10))  # a job on a thread (not a RemoveAll) has the place
    pool.submit(remove_all())
    assert pool.places(1) == 0
    drained = threading.Event()
    threading.Thread(target=lambda: (pool.drain(10), drained.set()), daemon=True).start()
    try:
        gate.set()
        assert sender.nudged.wait(5), "the sender was not told a place is free"
        assert not drained.wait(0.2), "drain() ended with a patch in the backlog"
        assert pool.places(1) == 1
        pool.finished(time.monotonic())
        assert drained.wait(5)
    finally:
        gate.set()
        pool.close()


def test_a_patch_the_sender_never_placed_runs_on_a_thread_when_it_is_returned():
    ran = threading.Event()
    pool, sender = bulk_workers(1)
    job = remove_all()
    pool.submit(job)
    try:
        pool.returned(lambda: ran.set())  # as Bulk hands back what it never sent
        assert ran.wait(5)
        pool.drain(5)
        assert pool.in_flight_now() == 0 and pool.places(1) == 0  # nothing left in the backlog
    finally:
        pool.close()
