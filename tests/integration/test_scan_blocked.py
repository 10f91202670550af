"""`blocked` on a real control plane (issue 33, item 3): a controller that keeps writing
after the deletion, but whose own words say it cannot finish, is held for the gate.

The "controller" is this test: a thread writing through the API as its own field manager
(the one that wrote the finalizer), every second, like a provider whose reconcile keeps
failing. Three custom resources with its finalizer, each in its own namespace:
- `usage`: its namespace is deleted; its Synced condition says the create of a
  ProviderConfigUsage is refused because the namespace is being terminated (as
  crossplane's managed resources do, crossplane/crossplane-runtime#1150);
- `rbac`: deleted; Warning Events about it repeat a 403 from RBAC (as an operator whose
  ClusterRole went before its objects does), aggregated the way client-go records them;
- `healthy`: deleted; its condition says the cleanup is under way: it stays `working`.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from datetime import datetime, timezone

import jsonschema
import yaml
from crdinfo import CrdInfo
from kubernetes.client import CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from scan_world import GRACE
from test_scan import SCHEMA, run_printed
from waiting import wait_until

MANAGER = "provider-bucket"
MERGE = "application/merge-patch+json"


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Controller(threading.Thread):
    """Writes each deleted bucket's status every second (a growing `attempts`, so each
    write is a real one), and for `rbac` one Warning Event it keeps aggregating."""

    def __init__(self, api_client, crd: CrdInfo, objects: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.custom, self.core = CustomObjectsApi(api_client), CoreV1Api(api_client)
        self.crd, self.objects = crd, objects  # name -> namespace
        self.stopped = threading.Event()
        self.since: dict[str, str] = {}  # name -> when it first saw the deletion
        self.recorded: set[str] = set()  # the Events it created
        self.errors: list[str] = []

    def run(self) -> None:
        attempts = 0
        while not self.stopped.wait(1.0):
            attempts += 1
            for name, ns in self.objects.items():
                try:
                    self.reconcile(name, ns, attempts)
                except ApiException as exc:
                    if exc.status != 404:
                        self.errors.append(f"{name}: {exc.status} {exc.reason}")

    def reconcile(self, name: str, ns: str, attempts: int) -> None:
        crd = self.crd
        obj = self.custom.get_namespaced_custom_object(crd.group, crd.version, ns, crd.plural, name)
        if not obj["metadata"].get("deletionTimestamp"):
            return
        since = self.since.setdefault(name, now())
        if name == "usage":
            condition = {
                "type": "Synced",
                "status": "False",
                "reason": "ReconcileError",
                "message": "cannot create ProviderConfigUsage: providerconfigusages.pc.unfinalize.test is "
                f"forbidden: unable to create new content in namespace {ns} because it is being terminated",
            }
        else:
            condition = {"type": "Ready", "status": "False", "reason": "Deleting", "message": "emptying the bucket"}
        status = {"status": {"attempts": attempts, "conditions": [dict(condition, lastTransitionTime=since)]}}
        self.custom.patch_namespaced_custom_object_status(
            crd.group, crd.version, ns, crd.plural, name, status, field_manager=MANAGER, _content_type=MERGE
        )
        if name == "rbac":
            self.event(obj, attempts, since)

    def event(self, obj: dict, attempts: int, since: str) -> None:
        meta = obj["metadata"]
        ns, name = meta["namespace"], f"{meta['name']}.blocked"
        if name in self.recorded:
            patch = {"count": attempts, "lastTimestamp": now()}
            self.core.patch_namespaced_event(name, ns, patch, field_manager=MANAGER, _content_type=MERGE)
            return
        message = (
            f'secrets is forbidden: User "system:serviceaccount:{ns}:provider-bucket" cannot create resource '
            f'"secrets" in API group "" in the namespace "{ns}"'
        )
        body = {
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {
                "apiVersion": self.crd.api_version,
                "kind": self.crd.kind,
                "namespace": ns,
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "type": "Warning",
            "reason": "CannotCreateSecret",
            "message": message,
            "source": {"component": MANAGER},
            "firstTimestamp": since,
            "lastTimestamp": now(),
            "count": 1,
        }
        self.core.create_namespaced_event(ns, body, field_manager=MANAGER)
        self.recorded.add(name)


def test_a_controller_that_keeps_being_refused_is_blocked_and_one_that_works_is_not(api_client, kubectl, cli):
    tag = secrets.token_hex(3)
    crd = CrdInfo.of(f"bk{tag}.unfinalize.test", "Bucket")
    finalizer = f"bk{tag}.unfinalize.test/cleanup"
    spaces = {name: f"blk-{tag}-{name}" for name in ("usage", "rbac", "healthy")}
    for ns in spaces.values():
        kubectl("create", "namespace", ns)
    kubectl("apply", "-f", "-", input=yaml.safe_dump(crd.manifest(status=True)))
    controller = Controller(api_client, crd, {name: ns for name, ns in spaces.items()})
    try:
        kubectl("wait", "--for=condition=Established", f"crd/{crd.name}", "--timeout=30s")
        custom = CustomObjectsApi(api_client)
        for name, ns in spaces.items():
            body = {
                "apiVersion": crd.api_version,
                "kind": crd.kind,
                "metadata": {"name": name, "finalizers": [finalizer]},
                "spec": {"size": 1},
            }
            wait_until(f"{name} created", lambda b=body, n=ns: _create(custom, crd, n, b))
        controller.start()
        kubectl("delete", "namespace", spaces["usage"], "--wait=false")
        kubectl("delete", crd.name, "rbac", "-n", spaces["rbac"], "--wait=false")
        kubectl("delete", crd.name, "healthy", "-n", spaces["healthy"], "--wait=false")
        wait_until(
            "the controller to see each deletion",
            lambda: len(controller.since) == 3 and controller.recorded,
            timeout=60,
        )
        time.sleep(GRACE + 3)  # the refusals are said for longer than the grace
        assert controller.errors == []

        blocked = cli("scan", "-n", spaces["usage"])
        assert blocked.returncode == 1, blocked.stdout + blocked.stderr
        assert "blocked: the namespace is being deleted; ProviderConfigUsage create refused for" in blocked.stdout
        assert '("cannot create ProviderConfigUsage: ' in blocked.stdout and "1 blocked" in blocked.stderr
        lines = [line.strip() for line in blocked.stdout.splitlines()]
        warning = next(i for i, line in enumerate(lines) if line.startswith("warning: its controller is alive"))
        command = f"kubectl unfinalize {crd.name} usage -n {spaces['usage']} --finalizer {finalizer}"
        assert lines[warning + 1] == f"free: {command}", blocked.stdout
        assert f"{spaces['usage']}" in blocked.stdout and "blocked: Terminating for" in blocked.stdout

        document = json.loads(cli("scan", "-n", spaces["usage"], "-o", "json").stdout)
        jsonschema.validate(document, SCHEMA)
        (group,) = [g for g in document["groups"] if g["finalizer"] == finalizer]
        assert document["ok"] is False and document["blocked"] == 1 and document["stuck"] == 0, document
        assert group["state"] == "blocked" and group["blocked"]["source"] == "condition Synced=False (ReconcileError)"
        assert group["blocked"]["objects"] == [f"{spaces['usage']}/usage"] and group["blocked"]["seconds"] > GRACE
        assert any(m["name"] == MANAGER for m in group["managers"]), group

        rbac = cli("scan", "-n", spaces["rbac"])
        assert rbac.returncode == 1, rbac.stdout + rbac.stderr
        assert "blocked: forbidden by RBAC; secrets create refused for" in rbac.stdout, rbac.stdout
        rbac_wide = cli("scan", "-n", spaces["rbac"], "-o", "wide").stdout
        assert "evidence: Warning Event CannotCreateSecret on" in rbac_wide, rbac_wide

        healthy = cli("scan", "-n", spaces["healthy"])
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        assert "working: last write" in healthy.stdout and "free:" not in healthy.stdout, healthy.stdout
        assert "nothing held" in healthy.stderr

        freed = run_printed(command, cli, kubectl)
        assert freed.returncode == 0, freed.stdout + freed.stderr
        wait_until(
            "the namespace to go once usage is freed",
            lambda: kubectl("get", "namespace", spaces["usage"], check=False).returncode != 0,
            timeout=60,
        )
    finally:
        controller.stopped.set()
        if controller.is_alive():
            controller.join(timeout=10)
        for name, ns in spaces.items():
            kubectl("patch", crd.name, name, "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                    check=False)  # fmt: skip
        kubectl("delete", "crd", crd.name, "--wait=false", "--ignore-not-found", check=False)
        for ns in spaces.values():
            kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)


def _create(custom, crd: CrdInfo, ns: str, body: dict) -> bool:
    """As the controller: its field manager writes the finalizer (a CRD just Established
    may answer 503 for a moment)."""
    try:
        custom.create_namespaced_custom_object(crd.group, crd.version, ns, crd.plural, body, field_manager=MANAGER)
    except ApiException as exc:
        if exc.status != 503:
            raise
        return False
    return True
