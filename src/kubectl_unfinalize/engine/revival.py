"""Objects left in a namespace that is gone (removed through /finalize while they were
held): NamespaceLifecycle refuses every update of them until the namespace exists again,
so the one way to free them is to create it again, remove their finalizers, and delete it
again. The namespace is this tool's while it stands: labelled and annotated so, each of
its writes recorded, and deleted and waited on before the run ends. Never done when the
namespace exists, nor in a dry run (which says what it would create)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..deadline import Deadline
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
        self._deleted: set[str] = set()  # ours, deleted again

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
                self._warn(
                    f"namespace {namespace} is gone (removed while objects in it were held): a run without --dry-run"
                    " creates it again to free them, then deletes it again"
                )
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

    def delete_again(self, writes_for: Callable[[], Writes]) -> list[tuple[str, str]]:
        """Delete each namespace this run created and has not deleted yet: (name, uid) of
        each deleted. `writes_for` makes the writes only when there is one (most runs
        create none), with a grace of their own after the deadline or an interrupt: a run
        still deletes what it created."""
        left = [(name, uid) for name, uid in self._created.items() if name not in self._deleted]
        if not left:
            return []
        writes = writes_for()
        deleted = []
        for name, uid in left:
            self._deleted.add(name)
            ref = namespace_ref(name)
            try:
                writes.delete_created(ref)
            except UnfinalizeError as exc:
                message = f"created again to free what was in it; cannot delete it again: {exc}"
                self._run.book.add(ref, Action.FAILED, message=message)
                continue
            deleted.append((name, uid))
        return deleted

    def sweep(
        self, spaces: list[str], cluster: Cluster, deadline: Deadline, one_pass: Callable[[list[str]], bool]
    ) -> None:
        """The namespaces this run created again and deleted again (`spaces`), swept as `ns
        NAME --delete` sweeps one (what else was left in them holds them too) by the
        engine's `one_pass`, until they are gone, for at most GONE_WAIT within the deadline."""
        until = time.monotonic() + GONE_WAIT
        while spaces and not deadline.expired() and time.monotonic() < until:
            if not one_pass(spaces):
                return
            spaces = [name for name in spaces if not gone(cluster, name, self._created[name])]
            if spaces:
                time.sleep(min(POLL, deadline.remaining()))

    def report(self, cluster_for: Callable[[], Cluster]) -> None:
        """What became of each namespace this run created, as read now (through
        `cluster_for()`, made only when there is one)."""
        if not self._created:
            return
        cluster = cluster_for()
        for name, uid in self._created.items():
            ref = namespace_ref(name)
            if gone(cluster, name, uid):
                message = "created again to free what was left in it; deleted again, gone"
                self._run.book.add(ref, Action.DELETED, message=message)
                continue
            why = (
                "created again to free what was left in it, deleted again, not gone yet"
                f" (kubectl unfinalize ns {name} --delete)"
            )
            namespace_reads.blocking(cluster, self._run.book, name, None, False, why)


def gone(cluster: Cluster, name: str, uid: str) -> bool:
    """Whether the namespace this run created (`uid`) is gone: not there, or another of its
    name made since. False when it cannot be read now."""
    try:
        meta = cluster.get_meta(namespace_ref(name))
    except UnfinalizeError:
        return False
    return meta is None or meta.uid != uid
