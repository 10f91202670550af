"""List pages sized by bytes, and the final check's watch instead of a second full list."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from fakecluster import FakeCluster, run_engine
from test_engine import actions

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.errors import Gone
from kubectl_unfinalize.kube.changes import written_since
from kubectl_unfinalize.kube.cluster import HttpCluster
from kubectl_unfinalize.kube.paging import (
    APPLIED_METADATA,
    FIRST_LIMIT,
    GROWTH,
    PAGE_BYTES,
    Listed,
    ListQuery,
    PageBudget,
)
from kubectl_unfinalize.model import Action, Resource

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
KIB = 1024


def test_the_first_page_is_small_and_the_next_hold_the_budget_in_bytes():
    budget = PageBudget(500)
    assert budget.limit() == FIRST_LIMIT
    budget.seen(100, 100 * 100 * KIB)  # 100 KiB objects
    assert budget.limit() == PAGE_BYTES // (100 * KIB)
    assert budget.limit() * 100 * KIB <= PAGE_BYTES
    budget.seen(40, 40 * 800)  # small ones again: --chunk-size caps it, once grown to it
    assert budget.limit() == PAGE_BYTES // (100 * KIB) * GROWTH
    budget.seen(40, 40 * 800)
    assert budget.limit() == 500
    budget.seen(0, 120)  # an empty last page says nothing of the size
    assert budget.limit() == 500


def test_pages_of_small_objects_grow_from_the_first_so_that_the_second_comes_back_soon():
    """The first page's 20 objects keep 20 of 64 patches busy until the second page
    comes: far away (+50 ms each way) a second page of 500 took 0.2 s, and the run had
    64 patches in flight only 0.25 s after its first ones. 100 are back sooner and fill
    the places while the next 500 are read."""
    budget = PageBudget(500)
    assert budget.limit() == FIRST_LIMIT
    budget.seen(FIRST_LIMIT, FIRST_LIMIT * 700)
    assert budget.limit() == FIRST_LIMIT * GROWTH
    assert budget.fits() == 500  # what a whole list may be asked for in one page (_whole_fits)
    budget.seen(FIRST_LIMIT * GROWTH, FIRST_LIMIT * GROWTH * 700)
    assert budget.limit() == 500


def test_a_page_budget_never_asks_for_more_than_the_chunk_size_nor_for_none():
    assert PageBudget(20).limit() == 20
    huge = PageBudget(500)
    huge.seen(1, 64 << 20)  # one object bigger than the whole budget
    assert huge.limit() == 1


class SizedTransport:
    """Answers list pages of objects of `size` bytes each, as many as the limit asks."""

    def __init__(self, total: int, size: int) -> None:
        self.left, self.size, self.limits = total, size, []

    def request(self, method, path, *, query=None, on_bytes=None, **kwargs):
        limit = int(query["limit"])
        self.limits.append(limit)
        count = min(limit, self.left)
        self.left -= count
        items = [{"metadata": {"name": f"o{self.left + i}", "uid": f"u{self.left + i}"}} for i in range(count)]
        on_bytes(count * self.size + 100)
        more = {"continue": "next"} if self.left else {}
        return {"items": items, "metadata": {"resourceVersion": str(100 + len(self.limits)), **more}}


class CountingTransport(SizedTransport):
    """As SizedTransport, saying how many objects remain after each page, as the API
    server does for a list without selectors; each list starts from the first object."""

    def __init__(self, total: int, size: int) -> None:
        super().__init__(total, size)
        self.total, self.tokens = total, []

    def request(self, method, path, *, query=None, on_bytes=None, **kwargs):
        self.tokens.append(query["continue"])
        if not query["continue"]:
            self.left = self.total  # a new list
        page = super().request(method, path, query=query, on_bytes=on_bytes, **kwargs)
        if self.left:
            page["metadata"]["remainingItemCount"] = self.left
        return page


def test_a_list_the_first_page_shows_to_fit_one_page_is_asked_again_whole_not_continued():
    """A continue page comes from etcd on servers without ListFromCacheSnapshot (before
    1.34, or with it off): 0.43 s median against 0.13-0.17 s for a whole list, 50 types
    of 400 objects listed 16 at once. Was: [20 objects, continue for the 380 others]."""
    transport = CountingTransport(400, 1500)
    cluster = HttpCluster(transport, Deadline(None))  # type: ignore[arg-type]
    pages = list(cluster.list_meta(WIDGETS, ListQuery(limit=500)))
    assert transport.limits == [FIRST_LIMIT, 500] and transport.tokens == ["", ""]
    names = [meta.ref.name for page in pages for meta in page]
    assert len(names) == len(set(names)) == 400  # the first page's objects are not told twice
    listed = cluster.listed_at(WIDGETS, None)
    assert listed is not None and (listed.resource_version, listed.objects) == ("102", 400)


def test_a_list_too_big_for_one_page_or_of_unknown_length_is_continued():
    big = CountingTransport(400, 100 * KIB)  # 40 MB: over the budget
    list(HttpCluster(big, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=500)))  # type: ignore[arg-type]
    assert big.tokens[0] == "" and all(big.tokens[1:]) and sum(big.limits) >= 400
    many = CountingTransport(3000, 700)  # small objects, more than --chunk-size
    list(HttpCluster(many, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=500)))  # type: ignore[arg-type]
    assert many.tokens[0] == "" and all(many.tokens[1:]) and many.limits[0] == FIRST_LIMIT
    unknown = SizedTransport(400, 1500)  # no remainingItemCount: a label or field selector
    list(HttpCluster(unknown, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=500)))  # type: ignore[arg-type]
    assert unknown.limits == [FIRST_LIMIT, FIRST_LIMIT * GROWTH, 500]


def test_pages_of_big_objects_ask_for_a_few_mb_each_and_the_list_remembers_its_first_resource_version():
    transport = SizedTransport(2000, 100 * KIB)
    cluster = HttpCluster(transport, Deadline(None))  # type: ignore[arg-type]
    pages = list(cluster.list_meta(WIDGETS, ListQuery(limit=500)))
    assert sum(len(p) for p in pages) == 2000
    assert transport.limits[0] == FIRST_LIMIT
    assert all(limit * 100 * KIB <= PAGE_BYTES for limit in transport.limits[1:]), transport.limits
    listed = cluster.listed_at(WIDGETS, None)
    assert listed is not None and listed.resource_version == "101"  # the first page's, not a later one's
    assert listed.objects == 2000 and listed.nbytes >= 2000 * 100 * KIB


def test_pages_of_small_objects_keep_the_chunk_size():
    transport = SizedTransport(3000, 700)
    list(HttpCluster(transport, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=500)))  # type: ignore[arg-type]
    assert transport.limits[:2] == [FIRST_LIMIT, FIRST_LIMIT * GROWTH] and set(transport.limits[2:]) == {500}


def test_a_later_list_of_a_type_sizes_its_first_page_from_the_bytes_per_object_seen():
    # The final check lists a type again per namespace: with the size known, a namespace
    # of 250 small objects is one page (one round trip), not a first page of 100 and more.
    transport = SizedTransport(3000, 700)
    cluster = HttpCluster(transport, Deadline(None))  # type: ignore[arg-type]
    list(cluster.list_meta(WIDGETS, ListQuery(limit=500)))
    transport.left, transport.limits = 250, []
    pages = list(cluster.list_meta(WIDGETS, ListQuery(namespace="team-a", limit=500)))
    assert transport.limits == [500] and sum(len(p) for p in pages) == 250
    big = SizedTransport(400, 100 * KIB)
    other = HttpCluster(big, Deadline(None))  # type: ignore[arg-type]
    list(other.list_meta(WIDGETS, ListQuery(limit=500)))
    big.left, big.limits = 400, []
    list(other.list_meta(WIDGETS, ListQuery(namespace="team-a", limit=500)))
    assert big.limits[0] == PAGE_BYTES // (100 * KIB)  # big objects: still a few MB a page


def table_event(kind, name, headers=False):
    obj = {"kind": "Table", "metadata": {"resourceVersion": "7"}, "rows": [{"cells": [name, "5m"], "object": None}]}
    if headers:
        obj["columnDefinitions"] = [{"name": "Name"}, {"name": "Age"}]
    return json.dumps({"type": kind, "object": obj}).encode()


def test_the_watch_counts_writes_per_name_from_table_rows():
    body = b"\n".join([table_event("MODIFIED", "a", True), table_event("MODIFIED", "b"), table_event("MODIFIED", "a")])
    asked = {}

    def request(method, path, *, query, accept, parse):
        asked.update(query, accept=accept, path=path)
        return parse(body + b"\n")

    counts = written_since(request, WIDGETS, ListQuery(namespace="ns", label_selector="app=x"), "41", 2)
    assert counts == Counter({"a": 2, "b": 1})
    assert asked["resourceVersion"] == "41" and asked["includeObject"] == "None" and asked["timeoutSeconds"] == 2
    assert asked["labelSelector"] == "app=x" and "as=Table" in asked["accept"]
    assert asked["path"] == WIDGETS.path("ns")


def test_a_watch_whose_history_is_gone_says_so():
    expired = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}}).encode()
    assert written_since(lambda *a, **k: k["parse"](expired), WIDGETS, ListQuery(namespace="ns"), "1", 1) is None

    def gone(*args, **kwargs):
        raise Gone(410, "Expired", "too old resource version")

    assert written_since(gone, WIDGETS, ListQuery(namespace="ns"), "1", 1) is None


def big_cluster(bulk, names=("a", "b", "c")):
    cluster = FakeCluster(bulk=bulk)
    cluster.list_bytes = 1 << 30  # a list that read this much is watched, not read again
    for name in names:
        cluster.add(name, ["x"])
    return cluster


@pytest.mark.parametrize("bulk", [False, True], ids=["verbs", "bulk"])
def test_the_final_check_of_big_objects_watches_and_reads_again_only_what_was_written_after_the_patch(bulk):
    cluster = big_cluster(bulk)

    cluster.puts_back("b", when="watch")
    report = run_engine(cluster, settle=0.01)
    assert ("b", "refinalized") in actions(report) and report.failures == 1
    assert [c for c in cluster.calls if c[0] == "list"] == [("list", "widgets")]  # no second list
    assert ("watch", "widgets") in cluster.calls
    assert [name for verb, name in cluster.calls if verb == "get"] == ["b"]  # only what was written twice


def test_the_final_check_lists_again_when_the_watch_history_is_gone():
    cluster = big_cluster(True)
    cluster.expired = True

    cluster.puts_back("c", when="watch")
    report = run_engine(cluster, settle=0.01)
    assert ("c", "refinalized") in actions(report) and report.count(Action.UNFINALIZED) == 3
    assert len([c for c in cluster.calls if c[0] == "list"]) == 2  # the run's list, and the check's


def test_the_final_check_lists_again_when_the_watch_names_fewer_objects_than_were_freed():
    cluster = big_cluster(False)

    def lost_history(verb, ref):
        if verb == "watch":
            cluster.writes.clear()  # as if the server's watch ended before its history was sent
            cluster.write("a", ["x"])

    cluster.hooks.append(lost_history)
    report = run_engine(cluster, settle=0.01)
    assert ("a", "refinalized") in actions(report)
    assert len([c for c in cluster.calls if c[0] == "list"]) == 2


def test_many_small_objects_are_listed_again_since_their_watch_events_would_cost_about_as_much():
    cluster = FakeCluster()
    for i in range(50):
        cluster.add(f"s{i}", ["x"])
    cluster.list_bytes = 40 << 20  # more than WATCH_OVER in all, but under WATCH_OBJECT each
    cluster.listings[WIDGETS] = Listed("0", 40 << 20, 100_000)
    report = run_engine(cluster, settle=0.01)
    assert report.ok and report.count(Action.UNFINALIZED) == 50
    assert ("watch", "widgets") not in cluster.calls
    assert len([c for c in cluster.calls if c[0] == "list"]) == 2


def test_no_watch_outlasts_the_run_s_deadline_or_the_request_timeout():
    class Refused:
        request_timeout = None

        def request(self, *args, **kwargs):
            raise AssertionError("no watch should be sent")

    cluster = HttpCluster(Refused(), Deadline(0.5))  # type: ignore[arg-type]
    assert cluster.written_since(WIDGETS, ListQuery(namespace="ns"), "1", 1) is None
    short = Refused()
    short.request_timeout = 1.5
    assert HttpCluster(short, Deadline(None)).written_since(WIDGETS, ListQuery(), "1", 1) is None  # type: ignore[arg-type]


def test_the_wait_for_deleted_crds_reads_the_events_as_they_come_or_a_body_that_came_whole():
    from kubectl_unfinalize.kube.changes import all_deleted
    from kubectl_unfinalize.model import CRD_RESOURCE

    events = (
        b'{"type":"MODIFIED","object":{"metadata":{"name":"a","uid":"u1"}}}\n'
        b'{"type":"DELETED","object":{"metadata":{"name":"a","uid":"u1"}}}\n'
    )

    def streamed(method, path, *, query, accept, on_chunk, parse):
        assert query["fieldSelector"] == "metadata.name=a" and query["resourceVersion"] == "5"
        assert not on_chunk(events[:30])  # a chunk may end mid-line
        assert on_chunk(events[30:])  # the last one went: the watch ends here
        return None

    assert all_deleted(streamed, CRD_RESOURCE, {"a": "u1"}, "5", 1) is True

    def whole(method, path, *, query, accept, on_chunk, parse):  # a proxy that buffered the stream
        assert query["fieldSelector"] is None
        return parse(events)

    assert all_deleted(whole, CRD_RESOURCE, {"a": "u1", "b": "u2"}, "5", 1) is False  # b is still there

    def buffered(method, path, *, query, accept, on_chunk, parse):
        return parse(events)

    # An object of the same name with another uid went (the run's was re-created and that one deleted): not ours.
    assert all_deleted(buffered, CRD_RESOURCE, {"a": "u0"}, "5", 1) is False

    def expired(method, path, *, query, accept, on_chunk, parse):
        return parse(b'{"type":"ERROR","object":{"code":410}}\n')

    assert all_deleted(expired, CRD_RESOURCE, {"a": "u1"}, "5", 1) is None


def test_the_first_page_of_objects_as_kubectl_apply_leaves_them_fits_the_budget():
    """Before the objects' size is known: a 100 KiB configuration applied by kubectl is
    180 KiB of metadata per object (annotation and managedFields)."""
    assert FIRST_LIMIT * APPLIED_METADATA <= PAGE_BYTES
