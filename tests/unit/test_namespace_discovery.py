"""Namespaces in the engine, against the in-memory cluster: what is listed, freed and
deleted, in which order, and what is reported instead of requested. The integration
tests (tests/integration/test_namespaces.py) cover the real namespace controller."""

from __future__ import annotations

from fakecluster import CONFIGMAPS, WIDGETS, FakeCluster, run_engine

from kubectl_unfinalize.engine import namespace_reads as namespaces
from kubectl_unfinalize.engine.preflight import NamespaceAccess
from kubectl_unfinalize.kube.status import true_conditions
from kubectl_unfinalize.model import NAMESPACE_RESOURCE, Action, Resource, Targets


def stuck_namespace(cluster, name="ns"):
    cluster.add_namespace(name)
    cluster.add("w1", ["example.com/hold"], name)
    cluster.add("w2", [], name)
    cluster.add("c1", ["example.com/hold"], name, CONFIGMAPS)
    cluster.add("w1", ["example.com/hold"], "other")


def test_everything_with_finalizers_inside_is_freed_and_nothing_outside():
    cluster = FakeCluster()
    stuck_namespace(cluster)
    report = run_engine(cluster, Targets(namespaces=["ns"]))
    assert report.ok and report.count(Action.UNFINALIZED) == 2
    assert sorted(n for verb, n in cluster.calls if verb == "patch") == ["c1", "w1"]
    assert [r.namespace for r, s in cluster.objects.items() if s.finalizers] == ["other"]
    assert cluster.calls.count(("discovery", "")) == 1 and cluster.calls.count(("rules", "ns")) == 1


def test_delete_deletes_the_namespace_first_then_frees_until_it_is_gone():
    cluster = FakeCluster()
    stuck_namespace(cluster)
    cluster.objects[next(r for r in cluster.objects if r.resource == NAMESPACE_RESOURCE)].finalizers = ["kopf/marker"]
    report = run_engine(cluster, Targets(namespaces=["ns"]), delete=True, timeout=5)
    assert report.ok and not report.timed_out, report.failed
    writes = [c for c in cluster.calls if c[0] in ("delete", "patch")]
    assert writes[0] == ("delete", "ns")
    assert sorted(writes[1:]) == [("patch", "c1"), ("patch", "ns"), ("patch", "w1")]
    assert not [r for r in cluster.objects if r.namespace == "ns" or r.name == "ns"]
    assert report.count(Action.DELETED) == 1


def test_an_already_terminating_namespace_is_not_deleted_again():
    cluster = FakeCluster()
    cluster.add_namespace("ns", ["kopf/marker"])
    cluster.objects[next(iter(cluster.objects))].terminating = True
    report = run_engine(cluster, Targets(namespaces=["ns"]), delete=True, timeout=5)
    assert report.ok and ("delete", "ns") not in cluster.calls and not cluster.objects


def test_types_the_user_may_not_list_are_reported_not_requested():
    cluster = FakeCluster()
    stuck_namespace(cluster)
    cluster.rules = {"incomplete": False, "resourceRules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["*"]}]}
    report = run_engine(cluster, Targets(namespaces=["ns"]))
    assert ("list", "widgets") not in cluster.calls and ("list", "configmaps") in cluster.calls
    assert [o.message for o in report.failed] == [
        "forbidden: user 'tester' cannot list 1 type in namespace ns (RBAC): widgets.example.com;"
        " their objects were not checked"
    ]
    assert report.count(Action.UNFINALIZED) == 1


def test_an_incomplete_rules_review_denies_nothing():
    access = NamespaceAccess({"incomplete": True, "resourceRules": []})
    assert access.allows("list", WIDGETS)
    assert not NamespaceAccess({"resourceRules": []}).allows("list", WIDGETS)
    assert NamespaceAccess(None).allows("patch", WIDGETS)


def test_unavailable_group_versions_are_skipped_and_named():
    cluster = FakeCluster()
    stuck_namespace(cluster)
    cluster.stale = ["metrics.k8s.io/v1beta1"]
    report = run_engine(cluster, Targets(namespaces=["ns"]))
    assert report.skipped == ["metrics.k8s.io/v1beta1 unavailable"]
    assert report.count(Action.UNFINALIZED) == 2


def test_discovery_keeps_the_preferred_version_and_only_listable_patchable_namespaced_types():
    class Discovering(FakeCluster):
        def api_discovery(self):
            def entry(plural, scope="Namespaced", verbs=("list", "patch")):
                return {"resource": plural, "scope": scope, "verbs": list(verbs), "responseKind": {"kind": "K"}}

            return [
                {"metadata": {"name": ""}, "versions": [{"version": "v1", "resources": [entry("configmaps")]}]},
                {
                    "metadata": {"name": "autoscaling"},
                    "versions": [
                        {"version": "v2", "resources": [entry("hpas")]},
                        {"version": "v1", "resources": [entry("hpas")]},
                    ],
                },
                {
                    "metadata": {"name": "x.io"},
                    "versions": [
                        {
                            "version": "v1",
                            "resources": [entry("bindings", verbs=("create",)), entry("nodes", "Cluster")],
                        }
                    ],
                },
                {"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1", "freshness": "Stale"}]},
            ]

    found = namespaces.discover(Discovering())
    assert [(r.group, r.version, r.plural) for r in found.resources] == [
        ("", "v1", "configmaps"),
        ("autoscaling", "v2", "hpas"),
    ]
    assert found.unavailable == ["metrics.k8s.io/v1beta1"]


def test_namespace_conditions_only_true_ones():
    ns = {
        "status": {
            "conditions": [
                {"type": "NamespaceDeletionDiscoveryFailure", "status": "True", "message": "metrics down"},
                {"type": "NamespaceContentRemaining", "status": "False", "message": "none"},
                {"type": "Other", "status": "True", "message": "x"},
            ]
        }
    }
    assert true_conditions(ns) == ["NamespaceDeletionDiscoveryFailure: metrics down"]


def test_a_missing_namespace_with_nothing_left_inside_is_skipped_by_the_engine():
    """Looked inside (a namespace removed through /finalize may hold objects), then skipped
    as a named object that is not there: "namespace/gone not found (skipped)"."""
    report = run_engine(FakeCluster(), Targets(namespaces=["gone"]))
    assert report.outcomes == [] and report.skipped == ["namespace/gone"]
    assert report.ok


def test_other_resources_are_untouched_resource_filtering():
    cluster = FakeCluster()
    gadgets = Resource("example.com", "v1", "gadgets", "Gadget", True)
    cluster.add("g", ["x"], "ns", gadgets)  # served by nobody: discovery decides what is listed
    cluster.add_namespace("ns")
    report = run_engine(cluster, Targets(namespaces=["ns"]))
    assert report.count(Action.UNFINALIZED) == 0 and cluster.stored("g", gadgets).finalizers == ["x"]


def test_namespace_documents_select_the_namespace_contents_not_one_object():
    from kubectl_unfinalize.options import Selection
    from kubectl_unfinalize.resolve import resolve
    from kubectl_unfinalize.resolve.manifests import Document

    cluster = FakeCluster()
    cluster.add_namespace("team-a")
    docs = [
        Document("m.yaml", 0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
        Document("m.yaml", 1, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}),
    ]
    targets = resolve(cluster, Selection(files=("m.yaml",)), docs, "default")
    # One that is gone is a target too: objects may be left in it (the engine looks inside).
    assert targets.namespaces == ["team-a", "team-b"] and targets.objects == [] and targets.missing == []
    by_name = resolve(cluster, Selection(namespaces=("team-a", "nope", "team-a")), [], "default")
    assert by_name.namespaces == ["team-a", "nope"] and by_name.missing == []


def test_an_empty_namespace_held_only_by_the_controllers_finalizer_is_said_so():
    from kubectl_unfinalize.engine.outcomes import OutcomeBook
    from kubectl_unfinalize.options import DryRun

    class Held(FakeCluster):
        def get(self, ref):
            return {
                "metadata": {"name": ref.name, "deletionTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Terminating"},
            }

    book = OutcomeBook(DryRun.NONE)
    namespaces.blocking(Held(), book, "ns", 0, False, "timed out")
    [outcome] = book.outcomes()
    assert outcome.action is Action.BLOCKING and outcome.ref == "namespace/ns"
    assert "only the namespace controller's own 'kubernetes' finalizer remains" in outcome.message
    assert "is kube-controller-manager running?" in outcome.message
    book = OutcomeBook(DryRun.NONE)
    namespaces.blocking(Held(), book, "ns", 3, False, "timed out")  # something is left inside: not that
    assert "kube-controller-manager" not in book.outcomes()[0].message
