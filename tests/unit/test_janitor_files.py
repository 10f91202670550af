"""The janitor's files (deploy/janitor/) say what docs/scan.md promises; the integration
test applies them to a real API server and runs the CronJob's command as its pod would."""

from __future__ import annotations

from pathlib import Path

import yaml

JANITOR = Path(__file__).parents[2] / "deploy" / "janitor"
VERBS = ["get", "list", "watch", "patch", "delete"]


def test_the_manifests_say_what_the_recipe_promises() -> None:
    rule, events = yaml.safe_load((JANITOR / "clusterrole.yaml").read_text())["rules"]
    assert rule["verbs"] == VERBS and "*" not in rule["verbs"]
    assert events == {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}
    cronjob = yaml.safe_load((JANITOR / "cronjob.yaml").read_text())
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[:2] == ["scan", "--free"] and "--older-than=30m" in args and "-A" in args
    assert "--exclude-namespace=kube-system" in args and "--record=/dev/stdout" in args and "--events" in args


def test_the_cronjobs_args_are_the_one_home_of_what_the_janitor_runs() -> None:
    """An image CMD beside the CronJob's args would be a second list to keep in step."""
    dockerfile = (JANITOR / "Dockerfile").read_text()
    assert "COPY dist/kubectl-unfinalize " in dockerfile
    assert 'ENTRYPOINT ["/usr/local/bin/kubectl-unfinalize"]' in dockerfile
    assert not [line for line in dockerfile.splitlines() if line.startswith("CMD")]


def test_the_kustomization_names_every_manifest_the_namespace_first() -> None:
    kustomization = yaml.safe_load((JANITOR / "kustomization.yaml").read_text())
    manifests = sorted(p.name for p in JANITOR.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(kustomization["resources"]) == manifests
    assert kustomization["resources"][0] == "namespace.yaml"
