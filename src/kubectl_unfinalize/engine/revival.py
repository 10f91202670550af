"""Objects left in a namespace that is gone (removed through /finalize while they were
held): NamespaceLifecycle refuses every update of them until the namespace exists again,
so the one way to free them is to create it again, remove their finalizers, and delete it
again. The namespace is this tool's while it stands: labelled and annotated so, each of
its writes recorded, and deleted and waited on before the run ends. Never done when the
namespace exists, nor in a dry run (which says what it would create)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import Conflict, UnfinalizeError
from ..kube.port import Cluster
from ..model import Action, namespace_ref
from ..options import DryRun
from . import namespace_reads
from .context import RunContext
from .writes import Writes

MANAGED_BY = "kubectl-unfinalize"
REASON_ANNOTATION = "kubectl-unfinalize/recreated"
REASON = "removed while objects in it were held; created again to free them, then deleted again"
GONE_WAIT = 60.0  # at most this long (within the run's deadline) for the namespace controller to finish it
POLL = 0.2
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"


def body(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": MANAGED_BY},
            "annotations": {REASON_ANNOTATION: REASON},
        },
    }


class Revivals:
    """The namespaces one run creates again. Thread-safe: any worker may meet one first."""

    def __init__(self, run: RunContext, warn: Callable[[str], None]) -> None:
        self._run = run
        self._warn = warn
        self._lock = threading.Lock()
        self._created: dict[str, str] = {}  # name -> uid of the namespace this run created
        self._refused: dict[str, str] = {}  # name -> why it could not be created
        self._exists: set[str] = set()  # created by someone else since: not ours to delete

    def revive(self, namespace: str) -> str | None:
        """None when the namespace exists again and the write can be sent again; else
        why not (a dry run says what a run would do)."""
        with self._lock:
            if namespace in self._created or namespace in self._exists:
                return None
            if namespace in self._refused:
                return self._refused[namespace]
            if self._run.options.dry_run is not DryRun.NONE:
                why = f"a run without --dry-run creates namespace {namespace} again to free it, then deletes it again"
                self._refused[namespace] = why
                self._warn(f"namespace {namespace} is gone, {why} (with what else was left in it)")
                return why
            try:
                self._created[namespace] = self._run.writes.create_namespace(namespace_ref(namespace), body(namespace))
            except Conflict:
                self._exists.add(namespace)  # someone created it since: the write is simply sent again
                return None
            except UnfinalizeError as exc:
                why = f"cannot create namespace {namespace} again to free it: {exc}"
                self._refused[namespace] = why
                return why
            self._warn(
                f"namespace {namespace} was removed while objects in it were held: created it again to free"
                " them; it is deleted again before the run ends"
            )
            return None

    def finish(self, writes: Writes, cluster: Cluster) -> None:
        """Delete each namespace this run created and wait until it is gone (its controller
        deletes what is inside); what still keeps one is named, with the command that frees
        it. `writes` and `cluster` have a grace of their own: a run past its deadline still
        deletes what it created."""
        book = self._run.book
        for name, uid in self._created.items():
            ref = namespace_ref(name)
            try:
                writes.delete_created(ref)
            except UnfinalizeError as exc:
                book.add(ref, Action.FAILED, message=f"created again to free what was in it; cannot delete it: {exc}")
                continue
            if self._gone(cluster, name, uid):
                book.add(ref, Action.DELETED, message="created again to free what was left in it; deleted again, gone")
                continue
            why = (
                "created again to free what was left in it, deleted again, not gone yet"
                f" (kubectl unfinalize ns {name} --delete)"
            )
            namespace_reads.blocking(cluster, book, name, None, False, why)

    def _gone(self, cluster: Cluster, name: str, uid: str) -> bool:
        """Whether the namespace this run created (`uid`) is gone, read until GONE_WAIT or
        the deadline; False at once when its controller says only content held by
        finalizers remains (it cannot finish on its own)."""
        ref = namespace_ref(name)
        until = time.monotonic() + min(GONE_WAIT, self._run.deadline.remaining())
        while True:
            with contextlib.suppress(UnfinalizeError):  # cannot tell now: read again
                obj = cluster.get(ref)
                if obj is None or (obj.get("metadata") or {}).get("uid") != uid:  # another: ours is gone
                    return True
                if held(obj):
                    return False
            if time.monotonic() >= until:
                return False
            time.sleep(POLL)


def held(namespace: dict[str, Any]) -> bool:
    """The namespace controller deleted what it could: what is left holds finalizers."""
    conditions = (namespace.get("status") or {}).get("conditions") or []
    return any(c.get("type") == FINALIZERS_REMAINING and c.get("status") == "True" for c in conditions)
