"""Usage errors: one line on stderr, exit 2, no traceback, and no cluster contacted."""

from pathlib import Path

import pytest

from kubectl_unfinalize.cli.main import build_parser, main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "nothing selected"),
        (["crd"], "crd needs NAME"),
        (["pods"], "pods needs NAME..., -l SELECTOR or --field-selector"),
        (["cm", "a", "-A"], "-A cannot be combined with NAME"),
        (["cm/a", "b"], "use TYPE NAME... or TYPE/NAME..., not both"),
        (["cm/a", "-l", "x=y"], "NAME and -l (or --field-selector) cannot be combined"),
        (["pods", "-l", "x=y", "--group", "g"], "--group applies to crd, not to TYPE"),
        (["ns", "a", "--category", "managed"], "--category applies to crd"),
        (["crd", "--category", ","], "empty category name"),
        (["crd", "x", "--timeout", "soon"], "invalid duration 'soon'"),
        (["crd", "x", "--dry-run=maybe"], "invalid choice: 'maybe'"),
        (["crd", "x", "--concurrency", "0"], "must be at least 1"),
        (["crd", "x", "-l", "a=b"], "NAME and -l cannot be combined"),
        (["crd", "x", "-n", "a", "-A"], "-n and -A cannot be combined"),
        (["crd", "x", "--wait=false"], "--wait only applies with --delete"),
        (["crd", "x", "--bogus"], "unrecognized arguments: --bogus"),
        (["crd", "x", "--timeout", "0"], "--timeout must be greater than 0"),
        (["crd", "x", "--timeout=-5s"], "invalid duration '-5s'"),
        (["crd", "x", "--chunk-size", "0"], "must be at least 1"),
        (["crd", "x", "--concurrency", "many"], "invalid int value: 'many'"),
        (["crd", "x", "--dry-run", "-i"], "-i asks before changing anything"),
        (["crd", "x", "-i", "-o", "json"], "-i cannot be combined with -o json"),
        (["crd", "x", "--finalizer", " "], "--finalizer needs a name"),
        (["crd", "x", "--as-group", "g"], "--as-group requires --as"),
        (["crd", "x", "--as-uid", "1"], "--as-uid requires --as"),
        (["crd", "x", "--as", ""], "--as needs a user name"),
        (["crd", "x", "--as", "u", "--as-group", ""], "--as-group needs a group name"),
        (["crd", "x", "--insecure-skip-tls-verify=maybe"], "invalid boolean 'maybe'"),
        (["crd", "x", "--request-timeout", "soon"], "invalid duration 'soon'"),
        (["crd", "x", "-v=loud"], "invalid verbosity"),
        (["crd", "x", "-o", "xml"], "invalid choice: 'xml'"),
        (["crd", "x", "-f", "m.yaml"], "-f cannot be combined with crd NAME"),
        (["-f", "https://example.com/m.yaml"], "URLs are not supported"),
        (["ns"], "ns needs NAME... or -l SELECTOR"),
        (["ns", "a", "-l", "x=y"], "NAME and -l cannot be combined"),
        (["namespace", "a", "-n", "b"], "-n and -A do not apply"),
        (["namespaces", "a", "--group", "g"], "--group applies to crd, not to ns"),
        (["ns", "a", "-f", "m.yaml"], "-f cannot be combined with crd NAME, ns NAME"),
        (["ns", ""], "empty namespace name"),
        (["crd", "x", "--backup"], "--backup keeps what --delete deletes: use it with --delete"),
        (["crd", "x", "--max-objects", "-1"], "must be 0 or more"),
        (["crd", "x", "--max-objects", "ten"], "invalid number 'ten'"),
        (["crd", "x", "--last"], "--last applies to history and undo"),
        (["scan", "--record", "r"], "do not apply to scan"),
        (["undo"], "undo needs a record ID"),
        (["undo", "a", "b"], "undo takes one record ID, or --last"),
        (["undo", "a", "--last"], "undo takes one record ID, or --last"),
        (["undo", "--last", "--delete"], "undo takes a record, not a selection"),
        (["history", "--backup"], "--backup and --max-objects apply to a run, not to history"),
        (["history", "--dry-run=server"], "--dry-run applies to runs and undo"),
        (["history", "-o", "name"], "history: -o text, json or yaml"),
    ],
)
def test_usage_errors(argv, message, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert "Traceback" not in err


def test_flags_may_come_before_the_names_as_with_kubectl():
    from kubectl_unfinalize.cli.commands import RunCommand, UndoCommand, parse

    run = parse(["crd", "--dry-run=client", "widgets.example.com", "-n", "a"])
    assert isinstance(run, RunCommand) and run.selection.crds == ("widgets.example.com",)
    undo = parse(["undo", "--dry-run=server", "20261203-064512-ab12"])
    assert isinstance(undo, UndoCommand) and (undo.ref, undo.dry_run) == ("20261203-064512-ab12", "server")


def test_missing_kubeconfig_is_a_configuration_error(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["crd", "widgets", "--kubeconfig", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == f"error: kubeconfig not found: {tmp_path / 'missing'}"
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert main(["crd", "widgets"]) == 2
    assert "no cluster configuration" in capsys.readouterr().err


def test_parser_does_not_import_the_kubernetes_client():
    import subprocess
    import sys

    code = (
        "import sys; from kubectl_unfinalize.cli.main import build_parser; build_parser().format_help(); "
        "print(any(m.split('.')[0] in ('kubernetes', 'urllib3', 'yaml') for m in sys.modules))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": src}
    )
    assert result.stdout.strip() == "False"


def test_every_kubectl_connection_flag_is_accepted():
    flags = [
        "--kubeconfig", "--context", "--cluster", "--user", "--server", "--token", "--certificate-authority",
        "--client-certificate", "--client-key", "--insecure-skip-tls-verify", "--tls-server-name", "--as",
        "--as-group", "--as-uid", "--request-timeout", "-s",
    ]  # fmt: skip
    help_text = build_parser().format_help()
    for flag in flags:
        assert f"{flag} " in help_text or f"{flag}," in help_text or f"{flag}\n" in help_text, flag


def test_a_bare_v_before_a_word_is_verbosity_one_not_a_level():
    from kubectl_unfinalize.cli.commands import parse

    assert parse(["-v", "crd", "x"]).output.verbose == 1
    assert parse(["-qv", "crd", "x"]).output.verbose == 1
    assert parse(["crd", "x", "-v=6"]).output.verbose == 6
    assert parse(["crd", "x", "-v", "8"]).output.verbose == 8
    assert parse(["crd", "x", "--v=6"]).output.verbose == 6
    assert parse(["crd", "x"]).output.verbose == 0


def test_a_bad_manifest_is_reported_before_connecting(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [\n")
    assert main(["-f", str(bad), "--server", "https://127.0.0.1:1"]) == 2
    assert "invalid YAML" in capsys.readouterr().err


def test_ns_selects_namespaces_by_name_or_label_and_crd_stays_crds():
    from kubectl_unfinalize.cli.commands import RunCommand, parse

    def run(argv):
        command = parse(argv)
        assert isinstance(command, RunCommand)
        return command

    by_name = run(["ns", "a", "b", "--delete"]).selection
    assert by_name.namespaces == ("a", "b") and not by_name.crds and by_name.namespace_selector is None
    by_label = run(["namespaces", "-l", "team=x"])
    assert by_label.selection.namespace_selector == "team=x" and by_label.selection.crd_selector is None
    assert by_label.options.label_selector is None  # -l picked the namespaces, not what is inside
    crds = run(["crd", "-l", "team=x"]).selection
    assert crds.crd_selector == "team=x" and not crds.namespaces


def test_every_epilog_paragraph_opens_with_a_one_line_heading():
    """packaging/build-man.py makes each paragraph of --help's epilog a man page section
    named by the text before its first colon: a heading over two lines broke the build."""
    for paragraph in build_parser().epilog.strip().split("\n\n"):
        heading = paragraph.partition(":")[0]
        assert heading.strip() and "\n" not in heading, paragraph[:120]
