"""One finalizer held across many CRD-served types (a removed crossplane provider leaves
hundreds): scan suggests one command for all of them, by --group or --category where it
selects exactly those CRDs, by their names otherwise; never one command per type."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fakecluster import FakeScanCluster, entry
from test_scan_engine import NOW, SCHEMA, md

from kubectl_unfinalize.cli.scan_output import render
from kubectl_unfinalize.scanning.commands import crd_selector
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.survey import scan

MR = "finalizer.managedresource.crossplane.io"
CLEANUP = "customresourcecleanup.apiextensions.k8s.io"


def provider(kinds: dict[str, list[str]], categories: dict[str, list[str]], terminating=()):
    """A fake cluster: CRDs `plural.group` (kinds: group -> plurals), each with two objects
    deleted 10 minutes ago and held by crossplane's finalizer; `categories` per CRD name."""
    discovery = [
        {
            "metadata": {"name": "apiextensions.k8s.io"},
            "versions": [{"version": "v1", "resources": [entry("customresourcedefinitions", "CRD", "Cluster")]}],
        }
    ]
    objects: dict[str, list] = {"customresourcedefinitions": []}
    for group, plurals in kinds.items():
        resources = []
        for plural in plurals:
            name = f"{plural}.{group}"
            resources.append({**entry(plural, plural.title(), "Cluster"), "categories": categories.get(name, [])})
            deleted = 900 if name in terminating else None
            objects["customresourcedefinitions"].append(md(name, deleted=deleted, finalizers=(CLEANUP,), manager=None))
            objects[plural] = [md(f"{plural}-{k}", deleted=600, finalizers=(MR,), manager=None) for k in range(2)]
        discovery.append({"metadata": {"name": group}, "versions": [{"version": "v1beta1", "resources": resources}]})
    fake = FakeScanCluster(objects, full={"apiservices": [], "leases": []})
    fake.api_discovery = lambda: discovery
    return fake


def kinds_of(groups: int, per_group: int) -> dict[str, list[str]]:
    return {f"svc{g}.aws.example.io": [f"thing{g}x{k}s" for k in range(per_group)] for g in range(groups)}


def names_of(kinds: dict[str, list[str]]) -> list[str]:
    return [f"{plural}.{group}" for group, plurals in kinds.items() for plural in plurals]


def test_a_finalizer_across_many_types_is_one_command_by_category_when_it_selects_exactly_them():
    kinds = kinds_of(5, 8)
    kinds["aws.example.io"] = ["providerconfigs"]  # the provider's own type: not managed, nothing stuck
    managed = {name: ["crossplane", "managed"] for name in names_of(kinds) if not name.startswith("providerconfigs")}
    fake = provider(kinds, managed)
    fake.objects["providerconfigs"] = []
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    stuck = [g for g in report.groups if g.stuck]
    assert len(stuck) == 40
    assert [f.to_dict() for f in report.fixes] == [
        {
            "finalizer": MR,
            "resources": sorted(g.resource for g in stuck),
            "commands": [f"kubectl unfinalize crd --category crossplane --only-terminating --finalizer {MR}"],
        }
    ]
    text = render(report, "text")
    assert text.count("free: ") == 1, text
    assert f"    free: kubectl unfinalize crd --category crossplane --only-terminating --finalizer {MR}" in text
    document = json.loads(render(report, "json"))
    jsonschema.validate(document, SCHEMA)
    assert document["fixes"][0]["commands"] == report.fixes[0].commands


def test_one_group_is_named_by_group_and_a_shared_category_does_not_select_more():
    kinds = kinds_of(2, 3)
    categories = {name: ["managed"] for name in names_of(kinds)}  # both groups list it; only svc0's are stuck
    fake = provider(kinds, categories)
    for plural in kinds["svc1.aws.example.io"]:
        fake.objects[plural] = []
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert report.fixes[0].commands == [
        f"kubectl unfinalize crd --group svc0.aws.example.io --only-terminating --finalizer {MR}"
    ]


def test_names_when_no_selector_is_exact_and_terminating_crds_are_deleted_together():
    kinds = kinds_of(2, 2)
    going = {"thing0x0s.svc0.aws.example.io", "thing1x0s.svc1.aws.example.io"}
    fake = provider(kinds, {}, terminating=going)
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    (fix, crds) = report.fixes
    assert fix.commands == [
        f"kubectl unfinalize crd {' '.join(sorted(going))} --delete",
        "kubectl unfinalize crd thing0x1s.svc0.aws.example.io thing1x1s.svc1.aws.example.io"
        f" --only-terminating --finalizer {MR}",
    ]
    assert crds.finalizer == CLEANUP and crds.resources == sorted(going)
    assert crds.commands == [f"kubectl unfinalize crd {' '.join(sorted(going))} --delete"]
    text = render(report, "text")
    assert text.count("free: ") == 3, text  # each once: no per-CRD command besides
    assert all(len(c.commands) == 1 for c in report.crds)  # -o json keeps each entry's own


@pytest.mark.parametrize(
    ("names", "every", "expected"),
    [
        ({"a.g.io"}, {"a.g.io": ("x",), "b.g.io": ("x",)}, "a.g.io"),
        ({"a.g.io", "b.g.io"}, {"a.g.io": (), "b.g.io": (), "c.h.io": ()}, "--group g.io"),
        (
            {"a.g.io", "b.g.io"},
            {"a.g.io": ("m",), "b.g.io": ("m",), "c.g.io": (), "d.h.io": ("m",)},
            "--group g.io --category m",
        ),
        ({"a.g.io", "b.h.io"}, {"a.g.io": ("m",), "b.h.io": ("m",), "c.i.io": ()}, "--category m"),
        # a CRD discovery did not list could list the category: only names are sure
        ({"a.g.io", "b.h.io"}, {"a.g.io": ("m",), "b.h.io": ("m",), "c.i.io": None}, "a.g.io b.h.io"),
        ({"a.g.io", "b.h.io"}, {"a.g.io": ("m",), "b.h.io": ("m",), "c.i.io": ("m",)}, "a.g.io b.h.io"),
    ],
)
def test_the_selector_selects_exactly_the_names(names, every, expected):
    assert crd_selector(names, every) == expected
