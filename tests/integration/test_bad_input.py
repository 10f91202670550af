"""Bad input as a user meets it: one clear line, the documented exit code, no traceback,
and nothing changed in the cluster."""

from __future__ import annotations

import contextlib
import socket
import time

import pytest
import yaml
from crs import crd_state, create, snapshot

HOLD = "unfinalize.test/hold"


@pytest.fixture
def stuck(api_client, make_crd, namespace):
    """A CRD with two finalized objects, and a way to prove nothing changed."""
    crd = make_crd(kind="Sprocket", short_names=("spr",))
    create(api_client, crd, "a", namespace, finalizers=[HOLD])
    create(api_client, crd, "b", namespace, finalizers=[HOLD])
    before = snapshot(api_client, crd)

    def unchanged():
        assert snapshot(api_client, crd) == before
        state = crd_state(api_client, crd["name"])
        assert state is not None and state.metadata.deletion_timestamp is None

    crd["unchanged"] = unchanged
    return crd


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
    stuck["unchanged"]()


def test_ambiguous_short_name(cli, make_crd, stuck):
    make_crd(kind="Sprocket", short_names=("spr",))  # same short name, another group
    err = one_line_error(cli("crd", "spr", "--delete"), 2, "'spr' is ambiguous")
    assert stuck["name"] in err
    stuck["unchanged"]()


def test_malformed_yaml_names_file_and_line(cli, stuck, tmp_path):
    good = tmp_path / "a.yaml"
    good.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": stuck["name"]},
            }
        )
    )
    bad = tmp_path / "b.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {a: b\n")
    one_line_error(cli("-f", tmp_path, "--delete"), 2, f"{bad}:", "invalid YAML")
    stuck["unchanged"]()


def test_missing_file_and_empty_directory(cli, stuck, tmp_path):
    one_line_error(cli("-f", tmp_path / "nope.yaml", "--delete"), 2, "nope.yaml: no such file or directory")
    (tmp_path / "empty").mkdir()
    one_line_error(cli("-f", tmp_path / "empty", "--delete"), 2, "no manifests found")
    stuck["unchanged"]()


@pytest.mark.parametrize(
    ("flag", "needle"), [("--timeout=soon", "invalid duration 'soon'"), ("--dry-run=maybe", "invalid choice")]
)
def test_invalid_flag_values(cli, stuck, flag, needle):
    one_line_error(cli("crd", stuck["name"], "--delete", flag), 2, needle)
    stuck["unchanged"]()


def test_unknown_context(cli, stuck):
    one_line_error(cli("crd", stuck["name"], "--delete", "--context", "nope"), 2, "context 'nope' not found")
    stuck["unchanged"]()


def test_missing_kubeconfig(cli, stuck, tmp_path):
    missing = tmp_path / "missing-kubeconfig"
    one_line_error(
        cli("crd", stuck["name"], "--delete", env={"KUBECONFIG": str(missing)}), 2, "no cluster configuration"
    )
    one_line_error(cli("crd", stuck["name"], "--kubeconfig", missing), 2, f"kubeconfig not found: {missing}")
    stuck["unchanged"]()


def test_unreachable_server_fails_within_request_timeout(cli, stuck, kubeconfig):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    result = cli(
        "crd",
        stuck["name"],
        "--delete",
        "--server",
        f"https://127.0.0.1:{port}",
        "--insecure-skip-tls-verify",
        "--request-timeout",
        "3s",
    )
    one_line_error(result, 1, "cannot reach the API server", str(port))
    assert time.monotonic() - started < 8
    stuck["unchanged"]()


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
    rules = [{"apiGroups": [stuck["group"]], "resources": [stuck["plural"]], "verbs": ["get", "list", "watch"]}]
    kubectl("create", "serviceaccount", "limited", "-n", namespace)
    subject = {"kind": "ServiceAccount", "name": "limited", "namespace": namespace}
    with granted(kubectl, f"{namespace}-limited", rules, subject):
        limited = token_kubeconfig(kubectl, kubeconfig, namespace, "limited", tmp_path)
        result = cli("crd", stuck["name"], "--delete", "--kubeconfig", limited)
        one_line_error(
            result,
            1,
            "forbidden",
            f"cannot patch {stuck['plural']}.{stuck['group']}",
            f"system:serviceaccount:{namespace}:limited",
            "nothing was changed",
        )
        stuck["unchanged"]()
        # The same through impersonation by the admin: --as is honoured, not ignored.
        result = cli("crd", stuck["name"], "--as", f"system:serviceaccount:{namespace}:limited")
        one_line_error(result, 1, f"cannot patch {stuck['plural']}.{stuck['group']}")
        stuck["unchanged"]()


def test_impersonated_groups_are_sent_as_separate_headers(cli, stuck, kubectl, namespace):
    """RBAC grants only the second group: joined into one header it would be refused."""
    name = f"{namespace}-group"
    rules = [{"apiGroups": [stuck["group"]], "resources": [stuck["plural"]], "verbs": ["get", "list", "patch"]}]
    subject = {"kind": "Group", "name": f"{name}-b", "apiGroup": "rbac.authorization.k8s.io"}
    with granted(kubectl, name, rules, subject):
        denied = cli("crd", stuck["name"], "--dry-run=server", "--as", "someone", "--as-group", f"{name}-a")
        assert denied.returncode == 1 and "forbidden" in denied.stderr, denied.stderr
        allowed = cli(
            "crd",
            stuck["name"],
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
        stuck["unchanged"]()
