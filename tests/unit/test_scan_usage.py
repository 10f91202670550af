"""scan's usage errors: one line, exit 2, no cluster contacted; its help names it."""

import pytest

from kubectl_unfinalize.cli.main import build_parser, main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["scan", "widgets"], "scan takes no names"),
        (["scan", "--delete"], "scan reads only: --delete do not apply"),
        (["scan", "--finalizer", "a/b", "-l", "x=y"], "-l, --finalizer do not apply"),
        (["scan", "--dry-run=server"], "--dry-run do not apply"),
        (["scan", "-f", "m.yaml"], "-f do not apply"),
        (["scan", "-o", "name"], "not name"),
        (["scan", "-n", "a", "-A"], "-n and -A cannot be combined"),
        (["scan", "--older-than", "soon"], "invalid duration 'soon'"),
        (["scan", "--timeout", "0"], "--timeout must be greater than 0"),
        (["crd", "x", "-o", "wide"], "apply to scan only"),
        (["crd", "x", "--all"], "apply to scan only"),
        (["ns", "x", "--older-than", "1m"], "apply to scan only"),
        (["scan", "--free", "-o", "name"], "scan --free prints -o text, wide, json or yaml"),
        (["scan", "--free", "--all"], "--all does not apply"),
        (["scan", "--free", "--delete"], "--delete do not apply"),
        (["scan", "--free", "--max-objects", "-1"], "--max-objects"),
        (["scan", "--free", "--max-objects", "ten"], "invalid number 'ten'"),
        (["scan", "--free", "--backup"], "--backup and --last do not apply to scan --free"),
        (["scan", "--include-blocked"], "apply to scan --free"),
        (["scan", "--force-lost-pods"], "apply to scan --free"),
        (["crd", "x", "--force-lost-pods"], "a CRD's objects are not pods"),
        (["scan", "--exclude-namespace", "kube-*"], "apply to scan --free"),
        (["scan", "--max-objects", "3"], "do not apply to scan"),
        (["crd", "x", "--free"], "apply to scan only"),
        (["crd", "x", "--exclude-namespace", "a"], "apply to scan --free"),
    ],
)
def test_scan_usage_errors(argv, message, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert message in err and "Traceback" not in err


def test_help_describes_scan_its_verdicts_and_exit_codes():
    text = build_parser().format_help()
    assert "scan [-n NS|-A] [-o text|wide|json|yaml] [--older-than DURATION] [--all]" in text
    for needle in ("working ", "alive ", "pending ", "built-in ", "stuck ", "docs/scan.schema.json", "CI gate"):
        assert needle in text, needle


def test_the_thresholds_the_help_and_the_scan_doc_state_are_the_ones_scan_judges_by():
    from pathlib import Path

    from kubectl_unfinalize.cli.scan_flags import SCAN_EPILOG
    from kubectl_unfinalize.scanning.evidence import ALIVE_PATIENCE, BUILTIN_PATIENCE, GRACE, WORKING

    assert f"within {WORKING / 60:g}m" in SCAN_EPILOG and f"less than {GRACE:g}s ago" in SCAN_EPILOG
    assert f"(for {ALIVE_PATIENCE / 60:g}m)" in SCAN_EPILOG and f"stuck after {BUILTIN_PATIENCE / 60:g}m" in SCAN_EPILOG
    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "scan.md").read_text().split())
    assert f"within {WORKING / 60:g} minutes" in doc and f"deleted under {GRACE:g} s ago" in doc
    assert f"stuck after {BUILTIN_PATIENCE / 60:g} minutes" in doc
