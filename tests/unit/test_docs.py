"""The documents a newcomer reads first stay true to the tree: README stays a front page,
and docs/architecture.md's module map names every module and no module that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "kubectl_unfinalize"
REPO_FOLDERS = ("tests/", "scripts/", "packaging/", "docs/", "src/")  # paths named from the repository's root

# A path in backticks, optionally followed by a line number: `engine/loop.py`, `tests/unit/test_docs.py:12`.
NAMED_PATH = re.compile(r"`([\w./-]+\.py)(?::\d+)?`")


def _modules() -> set[str]:
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}


def _named(text: str) -> set[str]:
    return set(NAMED_PATH.findall(text))


def test_architecture_names_every_module_of_the_package():
    named = _named((ROOT / "docs" / "architecture.md").read_text())
    assert sorted(_modules() - named) == []


def test_every_path_architecture_names_exists():
    named = _named((ROOT / "docs" / "architecture.md").read_text())
    missing = [
        path for path in named if not (ROOT / path if path.startswith(REPO_FOLDERS) else PACKAGE / path).is_file()
    ]
    assert sorted(missing) == []


def test_readme_is_a_front_page_with_one_install_section():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 200
    assert [line for line in lines if line.startswith("## Install")] == ["## Install"]


def test_readme_links_to_documents_that_exist():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)\)", text)
    assert links
    assert [link for link in links if not (ROOT / link).is_file()] == []
