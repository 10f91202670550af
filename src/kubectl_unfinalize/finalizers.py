"""The finalizers that Kubernetes' own controllers own (kube-controller-manager, the cloud
controller manager, the API server and its admission, the CSI external-provisioner), from the
1.36 sources: tests/unit/data/builtin-finalizers-v1.36.3.txt names the Go file that defines
each one (scripts/builtin_finalizers.py writes it), and a test keeps the two the same set.

They are not the tool's to remove: each one waits for something real (a pod still using
a claim, a cloud load balancer, dependents of an owner), and its controller removes it when
that is done. A run leaves them, names them with their controller and what they wait for
when they are still there at the end, and removes one only when `--finalizer` names it;
the outcome then says what may have leaked.

The CSI sidecars' storage finalizers (SIDECARS, and external-attacher's, which names its
driver) guard an attached disk or a storage snapshot the same way, and are judged the same:
a dead operator's finalizer is not one of them. They are a table of their own because
their controllers ship with a CSI driver, not with Kubernetes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"  # never removed, even when named
EXTERNAL_NAME = "crossplane.io/external-name"  # an operator's handle on what it created outside
PV_PROTECTION = "kubernetes.io/pv-protection"
PV_CONTROLLER = "kubernetes.io/pv-controller"  # in-tree volumes; CSI ones get EXTERNAL_PROVISIONER
EXTERNAL_PROVISIONER = "external-provisioner.volume.kubernetes.io/finalizer"
LB_CLEANUP = "service.kubernetes.io/load-balancer-cleanup"
VOLUME = (PV_PROTECTION, PV_CONTROLLER, EXTERNAL_PROVISIONER)  # their leak: the storage the volume's spec names


@dataclass(frozen=True)
class Builtin:
    controller: str  # who removes it
    waits_for: str  # what it waits for: the likely blocker while it stays
    leaks: str  # what removing it may leave behind
    sidecar: bool = False  # a CSI storage sidecar's, shipped with the driver


KCM = "kube-controller-manager"
BUILTIN: dict[str, Builtin] = {
    "kubernetes": Builtin(
        f"the namespace controller ({KCM})",
        "the namespace's contents to be deleted",
        "objects left under the namespace",
    ),
    "kubernetes.io/pvc-protection": Builtin(
        f"the PVC protection controller ({KCM})",
        "no pod to use the claim any more",
        "a claim deleted while a pod mounts it; with reclaim policy Delete, its volume",
    ),
    PV_PROTECTION: Builtin(
        f"the PV protection controller ({KCM})", "the volume to be released by its claim", "the volume's storage"
    ),
    PV_CONTROLLER: Builtin(
        f"the persistent volume controller ({KCM})",
        "the volume's storage to be deleted (reclaim policy Delete)",
        "the volume's storage",
    ),
    EXTERNAL_PROVISIONER: Builtin(
        "the CSI driver's external-provisioner",
        "the volume's storage to be deleted (reclaim policy Delete)",
        "the volume's storage",
    ),
    "kubernetes.io/vac-protection": Builtin(
        f"the VolumeAttributesClass protection controller ({KCM})",
        "no claim or volume to use the class",
        "claims and volumes that name a deleted class",
    ),
    LB_CLEANUP: Builtin(
        "the service controller (cloud-controller-manager)",
        "the cloud load balancer to be deleted",
        "the cloud load balancer",
    ),
    "orphan": Builtin(
        f"the garbage collector ({KCM})",
        "its dependents to be orphaned",
        "dependents whose ownerReferences name a deleted owner",
    ),
    "foregroundDeletion": Builtin(
        f"the garbage collector ({KCM})",
        "its dependents (blockOwnerDeletion) to be deleted",
        "dependents left running after their owner",
    ),
    "batch.kubernetes.io/job-tracking": Builtin(
        f"the job controller ({KCM})", "the job controller to count the pod", "a Job's count of finished pods"
    ),
    "resource.kubernetes.io/delete-protection": Builtin(
        f"the resource claim controller ({KCM})", "the claim to be deallocated", "devices allocated to a deleted claim"
    ),
    "networking.k8s.io/service-cidr-finalizer": Builtin(
        f"the ServiceCIDR controller ({KCM})", "no Service to use an IP of the range", "Service IPs of a deleted range"
    ),
    "scheduling.k8s.io/podgroup-protection": Builtin(
        f"the PodGroup protection controller ({KCM})",
        "no running or pending pod to name the PodGroup",
        "pods that name a deleted PodGroup (spec.schedulingGroup)",
    ),
    CRD_CLEANUP: Builtin(
        "the API server's CRD cleanup",
        "the CRD's custom resources to be deleted",
        "the custom resources' data in etcd (they return when the CRD is re-created)",
    ),
}


SNAPSHOT_BOUND = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"
CONTENT_BOUND = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
ATTACHER_PREFIX = "external-attacher/"  # then the driver's name with "/" as "-"
SNAPSHOTTER = "the snapshot controller (CSI external-snapshotter)"
PROVISIONER = "the CSI driver's external-provisioner"
SIDECARS: dict[str, Builtin] = {
    SNAPSHOT_BOUND: Builtin(
        SNAPSHOTTER,
        "its VolumeSnapshotContent to be deleted or released",
        "a VolumeSnapshotContent bound to a deleted snapshot, and the storage snapshot it holds",
        sidecar=True,
    ),
    CONTENT_BOUND: Builtin(
        SNAPSHOTTER,
        "its VolumeSnapshot to go and, with deletionPolicy Delete, the storage snapshot to be deleted",
        "the storage snapshot",
        sidecar=True,
    ),
    "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection": Builtin(
        SNAPSHOTTER,
        "no claim to be provisioned from the snapshot",
        "a volume being provisioned from a deleted snapshot",
        sidecar=True,
    ),
    "snapshot.storage.kubernetes.io/pvc-as-source-protection": Builtin(
        SNAPSHOTTER,
        "the snapshot being cut from the claim to be ready",
        "a snapshot cut from a claim deleted meanwhile",
        sidecar=True,
    ),
    "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection": Builtin(
        PROVISIONER,
        "no volume to be provisioned from the snapshot",
        "a volume being provisioned from a deleted snapshot",
        sidecar=True,
    ),
    "provisioner.storage.kubernetes.io/cloning-protection": Builtin(
        PROVISIONER,
        "no claim to be cloned from this one",
        "a clone being provisioned from a deleted claim",
        sidecar=True,
    ),
}
ATTACHER = Builtin(
    "the CSI driver's external-attacher",
    "the volume to be detached from its node",
    "an attached disk",
    sidecar=True,
)


def builtin(finalizer: str) -> Builtin | None:
    """The entry of a finalizer Kubernetes' own controllers or the CSI sidecars own."""
    if finalizer.startswith(ATTACHER_PREFIX) and len(finalizer) > len(ATTACHER_PREFIX):
        return ATTACHER
    return BUILTIN.get(finalizer) or SIDECARS.get(finalizer)


def needs_object(finalizers: list[str]) -> bool:
    """Whether what may leak is told by the object's spec or status (not its metadata)."""
    return any(
        f in (LB_CLEANUP, SNAPSHOT_BOUND, CONTENT_BOUND) or f in VOLUME or builtin(f) is ATTACHER for f in finalizers
    )


def leaks(removed: list[str], obj: dict[str, Any] | None = None, external_name: str = "") -> str:
    """What removing `removed` may leave behind, from what the object says; "" when none of
    them guarded anything outside the cluster that the object names."""
    parts = []
    for finalizer in removed:
        entry = builtin(finalizer)
        if entry is None:
            continue
        detail = _detail(finalizer, obj or {})
        part = entry.leaks + (f" ({detail})" if detail else "")
        if part not in parts:  # a volume's finalizers all guard its one disk
            parts.append(part)
    if external_name:
        parts.append(f"the external resource {external_name!r} ({EXTERNAL_NAME})")
    return "; ".join(parts)


def blocker(finalizers: tuple[str, ...] | list[str]) -> str:
    """The built-in finalizers among `finalizers`, each with who removes it and what it waits for."""
    return "; ".join(
        f"{f} is left for {entry.controller}, which waits for {entry.waits_for}"
        for f in finalizers
        if (entry := builtin(f)) is not None
    )


def _detail(finalizer: str, obj: dict[str, Any]) -> str:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if finalizer == LB_CLEANUP:
        ingress = [i.get("ip") or i.get("hostname") for i in (status.get("loadBalancer") or {}).get("ingress") or []]
        return "ingress " + ", ".join(i for i in ingress if i) if any(ingress) else ""
    if finalizer in VOLUME or (builtin(finalizer) is ATTACHER and "csi" in spec):
        csi = spec.get("csi") or {}
        if csi.get("volumeHandle"):
            return f"CSI driver {csi.get('driver', '?')}, volume handle {csi['volumeHandle']}"
        policy = spec.get("persistentVolumeReclaimPolicy")
        return f"reclaim policy {policy}" if policy else ""
    if builtin(finalizer) is ATTACHER:  # a VolumeAttachment
        volume = (spec.get("source") or {}).get("persistentVolumeName")
        words = [f"volume {volume}" if volume else "", f"on node {spec['nodeName']}" if spec.get("nodeName") else ""]
        driver = f"CSI driver {spec['attacher']}" if spec.get("attacher") else ""
        return ", ".join(w for w in (" ".join(w for w in words if w), driver) if w)
    if finalizer == CONTENT_BOUND:
        handle = status.get("snapshotHandle") or (spec.get("source") or {}).get("snapshotHandle")
        driver = f"CSI driver {spec['driver']}" if spec.get("driver") else ""
        return ", ".join(w for w in (driver, f"snapshot handle {handle}" if handle else "") if w)
    if finalizer == SNAPSHOT_BOUND:
        content = status.get("boundVolumeSnapshotContentName")
        return f"VolumeSnapshotContent {content}" if content else ""
    return ""
