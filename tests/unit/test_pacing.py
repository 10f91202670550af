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


def test_rising_latency_halves_then_grows_one_per_round_trip():
    pacing = Pacing(cap=64, start=8)
    feed(pacing, 0.01)
    feed(pacing, 0.01)
    assert pacing.limit == 32
    feed(pacing, 0.05)  # the server queues us
    assert pacing.limit == 16
    feed(pacing, 0.012)
    feed(pacing, 0.012)
    assert pacing.limit == 18


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
