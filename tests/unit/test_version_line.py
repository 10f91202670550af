"""--version names the kubernetes client's version without importing importlib.metadata."""

from __future__ import annotations

import sys
from importlib.metadata import version

from kubectl_unfinalize.cli.main import _dist_info_version, main


def test_the_version_comes_from_the_dist_info_directory_name(tmp_path, monkeypatch):
    (tmp_path / "kubernetes-31.0.0rc1.dist-info").mkdir()
    (tmp_path / "kubernetes_asyncio-9.9.9.dist-info").mkdir()  # another project's prefix
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path)])
    assert _dist_info_version("kubernetes") == "31.0.0rc1"
    assert _dist_info_version("pydantic") is None


def test_version_line_agrees_with_importlib_metadata(capsys):
    assert main(["--version"]) == 0
    assert f"kubernetes client {version('kubernetes')})" in capsys.readouterr().out
