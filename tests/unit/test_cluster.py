"""The cluster verbs against a scripted transport: which request each verb sends, and
what a status means for it."""

from __future__ import annotations

import json

import pytest

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.errors import Gone, NotFound
from kubectl_unfinalize.kube.cluster import HttpCluster, remove_all
from kubectl_unfinalize.kube.paging import ListQuery
from kubectl_unfinalize.model import ObjectMeta, ObjectRef, Resource
from kubectl_unfinalize.options import DryRun

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)


def obj(name, finalizers=(), **meta):
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "finalizers": list(finalizers), **meta}}


class ScriptedTransport:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []
        self.accepts = []

    def request(self, method, path, *, query=None, body=None, deadline=None, **kwargs):
        self.requests.append((method, path, {k: v for k, v in (query or {}).items() if v}, body))
        self.accepts.append(kwargs.get("accept"))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def names(pages):
    return [[m.ref.name for m in page] for page in pages]


def test_an_expired_continue_token_goes_on_with_the_token_the_410_offers():
    t = ScriptedTransport(
        {"items": [obj("a")], "metadata": {"continue": "c1"}},
        Gone(410, "Expired", "too old", continue_token="inconsistent"),
        {"items": [obj("b")], "metadata": {}},
    )
    pages = names(HttpCluster(t, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=1)))
    assert pages == [["a"], ["b"]]
    assert [r[2].get("continue") for r in t.requests] == [None, "c1", "inconsistent"]


def test_an_expired_token_without_a_successor_restarts_the_list():
    t = ScriptedTransport(
        {"items": [obj("a")], "metadata": {"continue": "c1"}},
        Gone(410, "Expired", "too old"),
        {"items": [obj("a"), obj("b")], "metadata": {}},
    )
    pages = names(HttpCluster(t, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=1)))
    assert pages == [["a"], ["a", "b"]]
    assert "continue" not in t.requests[2][2]


def test_finalized_only_skips_the_objects_without_finalizers_and_keeps_the_pages():
    page = {
        "items": [obj("a"), obj("b", ["x/y"]), {"metadata": {"name": "c", "uid": "u-c", "finalizers": None}}],
        "metadata": {"continue": "c1"},
    }
    t = ScriptedTransport(page, {"items": [obj("d")], "metadata": {}})
    pages = HttpCluster(t, Deadline(None)).list_meta(WIDGETS, ListQuery(limit=3, finalized_only=True))
    assert [[(m.ref.name, m.finalizers) for m in p] for p in pages] == [[("b", ("x/y",))], []]
    assert [r[2].get("limit") for r in t.requests] == [3, 3]


def test_a_gone_resource_lists_nothing():
    t = ScriptedTransport(NotFound(404, "NotFound", "the server could not find the requested resource"))
    assert names(HttpCluster(t, Deadline(None)).list_meta(WIDGETS, ListQuery())) == []


def test_delete_returns_the_uid_and_the_object_when_finalizers_hold_it():
    ref = ObjectRef(WIDGETS, "a", "ns")
    held = obj("a", ["x"], deletionTimestamp="2026-11-30T00:00:00Z")
    t = ScriptedTransport(held, obj("a"), {"kind": "Status", "details": {"uid": "u-s"}}, NotFound(404, "", ""))
    cluster = HttpCluster(t, Deadline(None))
    first = cluster.delete(ref, DryRun.NONE)
    assert first.uid == "u-a" and first.remaining.finalizers == ("x",)
    assert cluster.delete(ref, DryRun.NONE).remaining is None
    assert cluster.delete(ref, DryRun.NONE).uid == "u-s"
    assert cluster.delete(ref, DryRun.NONE) is None
    assert t.requests[0][3]["propagationPolicy"] == "Background"


def test_server_dry_run_puts_dry_run_in_the_delete_body_and_the_patch_query():
    ref = ObjectRef(WIDGETS, "a", "ns")
    t = ScriptedTransport(obj("a"), {})
    cluster = HttpCluster(t, Deadline(None))
    cluster.delete(ref, DryRun.SERVER)
    cluster.patch_finalizers(ObjectMeta(ref, "u", "7", ("x",), False), None, DryRun.SERVER)
    assert t.requests[0][3]["dryRun"] == ["All"] and t.requests[0][2] == {"dryRun": "All"}
    assert t.requests[1][2] == {"dryRun": "All", "includeObject": "None"}
    assert json.loads(t.requests[1][3]) == {"metadata": {"finalizers": None}}


def test_patches_ask_for_their_answer_as_a_table_without_the_object():
    """Nothing reads a patch's answer but its status: the object's metadata (a 100 KiB
    annotation, big managedFields) is not downloaded again for each patch."""
    ref = ObjectRef(WIDGETS, "a", "ns")
    t = ScriptedTransport({}, {})
    cluster = HttpCluster(t, Deadline(None))
    cluster.patch_finalizers(ObjectMeta(ref, "u", "7", ("x",), False), None, DryRun.NONE)
    cluster.merge_patch(ref, {"spec": {"conversion": {"strategy": "None"}}}, DryRun.NONE)
    assert [r[2] for r in t.requests] == [{"includeObject": "None"}] * 2
    assert all(a.startswith("application/json;as=Table;") for a in t.accepts), t.accepts
    bulk = remove_all(ObjectMeta(ref, "u", "7", ("x",), False), lambda: None, lambda sent: None)
    assert bulk.path == "/apis/example.com/v1/namespaces/ns/widgets/a?includeObject=None"


@pytest.mark.parametrize(
    ("keep", "body"),
    [((), {"resourceVersion": "7", "finalizers": None}), (("k",), {"resourceVersion": "7", "finalizers": ["k"]})],
)
def test_keeping_finalizers_is_a_conditional_write(keep, body):
    ref = ObjectRef(WIDGETS, "a", "ns")
    t = ScriptedTransport({})
    HttpCluster(t, Deadline(None)).patch_finalizers(ObjectMeta(ref, "u", "7", ("x", "k"), False), keep, DryRun.NONE)
    assert t.requests[0][0] == "PATCH" and t.requests[0][3] == {"metadata": body}


class DiscoveryTransport:
    """Answers discovery by path, from any thread; records (path, accept, probe) of each request."""

    def __init__(self, answers, on_group_version=None):
        import threading

        self.answers = answers
        self.on_group_version = on_group_version
        self.requests = []
        self.lock = threading.Lock()

    def request(self, method, path, *, accept="application/json", probe=None, **kwargs):
        with self.lock:
            self.requests.append((path, accept, probe))
        if path not in ("/api", "/apis") and self.on_group_version:
            self.on_group_version(path)
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_api_discovery_reads_the_aggregated_lists_and_names_the_core_group():
    core = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {}, "versions": [{"version": "v1"}]}]}
    groups = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": "apps"}, "versions": []}]}
    t = DiscoveryTransport({"/api": core, "/apis": groups})
    found = HttpCluster(t, Deadline(None)).api_discovery()
    assert [g["metadata"]["name"] for g in found] == ["", "apps"]
    assert [path for path, _, _ in t.requests] == ["/api", "/apis"]


def test_aggregated_discovery_is_asked_as_client_go_asks_v2_then_v2beta1_then_plain_json():
    """1.27-1.29 serve aggregated discovery as v2beta1 only: asking for v2 alone gets them
    the plain lists, and one request per group version."""
    t = DiscoveryTransport({"/api": {"kind": "APIGroupDiscoveryList"}, "/apis": {"kind": "APIGroupDiscoveryList"}})
    HttpCluster(t, Deadline(None)).api_discovery()
    assert {accept for _, accept, _ in t.requests} == {
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
        "application/json"
    }


def test_api_discovery_falls_back_to_each_group_version_and_marks_a_503_stale():
    from kubectl_unfinalize.errors import ApiError

    t = DiscoveryTransport(
        {
            "/api": {"kind": "APIVersions", "versions": ["v1"]},
            "/api/v1": {
                "resources": [
                    {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": ["list", "patch"]}
                ]
            },
            "/apis": {
                "kind": "APIGroupList",
                "groups": [{"name": "metrics.k8s.io", "versions": [{"version": "v1beta1"}]}],
            },
            "/apis/metrics.k8s.io/v1beta1": ApiError(
                503, "ServiceUnavailable", "the server is currently unable to handle the request"
            ),
        }
    )
    core, metrics = HttpCluster(t, Deadline(None)).api_discovery()
    assert core["versions"][0]["resources"] == [
        {
            "resource": "configmaps",
            "scope": "Namespaced",
            "responseKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "verbs": ["list", "patch"],
        }
    ]
    assert metrics == {
        "metadata": {"name": "metrics.k8s.io"},
        "versions": [{"version": "v1beta1", "freshness": "Stale", "resources": []}],
    }
    assert sorted(path for path, _, _ in t.requests) == ["/api", "/api/v1", "/apis", "/apis/metrics.k8s.io/v1beta1"]


def test_legacy_group_versions_are_read_a_few_at_once_each_as_a_probe_and_kept_in_order():
    """One group version after another made `scan` wait for each; and each is a probe, so
    an unavailable one is not retried until the run's deadline."""
    import threading

    from kubectl_unfinalize.errors import NoAnswer
    from kubectl_unfinalize.kube.discovery import GROUP_VERSION_TIMEOUT, LEGACY_THREADS

    versions = [f"v{i}" for i in range(1, LEGACY_THREADS + 2)]
    answers = {
        "/api": {"kind": "APIVersions", "versions": []},
        "/apis": {
            "kind": "APIGroupList",
            "groups": [{"name": "example.com", "versions": [{"version": v} for v in versions]}],
        },
        **{f"/apis/example.com/{v}": {"resources": [{"name": f"things{v}", "kind": "Thing"}]} for v in versions},
        "/apis/example.com/v2": NoAnswer("no answer within 5s"),
    }
    together = threading.Barrier(LEGACY_THREADS, timeout=10)  # broken unless LEGACY_THREADS wait at once
    first = {f"/apis/example.com/{v}" for v in versions[:LEGACY_THREADS]}
    t = DiscoveryTransport(answers, on_group_version=lambda path: path in first and together.wait())
    _, group = HttpCluster(t, Deadline(300)).api_discovery()
    assert [v["version"] for v in group["versions"]] == versions
    assert [v["freshness"] for v in group["versions"]] == ["Current", "Stale"] + ["Current"] * (len(versions) - 2)
    assert {probe for path, _, probe in t.requests if path.startswith("/apis/")} == {GROUP_VERSION_TIMEOUT}


def test_legacy_discovery_keeps_the_names_kubectl_matches_types_by():
    t = DiscoveryTransport(
        {
            "/api": {"kind": "APIVersions", "versions": ["v1"]},
            "/api/v1": {
                "resources": [
                    {
                        "name": "persistentvolumeclaims",
                        "singularName": "persistentvolumeclaim",
                        "namespaced": True,
                        "kind": "PersistentVolumeClaim",
                        "shortNames": ["pvc"],
                        "categories": ["all"],
                    }
                ]
            },
            "/apis": {"kind": "APIGroupList", "groups": []},
        }
    )
    (core,) = HttpCluster(t, Deadline(None)).api_discovery()
    entry = core["versions"][0]["resources"][0]
    assert (entry["singularResource"], entry["shortNames"], entry["categories"]) == (
        "persistentvolumeclaim",
        ["pvc"],
        ["all"],
    )
