"""Reading a record back: strict about what it is (a file that is not a record, or damaged
before its last line, is bad input: nothing is undone from a guess), lenient about how it
ends (a run killed part way leaves a last line cut short, or zeros after its last line:
the writes before them count)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..journal import Write
from .entries import FORMAT, KeptBody, read_write, write_line
from .model import API_VERSION, RecordSummary
from .place import SUFFIX, record_files


@dataclass
class Record:
    """A record read back: its header (the command, context, server, selection and options
    of the run), every write as the API server answered it, the bodies kept before deletes,
    and its end line (None when the run was killed or is still going)."""

    path: Path
    header: dict[str, Any]
    writes: list[Write] = field(default_factory=list)
    kept: list[KeptBody] = field(default_factory=list)
    end: dict[str, Any] | None = None
    cut_short: bool = False  # the last line was cut (the run was killed while writing it)

    @property
    def id(self) -> str:
        return str(self.header.get("id") or self.path.name.removesuffix(SUFFIX))

    @property
    def undoes(self) -> str:
        return str(self.header.get("undoes") or "")

    def to_dict(self, summary: RecordSummary) -> dict[str, Any]:
        """history ID -o json|yaml (docs/history.schema.json): each write as its record line."""
        return {
            "apiVersion": API_VERSION,
            "kind": "Record",
            "summary": summary.to_dict(),
            "header": self.header,
            "writes": [write_line(w) for w in self.writes],
            "cutShort": self.cut_short,
        }


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, bool]]:
    """(number, entry or None when unreadable, whether it is the file's last line)."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read record {path}: {exc.strerror or exc}") from None
    with handle:
        previous: tuple[int, bytes] | None = None
        for number, raw in enumerate(handle, 1):
            if previous is not None:
                yield previous[0], _parse(previous[1]), False
            previous = (number, raw)
        if previous is not None:
            # A run killed while its record was open leaves zeros after its last line (the
            # file grows a reserved window at a time, mapped.py): they end the record.
            last = previous[1].rstrip(b"\0")
            if last:
                yield previous[0], _parse(last), not last.endswith(b"\n")


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def load(path: Path, writes: bool = True) -> Record:
    """The whole record (writes=False: the header and the end only, for history)."""
    record: Record | None = None
    for number, entry, last_unended in _lines(path):
        if record is None:
            if entry is None or entry.get("type") != "header" or entry.get("format") != FORMAT:
                raise InputError(f"{path} is not a kubectl-unfinalize record")
            record = Record(path, entry)
            continue
        if entry is None:
            if last_unended:
                record.cut_short = True
                break
            raise InputError(f"record {path} is damaged at line {number}: not one JSON object")
        try:
            _take(record, entry, writes)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"record {path} is damaged at line {number}: {exc!r}") from None
    if record is None:
        raise InputError(f"{path} is empty: not a kubectl-unfinalize record")
    return record


def _take(record: Record, entry: dict[str, Any], writes: bool) -> None:
    kind = entry.get("type")
    if kind == "end":
        record.end = entry
    elif kind == "write":
        item = read_write(entry)  # parsed even when not kept: a damaged line is found
        if writes:
            record.writes.append(item)
    elif kind in ("crd", "backup") and writes:
        record.kept.append(KeptBody.parse(entry))


def counts(record: Record) -> Counter[str]:
    """What the run did, by outcome: from its end line, else counted from its writes."""
    if record.end is not None and isinstance(record.end.get("counts"), dict):
        return Counter({str(k): int(v) for k, v in record.end["counts"].items()})
    return tally(record.writes)


def tally(writes: list[Write]) -> Counter[str]:
    found: Counter[str] = Counter()
    for write in writes:
        found[write.outcome if write.outcome != "ok" else write.done] += 1
        if write.leaks:
            found["mayLeak"] += 1
    return found


def find(name: str, folder: Path | None = None) -> Path:
    """A record by id, file name or path."""
    candidate = Path(name).expanduser()
    if candidate.is_file():
        return candidate
    files = record_files(folder)
    for path in files:
        if path.name in (name, name + SUFFIX):
            return path
    matches = [path for path in files if path.name.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        ids = ", ".join(p.name.removesuffix(SUFFIX) for p in matches[:5])
        raise InputError(f"record {name!r} is ambiguous: {ids}")
    raise InputError(f"no record {name!r} (kubectl unfinalize history lists them)")
