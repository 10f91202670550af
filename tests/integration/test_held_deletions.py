"""What holds a deletion besides a dead operator's finalizer (issue 40), on a control plane of
this module's own: its scans and `scan --free` read the whole cluster, and the shared one
holds other tests' stuck objects.

- A VolumeAttachment held by the CSI driver's external-attacher (`external-attacher/<driver>`,
  the disk is still attached): scan calls it a storage sidecar's, `scan --free` leaves it,
  only `--finalizer` naming it frees it, and the line says what may leak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import controlplane
import pytest
from kubernetes.client.exceptions import ApiException

ROOT = Path(__file__).resolve().parents[2]
DRIVER = "hostpath.csi.k8s.io"
ATTACHER = "external-attacher/hostpath-csi-k8s-io"


@pytest.fixture(scope="module")
def plane():
    if os.environ.get("UNFINALIZE_TEST_KUBECONFIG"):
        pytest.skip("these tests scan a whole cluster of their own (unset UNFINALIZE_TEST_KUBECONFIG)")
    controlplane.find_binaries(controlplane.BINARIES)
    with controlplane.ControlPlane(audit=True) as cp:
        yield cp


@pytest.fixture(scope="module")
def api(plane):
    from kubernetes import config

    client = config.new_client_from_config(config_file=plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture(scope="module")
def tool(plane):
    env = dict(os.environ, KUBECONFIG=plane.kubeconfig, NO_COLOR="1")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "kubectl-unfinalize"), *args],
            env=env,
            text=True,
            capture_output=True,
            timeout=120,
        )

    return run


def tool_writes(plane, since: int, resource: str) -> list[tuple[str, str]]:
    return [
        (e["verb"], e["objectRef"].get("name", ""))
        for e in plane.audit_events(since)
        if e["verb"] in ("patch", "update", "delete")
        and e["objectRef"].get("resource") == resource
        and (e.get("userAgent") or "").startswith("kubectl-unfinalize/")
    ]


def test_a_volume_attachment_held_by_its_attacher_is_the_sidecars_and_freed_only_when_named(plane, api, tool):
    from kubernetes.client import StorageV1Api

    storage = StorageV1Api(api)
    storage.create_volume_attachment(
        {
            "metadata": {"name": "va-1", "finalizers": [ATTACHER]},
            "spec": {"attacher": DRIVER, "nodeName": "node-gone", "source": {"persistentVolumeName": "pv-1"}},
        }
    )
    storage.delete_volume_attachment("va-1")

    scan = tool("scan", "-o", "json")
    assert scan.returncode in (0, 3), scan.stderr
    groups = [g for g in json.loads(scan.stdout)["groups"] if g["resource"].startswith("volumeattachments")]
    assert len(groups) == 1, groups
    assert groups[0]["state"] == "built-in" and groups[0]["finalizer"] == ATTACHER
    assert groups[0]["verdict"].startswith("storage sidecar: waits for the volume to be detached"), groups[0]

    mark = plane.audit_mark()
    free = tool("scan", "--free")
    assert free.returncode in (0, 3), free.stdout + free.stderr
    assert tool_writes(plane, mark, "volumeattachments") == []
    assert storage.read_volume_attachment("va-1").metadata.finalizers == [ATTACHER]

    named = tool("volumeattachments", "va-1", "--finalizer", ATTACHER)
    assert named.returncode == 0, named.stdout + named.stderr
    assert f"removed {ATTACHER}; may leak: an attached disk (volume pv-1 on node node-gone, CSI driver {DRIVER})" in (
        named.stdout
    ), named.stdout
    with pytest.raises(ApiException) as gone:
        storage.read_volume_attachment("va-1")
    assert gone.value.status == 404
