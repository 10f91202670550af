"""The built-in table names only finalizers that Kubernetes' sources define: each entry has a
line in the checked-in list of where the release defines it, and the list is what the
release's sources say where they are in the Go module cache."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
from pathlib import Path

import pytest

from kubectl_unfinalize.finalizers import BUILTIN

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "builtin_finalizers.py"
(LISTED,) = (ROOT / "tests" / "unit" / "data").glob("builtin-finalizers-*.txt")


def listed() -> tuple[str, dict[str, set[str]]]:
    """The release the list came from, and each finalizer it names with the Go files that define it."""
    header, *lines = LISTED.read_text().splitlines()
    release = re.fullmatch(r"# release (v1\.\d+\.\d+): .*", header)
    assert release, f"{LISTED.name}'s first line names no release: {header!r}"
    files: dict[str, set[str]] = {}
    for line in lines:
        finalizer, file = line.split("\t")
        files.setdefault(finalizer, set()).add(file)
    return release[1], files


def test_every_table_entry_is_a_finalizer_the_release_defines():
    release, files = listed()
    assert LISTED.name == f"builtin-finalizers-{release}.txt"
    assert set(BUILTIN) == set(files), "run scripts/builtin_finalizers.py to list where each entry is defined"
    assert all(f.endswith(".go") and f.startswith("k8s.io/") for paths in files.values() for f in paths)


def test_the_list_is_what_the_release_sources_say():
    release, _ = listed()
    script = load_script()
    cache = script.module_cache()
    if not (cache / f"k8s.io/kubernetes@{release}" / "go.mod").is_file():
        message = f"k8s.io/kubernetes@{release} is not in the Go module cache ({cache}): `make controlplane` gets it"
        if os.environ.get("CI"):  # .ci/run builds the control plane first: missing there is a failure
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = script.main([release])
    assert status == 0, err.getvalue()
    assert out.getvalue() == LISTED.read_text()


def load_script():
    spec = importlib.util.spec_from_file_location("builtin_finalizers", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
