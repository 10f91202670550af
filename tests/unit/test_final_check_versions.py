"""The final check by versions: each patch's answer says the resourceVersion it left, and
a read of names and versions (a watch that sends the current objects as a Table without
them) shows which objects were written since; only those are read again. No watch
history is needed, so a long run or a busy server (the history gone: 410) no longer
means listing every object's metadata again."""

from __future__ import annotations

import json

import pytest
from fakecluster import FakeCluster, run_engine
from test_engine import actions

from kubectl_unfinalize.errors import ApiError, NotFound
from kubectl_unfinalize.kube.changes import versions
from kubectl_unfinalize.kube.cluster import answer_version
from kubectl_unfinalize.kube.paging import ListQuery
from kubectl_unfinalize.model import Action, Resource

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)


def cluster_of(bulk: bool, names=("a", "b", "c")) -> FakeCluster:
    cluster = FakeCluster(bulk=bulk)
    cluster.list_bytes = 1 << 30  # big objects: reading them again is what the check avoids
    cluster.expired = True  # and the watch history is gone, as after a long run
    cluster.watch_list = True
    for name in names:
        cluster.add(name, ["x"])
    return cluster


@pytest.mark.parametrize("bulk", [False, True], ids=["verbs", "bulk"])
def test_only_objects_written_after_the_patch_are_read_again_and_nothing_is_listed_again(bulk):
    cluster = cluster_of(bulk)

    cluster.puts_back("b", when="versions")
    report = run_engine(cluster, settle=0.01)
    assert ("b", "refinalized") in actions(report) and report.failures == 1
    assert report.count(Action.UNFINALIZED) == 3
    assert [c for c in cluster.calls if c[0] == "list"] == [("list", "widgets")]  # the run's own list only
    assert ("watch", "widgets") not in cluster.calls
    assert [name for verb, name in cluster.calls if verb == "get"] == ["b"]


def test_nothing_written_since_means_nothing_read_again():
    cluster = cluster_of(True)
    report = run_engine(cluster, settle=0.01)
    assert report.ok and report.count(Action.UNFINALIZED) == 3
    assert [c[0] for c in cluster.calls if c[0] in ("list", "get", "watch", "versions")] == ["list", "versions"]


def test_without_watch_list_the_check_falls_back_to_listing():
    cluster = cluster_of(True)
    cluster.watch_list = False

    cluster.puts_back("c", when="versions")
    report = run_engine(cluster, settle=0.01)
    assert ("c", "refinalized") in actions(report)
    assert len([c for c in cluster.calls if c[0] == "list"]) == 2  # the run's, and the check's


def _events(*events: dict) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def _added(name: str, version: str, headers: bool = False) -> dict:
    table: dict = {"kind": "Table", "metadata": {"resourceVersion": version}, "rows": [{"cells": [name, "1m"]}]}
    if headers:
        table["columnDefinitions"] = [{"name": "Name"}, {"name": "Age"}]
    return {"type": "ADDED", "object": table}


BOOKMARK = {"type": "BOOKMARK", "object": {"kind": "Table", "metadata": {"resourceVersion": "99"}}}


def test_versions_reads_names_and_versions_until_the_bookmark():
    asked: dict = {}
    body = _events(_added("a", "11", headers=True), _added("b", "12"), BOOKMARK, _added("late", "13"))

    def request(method, path, *, query, accept, on_chunk, parse):
        asked.update(query, accept=accept, path=path)
        for i in range(0, len(body), 7):  # chunks cut anywhere
            if on_chunk(body[i : i + 7]):
                return None
        return None

    rows: list[tuple[str, str]] = []
    assert versions(request, WIDGETS, ListQuery(namespace="ns"), 5, lambda n, v: rows.append((n, v))) is True
    assert rows == [("a", "11"), ("b", "12")]
    assert asked["sendInitialEvents"] == "true" and asked["includeObject"] == "None"
    assert asked["path"] == WIDGETS.path("ns") and "as=Table" in asked["accept"]


@pytest.mark.parametrize(
    "failure",
    [
        ApiError(
            422, "Invalid", "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
        ),
        _events(_added("a", "11", headers=True), {"type": "ERROR", "object": {"code": 410}}),
        _events(_added("a", "11", headers=True)),  # ended (timeoutSeconds) before the bookmark
    ],
    ids=["no-watch-list", "error-event", "cut-short"],
)
def test_versions_says_when_it_cannot_tell(failure):
    def request(method, path, *, query, accept, on_chunk, parse):
        if isinstance(failure, Exception):
            raise failure
        on_chunk(failure)

    assert versions(request, WIDGETS, ListQuery(), 5, lambda n, v: None) is None


def test_a_gone_type_has_no_objects_to_read():
    def request(*args, **kwargs):
        raise NotFound(404, "NotFound", "the server could not find the requested resource")

    assert versions(request, WIDGETS, ListQuery(), 5, lambda n, v: None) is True


@pytest.mark.parametrize(
    ("answer", "version"),
    [
        (b'{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"35652"},"rows":[]}', "35652"),
        (b'{"kind":"Widget","metadata":{"resourceVersion":"7"}}', ""),  # a server that answered JSON
        (b"", ""),
    ],
)
def test_a_patch_answer_says_the_version_it_left(answer, version):
    assert answer_version(answer) == version


def test_the_read_of_versions_ends_before_a_short_deadline_rather_than_not_being_made():
    from kubectl_unfinalize.deadline import Deadline
    from kubectl_unfinalize.kube.cluster import HttpCluster

    asked = []

    class Transport:
        request_timeout = None

        def request(self, method, path, *, query, **kwargs):
            asked.append(query["timeoutSeconds"])
            kwargs["on_chunk"](_events(BOOKMARK))

    cluster = HttpCluster(Transport(), Deadline(10))  # type: ignore[arg-type]
    assert cluster.versions(WIDGETS, ListQuery(), 30, lambda n, v: None) is True
    assert asked and asked[0] <= 9, asked
    assert HttpCluster(Transport(), Deadline(1.5)).versions(WIDGETS, ListQuery(), 30, lambda n, v: None) is None  # type: ignore[arg-type]


def spread(freed_per_namespace: int, free_too: int = 0) -> tuple[FakeCluster, list[str | None]]:
    """Widgets in three namespaces, each name its own (the fake's versions are per
    object, the API server's are not): `freed_per_namespace` with a finalizer in each,
    `free_too` more without one. Returns the cluster and the namespaces versions read."""
    cluster = FakeCluster(bulk=True)
    cluster.watch_list = True
    cluster.list_bytes = 1000  # what the run's list saw is kept (small objects)
    for space in ("ns1", "ns2", "ns3"):
        for i in range(freed_per_namespace):
            cluster.add(f"{space}-f{i}", ["x"], namespace=space)
        for i in range(free_too):
            cluster.add(f"{space}-n{i}", [], namespace=space)
    read: list[str | None] = []
    real = cluster.versions

    def versions(resource, query, seconds, on_row):
        read.append(query.namespace)
        return real(resource, query, seconds, on_row)

    cluster.versions = versions
    return cluster, read


def test_when_the_run_freed_most_of_what_it_listed_one_read_of_every_namespace_checks_them_all():
    """Per namespace, each read is a request and a round of the pool: the API server
    sends the same rows once for the whole type (a version names one write, so rows of
    any namespace match by name and version)."""
    cluster, read = spread(2)

    cluster.puts_back("ns2-f1", when="versions")
    report = run_engine(cluster, settle=0.01)
    assert read == [None]
    assert [o.name for o in report.outcomes if o.action is Action.REFINALIZED] == ["ns2-f1"]
    assert [name for verb, name in cluster.calls if verb == "get"] == ["ns2-f1"]


def test_when_the_run_freed_few_of_what_it_listed_each_namespace_is_read_on_its_own():
    """Reading every namespace would send every row of the type for a few freed ones."""
    cluster, read = spread(1, free_too=4)
    report = run_engine(cluster, settle=0.01)
    assert report.ok
    assert sorted(read) == ["ns1", "ns2", "ns3"]


def test_when_the_one_read_cannot_be_made_its_namespaces_are_listed_as_before():
    cluster, read = spread(2)
    cluster.watch_list = False

    cluster.puts_back("ns3-f0", when="versions")
    report = run_engine(cluster, settle=0.01)
    assert read == [None]
    assert [o.name for o in report.outcomes if o.action is Action.REFINALIZED] == ["ns3-f0"]
    assert sorted(name for verb, name in cluster.calls if verb == "list") == ["widgets"] * 4  # the run's, 3 again
