"""How many requests the engine keeps in flight."""

from kubectl_unfinalize.pacing import Pacing


def feed(pacing, latency, pushbacks=0):
    for _ in range(pacing.limit):
        pacing.completed(latency, pushbacks)


def test_a_far_cluster_with_steady_latency_fills_the_pipe_up_to_the_cap():
    pacing = Pacing(cap=64, start=8)
    limits = []
    for _ in range(6):
        feed(pacing, 0.1)
        limits.append(pacing.limit)
    assert limits == [16, 32, 64, 64, 64, 64]


def test_an_overloaded_server_halves_the_limit_then_it_grows_one_per_round_trip():
    pacing = Pacing(cap=64, start=8)
    feed(pacing, 0.05)
    feed(pacing, 0.05)
    assert pacing.limit == 32
    feed(pacing, 0.4)  # a busy server's latency moves with what is in flight: no cut
    assert pacing.limit == 64
    feed(pacing, 2.0)  # seconds per request: overloaded
    assert pacing.limit == 32
    feed(pacing, 0.05)
    feed(pacing, 0.05)
    assert pacing.limit == 34


def test_a_429_halves_the_limit_at_once_and_slow_start_ends():
    pacing = Pacing(cap=64, start=8)
    feed(pacing, 0.01)
    assert pacing.limit == 16
    pacing.completed(0.01, pushbacks=3)
    assert pacing.limit == 8
    pacing.completed(0.01, pushbacks=3)  # the same pushbacks again: no second cut
    feed(pacing, 0.01, pushbacks=3)
    assert pacing.limit == 9


def test_the_cap_and_the_floor_hold():
    pacing = Pacing(cap=4, start=8)
    assert pacing.limit == 4
    for n in range(1, 10):
        pacing.completed(0.01, pushbacks=n)
    assert pacing.limit == 1
