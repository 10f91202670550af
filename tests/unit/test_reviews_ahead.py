"""Access reviews asked ahead: the preflight finds their answers, waits for those under
way, asks again what failed, and maps only the rest onto the workers."""

from __future__ import annotations

import threading

from fakecluster import FakeCluster

from kubectl_unfinalize.engine.preflight import ask_ahead, plan_checks, preflight
from kubectl_unfinalize.kube.reviews import Reviews
from kubectl_unfinalize.model import CRD, Resource, Targets
from kubectl_unfinalize.options import Options

KEY = ("list", "example.com", "widgets", None, None)


def test_an_answer_asked_ahead_is_waited_for_not_asked_again():
    reviews = Reviews()
    gate, then = threading.Event(), threading.Event()
    asked: list[str] = []

    def early() -> bool:
        gate.wait(5)
        asked.append("ahead")
        return False

    reviews.ahead(KEY, early, then.set)
    threading.Timer(0.1, gate.set).start()
    assert reviews.asked(KEY)
    assert reviews.answer(KEY, lambda: asked.append("again") or True) is False
    assert asked == ["ahead"]
    assert then.wait(5)


def test_a_failed_ask_ahead_is_asked_again_where_its_failure_is_reported():
    reviews = Reviews()
    then = threading.Event()

    def early() -> bool:
        raise ConnectionError("unreachable")

    reviews.ahead(KEY, early, then.set)
    assert then.wait(5)
    assert reviews.answer(KEY, lambda: True) is True


class _Mapper:
    def __init__(self) -> None:
        self.mapped: list[object] = []

    def map(self, fn, items):
        items = list(items)
        self.mapped += items
        return [fn(i) for i in items]


class _Ahead(FakeCluster):
    """Every review asked ahead, as a run naming its CRDs has them."""

    def asked_ahead(self, verb, resource, namespace, name) -> bool:
        return True


def test_reviews_asked_ahead_are_not_the_workers_jobs():
    """Answered at once, such a job told the pacing the server was near: a far run then
    refilled a quarter at a time and lost 5% of its rate."""
    widgets = Resource("example.com", "v1", "widgets", "Widget", True)
    targets = Targets(crds=[CRD("widgets.example.com", widgets)])
    cluster, pool = _Ahead(), _Mapper()
    preflight(cluster, targets, Options(), pool)
    assert pool.mapped == []
    assert [c for c in cluster.calls if c[0] == "review"] == [("review", "list widgets"), ("review", "patch widgets")]


def test_the_reviews_asked_ahead_are_those_the_preflight_asks_first():
    gadgets = [Resource("example.com", "", p, "", True) for p in ("widgets", "gadgets")]
    targets = Targets(crds=[CRD(f"{r.plural}.example.com", r) for r in gadgets])
    cluster = FakeCluster()
    ask_ahead(cluster, targets, Options(delete=True))
    ahead = [c[1] for c in cluster.calls if c[0] == "ahead"]
    # one review of "*" per verb for the group's two resources, one for deleting CRDs
    assert sorted(ahead) == ["delete *", "delete customresourcedefinitions", "list *", "patch *"]
    assert len(plan_checks(targets, Options(delete=True))) == 8
