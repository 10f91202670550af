"""Ownership chains in scan (issue 40): an owner deleted with propagationPolicy=Foreground
carries foregroundDeletion until every dependent with blockOwnerDeletion is gone. The
owner's group names the dependents that hold it, by the garbage collector's own rule (an
ownerReference with the owner's uid and blockOwnerDeletion: true, in the owner's namespace
or under a cluster-scoped owner), with what holds each and the commands that free them."""

from __future__ import annotations

import jsonschema
from fakecluster import FakeScanCluster
from test_scan_engine import DEAD, NOW, SCHEMA, md

from kubectl_unfinalize.cli.scan_output import render
from kubectl_unfinalize.scanning.model import State
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.survey import scan

FOREGROUND = "foregroundDeletion"


def owned(name, namespace, uid, block=True, deleted=600, finalizers=(DEAD,)):
    meta = md(name, namespace, deleted=deleted, finalizers=finalizers)
    meta["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "blockOwnerDeletion": block}
    ]
    return meta


def _cluster() -> FakeScanCluster:
    owner = md("owner", "team", deleted=60, finalizers=(FOREGROUND,), manager=None)
    owner["uid"] = "u-owner"
    return FakeScanCluster(
        {
            "configmaps": [owner],
            "stalls": [
                owned("child", "team", "u-owner"),
                owned("loose", "team", "u-owner", block=False),  # does not block its owner
                owned("elsewhere", "other", "u-owner"),  # another namespace: not the owner's dependent
                owned("stranger", "team", "u-other"),
            ],
        }
    )


def test_an_owner_held_by_foreground_deletion_names_the_dependents_that_block_it():
    report = scan(_cluster(), ScanOptions(), clock=lambda: NOW)
    [owner] = [g for g in report.groups if g.finalizer == FOREGROUND]
    assert owner.state is State.BUILTIN
    assert [(d.resource, d.namespace, d.name, d.finalizers, d.state) for d in owner.dependents] == [
        ("stalls.g.example.com", "team", "child", [DEAD], "stuck")
    ]
    assert owner.verdict.endswith(
        f"; held by 1 dependent with blockOwnerDeletion: stalls.g.example.com team/child ({DEAD}: stuck)"
    ), owner.verdict
    [dead] = [g for g in report.groups if g.finalizer == DEAD]
    assert dead.stuck and owner.commands == dead.commands and owner.commands  # the command that frees them
    document = report.to_dict()
    jsonschema.validate(document, SCHEMA)
    [chain] = [g for g in document["groups"] if g["finalizer"] == FOREGROUND]
    assert chain["dependents"] == [
        {
            "resource": "stalls.g.example.com",
            "namespace": "team",
            "name": "child",
            "finalizers": [DEAD],
            "state": "stuck",
        }
    ]
    text = render(report, "text")
    assert f"free: {dead.commands[0]}" in text


def test_a_cluster_scoped_owner_is_blocked_by_dependents_in_any_namespace():
    owner = md("owner", None, deleted=60, finalizers=(FOREGROUND,), manager=None)
    owner["uid"] = "u-node"
    fake = FakeScanCluster({"nodes2": [owner], "stalls": [owned("a", "x", "u-node"), owned("b", "y", "u-node")]})
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    [chain] = [g for g in report.groups if g.finalizer == FOREGROUND]
    assert [(d.namespace, d.name) for d in chain.dependents] == [("x", "a"), ("y", "b")]
    assert "held by 2 dependents with blockOwnerDeletion" in chain.verdict


def test_groups_with_no_blocking_dependent_are_as_before():
    report = scan(_cluster(), ScanOptions(), clock=lambda: NOW)
    assert all(g.dependents == [] for g in report.groups if g.finalizer != FOREGROUND)
    assert all(g["dependents"] == [] for g in report.to_dict()["groups"] if g["finalizer"] != FOREGROUND)
