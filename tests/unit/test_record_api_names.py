"""`record` means one thing in the Python API: where a call writes its own record. The record
a call reads or undoes is its first argument (`ref`). The names before 0.1.0 still work for
one release, each with a DeprecationWarning that says the new one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kubectl_unfinalize import record_api
from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.model import ObjectRef, Resource
from kubectl_unfinalize.records.model import UndoReport
from kubectl_unfinalize.records.reading import load
from kubectl_unfinalize.records.run_journal import open_journal

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)


def a_record(tmp_path: Path) -> Path:
    path = tmp_path / "r.jsonl"
    journal = open_journal(
        path, "r", {"version": "0", "command": "c", "context": "ctx", "server": "https://s"}, print, False
    )
    journal.wrote(Write("unfinalize", ObjectRef(WIDGETS, "a", "ns"), "u1", "1", "2", ("x",), ("x",)))
    journal.finish({"unfinalized": 1}, True, 0.0)
    return path


class Stop(Exception):
    pass


@pytest.fixture
def undo_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """undo() up to the start of its own record, with no cluster: what it read and where it
    would write."""
    seen: dict[str, Any] = {}

    @contextlib.contextmanager
    def connect(_: object) -> Iterator[SimpleNamespace]:
        yield SimpleNamespace(context="ctx", host="https://s")

    def recorded(record: str | None, *_: object) -> None:
        seen["record"] = record
        raise Stop

    def find(ref: str, folder: object) -> Path:
        seen["ref"] = ref
        return a_record(tmp_path)

    monkeypatch.setattr(record_api, "connect", connect)
    monkeypatch.setattr(record_api, "find", find)
    monkeypatch.setattr(record_api, "recorded", recorded)
    return seen


def test_api_undo_reads_its_first_argument_and_writes_to_record(undo_calls: dict[str, Any]) -> None:
    with pytest.raises(Stop):
        record_api.undo("20261203-070155-042e", record="/tmp/undo.jsonl")
    assert undo_calls == {"ref": "20261203-070155-042e", "record": "/tmp/undo.jsonl"}


def test_the_old_record_and_record_to_keywords_of_undo_warn_and_still_work(undo_calls: dict[str, Any]) -> None:
    with pytest.warns(DeprecationWarning, match=r"undo\(record=ID\) is now undo\(ID\)"), pytest.raises(Stop):
        record_api.undo(record="old-id")
    assert undo_calls == {"ref": "old-id", "record": None}
    with pytest.warns(DeprecationWarning, match=r"undo\(record_to=\.\.\.\) is now undo\(record=\.\.\.\)"):
        with pytest.raises(Stop):
            record_api.undo("old-id", record_to="/tmp/to.jsonl")
    assert undo_calls == {"ref": "old-id", "record": "/tmp/to.jsonl"}
    with pytest.raises(TypeError, match="unexpected keyword argument 'recrod'"):
        record_api.undo("old-id", recrod="x")


def test_read_record_takes_the_record_first_and_the_old_keyword_warns(tmp_path: Path) -> None:
    path = str(a_record(tmp_path))
    assert record_api.read_record(path).id == "r"
    with pytest.warns(DeprecationWarning, match=r"read_record\(record=ID\) is now read_record\(ID\)"):
        assert record_api.read_record(record=path).writes == load(Path(path)).writes


def test_api_undo_report_names_the_record_undone_and_its_own_record() -> None:
    report = UndoReport("r", record="/tmp/undo.jsonl")
    assert report.to_dict()["undone"] == "r" and report.to_dict()["record"] == "/tmp/undo.jsonl"
    with pytest.warns(DeprecationWarning, match="UndoReport.written is now UndoReport.record"):
        assert report.written == "/tmp/undo.jsonl"


def test_a_record_reads_back_as_the_writes_the_run_told_it(tmp_path: Path) -> None:
    """One shape for a write: what the engine told the journal is what reading returns."""
    told = Write("unfinalize", ObjectRef(WIDGETS, "a", "ns"), "u1", "1", "2", ("x",), ("x",))
    assert load(a_record(tmp_path)).writes == [told]
    assert told.done == "unfinalized" and Write("refinalize", told.ref).done == "refinalized"
    assert Write("newer-op", told.ref).done == "newer-op"
