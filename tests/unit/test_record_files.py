"""The record on disk and undo's decisions, on plain files and an in-memory cluster."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kubectl_unfinalize.errors import InputError
from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.model import ObjectRef, Resource
from kubectl_unfinalize.records.entries import FORMAT, write_line
from kubectl_unfinalize.records.mapped import WINDOW
from kubectl_unfinalize.records.place import new_id, path_for, record_files
from kubectl_unfinalize.records.reading import counts, find, load
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
