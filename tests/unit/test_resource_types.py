"""TYPE as kubectl spells it -> one served resource (resolve/types.py), and what the TYPE
forms select (resolve/named_objects.py), against aggregated discovery documents."""

from __future__ import annotations

import pytest

from kubectl_unfinalize.errors import InputError
from kubectl_unfinalize.kube.discovery import Discovery
from kubectl_unfinalize.kube.paging import ListQuery
from kubectl_unfinalize.model import CRD_RESOURCE, ObjectMeta
from kubectl_unfinalize.options import Selection
from kubectl_unfinalize.resolve import resolve
from kubectl_unfinalize.resolve.types import match_type, resolve_type


def entry(plural, kind, singular=None, short=(), scope="Namespaced", categories=()):
    return {
        "resource": plural,
        "singularResource": singular or kind.lower(),
        "shortNames": list(short),
        "categories": list(categories),
        "scope": scope,
        "responseKind": {"kind": kind},
        "verbs": ["get", "list", "patch"],
        "subresources": [{"subresource": "status"}],
    }


GROUPS = [
    {
        "metadata": {"name": ""},
        "versions": [
            {
                "version": "v1",
                "resources": [
                    entry("configmaps", "ConfigMap", short=("cm",)),
                    entry("persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",)),
                    entry("events", "Event", short=("ev",)),
                    entry("namespaces", "Namespace", short=("ns",), scope="Cluster"),
                    entry("pods/status", "Pod"),
                ],
            }
        ],
    },
    {"metadata": {"name": "events.k8s.io"}, "versions": [{"version": "v1", "resources": [entry("events", "Event")]}]},
    {
        "metadata": {"name": "apps"},
        "versions": [{"version": "v1", "resources": [entry("deployments", "Deployment", short=("deploy",))]}],
    },
    {
        "metadata": {"name": "argoproj.io"},
        "versions": [
            {"version": "v1alpha1", "resources": [entry("applications", "Application", short=("app", "apps"))]}
        ],
    },
    {
        "metadata": {"name": "app.k8s.io"},
        "versions": [
            {"version": "v1beta1", "resources": [entry("applications", "Application")]},
            {"version": "v1alpha1", "resources": [entry("applications", "Application")]},
        ],
    },
    {
        "metadata": {"name": "ec2.aws.upbound.io"},
        "versions": [
            {"version": "v1beta1", "resources": [entry("vpcs", "VPC", scope="Cluster", categories=("managed",))]}
        ],
    },
    {"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1", "freshness": "Stale"}]},
    {
        "metadata": {"name": "apiextensions.k8s.io"},
        "versions": [
            {
                "version": "v1",
                "resources": [
                    entry(
                        "customresourcedefinitions", "CustomResourceDefinition", scope="Cluster", short=("crd", "crds")
                    )
                ],
            }
        ],
    },
]
DISCOVERY = Discovery.from_groups(GROUPS)


def qualified(word):
    return resolve_type(word, DISCOVERY).qualified


@pytest.mark.parametrize("word", ["configmaps", "configmap", "ConfigMap", "CM", "cm", "configmaps.v1"])
def test_core_type_in_every_spelling(word):
    assert qualified(word) == "configmaps"


@pytest.mark.parametrize(
    "word",
    [
        "applications.argoproj.io",
        "application.argoproj.io",
        "Application.argoproj.io",
        "applications.v1alpha1.argoproj.io",
        "app.argoproj.io",
    ],
)
def test_group_qualified_spellings(word):
    resource = resolve_type(word, DISCOVERY)
    assert (resource.group, resource.version, resource.plural) == ("argoproj.io", "v1alpha1", "applications")


def test_the_preferred_version_unless_one_is_typed():
    assert resolve_type("applications.app.k8s.io", DISCOVERY).version == "v1beta1"
    assert resolve_type("applications.v1alpha1.app.k8s.io", DISCOVERY).version == "v1alpha1"


def test_the_core_group_wins_as_in_kubectl_and_the_other_is_reachable_by_group():
    assert resolve_type("events", DISCOVERY).group == ""
    assert resolve_type("events.events.k8s.io", DISCOVERY).group == "events.k8s.io"


def test_a_plural_beats_another_types_short_name():
    # argoproj's Application has the short name "apps"; nothing else is named apps, so it is used...
    assert qualified("apps") == "applications.argoproj.io"
    # ...but a short name never takes over a type's own name
    assert qualified("deployments") == "deployments.apps"


def test_two_groups_are_ambiguous_and_the_error_names_each():
    with pytest.raises(InputError) as err:
        resolve_type("applications", DISCOVERY)
    message = str(err.value)
    assert "ambiguous" in message and "applications.app.k8s.io, applications.argoproj.io" in message
    assert "\n" not in message


def test_unknown_type_suggests_close_names_and_says_what_does_not_answer():
    with pytest.raises(InputError) as err:
        resolve_type("configmapz", DISCOVERY)
    message = str(err.value)
    assert "did you mean configmap or configmaps?" in message
    assert "metrics.k8s.io/v1beta1" in message


def test_a_category_is_not_a_type_and_the_error_says_what_to_use():
    with pytest.raises(InputError, match="crd --category managed"):
        resolve_type("managed", DISCOVERY)


def test_subresources_are_not_types():
    assert match_type("pods", DISCOVERY.types) == []
    assert match_type("pods/status", DISCOVERY.types) == []


def test_kinds_of_manifest_documents():
    kinds = DISCOVERY.kinds()
    assert kinds[("v1", "ConfigMap")].plural == "configmaps"
    assert kinds[("app.k8s.io/v1alpha1", "Application")].version == "v1alpha1"
    assert ("metrics.k8s.io/v1beta1", "PodMetrics") not in kinds


def test_completion_words_are_api_resources_names():
    words = DISCOVERY.words()
    assert "configmaps" in words and "applications.argoproj.io" in words and "pods/status" not in words


class TypedCluster:
    """Discovery and metadata-only lists: what the TYPE forms read."""

    def __init__(self, listed=()):
        self.listed = list(listed)
        self.requests = []

    def api_discovery(self):
        self.requests.append(("discovery",))
        return GROUPS

    def list_meta(self, resource, query: ListQuery):
        self.requests.append(("list", resource.plural, query.namespace, query.label_selector, query.field_selector))
        yield [ObjectMeta.from_dict(resource, {"metadata": m}) for m in self.listed]

    def get_meta(self, ref):
        self.requests.append(("get", ref.name))
        return ObjectMeta.from_dict(ref.resource, {"metadata": {"name": ref.name}})


def refs(targets):
    return [(r.resource.plural, r.namespace, r.name) for r in targets.objects]


def test_type_names_become_object_refs_in_the_default_namespace_without_reading_them():
    cluster = TypedCluster()
    targets = resolve(cluster, Selection(resource="cm", names=("a", "b", "a")), [], "team-a")
    assert refs(targets) == [("configmaps", "team-a", "a"), ("configmaps", "team-a", "b")]
    assert cluster.requests == [("discovery",)]


def test_type_slash_name_words_of_several_types_and_cluster_scoped_ones():
    cluster = TypedCluster()
    targets = resolve(cluster, Selection(objects=("pvc/data", "vpcs.ec2.aws.upbound.io/main", "cm/x")), [], "db")
    assert refs(targets) == [
        ("persistentvolumeclaims", "db", "data"),
        ("vpcs", None, "main"),
        ("configmaps", "db", "x"),
    ]


def test_a_selector_lists_the_type_metadata_only_in_one_namespace_or_all():
    listed = [{"name": "a", "namespace": "n1"}, {"name": "b", "namespace": "n2"}]
    cluster = TypedCluster(listed)
    targets = resolve(cluster, Selection(resource="configmaps", selector="app=x", all_namespaces=True), [], "default")
    assert refs(targets) == [("configmaps", "n1", "a"), ("configmaps", "n2", "b")]
    assert cluster.requests[1] == ("list", "configmaps", None, "app=x", None)
    cluster = TypedCluster()
    resolve(cluster, Selection(resource="configmaps", field_selector="metadata.name=a"), [], "default")
    assert cluster.requests[1] == ("list", "configmaps", "default", None, "metadata.name=a")


def test_namespace_and_crd_types_keep_their_meaning():
    cluster = TypedCluster()
    targets = resolve(cluster, Selection(objects=("namespace/team-a",)), [], "default")
    assert targets.namespaces == ["team-a"] and not targets.objects
    assert CRD_RESOURCE.plural == "customresourcedefinitions"


@pytest.mark.parametrize(
    "selection, message",
    [
        (dict(resource="cm"), "cm needs NAME..., -l SELECTOR or --field-selector"),
        (dict(resource="cm", names=("a",), selector="x=y"), "cannot be combined"),
        (dict(resource="cm", names=("a",), all_namespaces=True), "-A"),
        (dict(resource="cm", objects=("cm/a",)), "TYPE/NAME needs no separate TYPE"),
        (dict(names=("a",)), "NAME needs a resource type"),
        (dict(resource=" "), "empty resource type"),
        (dict(categories=("a,",)), "empty category"),
    ],
)
def test_bad_type_selections_are_input_errors(selection, message):
    with pytest.raises(InputError, match=message):
        Selection(**selection)


def test_a_bad_type_slash_name_word_is_an_input_error():
    with pytest.raises(InputError, match="is not TYPE/NAME"):
        resolve(TypedCluster(), Selection(objects=("cm/",)), [], "default")
