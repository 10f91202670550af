"""`scan` over one finalizer held across many CRD-served types, as a removed crossplane
provider leaves its managed resources: one suggested command frees them all (by
--category where it selects exactly those CRDs), not one command per type."""

from __future__ import annotations

import secrets
import shlex

from kubernetes.client import CustomObjectsApi

from kubectl_unfinalize import scan
from kubectl_unfinalize.cli.scan_output import render

TYPES = 6


def test_one_command_frees_a_finalizer_held_across_many_types(api_client, make_crd, kubeconfig, cli):
    token = secrets.token_hex(3)
    category, finalizer = f"managed{token}", f"finalizer.managedresource.{token}.test"
    groups = [f"svc-a-{token}.unfinalize.test", f"svc-b-{token}.unfinalize.test"]
    crds = [
        make_crd(kind=f"Thing{i}", group=groups[i % 2], scope="Cluster", categories=[category]) for i in range(TYPES)
    ]
    make_crd(kind="ProviderConfig", group=groups[0], scope="Cluster")  # of the group, not of the category
    custom = CustomObjectsApi(api_client)
    for crd in crds:
        for k in range(2):
            body = {
                "apiVersion": f"{crd.group}/{crd.version}",
                "kind": crd.kind,
                "metadata": {"name": f"mr-{k}", "finalizers": [finalizer]},
            }
            custom.create_cluster_custom_object(crd.group, crd.version, crd.plural, body)
            custom.delete_cluster_custom_object(crd.group, crd.version, crd.plural, f"mr-{k}")

    report = scan(kubeconfig=kubeconfig, grace=0)
    held = [g for g in report.groups if g.finalizer == finalizer]
    assert sorted(g.resource for g in held) == sorted(c.name for c in crds) and all(g.stuck for g in held), held
    (fix,) = [f for f in report.fixes if f.finalizer == finalizer]
    command = f"kubectl unfinalize crd --category {category} --only-terminating --finalizer {finalizer}"
    assert fix.commands == [command], fix
    text = render(report, "text")
    assert [line.strip() for line in text.splitlines() if finalizer in line and "free:" in line] == [f"free: {command}"]

    result = cli(*shlex.split(command)[2:])  # what a person pastes, through the tool
    assert result.returncode == 0, result.stderr
    for crd in crds:
        assert custom.list_cluster_custom_object(crd.group, crd.version, crd.plural)["items"] == []
