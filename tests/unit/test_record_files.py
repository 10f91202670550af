"""The record on disk and undo's decisions, on plain files and an in-memory cluster."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kubectl_unfinalize.errors import Conflict, InputError
from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.model import CRD_RESOURCE, ObjectMeta, ObjectRef, Resource
from kubectl_unfinalize.options import DryRun
from kubectl_unfinalize.records.entries import FORMAT, kept_line, write_line
from kubectl_unfinalize.records.mapped import WINDOW
from kubectl_unfinalize.records.place import new_id, path_for, record_files
from kubectl_unfinalize.records.reading import counts, find, load
from kubectl_unfinalize.records.undo import NOT_BACKED_UP, Undo
from kubectl_unfinalize.records.writer import RecordWriter

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)


def header(**extra: Any) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "id": "r1", "context": "c", "server": "https://127.0.0.1:1", **extra}


def widget(name: str) -> ObjectRef:
    return ObjectRef(WIDGETS, name, "ns")


def test_a_run_that_writes_nothing_leaves_no_record(tmp_path: Path) -> None:
    writer = RecordWriter(tmp_path / "r.jsonl", pytest.fail, header())
    writer.close({"type": "end"})
    assert not (tmp_path / "r.jsonl").exists() and not writer.written


def write_record(path: Path, *lines: dict[str, Any]) -> Path:
    writer = RecordWriter(path, pytest.fail, header())
    for line in lines or ({"type": "note"},):  # a record is made at its first line
        writer.write(line)
    writer.close({"type": "end"})
    return path


def test_a_record_is_private_to_its_user_folder_and_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "kubectl-unfinalize" / "x.jsonl"
    write_record(path, {"type": "write"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_answered_write_is_in_the_file_at_once_and_the_end_cuts_the_reserved_rest(tmp_path: Path) -> None:
    """A run killed by SIGKILL leaves every write answered before it: the line is in the
    page cache (a mapped window) when write() returns. Until the end the file is padded
    with zeros, which the reader takes for the end of the record."""
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path, pytest.fail, header())
    writer.write(write_line(Write("unfinalize", widget("a"), "u1", "1", "2", ("x",), ("x",))))
    assert path.read_bytes().rstrip(b"\0").count(b"\n") == 2  # read while the writer is still open
    assert path.stat().st_size == WINDOW
    record = load(path)
    assert [w.ref.name for w in record.writes] == ["a"] and record.end is None and not record.cut_short
    writer.close({"type": "end"})
    assert b"\0" not in path.read_bytes() and load(path).end == {"type": "end"}


def test_a_record_longer_than_a_window_reads_whole(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path, pytest.fail, header())
    big = "x" * 300_000  # lines that straddle the windows' edges
    for i in range(10):
        writer.write({"type": "note", "i": i, "pad": big})
    writer.close({"type": "end"})
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [line.get("i") for line in lines[1:-1]] == list(range(10)) and lines[-1] == {"type": "end"}
    assert path.stat().st_size > 2 * WINDOW


def test_a_killed_runs_zeros_end_the_record_and_a_line_cut_before_them_is_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first = json.dumps(header()) + "\n" + json.dumps(write_line(Write("unfinalize", widget("a"), "u1"))) + "\n"
    path.write_bytes(first.encode() + bytes(4096))
    record = load(path)
    assert [w.ref.name for w in record.writes] == ["a"] and not record.cut_short
    path.write_bytes(first.encode() + b'{"type":"wri' + bytes(4096))
    record = load(path)
    assert [w.ref.name for w in record.writes] == ["a"] and record.cut_short


def test_a_record_to_a_stream_is_appended_by_the_writer_thread_within_the_flush_interval(tmp_path: Path) -> None:
    """--record /dev/stdout: a pipe cannot be mapped, and a log file the run's stdout goes
    to is not cut: the lines are appended, by a thread of the record's own."""
    import time

    from kubectl_unfinalize.records.writer import FLUSH_EVERY

    log = tmp_path / "log"
    log.write_bytes(b"before\n")
    with log.open("ab") as stdout:
        path = Path(f"/proc/self/fd/{stdout.fileno()}")
        writer = RecordWriter(path, pytest.fail, header())
        writer.write(write_line(Write("unfinalize", widget("a"), "u1", "1", "2", ("x",), ("x",))))
        deadline = time.monotonic() + 20 * FLUSH_EVERY
        while log.read_bytes().count(b"\n") < 3 and time.monotonic() < deadline:
            time.sleep(FLUSH_EVERY / 5)
        assert log.read_bytes().count(b"\n") == 3  # before, the header, the write: while still open
        writer.close({"type": "end"})
    lines = log.read_bytes().splitlines()
    assert lines[0] == b"before" and json.loads(lines[-1]) == {"type": "end"} and len(lines) == 4


def test_where_blocks_cannot_be_reserved_the_record_file_is_written_by_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS has no posix_fallocate: the record is still written (a thread's, every
    FLUSH_EVERY), never an AttributeError in the middle of a run."""
    monkeypatch.delattr(os, "posix_fallocate")
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path, pytest.fail, header())
    for name in "abc":
        writer.write(write_line(Write("unfinalize", widget(name), "u1", "1", "2", ("x",), ("x",))))
    writer.close({"type": "end"})
    assert b"\0" not in path.read_bytes() and [w.ref.name for w in load(path).writes] == ["a", "b", "c"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_disk_that_fills_while_the_record_grows_is_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next window is reserved before it is mapped: no space is an OSError there (and a
    warning), never a SIGBUS when a page of the map is first written."""
    import errno

    from kubectl_unfinalize.records import mapped

    reserved: list[int] = []

    def fallocate(fd: int, offset: int, length: int) -> None:
        if offset > 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        reserved.append(length)
        os.ftruncate(fd, offset + length)

    monkeypatch.setattr(mapped.os, "posix_fallocate", fallocate)
    warnings: list[str] = []
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path, warnings.append, header())
    for i in range(5):
        writer.write({"type": "note", "i": i, "pad": "x" * 300_000})
    writer.close({"type": "end"})
    assert reserved == [WINDOW] and len(warnings) == 1 and "No space" in warnings[0] and str(path) in warnings[0]
    assert not writer.written
    assert [line.get("i") for line in map(json.loads, path.read_bytes().rstrip(b"\0").splitlines()[1:])] == [0, 1, 2]


def test_a_record_that_cannot_be_written_is_one_warning_and_the_writes_go_on(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    warnings: list[str] = []
    writer = RecordWriter(blocker / "sub" / "r.jsonl", warnings.append, header())
    for _ in range(3):
        writer.write({"type": "write"})
    writer.close({"type": "end"})
    assert len(warnings) == 1 and str(blocker / "sub" / "r.jsonl") in warnings[0]


def test_a_full_disk_mid_run_is_one_warning(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("this system has no /dev/full to stand for a full disk")
    warnings: list[str] = []
    writer = RecordWriter(Path("/dev/full"), warnings.append, header())
    writer.write({"type": "write"})
    writer.close({"type": "end"})
    assert len(warnings) == 1 and "No space" in warnings[0]


def test_a_file_that_is_not_a_record_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(InputError, match="not a kubectl-unfinalize record"):
        load(path)
    path.write_text("")
    with pytest.raises(InputError, match="empty"):
        load(path)


def test_a_damaged_line_before_the_end_is_bad_input_a_cut_last_line_is_not(tmp_path: Path) -> None:
    line = write_line(Write("unfinalize", widget("a"), "u1", removed=("x",)))
    path = write_record(tmp_path / "r.jsonl", line, line)
    text = path.read_text().splitlines()
    path.write_text("\n".join([text[0], text[1][:20], text[2]]) + "\n")
    with pytest.raises(InputError, match="damaged at line 2"):
        load(path)
    path.write_text("\n".join([text[0], text[1], text[2][:30]]))  # killed while writing line 3
    record = load(path)
    assert record.cut_short and len(record.writes) == 1


def test_counts_come_from_the_end_line_or_from_the_writes(tmp_path: Path) -> None:
    lines = [
        write_line(Write("unfinalize", widget("a"), "u1", removed=("x",), leaks="a disk")),
        write_line(Write("delete", widget("b"), "u2")),
    ]
    path = write_record(tmp_path / "r.jsonl", *lines)
    assert counts(load(path)) == {"unfinalized": 1, "deleted": 1, "mayLeak": 1}


def test_records_are_found_by_id_prefix_and_listed_newest_first(tmp_path: Path) -> None:
    older, newer = new_id(1_700_000_000), new_id(1_800_000_000)
    for run in (older, newer):
        write_record(tmp_path / f"{run}.jsonl")
    assert [p.name for p in record_files(tmp_path)] == [f"{newer}.jsonl", f"{older}.jsonl"]
    assert find(newer[:15], tmp_path).name == f"{newer}.jsonl"
    with pytest.raises(InputError, match="no record"):
        find("19990101", tmp_path)


def test_record_none_writes_nothing_and_a_folder_holds_the_file_under_its_id(tmp_path: Path) -> None:
    assert path_for("none", "id1") is None
    assert path_for(str(tmp_path), "id1") == tmp_path / "id1.jsonl"
    assert path_for(str(tmp_path / "mine.jsonl"), "id1") == tmp_path / "mine.jsonl"


class MemoryCluster:
    """Objects by ref, each a metadata view and a body; conflicts on demand."""

    def __init__(self) -> None:
        self.objects: dict[ObjectRef, ObjectMeta] = {}
        self.bodies: dict[ObjectRef, dict[str, Any]] = {}
        self.conflicts = 0
        self.writes: list[tuple[str, ObjectRef]] = []

    def put(self, ref: ObjectRef, uid: str, finalizers: tuple[str, ...] = (), terminating: bool = False) -> None:
        self.objects[ref] = ObjectMeta(ref, uid, "5", finalizers, terminating)

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None:
        return self.objects.get(ref)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        if ref not in self.objects:
            return None
        return {"status": {"conditions": [{"type": "Established", "status": "True"}]}}

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        if self.conflicts:
            self.conflicts -= 1
            self.put(meta.ref, meta.uid, meta.finalizers + ("late.example.com",))
            raise Conflict(409, "Conflict", "the object has been modified")
        assert keep is not None and self.objects[meta.ref].resource_version == meta.resource_version
        self.writes.append(("patch", meta.ref))
        if dry_run is DryRun.NONE:  # a server dry run stores nothing
            self.put(meta.ref, meta.uid, keep)
        return "6"

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any], dry_run: DryRun) -> str:
        ref = ObjectRef(resource, body["metadata"]["name"], namespace)
        assert "uid" not in body["metadata"] and "resourceVersion" not in body["metadata"]
        self.writes.append(("create", ref))
        self.put(ref, "new-" + ref.name, tuple(body["metadata"].get("finalizers") or ()))
        self.bodies[ref] = body
        return "new-" + ref.name


class Journal:
    def wants(self, kind: str) -> bool:
        return False

    def __init__(self) -> None:
        self.writes: list[Write] = []

    def wrote(self, write: Write) -> None:
        self.writes.append(write)

    def keep(self, kind: str, ref: ObjectRef, body: dict[str, Any]) -> None:
        raise AssertionError("undo keeps no bodies")


def undo(cluster: MemoryCluster, tmp_path: Path, *lines: dict[str, Any]) -> tuple[dict[str, tuple[bool, str]], Journal]:
    journal = Journal()
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
        journal = Journal()
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


def test_a_record_under_a_file_says_that_the_path_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "crd.yaml").write_text("")
    warnings: list[str] = []
    RecordWriter(tmp_path / "crd.yaml" / "run.jsonl", warnings.append, header()).write({"type": "write"})
    assert warnings == [f"cannot write the record {tmp_path}/crd.yaml/run.jsonl: {tmp_path}/crd.yaml is a file, "
                        "not a folder; the run goes on without it"]  # fmt: skip


def test_the_default_folder_keeps_the_newest_records_only(tmp_path: Path) -> None:
    from kubectl_unfinalize.records.place import prune

    for i in range(5):
        write_record(tmp_path / f"2026120{i}-000000-0000.jsonl")
    prune(tmp_path, keep=3)
    assert [p.name[:8] for p in record_files(tmp_path)] == ["20261204", "20261203", "20261202"]
