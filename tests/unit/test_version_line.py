"""--version names the kubernetes client's version without importing importlib.metadata."""

from __future__ import annotations

import sys
from importlib.metadata import version

from kubectl_unfinalize.cli.main import main
from kubectl_unfinalize.cli.version import _dist_info_version


def test_the_version_comes_from_the_dist_info_directory_name(tmp_path, monkeypatch):
    (tmp_path / "kubernetes-31.0.0rc1.dist-info").mkdir()
    (tmp_path / "kubernetes_asyncio-9.9.9.dist-info").mkdir()  # another project's prefix
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path)])
    assert _dist_info_version("kubernetes") == "31.0.0rc1"
    assert _dist_info_version("pydantic") is None


def test_version_line_agrees_with_importlib_metadata(capsys):
    assert main(["--version"]) == 0
    assert f"kubernetes client {version('kubernetes')}," in capsys.readouterr().out


def test_version_line_names_the_api_servers_the_tests_run_against(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(", API servers 1.29-1.36)")


def test_the_range_is_the_one_ci_tests_and_readme_states():
    """The oldest minor is the one `make test` runs the integration core against, the
    newest the pinned release of the full suite: the range cannot drift from what is tested."""
    import re
    from pathlib import Path

    from kubectl_unfinalize._version import KUBERNETES_RANGE

    root = Path(__file__).resolve().parents[2]
    oldest = re.search(r"^OLDEST_K8S := v(\d+\.\d+)\.\d+$", (root / "Makefile").read_text(), re.M)
    pinned = re.search(r'^PINNED="v(\d+\.\d+)\.\d+"', (root / "tests/controlplane/build.sh").read_text(), re.M)
    assert oldest and pinned
    assert (oldest.group(1), pinned.group(1)) == KUBERNETES_RANGE
    assert f"Kubernetes {KUBERNETES_RANGE[0]} to {KUBERNETES_RANGE[1]}" in (root / "README.md").read_text()
