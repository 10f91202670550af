"""A write's record line, encoded without its dict (the bulk sender's thread writes one per
object): the same bytes the record's JSON encoder makes of write_line()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.model import ObjectRef, Resource
from kubectl_unfinalize.records.entries import FORMAT, write_bytes, write_line
from kubectl_unfinalize.records.reading import load
from kubectl_unfinalize.records.writer import RecordWriter, _line

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
NODES = Resource("", "v1", "nodes", "Node", False)
ODD = Resource('gr"oup\\é', "v1β", "wid\ngets", "W\u2028", True)

WRITES = [
    Write("unfinalize", ObjectRef(WIDGETS, "w-1", "ns"), "uid-1", "10", "11", ("a.io/x", "b.io/y"), ("a.io/x",)),
    Write("delete", ObjectRef(NODES, "node-1"), "u", finalizers=()),
    Write("unfinalize", ObjectRef(WIDGETS, "w", "ns"), outcome="failed", message='refused: "no" \\ \t\x01'),
    Write("unfinalize", ObjectRef(WIDGETS, "naïve-名", "ns"), leaks="the disk 'pd-1' (☁)", removed=("k/é",)),
    Write("refinalize", ObjectRef(ODD, "x\x7f\ud800", "n\x00s"), added=("a/b", 'c"d'), message="\U0001f600"),
    Write("force-delete", ObjectRef(WIDGETS, "p", ""), "", "", "", (), (), "ok", "on a lost node: 5m", "", ()),
]


@pytest.mark.parametrize("write", WRITES, ids=lambda w: w.op + ":" + w.ref.name.encode("ascii", "replace").decode())
def test_a_write_line_is_the_bytes_the_record_encoder_makes_of_its_dict(write: Write) -> None:
    assert write_bytes(write) == _line(write_line(write))


def test_a_write_line_reads_back_as_its_dict() -> None:
    for write in WRITES:
        assert json.loads(write_bytes(write)) == write_line(write)


def test_the_writer_writes_a_line_given_as_bytes_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path, pytest.fail, {"type": "header", "format": FORMAT, "id": "r1"})
    writer.write(lambda: write_bytes(WRITES[0]))
    writer.write(write_line(WRITES[1]))
    writer.close({"type": "end"})
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[1:3] == [write_bytes(WRITES[0]), _line(write_line(WRITES[1]))]
    assert load(path).writes == [WRITES[0], WRITES[1]]


def test_a_write_whose_field_is_not_a_str_is_written_as_the_encoder_writes_it() -> None:
    """A caller's Write may carry a value of another type (None, a number): the line is
    what the encoder makes of it, never an error on the thread that reports the write."""
    odd = Write("unfinalize", ObjectRef(WIDGETS, "w", "ns"), None, 7, finalizers=("a", 3))  # type: ignore[arg-type]
    assert write_bytes(odd) == _line(write_line(odd))
