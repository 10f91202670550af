"""Bad input as a user meets it: one clear line, the documented exit code, no traceback,
and nothing changed in the cluster."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import yaml
from crdinfo import CrdInfo
from crs import crd_state, create, snapshot

HOLD = "unfinalize.test/hold"


@dataclass(frozen=True)
class Stuck:
    crd: CrdInfo
    unchanged: Callable[[], None]  # asserts that the objects and the CRD are as they were


@pytest.fixture
def stuck(api_client, make_crd, namespace) -> Stuck:
    """A CRD with two finalized objects, and a way to prove nothing changed."""
    crd = make_crd(kind="Sprocket", short_names=("spr",))
    create(api_client, crd, "a", namespace, finalizers=[HOLD])
    create(api_client, crd, "b", namespace, finalizers=[HOLD])
    before = snapshot(api_client, crd)

    def unchanged():
        assert snapshot(api_client, crd) == before
        state = crd_state(api_client, crd.name)
        assert state is not None and state.metadata.deletion_timestamp is None

    return Stuck(crd, unchanged)


def one_line_error(result, code: int, *needles: str) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    err = result.stderr.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


def test_no_arguments(cli):
    one_line_error(cli(), 2, "nothing selected")


def test_unknown_crd_suggests_close_matches(cli, stuck):
    one_line_error(
        cli("crd", "sprockett", "--delete"), 2, "no CustomResourceDefinition matches 'sprockett'", "sprocket"
    )
    stuck.unchanged()


def test_ambiguous_short_name(cli, make_crd, stuck):
    make_crd(kind="Sprocket", short_names=("spr",))  # same short name, another group
    err = one_line_error(cli("crd", "spr", "--delete"), 2, "'spr' is ambiguous")
    assert stuck.crd.name in err
    stuck.unchanged()


def test_malformed_yaml_names_file_and_line(cli, stuck, tmp_path):
    good = tmp_path / "a.yaml"
    good.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": stuck.crd.name},
            }
        )
    )
    bad = tmp_path / "b.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {a: b\n")
    one_line_error(cli("-f", tmp_path, "--delete"), 2, f"{bad}:", "invalid YAML")
    stuck.unchanged()


def test_missing_file_and_empty_directory(cli, stuck, tmp_path):
    one_line_error(cli("-f", tmp_path / "nope.yaml", "--delete"), 2, "nope.yaml: no such file or directory")
    (tmp_path / "empty").mkdir()
    one_line_error(cli("-f", tmp_path / "empty", "--delete"), 2, "no manifests found")
    stuck.unchanged()


@pytest.mark.parametrize(
    ("flag", "needle"), [("--timeout=soon", "invalid duration 'soon'"), ("--dry-run=maybe", "invalid choice")]
)
def test_invalid_flag_values(cli, stuck, flag, needle):
    one_line_error(cli("crd", stuck.crd.name, "--delete", flag), 2, needle)
    stuck.unchanged()


def test_unknown_context(cli, stuck):
    one_line_error(cli("crd", stuck.crd.name, "--delete", "--context", "nope"), 2, "context 'nope' not found")
    stuck.unchanged()


def test_missing_kubeconfig(cli, stuck, tmp_path):
    missing = tmp_path / "missing-kubeconfig"
    one_line_error(
        cli("crd", stuck.crd.name, "--delete", env={"KUBECONFIG": str(missing)}), 2, "no cluster configuration"
    )
    one_line_error(cli("crd", stuck.crd.name, "--kubeconfig", missing), 2, f"kubeconfig not found: {missing}")
    stuck.unchanged()


def test_unreachable_server_fails_within_request_timeout(cli, stuck, kubeconfig):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    result = cli(
        "crd",
        stuck.crd.name,
        "--delete",
        "--server",
        f"https://127.0.0.1:{port}",
        "--insecure-skip-tls-verify",
        "--request-timeout",
        "3s",
    )
    one_line_error(result, 1, "cannot reach the API server", str(port))
    assert time.monotonic() - started < 8
    stuck.unchanged()


@contextlib.contextmanager
def granted(kubectl, name: str, rules: list[dict], subject: dict):
    """A ClusterRole allowing `rules` (plus reading CRDs), bound to `subject`, for the block."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "verbs": ["get", "list"],
            },
            *rules,
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [subject],
    }
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([role, binding]))
    try:
        yield
    finally:
        kubectl("delete", "clusterrole,clusterrolebinding", name, "--ignore-not-found")


def token_kubeconfig(kubectl, kubeconfig, namespace, sa, tmp_path) -> str:
    """A kubeconfig for the admin's cluster that authenticates as a ServiceAccount token."""
    token = kubectl("create", "token", sa, "-n", namespace).stdout.strip()
    admin = yaml.safe_load(open(kubeconfig))
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": cluster["name"], "user": sa}}],
        "current-context": sa,
    }
    path = tmp_path / "limited-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_rbac_forbidding_patch_is_reported_before_any_change(cli, stuck, kubectl, kubeconfig, namespace, tmp_path):
    rules = [{"apiGroups": [stuck.crd.group], "resources": [stuck.crd.plural], "verbs": ["get", "list", "watch"]}]
    kubectl("create", "serviceaccount", "limited", "-n", namespace)
    subject = {"kind": "ServiceAccount", "name": "limited", "namespace": namespace}
    with granted(kubectl, f"{namespace}-limited", rules, subject):
        limited = token_kubeconfig(kubectl, kubeconfig, namespace, "limited", tmp_path)
        result = cli("crd", stuck.crd.name, "--delete", "--kubeconfig", limited)
        one_line_error(
            result,
            1,
            "forbidden",
            f"cannot patch {stuck.crd.plural}.{stuck.crd.group}",
            f"system:serviceaccount:{namespace}:limited",
            "nothing was changed",
        )
        stuck.unchanged()
        # The same through impersonation by the admin: --as is honoured, not ignored.
        result = cli("crd", stuck.crd.name, "--as", f"system:serviceaccount:{namespace}:limited")
        one_line_error(result, 1, f"cannot patch {stuck.crd.plural}.{stuck.crd.group}")
        stuck.unchanged()


def test_impersonated_groups_are_sent_as_separate_headers(cli, stuck, kubectl, namespace):
    """RBAC grants only the second group: joined into one header it would be refused."""
    name = f"{namespace}-group"
    rules = [{"apiGroups": [stuck.crd.group], "resources": [stuck.crd.plural], "verbs": ["get", "list", "patch"]}]
    subject = {"kind": "Group", "name": f"{name}-b", "apiGroup": "rbac.authorization.k8s.io"}
    with granted(kubectl, name, rules, subject):
        denied = cli("crd", stuck.crd.name, "--dry-run=server", "--as", "someone", "--as-group", f"{name}-a")
        assert denied.returncode == 1 and "forbidden" in denied.stderr, denied.stderr
        allowed = cli(
            "crd",
            stuck.crd.name,
            "--dry-run=server",
            "--as",
            "someone",
            "--as-group",
            f"{name}-a",
            "--as-group",
            f"{name}-b",
        )
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.count("(server dry run)") == 2
        stuck.unchanged()


def _kubeconfig_with(kubeconfig, tmp_path, name, **user):
    """The admin kubeconfig with its user replaced by `user` fields."""
    config = yaml.safe_load(open(kubeconfig))
    config["users"][0]["user"] = user
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def _file(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _sparse(tmp_path, name, size):
    path = tmp_path / name
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)
)

# (id, args(stuck, tmp_path, kubeconfig) -> list, exit code, needle in the one stderr line)
TABLE = [
    ("as-group-without-as", lambda s, t, k: ["crd", s.crd.name, "--as-group", "g"], 2, "--as-group requires --as"),
    ("as-uid-without-as", lambda s, t, k: ["crd", s.crd.name, "--as-uid", "7"], 2, "--as-uid requires --as"),
    ("empty-as", lambda s, t, k: ["crd", s.crd.name, "--as", ""], 2, "--as needs a user name"),
    ("empty-as-group", lambda s, t, k: ["crd", s.crd.name, "--as", "u", "--as-group", " "], 2, "--as-group needs"),
    ("dry-run-with-i", lambda s, t, k: ["crd", s.crd.name, "--delete", "--dry-run", "-i"], 2, "-i asks before"),
    ("wait-false-without-delete", lambda s, t, k: ["crd", s.crd.name, "--wait=false"], 2, "--wait only applies"),
    ("concurrency-0", lambda s, t, k: ["crd", s.crd.name, "--delete", "--concurrency", "0"], 2, "at least 1"),
    ("chunk-size-0", lambda s, t, k: ["crd", s.crd.name, "--chunk-size", "0"], 2, "at least 1"),
    ("timeout-0", lambda s, t, k: ["crd", s.crd.name, "--delete", "--timeout", "0"], 2, "greater than 0"),
    ("timeout-negative", lambda s, t, k: ["crd", s.crd.name, "--timeout=-1m"], 2, "invalid duration"),
    ("request-timeout-word", lambda s, t, k: ["crd", s.crd.name, "--request-timeout", "later"], 2, "invalid duration"),
    ("bad-bool", lambda s, t, k: ["crd", s.crd.name, "--insecure-skip-tls-verify=perhaps"], 2, "invalid boolean"),
    ("bad-output", lambda s, t, k: ["crd", s.crd.name, "-o", "table"], 2, "invalid choice"),
    ("empty-finalizer", lambda s, t, k: ["crd", s.crd.name, "--finalizer", ""], 2, "--finalizer needs a name"),
    ("name-and-selector", lambda s, t, k: ["crd", s.crd.name, "-l", "a=b"], 2, "cannot be combined"),
    ("f-and-crd", lambda s, t, k: ["crd", s.crd.name, "-f", str(t)], 2, "-f cannot be combined"),
    ("unknown-type", lambda s, t, k: ["nosuchtypes", "x"], 2, "the server has no resource type 'nosuchtypes'"),
    ("url", lambda s, t, k: ["-f", "https://example.com/crds.yaml"], 2, "URLs are not supported"),
    ("binary-file", lambda s, t, k: ["-f", _file(t, "b.yaml", b"\x7fELF\x00\x01")], 2, "binary data"),
    ("latin1-file", lambda s, t, k: ["-f", _file(t, "l.yaml", "kind: caf\xe9\n".encode("latin-1"))], 2, "not UTF-8"),
    ("huge-file", lambda s, t, k: ["-f", _sparse(t, "huge.yaml", 100 * 1024 * 1024)], 2, "too large for a manifest"),
    (
        "yaml-bomb-name",
        lambda s, t, k: ["-f", _file(t, "bomb.yaml", BOMB + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: *i}\n")],
        2,
        "metadata.name must be a string",
    ),
    ("list-document", lambda s, t, k: ["-f", _file(t, "l.yaml", "- a\n- b\n")], 2, "expected a mapping"),
    ("no-kind", lambda s, t, k: ["-f", _file(t, "k.yaml", "apiVersion: v1\nmetadata: {name: x}\n")], 2, "missing kind"),
    ("no-name", lambda s, t, k: ["-f", _file(t, "n.yaml", "apiVersion: v1\nkind: ConfigMap\n")], 2, "no metadata.name"),
    ("dir-without-manifests", lambda s, t, k: ["-f", _file(t, "notes.txt", "hello").parent], 2, "no manifests found"),
    ("broken-symlink", lambda s, t, k: ["-f", _symlink(t)], 2, "no such file or directory"),
    (
        "malformed-token",
        lambda s, t, k: ["crd", s.crd.name, "--delete", "--kubeconfig", _kubeconfig_with(k, t, "kc", token="x.y.z")],
        2,
        "rejected the credentials",
    ),
    (
        "expired-token",
        lambda s, t, k: ["crd", s.crd.name, "--delete", "--kubeconfig", _kubeconfig_with(k, t, "kc", token=EXPIRED)],
        2,
        "rejected the credentials",
    ),
    (
        "not-a-certificate",
        lambda s, t, k: [
            "crd",
            s.crd.name,
            "--delete",
            "--certificate-authority",
            _file(t, "ca.crt", "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"),
        ],
        2,
        "invalid certificate authority",
    ),
    ("unknown-user", lambda s, t, k: ["crd", s.crd.name, "--user", "nobody"], 2, "user 'nobody' not found"),
    ("unknown-cluster", lambda s, t, k: ["crd", s.crd.name, "--cluster", "nowhere"], 2, "cluster 'nowhere' not found"),
    ("verbosity-word", lambda s, t, k: ["crd", s.crd.name, "-v=loud"], 2, "invalid verbosity"),
]
# A structurally valid JWT, expired in 2001, signed by nobody the server trusts.
EXPIRED = (
    "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjEwMDAwMDAwMDAsInN1YiI6InN5c3RlbTpzZXJ2aWNlYWNjb3VudDpkZWZhdWx0OmV4cGlyZWQifQ."
    "c2lnbmF0dXJl"
)


def _symlink(tmp_path):
    link = tmp_path / "dangling.yaml"
    link.symlink_to(tmp_path / "missing-target.yaml")
    return link


@pytest.mark.parametrize(("args", "code", "needle"), [c[1:] for c in TABLE], ids=[c[0] for c in TABLE])
def test_bad_input_table(cli, stuck, tmp_path, kubeconfig, args, code, needle):
    one_line_error(cli(*args(stuck, tmp_path, kubeconfig)), code, needle)
    stuck.unchanged()


@pytest.mark.parametrize("spelling", ["{plural}", " {plural} ", "{PLURAL}", "{Kind}.{group}"])
def test_names_with_stray_whitespace_or_other_case_resolve(cli, stuck, spelling):
    name = spelling.format(
        plural=stuck.crd.plural, PLURAL=stuck.crd.plural.upper(), Kind=stuck.crd.kind, group=stuck.crd.group
    )
    result = cli("crd", name, "--dry-run=server", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2
    stuck.unchanged()


def test_a_bad_manifest_is_reported_even_when_the_cluster_is_unreachable(cli, tmp_path):
    bad = _file(tmp_path, "bad.yaml", "apiVersion: v1\nkind: [\n")
    one_line_error(cli("-f", bad, "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"), 2, "invalid YAML")
