"""history -o json|yaml, history ID -o json|yaml and undo -o json|yaml against
docs/history.schema.json: documents built by the command line's own functions from a
record written and read back as a run writes and history reads it; and every line of
such records against docs/record.schema.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kubectl_unfinalize.cli.record_output import document, undo_document
from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.model import CRD_RESOURCE, ObjectRef, Resource
from kubectl_unfinalize.record_api import history_document
from kubectl_unfinalize.records.history import summary
from kubectl_unfinalize.records.model import UndoItem, UndoReport
from kubectl_unfinalize.records.reading import load
from kubectl_unfinalize.records.run_journal import open_journal

DOCS = Path(__file__).parents[2] / "docs"
SCHEMA = json.loads((DOCS / "history.schema.json").read_text())
LINE_SCHEMA = json.loads((DOCS / "record.schema.json").read_text())
BUCKETS = Resource("storage.example.com", "v1", "buckets", "Bucket", True)
CRD = ObjectRef(CRD_RESOURCE, "buckets.storage.example.com")
FIELDS = {
    "version": "0.1.0",
    "command": "kubectl unfinalize crd buckets.storage.example.com --delete --backup",
    "context": "c",
}


def bucket(name: str) -> ObjectRef:
    return ObjectRef(BUCKETS, name, "team-a")


def written(tmp_path: Path, name: str = "r.jsonl", finish: bool = True, **fields: Any) -> Path:
    """A record as a --delete --backup run writes it: a backup, a delete, a finalizer
    patch that may leak, a failure, a CRD's manifest and its delete."""
    path = tmp_path / name
    journal = open_journal(
        path, name.removesuffix(".jsonl"), {**FIELDS, "server": "https://s", **fields}, pytest.fail, True
    )
    journal.keep("backup", bucket("logs"), {"metadata": {"name": "logs", "uid": "u1"}, "spec": {"region": "eu"}})
    journal.wrote(Write("delete", bucket("logs"), "u1", new_version="7", finalizers=("example.com/cleanup",)))
    journal.wrote(
        Write(
            "unfinalize",
            bucket("logs"),
            "u1",
            "7",
            "8",
            ("example.com/cleanup",),
            ("example.com/cleanup",),
            leaks="the external resource 'team-a-logs' (crossplane.io/external-name)",
        )
    )
    journal.wrote(Write("unfinalize", bucket("assets"), outcome="failed", message="forbidden"))
    journal.keep("crd", CRD, {"metadata": {"name": CRD.name, "uid": "u9"}, "spec": {"group": "storage.example.com"}})
    journal.wrote(
        Write("delete", CRD, "u9", new_version="9", finalizers=("customresourcecleanup.apiextensions.k8s.io",))
    )
    if finish:
        journal.finish({"unfinalized": 1, "deleted": 1, "failed": 1}, False, 1.5)
    else:
        journal.writer.close()
    return path


def an_undo(tmp_path: Path) -> Path:
    path = tmp_path / "u.jsonl"
    journal = open_journal(path, "u", {**FIELDS, "server": "https://s", "undoes": "r"}, pytest.fail, False)
    journal.wrote(Write("create", CRD, "u10"))
    journal.wrote(Write("refinalize", bucket("logs"), "u1", "8", "10", (), ("example.com/cleanup",)))
    journal.finish({"putBack": 2}, True, 0.0)
    return path


def undo_report() -> UndoReport:
    return UndoReport(
        "r",
        [
            UndoItem(CRD.display, None, True, "crd", "created again from the record"),
            UndoItem(bucket("logs").display, "team-a", True, "object", "created again from the backup"),
            UndoItem(bucket("assets").display, "team-a", False, "finalizers", "gone"),
        ],
        dry_run="server",
    )


def documents(tmp_path: Path) -> list[dict[str, Any]]:
    records = [load(written(tmp_path)), load(an_undo(tmp_path)), load(written(tmp_path, "k.jsonl", finish=False))]
    summaries = [summary(record) for record in records]
    return [
        history_document(summaries),
        history_document([]),
        *(record.to_dict(item) for record, item in zip(records, summaries, strict=True)),
        undo_document(undo_report()),
        undo_document(UndoReport("r")),
    ]


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_every_document_validates_against_the_schema(tmp_path: Path, output: str) -> None:
    built = documents(tmp_path)
    assert [d["kind"] for d in built] == [
        "History",
        "History",
        "Record",
        "Record",
        "Record",
        "UndoReport",
        "UndoReport",
    ]
    for data in built:
        text = document(data, output)
        jsonschema.validate(json.loads(text) if output == "json" else yaml.safe_load(text), SCHEMA)


def test_the_documents_say_what_the_record_holds(tmp_path: Path) -> None:
    history, _, run, undo, killed, *_ = documents(tmp_path)
    assert [item["undoes"] for item in history["items"]] == [None, "r", None]
    assert [item["finished"] for item in history["items"]] == [True, True, False]
    assert [w["op"] for w in run["writes"]] == ["delete", "unfinalize", "unfinalize", "delete"]
    assert run["writes"][1]["resource"]["plural"] == "buckets" and run["writes"][1]["leaks"]
    assert all(w["type"] == "write" for w in run["writes"])  # each write as its line in the record
    assert undo["header"]["undoes"] == "r" and undo["summary"]["counts"] == {"putBack": 2}
    assert killed["summary"]["counts"] == {"deleted": 2, "unfinalized": 1, "failed": 1, "mayLeak": 1}


@pytest.mark.parametrize(
    ("which", "change"),
    [
        (0, lambda d: d["items"][0].update(when=d["items"][0].pop("started"))),
        (2, lambda d: d["writes"][0].update(operation=d["writes"][0].pop("op"))),
        (2, lambda d: d.update(kind="History")),
        (5, lambda d: d["items"][0].update(what="namespace")),
    ],
)
def test_the_schema_catches_a_renamed_field_or_a_wrong_kind(tmp_path: Path, which: int, change: Any) -> None:
    data = documents(tmp_path)[which]
    change(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)


def test_every_line_of_a_record_validates_against_the_record_schema(tmp_path: Path) -> None:
    records = [written(tmp_path), an_undo(tmp_path), written(tmp_path, "k.jsonl", finish=False)]
    lines = [json.loads(line) for path in records for line in path.read_text().splitlines()]
    assert {line["type"] for line in lines} == {"header", "write", "crd", "backup", "end"}
    for line in lines:
        jsonschema.validate(line, LINE_SCHEMA)
    write = next(line for line in lines if line["type"] == "write")
    write["removedFinalizers"] = write.pop("removed")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(write, LINE_SCHEMA)
