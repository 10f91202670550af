"""Many CRDs as one job: a big selection is resolved from one list of CRDs and one
aggregated discovery read, not a GET or a discovery read each; crd --category."""

from __future__ import annotations

from test_targets import CrdCluster, crd

from kubectl_unfinalize.options import Selection
from kubectl_unfinalize.resolve import resolve
from kubectl_unfinalize.resolve.crds import GET_AT_MOST, resolve_names
from kubectl_unfinalize.resolve.documents import resolve_documents
from kubectl_unfinalize.resolve.manifests import Document

MANY = [crd(f"kind{i}s", f"Kind{i}", "many.example.com") for i in range(20)]


class DiscoveringCluster(CrdCluster):
    """Also discovery, per group version and aggregated, counting requests."""

    def __init__(self, crds, categories=None):
        super().__init__(crds)
        for name, listed in (categories or {}).items():
            self.objects[name]["spec"]["names"]["categories"] = listed

    def discover(self, api_version):
        self.requests.append(("discover", api_version))
        group, _, version = api_version.rpartition("/")
        return [{"name": f"things{group[0]}", "kind": "Thing", "namespaced": True}]

    def api_discovery(self):
        self.requests.append(("discovery",))
        return [
            {
                "metadata": {"name": f"g{i}.example.com"},
                "versions": [
                    {
                        "version": "v1",
                        "resources": [
                            {"resource": f"thingsg{i}", "responseKind": {"kind": "Thing"}, "scope": "Namespaced"}
                        ],
                    }
                ],
            }
            for i in range(10)
        ]

    def get_meta(self, ref):
        return None


def doc(api_version, kind, name):
    return Document("m.yaml", 0, {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}})


def crd_docs(crds):
    return [doc("apiextensions.k8s.io/v1", "CustomResourceDefinition", c.name) for c in crds]


def verbs(cluster):
    return [r[0] for r in cluster.requests]


def test_a_few_crd_documents_are_read_by_get():
    cluster = DiscoveringCluster(MANY)
    targets = resolve_documents(cluster, crd_docs(MANY[:GET_AT_MOST]), "default")
    assert len(targets.crds) == GET_AT_MOST
    assert verbs(cluster) == ["get"] * GET_AT_MOST


def test_many_crd_documents_are_resolved_from_one_list_and_missing_ones_still_reported():
    cluster = DiscoveringCluster(MANY)
    gone = crd("gones", "Gone", "many.example.com")
    targets = resolve_documents(cluster, crd_docs([*MANY, gone]), "default")
    assert [c.name for c in targets.crds] == [c.name for c in MANY]
    assert targets.missing == [f"customresourcedefinition.apiextensions.k8s.io/{gone.name}"]
    assert verbs(cluster) == ["list"]


def test_many_full_crd_names_are_resolved_from_one_list():
    cluster = DiscoveringCluster(MANY)
    assert len(resolve_names(cluster, [c.name for c in MANY])) == len(MANY)
    assert verbs(cluster) == ["list"]
    few = DiscoveringCluster(MANY)
    resolve_names(few, [c.name for c in MANY[:2]])
    assert verbs(few) == ["get", "get"]


def test_objects_of_many_group_versions_use_one_aggregated_discovery_read():
    cluster = DiscoveringCluster([])
    docs = [doc(f"g{i}.example.com/v1", "Thing", f"t{i}") for i in range(10)]
    targets = resolve_documents(cluster, docs, "default")
    assert [(r.resource.group, r.resource.plural, r.name) for r in targets.objects] == [
        (f"g{i}.example.com", f"thingsg{i}", f"t{i}") for i in range(10)
    ]
    assert verbs(cluster) == ["discovery"]
    few = DiscoveringCluster([])
    resolve_documents(few, docs[:2], "default")
    assert verbs(few) == ["discover", "discover"]


def test_an_unknown_kind_among_many_group_versions_is_reported_missing():
    cluster = DiscoveringCluster([])
    docs = [doc(f"g{i}.example.com/v1", "Thing", f"t{i}") for i in range(5)] + [doc("nope.io/v1", "Nope", "n")]
    targets = resolve_documents(cluster, docs, "default")
    assert targets.missing == ["nope.nope.io/n"]


CATEGORIZED = {MANY[0].name: ["managed"], MANY[1].name: ["managed", "aws"], MANY[2].name: ["aws"]}


def categorized():
    other = crd("widgets", "Widget", "other.example.com")
    cluster = DiscoveringCluster([*MANY, other], CATEGORIZED | {other.name: ["managed"]})
    return cluster, other


def names(targets):
    return sorted(c.name for c in targets.crds)


def test_category_selects_the_crds_that_list_it_from_one_list():
    cluster, other = categorized()
    targets = resolve(cluster, Selection(categories=("Managed",)), [], "default")
    assert names(targets) == sorted([MANY[0].name, MANY[1].name, other.name])
    assert verbs(cluster) == ["list"]


def test_categories_are_a_union_and_combine_with_group_and_labels():
    cluster, other = categorized()
    targets = resolve(cluster, Selection(categories=("managed,aws",), group="many.example.com"), [], "default")
    assert names(targets) == sorted(c.name for c in MANY[:3])
    resolve(cluster, Selection(categories=("aws",), crd_selector="app=x"), [], "default")
    assert cluster.requests[-1] == ("list", "app=x")


def test_category_narrows_named_crds():
    cluster, _ = categorized()
    targets = resolve(cluster, Selection(crds=(MANY[2].name, MANY[3].name), categories=("aws",)), [], "default")
    assert names(targets) == [MANY[2].name]
