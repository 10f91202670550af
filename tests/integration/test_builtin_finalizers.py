"""Finalizers that Kubernetes' own controllers own are theirs: `ns NAME --delete` frees a
stopped operator's objects, never writes a Service's load-balancer finalizer or a claim's
protection, names what is left with its controller, and removes one only when named."""

from __future__ import annotations

from crs import create, wait_until
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException
from test_namespaces import (
    make_namespace,  # noqa: F401 - the fixture
    namespace_state,
)

HOLD = "unfinalize.test/hold"
LB = "service.kubernetes.io/load-balancer-cleanup"
PVC = "kubernetes.io/pvc-protection"


def _exists(read) -> bool:
    try:
        read()
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def test_ns_delete_leaves_built_in_finalizers_to_their_controllers(
    api_client,
    make_crd,
    make_namespace,  # noqa: F811 - the fixture imported from test_namespaces
    cli,
    audit,
):
    crd = make_crd(kind="Leftover")
    ns = make_namespace()
    core = CoreV1Api(api_client)
    create(api_client, crd, "cr", ns, finalizers=[HOLD])
    core.create_namespaced_service(
        ns,
        {"metadata": {"name": "web", "finalizers": [LB]}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}},
    )
    core.patch_namespaced_service_status("web", ns, {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}})
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    core.create_namespaced_persistent_volume_claim(
        ns, {"metadata": {"name": "data", "finalizers": [PVC]}, "spec": claim}
    )
    audit.mark()

    result = cli("ns", ns, "--delete", "--timeout", "20s")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    patched = [e["objectRef"]["resource"] for e in audit.writes() if e["verb"] in ("patch", "update")]
    assert "services" not in patched and "persistentvolumeclaims" not in patched, patched  # never written
    assert f"leftover.{crd.group}/cr unfinalized (namespace {ns}; removed {HOLD})" in result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("service/web "))
    assert f"{LB} is left for the service controller (cloud-controller-manager)" in line, result.stdout
    assert "timed out" in line
    # The PVC protection controller runs in the tests' kube-controller-manager: no pod uses the claim, so it went.
    wait_until(
        "the claim gone by its controller",
        lambda: not _exists(lambda: core.read_namespaced_persistent_volume_claim("data", ns)),
        timeout=30,
    )
    assert _exists(lambda: core.read_namespaced_service("web", ns))

    named = cli("ns", ns, "--delete", "--finalizer", LB, "--timeout", "60s")
    assert named.returncode == 0, named.stderr
    assert (
        f"service/web unfinalized (namespace {ns}; removed {LB}; "
        "may leak: the cloud load balancer (ingress 203.0.113.7))" in named.stdout
    ), named.stdout
    assert namespace_state(api_client, ns) is None
