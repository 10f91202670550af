"""`scan` as the last step of a CI job, right after a teardown (issue 26): a stopped kopf
operator's objects and a ConfigMap of another dead operator, deleted seconds ago. scan
never exits 0 then; the commands it prints, run as printed, leave it exiting 0.

The gate is narrowed to the test's namespace (-n): the control plane is shared with other
tests, which leave their own stuck objects behind."""

from __future__ import annotations

import json
import secrets
import shlex

import jsonschema
import yaml
from crdinfo import CrdInfo
from crs import create_many
from kubernetes.client import CoreV1Api
from scan_world import GRACE, KOPF, finalized, start_operator, stop
from test_scan import SCHEMA, run_printed
from waiting import wait_until

OBJECTS = 20


def printed_commands(stdout: str) -> list[str]:
    commands = []
    for line in stdout.splitlines():
        if line.strip().startswith("free: ") and line.strip()[6:] not in commands:
            commands.append(line.strip()[6:])
    return commands


def test_scan_right_after_a_teardown_never_exits_0_and_its_commands_free_it(
    api_client, kubectl, kube_env, cli, tmp_path
):
    tag = secrets.token_hex(3)
    ns, gates = f"gate-{tag}", CrdInfo.of(f"gt{tag}.unfinalize.test", "Gate")
    dead = f"dead.gt{tag}.unfinalize.test/cleanup"
    kubectl("create", "namespace", ns)
    kubectl("apply", "-f", "-", input=yaml.safe_dump(gates.manifest(status=True)))
    try:
        kubectl("wait", "--for=condition=Established", f"crd/{gates.name}", "--timeout=30s")
        operator = start_operator(kube_env, gates.group, gates.plural, tmp_path / "operator.log")
        try:
            create_many(api_client, gates, OBJECTS, [ns], prefix="gate-")
            wait_until("kopf to finalize the gates", lambda: finalized(api_client, gates, OBJECTS), timeout=60)
        finally:
            stop(operator)
        CoreV1Api(api_client).create_namespaced_config_map(
            ns, {"metadata": {"name": "orphan", "finalizers": [dead]}, "data": {"k": "v"}}
        )
        # the teardown: everything deleted, nothing waits for it
        kubectl("delete", gates.name, "--all", "-n", ns, "--wait=false")
        kubectl("delete", "configmap", "orphan", "-n", ns, "--wait=false")

        right_after = cli("scan", "-n", ns)
        assert right_after.returncode == 3, right_after.stdout + right_after.stderr
        assert "2 pending" in right_after.stderr and "scan --wait waits for the verdict" in right_after.stderr
        pending = printed_commands(right_after.stdout)
        assert pending == [
            f"kubectl unfinalize configmaps orphan -n {ns} --finalizer {dead}",
            f"kubectl unfinalize crd {gates.name} --only-terminating --finalizer {KOPF} -n {ns}",
        ], right_after.stdout
        document = json.loads(cli("scan", "-n", ns, "-o", "json").stdout)
        jsonschema.validate(document, SCHEMA)
        assert document["ok"] is False and document["pending"] == 2 and document["stuck"] == 0, document

        waited = cli("scan", "-n", ns, "--wait", "--timeout", f"{GRACE * 3}s")
        assert waited.returncode == 1, waited.stdout + waited.stderr
        assert "2 stuck" in waited.stderr and "after waiting" in waited.stderr, waited.stderr
        assert sorted(printed_commands(waited.stdout)) == sorted(pending), waited.stdout

        for command in printed_commands(waited.stdout):
            result = run_printed(command, cli, kubectl)
            assert result.returncode == 0, f"{shlex.quote(command)}\n{result.stdout}\n{result.stderr}"
        clean = cli("scan", "-n", ns, "--wait")
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert clean.stdout.startswith("nothing is stuck") and "nothing held" in clean.stderr
    finally:
        from kubectl_unfinalize import unfinalize

        unfinalize(crds=[gates.name], delete=True, timeout=60, kubeconfig=kube_env["KUBECONFIG"])
        kubectl("patch", "configmap", "orphan", "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                check=False)  # fmt: skip
        kubectl("delete", "namespace", ns, "--wait=false", check=False)
