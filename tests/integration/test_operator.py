"""The motivating case with a real kopf operator (the dask-kubernetes teardown hang)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from controlplane.process import interrupt
from crdinfo import CrdInfo
from crs import CLEANUP, crd_state, create, wait_until
from kubernetes.client import CustomObjectsApi

KOPF = "kopf.zalando.org/KopfFinalizerMarker"
OPERATOR = Path(__file__).parent / "operator" / "owner_operator.py"
KINDS = ("Parent", "Child", "Sidecar")


def plural(kind: str) -> str:
    return {"Child": "children"}.get(kind, kind.lower() + "s")


@pytest.fixture
def crd_dir(tmp_path, kubectl, kube_env):
    """The operator's CRDs as a directory of manifests, applied to the cluster."""
    group = f"op{os.urandom(4).hex()}.unfinalize.test"
    folder = tmp_path / "crds"
    folder.mkdir()
    for kind in KINDS:
        crd = CrdInfo.of(group, kind, plural(kind)).manifest(status=True)
        (folder / f"{kind.lower()}.yaml").write_text(yaml.safe_dump(crd))
    kubectl("apply", "-f", folder)
    kubectl("wait", "--for=condition=Established", "-f", folder, "--timeout=30s")
    yield group, folder
    # The way an operator's test suite would tear down, through the Python API.
    from kubectl_unfinalize import unfinalize

    unfinalize(files=[str(folder)], delete=True, timeout=60, kubeconfig=kube_env["KUBECONFIG"]).raise_for_failure()


@pytest.fixture
def operator(crd_dir, kube_env, tmp_path):
    """Start the kopf operator; the test stops it (kopf leaves its finalizers behind)."""
    group, _ = crd_dir
    log = open(tmp_path / "operator.log", "w")
    env = dict(kube_env, OPERATOR_GROUP=group)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", str(OPERATOR)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    proc.stop = lambda: interrupt(proc)
    yield proc
    interrupt(proc)
    log.close()


def objects(api_client, group: str, kind: str) -> list[dict]:
    return CustomObjectsApi(api_client).list_cluster_custom_object(group, "v1", plural(kind))["items"]


def crd_info(group: str, kind: str) -> CrdInfo:
    """One of the operator's kinds, for crs.create."""
    return CrdInfo.of(group, kind, plural(kind))


def populate(api_client, group, namespaces):
    for ns in namespaces:
        for i in range(3):
            create(api_client, crd_info(group, "Parent"), f"p{i}", ns)
        create(api_client, crd_info(group, "Sidecar"), "s0", ns)

    def handled():
        parents, children = objects(api_client, group, "Parent"), objects(api_client, group, "Child")
        sidecars = objects(api_client, group, "Sidecar")
        everything = parents + children + sidecars
        return (
            len(children) == 3 * len(namespaces)
            and all(KOPF in (o["metadata"].get("finalizers") or []) for o in everything)
            and all(o["metadata"].get("ownerReferences") for o in children)
        )

    wait_until("the operator to finalize parents, children and sidecars", handled, timeout=60)


def test_stopped_operator_teardown_hangs_without_and_completes_with_unfinalize(
    api_client, crd_dir, operator, namespace, kubectl, cli
):
    group, folder = crd_dir
    second = namespace + "-2"
    kubectl("create", "namespace", second)
    try:
        populate(api_client, group, [namespace, second])
        operator.stop()
        kubectl("delete", "parent", "p0", "p1", "-n", namespace, "--wait=false")
        # The teardown every operator test suite has: it cannot finish.
        hang = kubectl("delete", "-f", folder, "--timeout=20s", check=False, timeout=90)
        assert hang.returncode != 0, hang.stdout
        assert "timed out" in hang.stderr.lower(), hang.stderr
        for kind in KINDS:
            state = crd_state(api_client, f"{plural(kind)}.{group}")
            assert state is not None and CLEANUP in state.metadata.finalizers
        result = cli("-f", folder, "--delete", "--timeout", "60s")
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count(f"removed {KOPF}") == 6 + 6 + 2
        for kind in KINDS:
            assert crd_state(api_client, f"{plural(kind)}.{group}") is None
    finally:
        kubectl("delete", "namespace", second, "--wait=false", check=False)


def test_live_operator_refinalizes_without_delete_and_loses_with_delete(api_client, crd_dir, operator, namespace, cli):
    group, folder = crd_dir
    populate(api_client, group, [namespace])
    result = cli("crd", f"sidecars.{group}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"sidecar.{group}/s0 finalizers came back" in result.stdout, result.stdout
    assert "likely re-added by kopf" in result.stdout, result.stdout
    result = cli("-f", folder, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    for kind in KINDS:
        assert crd_state(api_client, f"{plural(kind)}.{group}") is None
