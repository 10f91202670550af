"""Several contexts in one run: which contexts, the job in each with its own connection,
an error as one context's outcome, the worst exit status, the document and the usage rules."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import jsonschema
import pytest
import yaml

from kubectl_unfinalize.cli.commands import RunCommand, ScanCommand, parse
from kubectl_unfinalize.cli.flags import UsageError
from kubectl_unfinalize.cli.scan_output import contexts_stderr_lines, render_contexts
from kubectl_unfinalize.each_context import chosen, run_each
from kubectl_unfinalize.errors import ClusterError, ConfigError, ExitStatus, worst_status
from kubectl_unfinalize.options import ConnectionOptions
from kubectl_unfinalize.scanning.report import ContextScans, ScanReport

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "scan.schema.json").read_text())


@pytest.fixture
def kubeconfig(tmp_path) -> ConnectionOptions:
    contexts = [{"name": name, "context": {"cluster": name, "user": name}} for name in ("b", "a", "c")]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": n, "cluster": {"server": f"https://127.0.0.1:{port}"}}
            for n, port in zip("bac", (1, 2, 3), strict=True)
        ],
        "users": [{"name": n, "user": {"token": n}} for n in "bac"],
        "contexts": contexts,
        "current-context": "a",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    return ConnectionOptions(kubeconfig=str(path))


def test_all_contexts_are_the_kubeconfig_s_in_its_order(kubeconfig):
    assert chosen(kubeconfig, (), every=True) == ["b", "a", "c"]


def test_named_contexts_once_each_and_an_unknown_one_is_a_config_error(kubeconfig):
    assert chosen(kubeconfig, ("c", "a", "c"), every=False) == ["c", "a"]
    with pytest.raises(ConfigError, match=r"context 'x' not found in kubeconfig \(available: a, b, c\)"):
        chosen(kubeconfig, ("a", "x"), every=False)


def test_each_context_gets_its_own_connection_and_an_error_stays_its_own(kubeconfig):
    seen: list[tuple[str | None, str | None]] = []
    lock = threading.Lock()

    def job(connection: ConnectionOptions) -> str:
        with lock:
            seen.append((connection.context, connection.kubeconfig))
        if connection.context == "a":
            raise ClusterError("cannot reach the API server at https://127.0.0.1:2")
        return f"scanned {connection.context}"

    outcomes = run_each(["b", "a", "c"], kubeconfig, job)
    assert [o.context for o in outcomes] == ["b", "a", "c"]
    assert [o.result for o in outcomes] == ["scanned b", None, "scanned c"]
    assert str(outcomes[1].error) == "cannot reach the API server at https://127.0.0.1:2"
    assert sorted(seen) == [(name, kubeconfig.kubeconfig) for name in "abc"]


def test_a_bug_in_one_context_is_raised_not_hidden(kubeconfig):
    def job(connection: ConnectionOptions) -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run_each(["a"], kubeconfig, job)


@pytest.mark.parametrize(
    ("statuses", "worst"),
    [
        ((), ExitStatus.OK),
        ((ExitStatus.OK, ExitStatus.OK), ExitStatus.OK),
        ((ExitStatus.OK, ExitStatus.PENDING), ExitStatus.PENDING),
        ((ExitStatus.PENDING, ExitStatus.FAILED, ExitStatus.OK), ExitStatus.FAILED),
        ((ExitStatus.USAGE, ExitStatus.PENDING), ExitStatus.FAILED),
    ],
)
def test_the_exit_status_is_1_over_3_over_0(statuses, worst):
    assert worst_status(statuses) == worst


def scans() -> ContextScans:
    held = ContextScans(["one", "gone"])
    held.reports["one"] = ScanReport(types=3, objects=7)
    held.errors["gone"] = "cannot reach the API server at https://127.0.0.1:1"
    return held


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_the_contexts_document_validates_and_names_each_context(output):
    text = render_contexts(scans(), output)
    document = json.loads(text) if output == "json" else yaml.safe_load(text)
    jsonschema.validate(document, SCHEMA)
    assert document["ok"] is False
    one, gone = document["contexts"]
    assert (one["context"], one["ok"], one["exitStatus"], one["error"]) == ("one", True, 0, None)
    assert one["scan"]["scanned"] == {"types": 3, "objects": 7}
    assert (gone["context"], gone["ok"], gone["exitStatus"], gone["scan"]) == ("gone", False, 1, None)
    assert gone["error"].startswith("cannot reach")


def test_the_text_groups_each_context_under_its_name_and_the_error_fails_it():
    held = scans()
    text = render_contexts(held, "text")
    assert text.splitlines() == [
        "== context one ==",
        "nothing is stuck: no object is being deleted and held by finalizers",
        "== context gone ==",
        "error: cannot reach the API server at https://127.0.0.1:1",
    ]
    lines = list(contexts_stderr_lines(held))
    assert lines[0].startswith("context one: scanned 3 types, 7 objects")
    assert lines[-1] == "context gone: error: cannot reach the API server at https://127.0.0.1:1"
    assert held.exit_status == ExitStatus.FAILED and not held.ok
    with pytest.raises(Exception, match="context gone: cannot reach"):
        held.raise_for_failure()


def test_scan_and_the_freeing_commands_take_several_contexts_history_and_undo_one():
    command = parse(["scan", "--context", "a", "--context", "b"])
    assert isinstance(command, ScanCommand) and command.contexts == ("a", "b")
    assert command.connection.context == "a"
    one = parse(["scan", "--context", "a"])
    assert isinstance(one, ScanCommand) and one.contexts == () and one.connection.context == "a"
    every = parse(["scan", "--all-contexts", "--free", "--wait"])
    assert isinstance(every, ScanCommand) and every.all_contexts
    with pytest.raises(UsageError, match="--all-contexts and --context cannot be combined"):
        parse(["scan", "--all-contexts", "--context", "a"])
    run = parse(["crd", "widgets.example.com", "--delete", "--context", "a", "--context", "b"])
    assert isinstance(run, RunCommand) and run.contexts == ("a", "b") and run.options.delete
    with pytest.raises(UsageError, match="-i and -o json|yaml take one context"):
        parse(["crd", "widgets.example.com", "--all-contexts", "-o", "json"])
    with pytest.raises(UsageError, match="history reads one context's records"):
        parse(["history", "--all-contexts"])


def test_each_printed_command_names_its_context_in_a_scan_of_several():
    from kubectl_unfinalize.scanning.model import CorruptObject, Fix

    fix = Fix("example.com/f", ["widgets.example.com"], ["kubectl unfinalize crd --group example.com --delete"])
    corrupt = CorruptObject("widgets.example.com", "ns", "w", "bad", ["kubectl unfinalize widgets w -n ns --unsafe"])
    report = ScanReport(fixes=[fix], corrupt=[corrupt]).naming_context("prod eu")
    assert report.fixes == [fix]
    assert fix.commands == ["kubectl unfinalize crd --group example.com --delete --context 'prod eu'"]
    assert corrupt.commands == ["kubectl unfinalize widgets w -n ns --unsafe --context 'prod eu'"]
    lost = ScanReport(fixes=[Fix("f", [], ["remedy, once the node is known to be down"])]).naming_context("a")
    assert lost.fixes[0].commands == ["remedy, once the node is known to be down"]  # not a command: as it was
