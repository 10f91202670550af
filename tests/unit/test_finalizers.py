"""Kubernetes' own controllers' finalizers: left alone unless named, named at the end,
and what removing one may leak, from what the object says."""

from kubectl_unfinalize import finalizers
from kubectl_unfinalize.cli.output import outcome_line
from kubectl_unfinalize.model import Outcome
from kubectl_unfinalize.options import Options

OPERATOR = "operator.example.com/cleanup"
LB = "service.kubernetes.io/load-balancer-cleanup"


def test_built_in_finalizers_are_left_unless_named():
    held = [OPERATOR, "kubernetes.io/pvc-protection", "foregroundDeletion", "batch.kubernetes.io/job-tracking"]
    assert Options().removable(held) == [OPERATOR]
    assert Options(finalizers=("kubernetes.io/pvc-protection",)).removable(held) == ["kubernetes.io/pvc-protection"]


def test_a_crds_own_cleanup_finalizer_is_never_removed_even_when_named():
    assert Options(finalizers=(finalizers.CRD_CLEANUP,)).removable([finalizers.CRD_CLEANUP]) == []
    assert Options().removable([finalizers.CRD_CLEANUP]) == []


def test_the_table_names_each_ones_controller_and_what_it_waits_for():
    text = finalizers.blocker(["kubernetes.io/pvc-protection", OPERATOR, "orphan"])
    assert "kubernetes.io/pvc-protection is left for the PVC protection controller (kube-controller-manager)" in text
    assert "no pod to use the claim" in text and "orphan is left for the garbage collector" in text
    assert OPERATOR not in text
    assert finalizers.blocker([OPERATOR]) == ""


def test_what_may_leak_comes_from_the_object():
    service = {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example.com"}]}}}
    assert finalizers.needs_object([LB]) and not finalizers.needs_object([OPERATOR])
    assert finalizers.leaks([LB], service) == "the cloud load balancer (ingress 203.0.113.7, lb.example.com)"
    volume = {"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0abc"}}}
    assert "CSI driver ebs.csi.aws.com, volume handle vol-0abc" in finalizers.leaks(
        ["kubernetes.io/pv-protection"], volume
    )
    assert finalizers.leaks([OPERATOR]) == ""
    assert (
        finalizers.leaks([OPERATOR], external_name="i-0123")
        == "the external resource 'i-0123' (crossplane.io/external-name)"
    )


def test_a_volumes_reclaim_finalizers_name_the_storage_they_guard():
    csi = {"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0abc"}}}
    in_tree = {"spec": {"persistentVolumeReclaimPolicy": "Delete"}}
    reclaim = [finalizers.EXTERNAL_PROVISIONER, finalizers.PV_CONTROLLER]
    assert all(finalizers.needs_object([f]) for f in reclaim)
    storage = "the volume's storage (CSI driver ebs.csi.aws.com, volume handle vol-0abc)"
    assert finalizers.leaks([finalizers.EXTERNAL_PROVISIONER], csi) == storage
    assert finalizers.leaks([finalizers.PV_CONTROLLER], in_tree) == "the volume's storage (reclaim policy Delete)"
    assert finalizers.leaks([finalizers.PV_PROTECTION, *reclaim], csi) == storage  # one disk, said once
    blocker = finalizers.blocker(reclaim)
    assert "CSI driver's external-provisioner" in blocker and "persistent volume controller" in blocker


def test_a_pod_groups_finalizer_waits_for_its_pods():
    text = finalizers.blocker(["scheduling.k8s.io/podgroup-protection"])
    assert "PodGroup protection controller (kube-controller-manager)" in text and "pod" in text
    assert finalizers.leaks(["scheduling.k8s.io/podgroup-protection"]) == (
        "pods that name a deleted PodGroup (spec.schedulingGroup)"
    )
    assert not finalizers.needs_object(["scheduling.k8s.io/podgroup-protection"])


def test_the_leak_is_on_the_outcome_line_and_in_json():
    outcome = Outcome(
        "service", "web", "unfinalized", "ns", [LB], leaks="the cloud load balancer (ingress 203.0.113.7)"
    )
    assert outcome_line(outcome) == (
        f"service/web unfinalized (namespace ns; removed {LB}; may leak: the cloud load balancer (ingress 203.0.113.7))"
    )
    assert outcome.to_dict()["leaks"] == "the cloud load balancer (ingress 203.0.113.7)"


def test_the_engine_keeps_a_built_in_finalizer_with_a_conditional_write_not_the_bulk_patch():
    from fakecluster import WIDGET_CRD, FakeCluster

    from kubectl_unfinalize.deadline import Deadline
    from kubectl_unfinalize.engine import Engine
    from kubectl_unfinalize.model import Action, Targets

    cluster = FakeCluster(bulk=True)
    cluster.add("mixed", [OPERATOR, "foregroundDeletion"])
    cluster.add("plain", [OPERATOR])
    cluster.add("builtin-only", ["orphan"])
    options = Options(settle=0, poll=0.01)
    report = Engine(cluster, options, Deadline(30)).run(Targets(crds=[WIDGET_CRD]))
    assert cluster.stored("mixed").finalizers == ["foregroundDeletion"]
    assert cluster.stored("plain").finalizers == []
    assert cluster.stored("builtin-only").finalizers == ["orphan"]  # never written
    assert sorted(n for verb, n in cluster.calls if verb == "patch") == ["mixed", "plain"]
    freed = {o.name: o.finalizers for o in report.outcomes if o.action is Action.UNFINALIZED}
    assert freed == {"mixed": [OPERATOR], "plain": [OPERATOR]}


ATTACHER = "external-attacher/ebs-csi-aws-com"


def test_storage_sidecars_finalizers_are_left_unless_named_and_matched_by_driver():
    held = [OPERATOR, ATTACHER, finalizers.SNAPSHOT_BOUND, finalizers.CONTENT_BOUND]
    assert Options().removable(held) == [OPERATOR]
    assert Options(finalizers=(ATTACHER,)).removable(held) == [ATTACHER]
    assert finalizers.builtin("external-attacher/any.driver-name") is finalizers.ATTACHER
    assert finalizers.builtin("external-attacher/") is None  # no driver: not the sidecar's
    assert finalizers.builtin("example.com/external-attacher/x") is None
    text = finalizers.blocker([ATTACHER, OPERATOR])
    assert f"{ATTACHER} is left for the CSI driver's external-attacher" in text and "detached" in text
    assert all(finalizers.builtin(f).sidecar for f in [*finalizers.SIDECARS, ATTACHER])
    assert not any(entry.sidecar for entry in finalizers.BUILTIN.values())


def test_what_a_sidecars_finalizer_may_leak_comes_from_the_object():
    attachment = {
        "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}
    }
    assert finalizers.needs_object([ATTACHER])
    assert finalizers.leaks([ATTACHER], attachment) == (
        "an attached disk (volume pv-1 on node node-1, CSI driver ebs.csi.aws.com)"
    )
    volume = {"spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0abc"}}}
    assert (
        finalizers.leaks([ATTACHER], volume) == "an attached disk (CSI driver ebs.csi.aws.com, volume handle vol-0abc)"
    )
    content = {"spec": {"driver": "hostpath.csi.k8s.io"}, "status": {"snapshotHandle": "snap-7"}}
    assert finalizers.leaks([finalizers.CONTENT_BOUND], content) == (
        "the storage snapshot (CSI driver hostpath.csi.k8s.io, snapshot handle snap-7)"
    )
    snapshot = {"status": {"boundVolumeSnapshotContentName": "snapcontent-1"}}
    assert "(VolumeSnapshotContent snapcontent-1)" in finalizers.leaks([finalizers.SNAPSHOT_BOUND], snapshot)
    assert finalizers.leaks([ATTACHER], {}) == "an attached disk"
