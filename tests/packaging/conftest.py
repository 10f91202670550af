"""Fixtures for the packaging tests: the built binary and the Go tools (kubectl, krew).

The binary is $UNFINALIZE_BINARY or dist/kubectl-unfinalize (make binary). Without it the
tests that need it are skipped with the reason, except under CI (CI set), where they fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pkgtest import ROOT, platform_name


@pytest.fixture(scope="session")
def binary() -> Path:
    path = Path(os.environ.get("UNFINALIZE_BINARY") or ROOT / "dist" / "kubectl-unfinalize")
    if not path.is_file():
        message = f"no binary at {path}: run make binary (or set UNFINALIZE_BINARY)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path.resolve()


@pytest.fixture(scope="session")
def archive(binary) -> Path:
    path = binary.parent / f"kubectl-unfinalize_{platform_name()}.tar.gz"
    if not path.is_file():
        pytest.fail(f"{binary} has no release archive next to it ({path.name}): run make binary", pytrace=False)
    return path


@pytest.fixture(scope="session")
def tools() -> Path:
    """The directory with the built kubectl, krew and validate-krew-manifest (build.sh)."""
    result = subprocess.run(
        ["bash", str(ROOT / "tests/controlplane/build.sh")], capture_output=True, text=True, check=False
    )
    bin_dir = Path(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else None
    if result.returncode or not bin_dir:
        pytest.fail(f"tests/controlplane/build.sh failed:\n{result.stderr[-3000:]}", pytrace=False)
    for name in ("kubectl", "krew", "validate-krew-manifest"):
        if not (bin_dir / name).is_file():
            pytest.fail(f"build.sh did not provide {name} in {bin_dir}", pytrace=False)
    return bin_dir
