"""The pytest plugin's options and modes, in pytest sessions run by pytester in this
process. The plugin is found through the wheel's pytest11 entry point (a dist-info made
from pyproject.toml's declaration, as pip would install it), and the cluster is a fake of
the public API it calls (kubectl_unfinalize.scan and .unfinalize): the real control plane
is tests/integration/test_pytest_plugin.py's."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import SimpleNamespace

import entry_points
import pytest
import yaml  # noqa: F401 - imported before pytester's in-process sessions, which drop modules they imported

from kubectl_unfinalize import Action, FreedCall, Group, InputError, Outcome, Report, ScanReport, Scope, State, scan_api
from kubectl_unfinalize.scanning.remedy import plan

pytest_plugins = ["pytester"]

KOPF = "kopf.zalando.org/KopfFinalizerMarker"
SECTION = "= unfinalize:"


def arguments(call) -> dict:
    """A planned call as the keyword arguments of unfinalize(...) it stands for (those set)."""
    chosen = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(call.selection).items() if v}
    chosen["only_terminating"] = True
    chosen.update({"finalizers": list(call.finalizers)} if call.finalizers else {})
    chosen.update({"namespace": call.namespace} if call.namespace else {})
    return chosen | ({"delete": True} if call.delete else {})


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The entry point on sys.path, as an installed wheel has it."""
    assert entry_points.declared() == {"unfinalize": "kubectl_unfinalize.pytest_plugin.plugin"}
    monkeypatch.syspath_prepend(str(entry_points.install(tmp_path / "site")))


def group(resource="children.op.example.com", state=State.STUCK, finalizer=KOPF, namespaces=("ns-a",), **fields):
    names = [(ns, f"obj-{i}") for i, ns in enumerate(namespaces)]
    defaults = dict(
        kind="Child",
        api_version=resource.split(".", 1)[1] + "/v1" if "." in resource else "v1",
        namespaced=True,
        count=len(names),
        terminating=True,
        oldest_seconds=12.0,
        oldest_deletion="",
        namespaces=sorted(set(namespaces)),
        sample=[f"{ns}/{n}" for ns, n in names][:5],
        owner="a kopf operator",
        owner_kind="manager",
        crd=resource if "." in resource else "",
        evidence=["last write by kopf 30s ago (before the deletion)"],
        state=state,
        verdict=f"{state.value}: no controller seen for 12s",
        stuck=state is State.STUCK,
        names=names,
    )
    defaults.update(fields)
    return Group(finalizer=finalizer, resource=resource, **defaults)


class FakeApi:
    """The public API as the plugin sees it. Before the tests ran (a file the inner test
    writes says so) a scan returns `leftover`; after, `teardown` until a call freed it.
    scan(free=True) frees through the real plan (scanning.remedy), one unfinalize-like
    call per planned call (kept in `calls`); every call writes the file a session
    fixture's teardown waits for."""

    def __init__(self, tmp_path: Path, leftover=(), teardown=()):
        self.ran, self.freed_file = tmp_path / "tests-ran", tmp_path / "freed"
        self.leftover, self.teardown = list(leftover), list(teardown)
        self.scans: list[dict] = []
        self.calls: list[dict] = []
        self.unread: list[str] = []  # after the tests: types the scan could not read

    def _look(self):
        if not self.ran.exists():
            return ScanReport(groups=list(self.leftover), types=9)
        groups = [] if self.freed_file.exists() else list(self.teardown)
        return ScanReport(groups=groups, types=9, not_scanned=list(self.unread), failing=list(self.unread))

    def scan(self, **kwargs):
        self.scans.append(dict(kwargs, kubeconfig=os.environ.get("KUBECONFIG"), after_tests=self.ran.exists()))
        report = self._look()
        if not kwargs.get("free"):
            return report
        scope = Scope(tuple(kwargs["namespaces"]), tuple(kwargs["groups"]), tuple(kwargs["finalizers"]))
        planned = plan(report, scope, kwargs["grace"], settle=True)
        count = sum(len(g.names) for call in planned for g in call.groups)
        if kwargs.get("max_objects") is not None and count > kwargs["max_objects"]:
            self.calls += [dict(arguments(call), refused=True, max_objects=kwargs["max_objects"]) for call in planned]
            raise InputError(f"scan --free would change {count} objects, more than --max-objects")
        freed = [FreedCall(call.resource, list(call.finalizers), list(call.groups), self.unfinalize(call))
                 for call in planned]  # fmt: skip
        after = self._look()
        after.freed, after.record = freed, f"/records/{len(self.scans)}.jsonl" if freed else ""
        return after

    def unfinalize(self, call):
        self.calls.append(dict(arguments(call), after_tests=self.ran.exists()))
        outcomes = [
            Outcome(g.kind.lower(), name, Action.UNFINALIZED, ns, [g.finalizer])
            for g in call.groups
            for ns, name in g.names
        ]
        self.freed_file.write_text("freed")
        return Report(outcomes=outcomes)


@pytest.fixture
def cluster(tmp_path, monkeypatch, pytester):
    fake = FakeApi(tmp_path)
    monkeypatch.setattr(scan_api, "scan", fake.scan)
    monkeypatch.setenv("TESTS_RAN", str(fake.ran))
    monkeypatch.setenv("FREED", str(fake.freed_file))
    monkeypatch.setenv("HANG", "20")  # seconds: what "forever" is here
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "before-the-session"))
    pytester.makeconftest(
        """
        import os, pathlib, time
        import pytest

        @pytest.fixture(scope="session")
        def crds():
            os.environ["KUBECONFIG"] = "set-by-a-cluster-fixture"
            yield
            # kubectl delete -f crds/ after the operator stopped: waits until the objects are gone
            deadline = time.monotonic() + float(os.environ["HANG"])
            while not pathlib.Path(os.environ["FREED"]).exists():
                assert time.monotonic() < deadline, "the teardown hung: nothing freed the objects"
                time.sleep(0.02)
        """
    )
    pytester.makepyfile(
        """
        import os, pathlib

        def test_operator(crds):
            pathlib.Path(os.environ["TESTS_RAN"]).write_text("ran")
        """
    )
    return fake


def test_options_and_ini_names_show_in_help(pytester, installed):
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    for name in (
        "--unfinalize=MODE",
        "--unfinalize-grace=SECONDS",
        "--unfinalize-namespace=PATTERN",
        "--unfinalize-group=GROUP",
        "--unfinalize-finalizer=NAME",
        "unfinalize_grace",
        "unfinalize_namespaces",
        "unfinalize_groups",
        "unfinalize_finalizers",
    ):
        assert name in text, name
    for theirs in ("--keep-cluster", "--cluster-name", "--k8s-", "--kube-"):
        assert f"{theirs}" not in text


def test_inert_without_a_mode(pytester, installed, cluster, monkeypatch):
    monkeypatch.setenv("HANG", "0.5")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)  # nothing freed the objects: the teardown "hangs"
    assert cluster.scans == [] and cluster.calls == []
    assert "plugins: kubectl-unfinalize-0" in result.stdout.str()  # loaded through its entry point
    assert SECTION not in result.stdout.str() and not any(line.startswith("unfinalize") for line in result.stdout.lines)


def test_free_frees_during_the_session_teardown_with_kubeconfig_read_then(pytester, installed, cluster):
    cluster.teardown = [group(namespaces=("ns-a", "ns-b"))]
    result = pytester.runpytest("--unfinalize=free")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert cluster.calls == [
        {"crds": ["children.op.example.com"], "only_terminating": True, "finalizers": [KOPF], "after_tests": True},
    ]  # fmt: skip
    start, *later = cluster.scans
    assert not start["after_tests"] and start["kubeconfig"].endswith("before-the-session")
    assert later and all(s["after_tests"] and s["kubeconfig"] == "set-by-a-cluster-fixture" for s in later)
    assert later[-1]["wait"] is True and later[-1]["grace"] == 5.0  # the last look waits out what is pending
    result.stdout.fnmatch_lines(
        [
            "*= unfinalize: free =*",
            "freed during the teardown: 2 objects",
            f"  {KOPF}",
            "    children.op.example.com  2  ns-a, ns-b  freed; was stuck: no controller seen for 12s",
            "        objects: ns-a/obj-0, ns-b/obj-1",
            "        evidence: last write by kopf 30s ago (before the deletion)",
            "nothing held by finalizers after the session (scanned 9 types)",
        ]
    )
    result.stdout.fnmatch_lines(
        ["records (kubectl unfinalize history; undo ID puts back what one freed): /records/*.jsonl"]
    )


def test_the_session_cap_refuses_a_call_that_would_free_more(pytester, installed, cluster):
    cluster.teardown = [group(namespaces=("ns-a", "ns-b", "ns-c"))]
    pytester.makeini("[pytest]\nunfinalize_max_objects = 2\n")
    result = pytester.runpytest("--unfinalize=free", "-p", "no:cacheprovider")
    assert [call["max_objects"] for call in cluster.calls] == [2] * len(cluster.calls) and cluster.calls
    assert not cluster.freed_file.exists()  # refused before it wrote
    result.stdout.fnmatch_lines(["could not free: scan --free: not sent, unfinalize_max_objects 2: *3 objects*"])


def test_a_cap_that_is_not_a_number_is_a_usage_error(pytester, installed):
    result = pytester.runpytest("--unfinalize=free", "--unfinalize-max-objects=ten")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--unfinalize-max-objects 'ten': use a whole number*"])


def test_strict_fails_the_session_naming_the_finalizer_and_the_objects(pytester, installed, cluster):
    cluster.teardown = [group()]
    result = pytester.runpytest("--unfinalize=strict")
    result.assert_outcomes(passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            f"  {KOPF}",
            "        objects: ns-a/obj-0",
            f"FAILED (--unfinalize=strict): 1 objects had to be freed from {KOPF}",
        ]
    )


def test_strict_fails_the_session_on_a_blocked_group_and_frees_nothing(pytester, installed, cluster, monkeypatch):
    """A controller that keeps writing but cannot finish (scan's blocked) is held: never
    freed by the plugin, and a strict session fails on it."""
    from kubectl_unfinalize.scanning.model import Blocking

    monkeypatch.setenv("HANG", "0.5")
    blocking = Blocking("the namespace is being deleted", "ProviderConfigUsage create refused", "refused", "Synced",
                        60.0, ["ns-a/obj-0"], 1)  # fmt: skip
    cluster.teardown = [
        group(state=State.BLOCKED, verdict="blocked: the namespace is being deleted", blocking=blocking)
    ]
    result = pytester.runpytest("--unfinalize=strict")
    assert cluster.calls == [] and result.ret == 1
    result.stdout.fnmatch_lines(["FAILED (--unfinalize=strict):*still held*"])


def test_strict_fails_a_session_whose_cluster_could_not_be_read_whole(pytester, installed, cluster, monkeypatch):
    """A type whose list failed may hold anything the session left: strict never passes it."""
    monkeypatch.setenv("HANG", "0.5")
    cluster.unread = ["secrets: cannot list: 500 Internal Server Error: illegal base64 data at input byte 0"]
    result = pytester.runpytest("--unfinalize=strict")
    assert cluster.calls == [] and result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "  not read: secrets: cannot list: 500*",
            "FAILED (--unfinalize=strict): 1 could not be read",
        ]
    )


def test_start_frees_what_an_earlier_run_left_and_strict_does_not_blame_the_session(pytester, installed, cluster):
    cluster.leftover = [group("configmaps", finalizer="dead.example.com/x")]
    pytester.makefile(".ini", pytest="[pytest]\nunfinalize = strict\n")
    result = pytester.runpytest()
    assert [c["after_tests"] for c in cluster.calls] == [False]
    assert cluster.calls[0]["resource"] == "configmaps" and cluster.calls[0]["names"] == ["obj-0"]
    assert cluster.calls[0]["namespace"] == "ns-a" and cluster.calls[0]["finalizers"] == ["dead.example.com/x"]
    result.stdout.fnmatch_lines(
        ["freed at session start (left by an earlier run): 1 objects", "nothing held by finalizers after the session*"]
    )
    assert result.ret == 0 and "FAILED" not in result.stdout.str()


def test_report_scans_after_the_session_and_frees_nothing(pytester, installed, cluster, monkeypatch):
    monkeypatch.setenv("HANG", "0.5")
    cluster.teardown = [group(), group("configmaps", state=State.PENDING, finalizer="dead.example.com/x")]
    result = pytester.runpytest("--unfinalize=report", "--unfinalize-grace=2s")
    assert cluster.calls == []
    (scan,) = cluster.scans
    assert scan["after_tests"] and scan["wait"] is True and scan["grace"] == 2.0
    assert result.ret == 1  # the fixture's teardown "hung": nothing freed the objects
    result.stdout.fnmatch_lines(
        [
            "*= unfinalize: report =*",
            "held by finalizers after the session (scanned 9 types):",
            "  dead.example.com/x  (owner: a kopf operator)",
            "    configmaps  1  ns-a  pending: no controller seen for 12s",
            f"  {KOPF}  (owner: a kopf operator)",
            "    children.op.example.com  1  ns-a  stuck: no controller seen for 12s",
            "        objects: ns-a/obj-0",
            "        evidence: last write by kopf 30s ago (before the deletion)",
        ]
    )


def test_ini_settings_and_narrowing_reach_the_plan(pytester, installed, cluster):
    cluster.teardown = [group(namespaces=("test-1", "other")), group("configmaps", namespaces=("test-2",))]
    pytester.makefile(
        ".ini",
        pytest="[pytest]\nunfinalize = free\nunfinalize_grace = 1.5\nunfinalize_namespaces = test-*\n"
        "unfinalize_groups = *.example.com\n",
    )
    pytester.runpytest()
    assert all(s["grace"] == 1.5 for s in cluster.scans)
    assert [c.get("namespace") for c in cluster.calls] == ["test-1"]  # not other, and no configmaps (core group)


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--unfinalize=fix"], "", "invalid choice: 'fix'"),
        ([], "unfinalize = fix", "unfinalize = 'fix': use one of report, free, strict"),
        (["--unfinalize=free", "--unfinalize-grace=soon"], "", "--unfinalize-grace 'soon': use seconds"),
        (["--unfinalize=free", "--unfinalize-namespace="], "", "--unfinalize-namespace: an empty value"),
    ],
)
def test_bad_values_are_usage_errors(pytester, installed, cluster, args, ini, message):
    if ini:
        pytester.makefile(".ini", pytest=f"[pytest]\n{ini}\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert cluster.scans == []


def test_p_no_unfinalize_turns_it_off(pytester, installed, cluster, monkeypatch):
    monkeypatch.setenv("HANG", "0.5")
    pytester.makefile(".ini", pytest="[pytest]\nunfinalize = strict\n")
    result = pytester.runpytest("-p", "no:unfinalize")
    assert cluster.scans == [] and SECTION not in result.stdout.str()


@pytest.mark.parametrize(("mode", "status"), [("report", 0), ("free", 0), ("strict", 1)])
def test_no_reachable_cluster_is_one_warning_line(pytester, installed, tmp_path, monkeypatch, mode, status):
    """A kubeconfig whose server refuses connections (nothing listens on port 9)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(f"--unfinalize={mode}")
    assert result.ret == status
    said = [line for line in result.stdout.lines if "unfinalize" in line and not line.startswith("plugins:")]
    assert len(said) == 1 and said[0].startswith("unfinalize: WARNING no reachable cluster: "), said
    assert "https://127.0.0.1:9: Connection refused" in said[0] and ("strict" in said[0]) is (mode == "strict")


def test_under_xdist_the_controller_starts_freeing_once_every_test_ran():
    from kubectl_unfinalize.pytest_plugin.plugin import PluginSession
    from kubectl_unfinalize.pytest_plugin.settings import Settings

    config = SimpleNamespace(pluginmanager=SimpleNamespace(has_plugin=lambda name: name == "dsession"))
    config.option = SimpleNamespace(maxfail=0)
    config.getoption = lambda name, default=None: "load"
    plugin = PluginSession(config, Settings(mode="free"))
    plugin.session, plugin.distributed = SimpleNamespace(testscollected=2), True  # as pytest_sessionstart finds them
    started = []
    plugin.teardown = SimpleNamespace(start=lambda: started.append(True))

    def report(nodeid, when, outcome="passed"):
        return SimpleNamespace(nodeid=nodeid, when=when, passed=outcome == "passed", failed=outcome == "failed")

    for rep in (report("a", "setup"), report("a", "call"), report("a", "teardown"), report("b", "setup", "skipped")):
        assert not started or rep.nodeid == "b"
        plugin.pytest_runtest_logreport(rep)
    assert started == [True]
