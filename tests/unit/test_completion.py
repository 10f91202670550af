"""Shell completion: cobra's __complete protocol as kubectl (>= 1.26) drives it for plugins.
The executables kubectl runs are tested in tests/packaging/test_completion_executable.py."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kubectl_unfinalize.cli import completion
from kubectl_unfinalize.cli.main import build_parser, main
from kubectl_unfinalize.errors import Unreachable

NO_FILE, FILES = 4, 0
SRC = Path(__file__).resolve().parents[2] / "src"
CRDS = ["gadgets.example.com", "widgets.example.com", "daskclusters.kubernetes.dask.org"]
TYPES = ["configmaps", "persistentvolumeclaims", "applications.argoproj.io", "namespaces"]
OBJECTS = {"pvc": ["data", "logs"], "configmaps": ["kube-root-ca.crt", "settings"]}


class StubLister:
    """Stands in for list_names: records what it was asked, answers from a fixed list."""

    def __init__(self, names=None, error=None):
        self.calls = []
        self.names = CRDS if names is None else names
        self.error = error

    def __call__(self, kind, values):
        self.calls.append((kind, dict(values)))
        if self.error:
            raise self.error
        if kind.startswith("objects:"):
            return OBJECTS[kind.removeprefix("objects:")]
        return {
            "crds": self.names,
            "namespaces": ["default", "team-a"],
            "contexts": ["dev", "prod"],
            "types": TYPES,
            "categories": ["all", "managed"],
        }[kind]


def complete(*args, cluster=None):
    *words, to_complete = args
    lines, directive = completion.complete(words, to_complete, cluster or StubLister())
    return [line.split("\t")[0] for line in lines], directive


def test_first_word_is_the_crd_ns_or_scan_subcommand_or_a_type_from_discovery():
    assert complete("") == (
        ["crd", "ns", "scan", "applications.argoproj.io", "configmaps", "namespaces", "persistentvolumeclaims"],
        NO_FILE,
    )
    assert complete("s") == (["scan"], NO_FILE)
    assert complete("scan", "") == ([], NO_FILE)  # scan takes no names
    crd_words = ["crd", "crds", "customresourcedefinition", "customresourcedefinitions"]
    assert complete("c") == ([*crd_words, "configmaps"], NO_FILE)
    assert complete("n") == (["ns", "namespace", "namespaces"], NO_FILE)
    assert complete("customresourcedefinitions", "-f", "x", "") == ([], NO_FILE)
    assert complete("pods", "") == ([], NO_FILE)  # no such type: nothing, quietly


def test_names_of_a_type_come_from_the_cluster_in_the_namespace_given():
    cluster = StubLister()
    assert complete("pvc", "", cluster=cluster) == (["data", "logs"], NO_FILE)
    assert complete("pvc", "data", "", cluster=cluster) == (["logs"], NO_FILE)
    assert complete("-n", "db", "configmaps", "s", cluster=cluster) == (["settings"], NO_FILE)
    assert cluster.calls[-1] == ("objects:configmaps", {"namespace": "db"})
    assert [kind for kind, _ in cluster.calls] == ["objects:pvc", "objects:pvc", "objects:configmaps"]


def test_type_slash_name_words_complete_after_the_slash():
    assert complete("pvc/", cluster=StubLister()) == (["pvc/data", "pvc/logs"], NO_FILE)
    assert complete("pvc/data", "pvc/l") == (["pvc/logs"], NO_FILE)
    assert complete("pvc/data", "pvc/") == (["pvc/logs"], NO_FILE)
    assert complete("pvc/data", "") == ([], NO_FILE)
    assert complete("pvc", "pvc/") == ([], NO_FILE)


def test_namespace_names_come_from_the_cluster_after_ns():
    cluster = StubLister()
    assert complete("ns", "", cluster=cluster) == (["default", "team-a"], NO_FILE)
    assert complete("namespace", "default", "t", cluster=cluster) == (["team-a"], NO_FILE)
    assert [kind for kind, _ in cluster.calls] == ["namespaces", "namespaces"]


def test_crd_names_come_from_the_cluster_without_those_already_typed():
    cluster = StubLister()
    assert complete("crd", "", cluster=cluster) == (sorted(CRDS), NO_FILE)
    assert complete("crd", "w", cluster=cluster) == (["widgets.example.com"], NO_FILE)
    assert complete("crd", "widgets.example.com", "", cluster=cluster) == (
        ["daskclusters.kubernetes.dask.org", "gadgets.example.com"],
        NO_FILE,
    )
    assert [kind for kind, _ in cluster.calls] == ["crds"] * 3


def test_connection_flags_in_the_words_reach_the_cluster_lookup():
    cluster = StubLister()
    complete("--kubeconfig", "/k/config", "crd", "--context=prod", "--as", "me", "--as-group", "g", "", cluster=cluster)
    assert cluster.calls == [
        ("crds", {"kubeconfig": "/k/config", "context": "prod", "as_user": "me", "as_group": ["g"]}),
    ]


def test_flags_come_from_the_parser():
    lines, directive = completion.complete(["crd"], "-", StubLister())
    offered = {line.split("\t")[0] for line in lines}
    every = {s for action in build_parser()._actions for s in action.option_strings}
    assert offered == every and directive == NO_FILE
    assert all("\t" in line and line.split("\t")[1] for line in lines)  # each with a description
    assert complete("crd", "--o") == (["--only-terminating", "--older-than", "--output"], NO_FILE)
    assert complete("crd", "x", "--dry-run", "-") == complete("crd", "x", "--dry-run=client", "-")


def test_flags_given_once_are_not_offered_again_but_repeatable_ones_are():
    offered, _ = complete("crd", "x", "--delete", "--finalizer", "a/b", "-qo", "json", "--")
    assert "--delete" not in offered and "--quiet" not in offered and "--output" not in offered
    assert "--finalizer" in offered and "--dry-run" in offered


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (("crd", "x", "-o", ""), ["text", "name", "wide", "json", "yaml"]),
        (("crd", "x", "--output", "j"), ["json"]),
        (("crd", "x", "--output=y"), ["--output=yaml"]),
        (("crd", "x", "-oj"), ["-ojson"]),
        (("crd", "x", "-qo", ""), ["text", "name", "wide", "json", "yaml"]),
        (("crd", "x", "--dry-run", ""), ["none", "client", "server"]),
        (("crd", "x", "--dry-run="), ["--dry-run=none", "--dry-run=client", "--dry-run=server"]),
        (("crd", "x", "--delete", "--wait="), ["--wait=true", "--wait=false"]),
        (("crd", "x", "--insecure-skip-tls-verify", "f"), ["false"]),
        (("crd", "x", "-n", ""), ["default", "team-a"]),
        (("crd", "x", "--context", "p"), ["prod"]),
        (("crd", "x", "--group", ""), []),
        (("crd", "--category", "m"), ["managed"]),
        (("crd", "x", "--timeout", ""), []),
    ],
)
def test_flag_values(words, expected):
    assert complete(*words) == (expected, NO_FILE)


def test_path_flags_fall_back_to_file_completion():
    for flag in ("-f", "--filename", "--kubeconfig", "--certificate-authority", "--client-key"):
        assert complete(flag, "") == ([], FILES), flag


def test_after_a_flag_with_optional_value_a_crd_name_is_not_offered():
    # argparse would take the next word as the value of --dry-run, so offer only values
    assert complete("crd", "--dry-run", "") == (["none", "client", "server"], NO_FILE)
    assert complete("crd", "--dry-run", "server", "") == (sorted(CRDS), NO_FILE)


def test_after_double_dash_everything_is_a_name():
    assert complete("crd", "--", "-") == ([], NO_FILE)


def test_cluster_errors_give_no_candidates():
    assert complete("crd", "", cluster=StubLister(error=Unreachable("down"))) == ([], NO_FILE)
    assert complete("crd", "x", "-n", "", cluster=StubLister(error=RuntimeError("boom"))) == ([], NO_FILE)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kubeconfig(path, server: str) -> str:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t0ken"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return str(path)


def test_unreachable_cluster_prints_only_the_directive(tmp_path):
    kubeconfig = _kubeconfig(tmp_path / "config", f"https://127.0.0.1:{_closed_port()}")
    with pytest.raises(Unreachable):  # the lookup really goes to the network ...
        completion.list_names("crds", {"kubeconfig": kubeconfig})
    started = time.monotonic()
    result = subprocess.run(  # ... and the completer stays silent about it
        [sys.executable, "-m", "kubectl_unfinalize.cli.completion", "crd", "--kubeconfig", kubeconfig, ""],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(SRC)},
        timeout=30,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", "")
    assert time.monotonic() - started < 5


def test_no_kubeconfig_at_all_prints_only_the_directive(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["__complete", "crd", ""]) == 0
    assert capsys.readouterr() == (":4\n", "")


class _JsonApi(http.server.BaseHTTPRequestHandler):
    """The few GETs completion sends, answered on 127.0.0.1 from `answers` by path (404
    for the rest), each recorded as (path with query, Accept, Authorization)."""

    requests: list = []
    answers: dict = {}

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).requests.append((self.path, self.headers.get("Accept"), self.headers.get("Authorization")))
        path = self.path.partition("?")[0]
        body = json.dumps(self.answers.get(path, {})).encode()
        self.send_response(200 if path in self.answers else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _items(names):
    return {"items": [{"metadata": {"name": n}} for n in names]}


class _ApiServer(_JsonApi):
    requests: list = []
    answers = {
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions": _items(CRDS),
        "/api/v1/namespaces": _items(["default"]),
    }


def test_one_metadata_only_list_request_per_completion(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ApiServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kubeconfig = _kubeconfig(tmp_path / "config", f"http://127.0.0.1:{server.server_address[1]}")
        _ApiServer.requests.clear()
        assert completion.list_names("crds", {"kubeconfig": kubeconfig}) == CRDS
        assert completion.list_names("namespaces", {"kubeconfig": kubeconfig, "token": "other"}) == ["default"]
    finally:
        server.shutdown()
        server.server_close()
    (crd_path, accept, auth), (ns_path, _, ns_auth) = _ApiServer.requests
    assert crd_path.partition("?")[0] == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert accept.startswith("application/json;as=PartialObjectMetadataList")
    assert (auth, ns_auth) == ("Bearer t0ken", "Bearer other")
    assert ns_path.partition("?")[0] == "/api/v1/namespaces"


def test_contexts_come_from_the_kubeconfig(tmp_path):
    kubeconfig = _kubeconfig(tmp_path / "config", "https://127.0.0.1:1")
    assert completion.list_names("contexts", {"kubeconfig": kubeconfig}) == ["ctx"]


def _aggregated(items):
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": items}


CORE = {
    "metadata": {},
    "versions": [
        {
            "version": "v1",
            "resources": [
                {
                    "resource": "configmaps",
                    "responseKind": {"kind": "ConfigMap"},
                    "scope": "Namespaced",
                    "shortNames": ["cm"],
                },
                {"resource": "namespaces", "responseKind": {"kind": "Namespace"}, "scope": "Cluster"},
                {"resource": "pods", "responseKind": {"kind": "Pod"}, "scope": "Namespaced", "categories": ["all"]},
            ],
        }
    ],
}
ARGO = {
    "metadata": {"name": "argoproj.io"},
    "versions": [
        {"version": "v1alpha1", "resources": [{"resource": "applications", "responseKind": {"kind": "Application"}}]}
    ],
}


class _DiscoveringServer(_JsonApi):
    requests: list = []
    answers = {
        "/api": _aggregated([CORE]),
        "/apis": _aggregated([ARGO]),
        "/api/v1/namespaces/db/configmaps": {
            "items": [{"metadata": {"name": "settings", "namespace": "db"}}],
            "metadata": {},
        },
    }


def test_types_and_names_of_a_type_read_discovery_and_one_metadata_only_page(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DiscoveringServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kubeconfig = _kubeconfig(tmp_path / "config", f"http://127.0.0.1:{server.server_address[1]}")
        _DiscoveringServer.requests.clear()
        types = completion.list_names("types", {"kubeconfig": kubeconfig})
        names = completion.list_names("objects:cm", {"kubeconfig": kubeconfig, "namespace": "db"})
        categories = completion.list_names("categories", {"kubeconfig": kubeconfig})
    finally:
        server.shutdown()
        server.server_close()
    assert types == ["applications.argoproj.io", "configmaps", "namespaces", "pods"]
    assert categories == ["all"]
    assert names == ["settings"]
    paths = [path for path, _, _ in _DiscoveringServer.requests]
    assert paths[:4] == ["/api", "/apis", "/api", "/apis"]
    listed, accept, _ = _DiscoveringServer.requests[4]
    assert listed.startswith("/api/v1/namespaces/db/configmaps?limit=")  # one page, sized by the list budget
    assert accept.startswith("application/json;as=PartialObjectMetadataList")
    assert len(paths) == 7


class _LegacyServerWithADownApi(_JsonApi):
    """A server without aggregated discovery (plain lists only), one of whose group
    versions is an aggregated API that is down: 503, as the API server answers for it."""

    requests: list = []
    down = "/apis/metrics.k8s.io/v1beta1"
    answers = {
        "/api": {"kind": "APIVersions", "versions": ["v1"]},
        "/api/v1": {"resources": [{"name": "configmaps", "namespaced": True, "kind": "ConfigMap"}]},
        "/apis": {
            "kind": "APIGroupList",
            "groups": [
                {"name": "metrics.k8s.io", "versions": [{"version": "v1beta1"}]},
                {"name": "argoproj.io", "versions": [{"version": "v1alpha1"}]},
            ],
        },
        "/apis/argoproj.io/v1alpha1": {"resources": [{"name": "applications", "kind": "Application"}]},
    }

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path != self.down:
            return super().do_GET()
        type(self).requests.append((self.path, self.headers.get("Accept"), self.headers.get("Authorization")))
        body = b'{"kind":"Status","code":503,"message":"service unavailable"}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_down_aggregated_api_is_asked_once_per_tab_and_the_other_types_are_offered(tmp_path):
    """Each 503 was retried (eight times, seconds) for every TAB on a server without
    aggregated discovery; the group version is unavailable now, and that is the answer."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _LegacyServerWithADownApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kubeconfig = _kubeconfig(tmp_path / "config", f"http://127.0.0.1:{server.server_address[1]}")
        _LegacyServerWithADownApi.requests.clear()
        types = completion.list_names("types", {"kubeconfig": kubeconfig})
    finally:
        server.shutdown()
        server.server_close()
    assert types == ["applications.argoproj.io", "configmaps"]
    paths = [path for path, _, _ in _LegacyServerWithADownApi.requests]
    assert paths.count(_LegacyServerWithADownApi.down) == 1, paths
    assert sorted(paths) == ["/api", "/api/v1", "/apis", "/apis/argoproj.io/v1alpha1", "/apis/metrics.k8s.io/v1beta1"]
