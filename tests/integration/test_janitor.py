"""The in-cluster janitor (deploy/janitor/, issue 33): its manifests apply to a real API
server, and the tool run as its ServiceAccount frees a stuck group with no 403, while a
ClusterRole without one of its verbs makes the run fail naming the missing permission.

"In the cluster" is this process with the in-cluster configuration (no kubeconfig,
KUBERNETES_SERVICE_HOST/PORT, the token and CA files the kubernetes client reads, pointed
at a folder of the test's: their paths are module constants of the client), the token a
TokenRequest's (`kubectl create token`), as a projected service account volume has it.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from kubectl_unfinalize import PermissionDenied, scan

JANITOR = Path(__file__).parents[2] / "deploy" / "janitor"
NAMESPACE = USER = "unfinalize-janitor"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{USER}"
VERBS = yaml.safe_load((JANITOR / "clusterrole.yaml").read_text())["rules"][0]["verbs"]  # pinned in tests/unit


@pytest.fixture
def in_cluster(kubeconfig, kubectl, tmp_path, monkeypatch):
    """As the janitor's pod: its token (a TokenRequest), the cluster's CA, the API server
    in the environment, no kubeconfig. Returns a function that renews the token."""
    import kubernetes.config.incluster_config as incluster

    config = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (account / "namespace").write_text(NAMESPACE)
    server = urlsplit(cluster["server"])

    def token() -> None:
        (account / "token").write_text(kubectl("create", "token", USER, "-n", NAMESPACE).stdout.strip())

    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(account / "token"))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(account / "ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", server.hostname)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.port))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return SimpleNamespace(renew=token, folder=account)


def test_the_janitor_applies_and_frees_a_stuck_group_as_its_service_account(kubectl, api_client, audit, in_cluster):
    tag = secrets.token_hex(3)
    ns, dead = f"jan-{tag}", f"dead.jan{tag}.unfinalize.test/x"
    core = CoreV1Api(api_client)
    try:
        kubectl("apply", "--dry-run=server", "-f", JANITOR / "namespace.yaml")
        kubectl("apply", "-f", JANITOR / "namespace.yaml")
        kubectl("apply", "--dry-run=server", "-k", JANITOR)
        kubectl("apply", "-k", JANITOR)  # as docs/scan.md says
        assert kubectl("get", "cronjob", USER, "-n", NAMESPACE, "-o", "name").stdout.strip() == f"cronjob.batch/{USER}"
        in_cluster.renew()

        kubectl("create", "namespace", ns)
        core.create_namespaced_config_map(ns, {"metadata": {"name": "orphan", "finalizers": [dead]}})
        kubectl("delete", "configmap", "orphan", "-n", ns, "--wait=false")

        # without patch: refused before any write, the missing permission named
        without = [v for v in VERBS if v != "patch"]
        kubectl("patch", "clusterrole", USER, "--type=json", "-p",
                json.dumps([{"op": "replace", "path": "/rules/0/verbs", "value": without}]))  # fmt: skip
        with pytest.raises(PermissionDenied, match=r"cannot patch configmaps") as refused:
            _can_patch(kubectl, ns, False)
            scan(free=True, namespace=ns, grace=0, timeout=60, record="none")
        assert ACCOUNT in str(refused.value) and "nothing was changed" in str(refused.value)
        assert core.read_namespaced_config_map("orphan", ns).metadata.finalizers == [dead]

        kubectl("apply", "-f", JANITOR / "clusterrole.yaml")
        _can_patch(kubectl, ns, True)
        mark = audit.mark()
        # its own process, stdout a pipe as a container's log is
        janitor = _as_pod(
            in_cluster.folder, "scan", "--free", "--wait", "-n", ns, "--timeout=90s", "--record=/dev/stdout"
        )
        out, err = janitor.stdout, janitor.stderr
        assert janitor.returncode == 0, out + err
        header = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
        assert "kubectl unfinalize scan --free" in json.dumps(header), out
        assert "freed 1 configmaps" in err and "record: /dev/stdout" in err, err
        with pytest.raises(ApiException) as missing:
            core.read_namespaced_config_map("orphan", ns)
        assert missing.value.status == 404
        answered = [e for e in audit.events(mark) if e.get("user", {}).get("username") == ACCOUNT]
        assert answered, "the run was not made as the service account"
        refusals = [e for e in answered if (e.get("responseStatus") or {}).get("code") == 403]
        assert refusals == [], [(e["verb"], e.get("requestURI")) for e in refusals]
    finally:
        kubectl("patch", "configmap", "orphan", "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                check=False)  # fmt: skip
        kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        for kind in ("clusterrolebinding", "clusterrole"):
            kubectl("delete", kind, USER, "--ignore-not-found", check=False)
        kubectl("delete", "namespace", NAMESPACE, "--wait=false", "--ignore-not-found", check=False)


def _can_patch(kubectl, ns: str, allowed: bool) -> None:
    """The API server's authorizer follows RBAC changes through a watch: a moment late."""
    from waiting import wait_until

    def now() -> bool:
        answer = kubectl("auth", "can-i", "patch", "configmaps", "-n", ns, f"--as={ACCOUNT}", check=False)
        return (answer.stdout.strip() == "yes") is allowed

    wait_until(f"the janitor {'' if allowed else 'not '}allowed to patch", now, timeout=30)


POD = """
import sys
import kubernetes.config.incluster_config as incluster
from kubectl_unfinalize.cli.main import main
folder, sys.argv = sys.argv[1], ["kubectl-unfinalize", *sys.argv[2:]]
incluster.SERVICE_TOKEN_FILENAME = folder + "/token"
incluster.SERVICE_CERT_FILENAME = folder + "/ca.crt"
raise SystemExit(main(sys.argv[1:]))
"""


def _as_pod(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """The command line in a process of its own, configured as in a pod (the environment is
    the in_cluster fixture's), the service account's files where `folder` has them."""
    return subprocess.run(
        [sys.executable, "-c", POD, str(folder), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ, PYTHONPATH=str(JANITOR.parents[1] / "src")),
    )
