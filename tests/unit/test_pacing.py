"""How many requests the engine keeps in flight: slow start, the overload cut, and the
refusals (429) it settles on; then the whole loop against a simulated priority level."""

import heapq
import itertools

import pytest

from kubectl_unfinalize.engine.pacing import FIRST_HOLD, MAX_HOLD, Pacing


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float = 0.001) -> float:
        self.now += seconds
        return self.now


def feed(pacing, latency, rounds=1):
    for _ in range(rounds):
        for _ in range(pacing.limit):
            pacing.completed(latency)


class InFlight:
    """The workers' count of requests in flight, as a test sets it."""

    def __init__(self, value: int = 0) -> None:
        self.value = value

    def __call__(self) -> int:
        return self.value


def paced(cap=64, start=32, in_flight=None):
    clock = Clock()
    load = InFlight(in_flight) if isinstance(in_flight, int) else in_flight
    pacing = Pacing(cap=cap, start=start, clock=clock, load=load)
    return pacing, clock


def test_a_far_cluster_with_steady_latency_fills_the_pipe_up_to_the_cap():
    pacing, _ = paced(start=8)
    limits = []
    for _ in range(6):
        feed(pacing, 0.1)
        limits.append(pacing.limit)
    assert limits == [16, 32, 64, 64, 64, 64]


def test_an_overloaded_server_halves_the_limit_then_it_grows_one_per_round_trip():
    pacing, _ = paced(start=8)
    feed(pacing, 0.05, rounds=2)
    assert pacing.limit == 32
    feed(pacing, 0.4)  # a busy server's latency moves with what is in flight: no cut
    assert pacing.limit == 64
    feed(pacing, 2.0)  # seconds per request: overloaded
    assert pacing.limit == 32
    feed(pacing, 0.05, rounds=2)
    assert pacing.limit == 34


def test_one_burst_of_refusals_settles_the_limit_on_what_the_server_granted():
    """32 in flight, 3 seats: 29 refusals of requests sent before the first of them came
    back. One cut, counted down to 3, not 32 -> 16 -> 8 -> 4 -> 2 one refusal at a time."""
    pacing, clock = paced(in_flight=32)
    sent = clock.now
    clock.tick()
    pacing.refused(sent)
    assert pacing.limit == 31 and pacing.ceiling == 32
    for _ in range(28):
        clock.tick()
        pacing.refused(sent)
    assert pacing.limit == 3
    assert pacing.ceiling == 32


def test_the_cut_starts_from_what_was_in_flight_not_from_the_limit():
    pacing, clock = paced(in_flight=5)  # the limit is 32, but the run has only 5 to send
    sent = clock.now
    clock.tick()
    pacing.refused(sent)
    assert pacing.limit == 4 and pacing.ceiling == 5


def test_only_a_refusal_of_a_request_sent_after_the_last_cut_is_a_new_cut():
    in_flight = InFlight(8)
    pacing, clock = paced(in_flight=in_flight)
    first = clock.now
    clock.tick()
    pacing.refused(first)  # cut 1: 8 in flight -> 7, ceiling 8
    assert (pacing.limit, pacing.ceiling) == (7, 8)
    second = clock.tick()
    clock.tick()
    in_flight.value = 6
    pacing.refused(second)  # sent after cut 1: a new signal, cut 2 from what is in flight now
    assert (pacing.limit, pacing.ceiling) == (5, 6)
    clock.tick()
    pacing.refused(first)  # sent before cut 2: no new cut, no new ceiling, one fewer granted
    pacing.refused(second)
    assert (pacing.limit, pacing.ceiling) == (3, 6)


def test_growth_holds_just_under_the_ceiling_and_tries_it_less_often_each_time_it_is_refused():
    in_flight = InFlight(4)
    pacing, clock = paced(in_flight=in_flight)
    clock.tick()
    pacing.refused(clock.now - 0.0005)  # refused at 4
    assert (pacing.limit, pacing.ceiling) == (3, 4)
    holds = []
    for _ in range(4):
        rounds = 0
        while pacing.limit < 4:
            feed(pacing, 0.01)
            rounds += 1
        holds.append(rounds)
        clock.tick()
        pacing.refused(clock.now - 0.0005)  # the try at 4 is refused again
        assert (pacing.limit, pacing.ceiling) == (3, 4)
    assert holds == [FIRST_HOLD, 2 * FIRST_HOLD, 4 * FIRST_HOLD, 8 * FIRST_HOLD]


def refused_at(pacing, clock, in_flight: InFlight, level: int) -> int:
    """Grow to `level` (round trips at 10 ms), then a request sent there is refused;
    returns the round trips it took."""
    rounds = 0
    while pacing.limit < level:
        feed(pacing, 0.01)
        rounds += 1
    in_flight.value = level
    sent = clock.tick()
    clock.tick()
    pacing.refused(sent)
    return rounds


def test_the_hold_stays_bounded_and_a_ceiling_the_server_now_grants_is_passed():
    in_flight = InFlight()
    pacing, clock = paced(in_flight=in_flight)
    refused_at(pacing, clock, in_flight, 4)
    holds = [refused_at(pacing, clock, in_flight, 4) for _ in range(10)]
    assert max(holds) == MAX_HOLD and pacing.limit == 3
    feed(pacing, 0.01, rounds=MAX_HOLD)
    assert pacing.limit == 4  # tried again after MAX_HOLD round trips
    feed(pacing, 0.01, rounds=3)  # granted now: growth goes on past it
    assert pacing.limit == 7


def test_a_refusal_below_the_ceiling_makes_the_next_try_come_soon():
    in_flight = InFlight()
    pacing, clock = paced(in_flight=in_flight)
    for _ in range(5):  # the try at 4 refused again and again: a long hold
        refused_at(pacing, clock, in_flight, 4)
    refused_at(pacing, clock, in_flight, 3)  # then refused at 3: another request took a seat for a while
    assert (pacing.limit, pacing.ceiling) == (2, 3)
    assert refused_at(pacing, clock, in_flight, 3) == FIRST_HOLD


def test_the_cap_and_the_floor_hold():
    pacing, clock = paced(cap=4, start=8, in_flight=1)
    assert pacing.limit == 4
    for _ in range(10):
        sent = clock.tick()
        clock.tick()
        pacing.refused(sent)
    assert pacing.limit == 1
    feed(pacing, 0.01, rounds=100)
    assert pacing.limit == 4


def simulate(seats: int, jobs: int, cap: int = 64, service: float = 0.01, rtt: float = 0.001):
    """A priority level of `seats` that answers 429 (Retry-After: 1) to what finds them all
    taken, each request holding a seat for `service` seconds, `rtt` away; the client keeps
    `limit` requests in flight, and a refused one waits a second without its place, as
    the workers do. Returns (seconds, refusals, mean limit over the requests sent)."""
    clock = Clock()
    start = clock.now
    state = {"in_flight": 0, "busy": 0, "fresh": jobs, "ready": 0, "refusals": 0, "done": 0}
    pacing = Pacing(cap, clock=clock, load=lambda: state["in_flight"])
    order = itertools.count()
    events: list[tuple[float, int, str, float]] = []
    limits = []

    def push(at: float, kind: str, sent: float) -> None:
        heapq.heappush(events, (at, next(order), kind, sent))

    def fill() -> None:
        while state["in_flight"] < pacing.limit and (state["ready"] or state["fresh"]):
            state["ready" if state["ready"] else "fresh"] -= 1
            state["in_flight"] += 1
            limits.append(pacing.limit)
            push(clock.now + rtt / 2, "arrive", clock.now)

    fill()
    while events:
        clock.now, _, kind, sent = heapq.heappop(events)
        if kind == "arrive" and state["busy"] < seats:
            state["busy"] += 1
            push(clock.now + service, "served", sent)
        elif kind == "arrive":
            push(clock.now + rtt / 2, "refused", sent)
        elif kind == "served":
            state["busy"] -= 1
            push(clock.now + rtt / 2, "answered", sent)
        elif kind == "answered":
            state["in_flight"] -= 1
            state["done"] += 1
            pacing.completed(clock.now - sent)
        elif kind == "refused":
            pacing.refused(sent)  # still in flight, as a refused job is until it parks
            state["in_flight"] -= 1
            state["refusals"] += 1
            push(clock.now + 1.0, "retry", sent)
        else:
            state["ready"] += 1
        fill()
    assert state["done"] == jobs
    return clock.now - start, state["refusals"], sum(limits) / len(limits)


def test_a_three_seat_level_is_used_without_a_storm_of_refusals_or_a_collapse():
    seconds, refusals, mean_limit = simulate(seats=3, jobs=2000)
    ideal = 2000 * 0.01 / 3
    assert seconds < 1.25 * ideal  # the seats are kept busy: no collapse to 1 or 2
    assert refusals < 100  # the burst that finds the seats, then a try now and then
    assert 2.5 < mean_limit < 4


def test_a_larger_level_and_a_far_unthrottled_server_are_filled_too():
    seconds, refusals, _ = simulate(seats=20, jobs=4000)
    assert seconds < 1.25 * 4000 * 0.01 / 20 and refusals < 200
    seconds, refusals, mean_limit = simulate(seats=1000, jobs=4000, rtt=0.1)
    assert refusals == 0 and mean_limit > 60


@pytest.mark.parametrize("far, start", [(False, 32), (True, 64)], ids=["near", "far"])
def test_a_far_run_starts_at_the_cap(far, start):
    """Far, each doubling of slow start is a round trip of the run (0.3 s at +150 ms);
    a refusal burst at the cap settles the limit as one at 32 does."""
    from fakecluster import FakeCluster

    from kubectl_unfinalize.deadline import Deadline
    from kubectl_unfinalize.engine import Engine
    from kubectl_unfinalize.options import Options

    class Cluster(FakeCluster):
        def far(self) -> bool:
            return far

    assert Engine(Cluster(), Options(concurrency=64), Deadline(10)).pacing.limit == start
