"""`scan --free` right after a teardown (issue 33): it frees what the same scan judges
stuck and nothing else, with no write to what it must leave alone (the audit log says).

The world, deleted seconds before the first scan:
- a dead operator's custom resources (its finalizer, no writer since) and a ConfigMap of
  another dead operator: freed;
- a namespace held only by such a ConfigMap: freed through it, and gone;
- a working controller's object (a thread writing as its field manager, test_scan_blocked's
  controller), a blocked one (the same controller, refused by RBAC in its Events), a PVC
  held by kubernetes.io/pvc-protection, and objects with the dead finalizers that are not
  being deleted: never written to.
Each scan is narrowed to one namespace (-n): the control plane is shared with other tests.
"""

from __future__ import annotations

import json
import re
import secrets

import jsonschema
import yaml
from crdinfo import CrdInfo
from kubernetes.client import CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from scan_world import GRACE
from test_scan import SCHEMA
from test_scan_blocked import Controller, _create
from waiting import wait_until

DEAD_CRS = 3
NOT_OBJECT_WRITES = {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}


def tool_writes(audit, since: int) -> set[tuple[str, str | None, str | None]]:
    """(resource, namespace, name) of every write the tool sent since the mark."""
    return {
        (e["objectRef"]["resource"], e["objectRef"].get("namespace"), e["objectRef"].get("name"))
        for e in audit.writes(since)
        if (e.get("userAgent") or "").startswith("kubectl-unfinalize/")
        and e["objectRef"]["resource"] not in NOT_OBJECT_WRITES
    }


def gone(read) -> bool:
    try:
        read()
    except ApiException as exc:
        return exc.status == 404
    return False


def test_scan_free_frees_only_what_is_stuck_right_after_a_teardown(api_client, kubectl, cli, audit):
    tag = secrets.token_hex(3)
    ns, ns_gone, ns_blocked = f"free-{tag}", f"free-{tag}-gone", f"free-{tag}-blk"
    widgets, buckets = (
        CrdInfo.of(f"fr{tag}.unfinalize.test", "Widget"),
        CrdInfo.of(f"fb{tag}.unfinalize.test", "Bucket"),
    )
    dead, dead_cm = f"fr{tag}.unfinalize.test/cleanup", f"dead.fr{tag}.unfinalize.test/x"
    core, custom = CoreV1Api(api_client), CustomObjectsApi(api_client)
    for name in (ns, ns_gone, ns_blocked):
        kubectl("create", "namespace", name)
    for crd in (widgets, buckets):
        kubectl("apply", "-f", "-", input=yaml.safe_dump(crd.manifest(status=True)))
    controller = Controller(api_client, buckets, {"healthy": ns, "rbac": ns_blocked})
    try:
        for crd in (widgets, buckets):
            kubectl("wait", "--for=condition=Established", f"crd/{crd.name}", "--timeout=30s")
        for name in [f"dead-{i}" for i in range(DEAD_CRS)] + ["live"]:
            body = {
                "apiVersion": widgets.api_version,
                "kind": "Widget",
                "metadata": {"name": name, "finalizers": [dead]},
            }
            wait_until(f"{name} created", lambda b=body: _create(custom, widgets, ns, b))
        for name, space in controller.objects.items():
            body = {"apiVersion": buckets.api_version, "kind": "Bucket",
                    "metadata": {"name": name, "finalizers": [f"fb{tag}.unfinalize.test/cleanup"]}}  # fmt: skip
            wait_until(f"{name} created", lambda b=body, s=space: _create(custom, buckets, s, b))
        for space, name in ((ns, "orphan"), (ns, "alive"), (ns_gone, "inside")):
            core.create_namespaced_config_map(space, {"metadata": {"name": name, "finalizers": [dead_cm]}})
        claim = {"metadata": {"name": "data", "finalizers": ["kubernetes.io/pvc-protection"]},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}  # fmt: skip
        core.create_namespaced_persistent_volume_claim(ns, claim)
        controller.start()

        # the teardown: deleted, nothing waits for it
        kubectl("delete", widgets.name, *[f"dead-{i}" for i in range(DEAD_CRS)], "-n", ns, "--wait=false")
        kubectl("delete", "configmap", "orphan", "-n", ns, "--wait=false")
        kubectl("delete", "pvc", "data", "-n", ns, "--wait=false")
        kubectl("delete", buckets.name, "healthy", "-n", ns, "--wait=false")
        kubectl("delete", buckets.name, "rbac", "-n", ns_blocked, "--wait=false")
        kubectl("delete", "namespace", ns_gone, "--wait=false")
        wait_until("the controller to see each deletion", lambda: len(controller.since) == 2, timeout=60)

        capped_mark = audit.mark()
        capped = cli("scan", "--free", "--wait", "-n", ns, "--max-objects", "2", "--timeout", f"{GRACE * 3}s")
        assert capped.returncode == 2, capped.stdout + capped.stderr
        assert f"would change {DEAD_CRS + 1} objects, more than --max-objects 2" in capped.stderr, capped.stderr
        assert tool_writes(audit, capped_mark) == set()

        dry = cli("scan", "--free", "-n", ns, "--dry-run=server")
        assert dry.returncode == 1 and f"would free {DEAD_CRS} {widgets.name}" in dry.stderr, dry.stdout + dry.stderr
        assert "record:" not in dry.stderr

        mark = audit.mark()
        freed = cli("scan", "--free", "--wait", "-n", ns, "-o", "json", "--timeout", f"{GRACE * 3}s")
        assert freed.returncode == 0, freed.stdout + freed.stderr
        document = json.loads(freed.stdout)
        jsonschema.validate(document, SCHEMA)
        assert document["ok"] is True and document["record"], document
        by_resource = {f["resource"]: f for f in document["freed"]}
        assert by_resource[widgets.name]["unfinalized"] == DEAD_CRS and by_resource[widgets.name]["ok"]
        assert by_resource["configmaps"]["unfinalized"] == 1 and by_resource["configmaps"]["finalizers"] == [dead_cm]
        assert re.search(r"record: \S+", freed.stderr), freed.stderr

        spaced = cli("scan", "--free", "--wait", "-n", ns_gone, "--timeout", f"{GRACE * 3}s")
        assert spaced.returncode == 0, spaced.stdout + spaced.stderr
        assert gone(lambda: core.read_namespace(ns_gone))

        held = cli("scan", "--free", "--wait", "-n", ns_blocked, "--timeout", f"{GRACE * 3}s")
        assert held.returncode == 1 and "1 blocked" in held.stderr, held.stdout + held.stderr
        assert "freed nothing" in held.stderr

        needed = {*((widgets.plural, ns, f"dead-{i}") for i in range(DEAD_CRS)), ("configmaps", ns, "orphan"),
                  ("configmaps", ns_gone, "inside")}  # fmt: skip
        written = tool_writes(audit, mark)
        assert needed <= written <= needed | {("namespaces", None, ns_gone)}, written  # a delete of it, if still there
        for i in range(DEAD_CRS):
            assert gone(
                lambda n=f"dead-{i}": custom.get_namespaced_custom_object(widgets.group, "v1", ns, widgets.plural, n)
            )
        assert gone(lambda: core.read_namespaced_config_map("orphan", ns))
        live = custom.get_namespaced_custom_object(widgets.group, "v1", ns, widgets.plural, "live")
        assert live["metadata"]["finalizers"] == [dead]
        assert core.read_namespaced_config_map("alive", ns).metadata.finalizers == [dead_cm]
        for name, space in controller.objects.items():
            bucket = custom.get_namespaced_custom_object(buckets.group, "v1", space, buckets.plural, name)
            assert bucket["metadata"]["finalizers"], name
        assert controller.errors == []
    finally:
        controller.stopped.set()
        if controller.is_alive():
            controller.join(timeout=10)
        for crd in (widgets, buckets):
            kubectl("delete", "crd", crd.name, "--wait=false", "--ignore-not-found", check=False)
        for space, kind, name in ((ns, widgets.name, "live"), (ns, buckets.name, "healthy"),
                                  (ns_blocked, buckets.name, "rbac"), (ns, "configmap", "alive")):  # fmt: skip
            kubectl("patch", kind, name, "-n", space, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                    check=False)  # fmt: skip
        for name in (ns, ns_gone, ns_blocked):
            kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
