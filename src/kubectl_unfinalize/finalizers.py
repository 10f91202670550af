"""The finalizers that Kubernetes' own controllers own (kube-controller-manager, the cloud
controller manager, the API server and its admission, the CSI external-provisioner), from the
1.36 sources: tests/unit/data/builtin-finalizers-v1.36.3.txt names the Go file that defines
each one (scripts/builtin_finalizers.py writes it), and a test keeps the two the same set.

They are not the tool's to remove: each one waits for something real (a pod still using
a claim, a cloud load balancer, dependents of an owner), and its controller removes it when
that is done. A run leaves them, names them with their controller and what they wait for
when they are still there at the end, and removes one only when `--finalizer` names it;
the outcome then says what may have leaked.
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


def builtin(finalizer: str) -> Builtin | None:
    return BUILTIN.get(finalizer)


def needs_object(finalizers: list[str]) -> bool:
    """Whether what may leak is told by the object's spec or status (not its metadata)."""
    return any(f == LB_CLEANUP or f in VOLUME for f in finalizers)


def leaks(removed: list[str], obj: dict[str, Any] | None = None, external_name: str = "") -> str:
    """What removing `removed` may leave behind, from what the object says; "" when none of
    them guarded anything outside the cluster that the object names."""
    parts = []
    for finalizer in removed:
        entry = BUILTIN.get(finalizer)
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
        if (entry := BUILTIN.get(f)) is not None
    )


def _detail(finalizer: str, obj: dict[str, Any]) -> str:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if finalizer == LB_CLEANUP:
        ingress = [i.get("ip") or i.get("hostname") for i in (status.get("loadBalancer") or {}).get("ingress") or []]
        return "ingress " + ", ".join(i for i in ingress if i) if any(ingress) else ""
    if finalizer in VOLUME:
        csi = spec.get("csi") or {}
        if csi.get("volumeHandle"):
            return f"CSI driver {csi.get('driver', '?')}, volume handle {csi['volumeHandle']}"
        policy = spec.get("persistentVolumeReclaimPolicy")
        return f"reclaim policy {policy}" if policy else ""
    return ""
