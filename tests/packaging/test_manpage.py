"""The man page is generated from the argparse parser and documents every option."""

from __future__ import annotations

import os
import re
import runpy
import subprocess

import pytest
from pkgtest import ROOT

from kubectl_unfinalize.cli.main import build_parser

build_man = runpy.run_path(str(ROOT / "packaging" / "build-man.py"))


@pytest.fixture(scope="module")
def page() -> str:
    return build_man["render"]()


def plain(roff: str) -> str:
    """Roff source with the escapes undone, enough to search for option names."""
    text = re.sub(r"\\f[BIRP]|\\,|\\/|\\&", "", roff)
    return text.replace("\\-", "-").replace("\\e", "\\")


def test_every_option_of_the_parser_is_documented(page):
    text = plain(page)
    parser = build_parser()
    options = [s for action in parser._actions for s in action.option_strings]
    assert len(options) > 40
    missing = [o for o in options if not re.search(rf"(^|[\s,\[]){re.escape(o)}\b", text, re.M)]
    assert not missing, f"not in the man page: {missing}"
    for action in parser._actions:
        if action.help and action.option_strings:
            assert plain(action.help.split(" (")[0].split(";")[0]) in " ".join(text.split()), action.dest


def test_sections_header_and_date(page, monkeypatch):
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"):
        assert f".SH {section}\n" in page, section
    assert "kubectl unfinalize crd daskclusters.kubernetes.dask.org" in plain(page)
    assert "orphan" in plain(page) or "left behind" in plain(page)  # the warning in the description
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert build_man["render"]().splitlines()[0].startswith('.TH KUBECTL\\-UNFINALIZE "1" "1970\\-01\\-02"')


def test_page_is_valid_roff(page, tmp_path):
    groff = subprocess.run(["sh", "-c", "command -v groff"], capture_output=True, text=True).stdout.strip()
    if not groff:
        message = "groff is not installed (Debian: apt-get install groff-base); .ci/run installs it"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    path = tmp_path / "kubectl-unfinalize.1"
    path.write_text(page)
    result = subprocess.run([groff, "-man", "-ww", "-z", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and not result.stderr, result.stderr


def test_the_wheel_installs_the_page_that_build_man_writes():
    pyproject = (ROOT / "pyproject.toml").read_text()
    relative = build_man["DEFAULT_OUTPUT"].relative_to(ROOT).as_posix()
    assert f'"share/man/man1" = ["{relative}"]' in pyproject
    assert "packaging/build-man.py" in (ROOT / "setup.py").read_text()
    assert "packaging/build-man.py" in (ROOT / "MANIFEST.in").read_text()
