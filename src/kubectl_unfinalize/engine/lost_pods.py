"""Pods held by a lost node (lost_nodes.py), force-deleted only with --force-lost-pods.

No finalizer holds such a pod: its kubelet must confirm it stopped, and that kubelet is
gone. kubectl's force delete (gracePeriodSeconds=0) removes it from the API; on a node
that is only cut off from the network its containers may still run, and a StatefulSet may
then run two pods of one identity. So it is never implied: only the flag sends it, after
one warning that names Kubernetes' own remedy, only for a pod the rule judges held by a
lost node at that moment, with its uid as a precondition. Recorded; undo cannot bring a
pod back (its controller makes a new one)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..errors import Forbidden, UnfinalizeError
from ..kube.paging import ListQuery
from ..lost_nodes import NODES, OUT_OF_SERVICE, PODS, LostPod, by_name, judge
from ..model import Action, ObjectRef
from . import namespace_reads
from .context import RunContext
from .diagnose import explain

UNDOABLE = "undo cannot bring it back (its controller makes a new one)"
WARNING = (
    "force-deleting pods whose node is lost (gracePeriodSeconds=0): on a node that is only cut off from the"
    " network their containers may still run, and a StatefulSet may then run two pods of one identity;"
    f" Kubernetes' own remedy, once the node is known to be down, is the {OUT_OF_SERVICE} taint"
)


class LostPods:
    """Shared by a run's sweeps; each pod is force-deleted once."""

    def __init__(self, run: RunContext, warn: Callable[[str], None]) -> None:
        self._run = run
        self._warn = warn
        self._warned = False
        self._done: set[tuple[ObjectRef, str]] = set()  # (pod, uid)
        self._lock = threading.Lock()

    @property
    def wanted(self) -> bool:
        return self._run.options.force_lost_pods

    def free_in(self, namespace: str) -> bool:
        """Every pod of `namespace` a lost node holds now, force-deleted."""
        return all([self._force(pod) for pod in namespace_reads.lost_pods(self._run.cluster, namespace)])

    def free_named(self, ref: ObjectRef) -> bool | None:
        """The named pod, force-deleted if a lost node holds it; None when none does (the
        sweep goes on with it as with any object)."""
        try:
            pod = self._run.cluster.get(ref)
            if pod is None:
                return None
            nodes = by_name(self._run.cluster.list_objects(NODES, ListQuery()))
        except UnfinalizeError:
            return None  # not read: nothing is claimed of it
        held = judge(pod, nodes, time.time())
        return None if held is None else self._force(held)

    def _force(self, pod: LostPod) -> bool:
        ref = ObjectRef(PODS, pod.name, pod.namespace)
        with self._lock:
            if (ref, pod.uid) in self._done:
                return True
            self._done.add((ref, pod.uid))
            warn, self._warned = not self._warned, True
        if warn:
            self._warn(f"--force-lost-pods: {WARNING}")
        run = self._run
        dry_run = run.options.dry_run
        try:
            deleted = run.writes.force_delete(ref, pod.uid, pod.reason, dry_run) if dry_run.sends_writes else True
        except Forbidden as exc:
            message = f"forbidden: the force delete needs 'delete' on pods in namespace {pod.namespace}: {exc}"
        except UnfinalizeError as exc:
            message = explain(exc, "delete", PODS)
        else:
            how = "forced (gracePeriodSeconds=0)" if deleted else "gone already, or another pod of its name"
            run.book.add(ref, Action.DELETED if deleted else Action.GONE, message=f"{how}: {pod.reason}; {UNDOABLE}")
            return True
        run.book.add(ref, Action.FAILED, message=message)
        return False
