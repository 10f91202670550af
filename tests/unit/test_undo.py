"""undo's decisions on an in-memory cluster: what it puts back, what it leaves and why,
read from records written as a run writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakecluster import MemoryCluster, MemoryJournal
from test_record_files import widget, write_record

from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.model import CRD_RESOURCE, NAMESPACE_RESOURCE, ObjectRef
from kubectl_unfinalize.options import DryRun
from kubectl_unfinalize.records.entries import kept_line, write_line
from kubectl_unfinalize.records.reading import load
from kubectl_unfinalize.records.undo import NOT_BACKED_UP, Undo


def undo(
    cluster: MemoryCluster, tmp_path: Path, *lines: dict[str, Any]
) -> tuple[dict[str, tuple[bool, str]], MemoryJournal]:
    journal = MemoryJournal()
    items = Undo(cluster, journal, DryRun.NONE, sleep=lambda _: None).run(load(write_record(tmp_path / "r", *lines)))
    return {f"{i.what}:{i.ref}": (i.done, i.detail) for i in items}, journal


def freed(name: str, uid: str, removed: tuple[str, ...]) -> dict[str, Any]:
    return write_line(Write("unfinalize", widget(name), uid, "1", "2", removed, removed))


def test_undo_puts_finalizers_back_and_keeps_those_added_since(tmp_path: Path) -> None:
    cluster = MemoryCluster()
    cluster.put(widget("a"), "u1", ("controller.example.com/new",))
    cluster.conflicts = 1  # a controller writes between undo's read and its patch
    items, journal = undo(cluster, tmp_path, freed("a", "u1", ("kopf.zalando.org/KopfFinalizerMarker",)))
    assert items["finalizers:widget.example.com/a"][0]
    assert cluster.objects[widget("a")].finalizers == (
        "controller.example.com/new",
        "late.example.com",
        "kopf.zalando.org/KopfFinalizerMarker",
    )
    assert [w.op for w in journal.writes] == ["refinalize"]


def test_undo_leaves_what_it_must_and_says_why(tmp_path: Path) -> None:
    cluster = MemoryCluster()
    cluster.put(widget("recreated"), "other")
    cluster.put(widget("going"), "u3", ("x",), terminating=True)
    cluster.put(widget("done"), "u4", ("x",))
    items, journal = undo(
        cluster,
        tmp_path,
        freed("gone", "u1", ("x",)),
        freed("recreated", "u2", ("x",)),
        freed("going", "u3", ("x",)),
        freed("done", "u4", ("x",)),
    )
    assert items["finalizers:widget.example.com/gone"] == (False, "gone")
    assert "re-created since" in items["finalizers:widget.example.com/recreated"][1]
    assert "refuses new finalizers" in items["finalizers:widget.example.com/going"][1]
    assert items["finalizers:widget.example.com/done"][0] and cluster.writes == []
    assert journal.writes == []


def test_undo_creates_a_deleted_crd_and_its_backed_up_objects_again(tmp_path: Path) -> None:
    crd = ObjectRef(CRD_RESOURCE, "widgets.example.com")
    manifest = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": crd.name,
            "uid": "c1",
            "resourceVersion": "9",
            "finalizers": ["customresourcecleanup.apiextensions.k8s.io"],
        },
        "spec": {"group": "example.com"},
        "status": {"acceptedNames": {}},
    }
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "spec": {"size": 3},
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "u1",
            "labels": {"app": "x"},
            "finalizers": ["x"],
            "deletionTimestamp": "2026-12-03T00:00:00Z",
        },
    }
    cluster = MemoryCluster()
    items, journal = undo(
        cluster,
        tmp_path,
        kept_line("crd", crd, manifest),
        kept_line("backup", widget("a"), body),
        write_line(Write("delete", widget("a"), "u1")),
        freed("a", "u1", ("x",)),
        write_line(Write("delete", widget("b"), "u2")),
        write_line(Write("delete", crd, "c1")),
    )
    assert items["crd:customresourcedefinition.apiextensions.k8s.io/widgets.example.com"] == (
        True,
        "created again from the record",
    )
    assert items["object:widget.example.com/a"][0]
    assert items["object:widget.example.com/b"] == (False, NOT_BACKED_UP)
    assert "finalizers:widget.example.com/a" not in items  # created with its finalizers
    assert [w[0] for w in cluster.writes] == ["create", "create"]
    assert "finalizers" not in cluster.bodies[crd]["metadata"] and "status" not in cluster.bodies[crd]
    created = cluster.bodies[widget("a")]
    assert created["spec"] == {"size": 3} and created["metadata"]["labels"] == {"app": "x"}
    assert created["metadata"]["finalizers"] == ["x"] and "deletionTimestamp" not in created["metadata"]
    assert [w.op for w in journal.writes] == ["create", "create"]


def test_a_crd_of_the_same_name_made_since_is_not_replaced(tmp_path: Path) -> None:
    crd = ObjectRef(CRD_RESOURCE, "widgets.example.com")
    cluster = MemoryCluster()
    cluster.put(crd, "someone-else")
    items, _ = undo(
        cluster,
        tmp_path,
        kept_line("crd", crd, {"metadata": {"name": crd.name, "uid": "c1"}}),
        write_line(Write("delete", crd, "c1")),
    )
    assert "replaced by a CRD of the same name" in items[f"crd:{crd.display}"][1]
    assert cluster.writes == []


def test_a_kept_body_survives_the_round_trip_compressed(tmp_path: Path) -> None:
    body = {"metadata": {"name": "a", "annotations": {"k": "v" * 5000}}}
    line = kept_line("backup", widget("a"), body)
    assert len(json.dumps(line)) < 1000
    record = load(write_record(tmp_path / "r", line))
    assert record.kept[0].body() == body


def test_undo_in_a_dry_run_says_what_it_would_do_and_sends_no_create_for_a_type_not_served_yet(tmp_path: Path) -> None:
    """A server dry run creates the CRD in name only: its objects would be refused (404),
    which is no reason to call them failures."""
    crd = ObjectRef(CRD_RESOURCE, "widgets.example.com")
    manifest = {"metadata": {"name": crd.name, "uid": "c1"}, "spec": {"group": "example.com"}}
    body = {"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}}
    cluster = MemoryCluster()
    cluster.put(widget("live"), "u9")
    lines = (
        kept_line("crd", crd, manifest),
        kept_line("backup", widget("a"), body),
        write_line(Write("delete", widget("a"), "u1")),
        write_line(Write("delete", crd, "c1")),
        freed("live", "u9", ("x",)),
    )
    record = load(write_record(tmp_path / "r", *lines))
    for dry_run in (DryRun.SERVER, DryRun.CLIENT):
        cluster.writes.clear()
        journal = MemoryJournal()
        items = {f"{i.what}:{i.ref}": i for i in Undo(cluster, journal, dry_run, sleep=lambda _: None).run(record)}
        assert all(item.done and item.detail.startswith("would be") for item in items.values()), items
        assert "once its CRD is served" in items["object:widget.example.com/a"].detail
        assert journal.writes == []  # a dry run leaves no record
        creates = [w for w in cluster.writes if w[0] == "create"]
        assert creates == ([("create", crd)] if dry_run is DryRun.SERVER else [])
        cluster.objects.pop(crd, None)


def test_undo_records_the_finalizers_it_put_back_as_added_not_removed(tmp_path: Path) -> None:
    cluster = MemoryCluster()
    cluster.put(widget("a"), "u1")
    _, journal = undo(cluster, tmp_path, freed("a", "u1", ("x",)))
    (write,) = journal.writes
    assert (write.op, write.added, write.removed) == ("refinalize", ("x",), ())
    assert write_line(write)["added"] == ["x"]


def test_undo_leaves_a_namespace_the_run_created_again_gone_and_says_why(tmp_path: Path) -> None:
    """A namespace that was gone before the run (removed through /finalize), created again
    only to free what was left in it, then deleted again: undo does not bring it back."""
    cluster = MemoryCluster()
    ns = ObjectRef(NAMESPACE_RESOURCE, "orphans")
    items, journal = undo(
        cluster,
        tmp_path,
        write_line(Write("recreate", ns, "n1", message="gone; created again to free what was left in it")),
        write_line(Write("delete", ns, "n1")),
    )
    done, detail = items["object:namespace/orphans"]
    assert not done and "gone before this run" in detail and "not backed up" not in detail
    assert journal.writes == [] and cluster.writes == []


def test_undo_says_an_object_deleted_unreadable_cannot_come_back(tmp_path: Path) -> None:
    cluster = MemoryCluster()
    items, journal = undo(
        cluster, tmp_path, write_line(Write("unsafe-delete", widget("bad"), message="unreadable from storage: x"))
    )
    done, detail = items["object:widget.example.com/bad"]
    assert not done and "could not read it from storage" in detail and "--unsafe-delete-corrupt" in detail
    assert journal.writes == [] and cluster.writes == []


def test_undo_says_a_pod_force_deleted_on_a_lost_node_cannot_come_back(tmp_path: Path) -> None:
    from kubectl_unfinalize.lost_nodes import PODS

    cluster = MemoryCluster()
    pod = ObjectRef(PODS, "web-0", "shop")
    items, journal = undo(cluster, tmp_path, write_line(Write("force-delete", pod, "u1", message="on a lost node: x")))
    done, detail = items["object:pod/web-0"]
    assert not done and "force-deleted on a lost node (--force-lost-pods)" in detail and "a new one" in detail
    assert journal.writes == [] and cluster.writes == []
