import pytest

from kubectl_unfinalize.errors import InputError
from kubectl_unfinalize.resolve.crds import crd_from_object, match_name, resolve_names


def crd(plural, kind, group, short=(), versions=("v1",)):
    return crd_from_object(
        {
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "shortNames": list(short)},
                "versions": [{"name": v, "served": True, "storage": i == 0} for i, v in enumerate(versions)],
            },
        }
    )


CRDS = [
    crd("daskclusters", "DaskCluster", "kubernetes.dask.org", ("daskcluster",)),
    crd("daskworkergroups", "DaskWorkerGroup", "kubernetes.dask.org", ("dwg",)),
    crd("widgets", "Widget", "a.example.com", ("wg",)),
    crd("widgets", "Widget", "b.example.com", ("wg",)),
]


@pytest.mark.parametrize(
    "name",
    [
        "daskclusters.kubernetes.dask.org",
        "daskclusters",
        "daskcluster",
        "DaskCluster",
        "DaskCluster.kubernetes.dask.org",
        "daskcluster.kubernetes.dask.org",
        "daskclusters.v1.kubernetes.dask.org",
    ],
)
def test_every_name_form_a_user_types(name):
    assert [c.name for c in match_name(name, CRDS)] == ["daskclusters.kubernetes.dask.org"]


def test_short_name_and_group_qualified_short_name():
    assert [c.name for c in match_name("dwg", CRDS)] == ["daskworkergroups.kubernetes.dask.org"]
    assert [c.name for c in match_name("wg.b.example.com", CRDS)] == ["widgets.b.example.com"]


def test_a_plural_beats_another_crds_short_name_as_kubectl_decides():
    gadgets = crd("gadgets", "Gadget", "c.example.com", ("daskclusters",))
    assert [c.name for c in match_name("daskclusters", [*CRDS, gadgets])] == ["daskclusters.kubernetes.dask.org"]


class CrdCluster:
    """GET and list of CRDs, counting the requests."""

    def __init__(self, crds):
        self.objects = {c.name: _object(c) for c in crds}
        self.requests = []

    def get(self, ref):
        self.requests.append(("get", ref.name))
        return self.objects.get(ref.name)

    def list_objects(self, resource, query):
        self.requests.append(("list", query.label_selector))
        items = list(self.objects.values())
        for start in range(0, len(items), query.limit):
            yield items[start : start + query.limit]


def _object(c):
    r = c.resource
    names = {"plural": r.plural, "singular": c.singular, "kind": r.kind, "shortNames": list(c.short_names)}
    return {"metadata": {"name": c.name}, "spec": {"group": r.group, "names": names, "versions": [{"name": r.version}]}}


def test_ambiguous_name_lists_candidates():
    with pytest.raises(InputError, match=r"'wg' is ambiguous: it matches widgets.a.example.com, widgets.b.example.com"):
        resolve_names(CrdCluster(CRDS), ["wg"])


def test_unknown_name_suggests_close_matches():
    with pytest.raises(InputError, match=r"no CustomResourceDefinition matches 'daskclustr'; did you mean daskcluster"):
        resolve_names(CrdCluster(CRDS), ["daskclustr"])


def test_full_crd_names_are_read_by_get_without_listing_every_crd():
    cluster = CrdCluster(CRDS)
    found = resolve_names(cluster, ["daskclusters.kubernetes.dask.org", "DaskWorkerGroups.kubernetes.dask.org"])
    assert [c.name for c in found] == ["daskclusters.kubernetes.dask.org", "daskworkergroups.kubernetes.dask.org"]
    assert cluster.requests == [
        ("get", "daskclusters.kubernetes.dask.org"),
        ("get", "daskworkergroups.kubernetes.dask.org"),
    ]


def test_other_spellings_list_the_crds_once():
    cluster = CrdCluster(CRDS)
    found = resolve_names(cluster, ["dwg", "daskcluster.kubernetes.dask.org", "daskcluster"])
    assert [c.name for c in found] == ["daskworkergroups.kubernetes.dask.org", "daskclusters.kubernetes.dask.org"]
    assert [r for r in cluster.requests if r[0] == "list"] == [("list", None)]


def test_storage_version_is_listed():
    c = crd("things", "Thing", "x.io", versions=("v2", "v1"))
    assert c.resource.version == "v2"
    assert c.resource.path("ns", "a") == "/apis/x.io/v2/namespaces/ns/things/a"
    assert c.resource.display == "thing.x.io"
