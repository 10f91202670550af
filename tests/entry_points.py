"""The wheel's pytest11 entry point, as an installed wheel has it, for sessions run without
installing the package: a dist-info directory, made from pyproject.toml's declaration, in
a directory that goes on sys.path (or PYTHONPATH) beside the checkout's src."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def declared() -> dict[str, str]:
    """[project.entry-points.pytest11] of pyproject.toml: name -> module."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.entry-points.pytest11]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^(\S+) = "([^"]+)"', section, re.M))


def install(site: Path) -> Path:
    """`site` holding kubectl_unfinalize's dist-info with the declared entry points."""
    dist = site / "kubectl_unfinalize-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kubectl-unfinalize\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{name} = {target}\n" for name, target in declared().items())
    )
    return site
