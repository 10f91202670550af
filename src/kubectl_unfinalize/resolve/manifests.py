"""-f inputs -> Kubernetes documents, with file and line in every error."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import InputError, yaml_problem

EXTENSIONS = (".yaml", ".yml", ".json")
MAX_BYTES = 64 * 1024 * 1024  # a manifest this large is a mistake (a log, a dump), not a teardown's input


@dataclass
class Document:
    source: str
    index: int
    body: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.source} (document {self.index + 1})"


def read_manifests(paths: list[str], recursive: bool = False, stdin: IO[str] | None = None) -> list[Document]:
    documents: list[Document] = []
    for path in paths:
        if path == "-":
            documents += parse_text((stdin or sys.stdin).read(), "<stdin>")
            continue
        if "://" in path:
            raise InputError(f"{path}: URLs are not supported; download the manifest first")
        documents += _read_path(Path(path), recursive)
    return documents


def _read_path(path: Path, recursive: bool) -> list[Document]:
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_file():
        return _read_file(path)
    pattern = "**/*" if recursive else "*"
    files = sorted(p for p in path.glob(pattern) if p.is_file() and p.suffix.lower() in EXTENSIONS)
    if not files:
        hint = "" if recursive else " (use -R to search subdirectories)"
        raise InputError(f"{path}: no manifests found ({', '.join(EXTENSIONS)}){hint}")
    return [doc for file in files for doc in _read_file(file)]


def _read_file(path: Path) -> list[Document]:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"{path}: too large for a manifest ({path.stat().st_size} bytes, at most {MAX_BYTES})")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if b"\0" in data:
        raise InputError(f"{path}: not a manifest (binary data)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    return parse_text(text, str(path))


def parse_text(text: str, source: str) -> list[Document]:
    """Split multi-document YAML (or JSON), flatten `kind: List`, validate each document."""
    from ..yamlload import module, safe_loader

    yaml = module()
    try:
        raw = list(yaml.load_all(text, Loader=safe_loader()))
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc, source)
        raise InputError(f"{where}: invalid YAML: {problem}") from exc
    documents: list[Document] = []
    for index, body in enumerate(raw):
        if body is None:
            continue
        doc = Document(source, index, body)
        if not isinstance(body, dict):
            raise InputError(f"{doc.where}: expected a mapping with apiVersion and kind")
        if body.get("kind") == "List" or (str(body.get("kind", "")).endswith("List") and "items" in body):
            for item in body.get("items") or []:
                if not isinstance(item, dict):
                    raise InputError(f"{doc.where}: List item is not a mapping")
                documents.append(_checked(Document(source, index, item)))
            continue
        documents.append(_checked(doc))
    return documents


def _checked(doc: Document) -> Document:
    body = doc.body
    missing = [key for key in ("apiVersion", "kind") if not body.get(key)]
    if missing:
        raise InputError(f"{doc.where}: missing {' and '.join(missing)}")
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(f"{doc.where}: metadata must be a mapping")
    if not metadata.get("name"):
        raise InputError(f"{doc.where}: {body['kind']} has no metadata.name")
    for field, value in (
        ("apiVersion", body["apiVersion"]),
        ("kind", body["kind"]),
        ("metadata.name", metadata["name"]),
        ("metadata.namespace", metadata.get("namespace") or ""),
    ):
        if not isinstance(value, str):
            raise InputError(f"{doc.where}: {field} must be a string, not {type(value).__name__}")
    return doc
