"""Many CRDs as one job, against in-memory verbs: the lists of several CRDs under way at
once, each CRD deleted as soon as its own instances are done (never before), the wait
by one list of CRDs, a deleted CRD's instances listed again only when it stays, and the
preflight's group-wide reviews. test_many_crds.py covers the real API server."""

from __future__ import annotations

import threading
import time

import pytest
from fakecluster import FakeCluster, run_engine

from kubectl_unfinalize.engine import crds as engine_crds
from kubectl_unfinalize.errors import Forbidden, PermissionDenied
from kubectl_unfinalize.model import CRD, CRD_RESOURCE, Action, Resource, Targets


def kinds(count: int, group: str = "many.example.com") -> list[CRD]:
    return [CRD(f"kind{i}s.{group}", Resource(group, "v1", f"kind{i}s", f"Kind{i}", True)) for i in range(count)]


def cluster_with(crds: list[CRD], objects: int, bulk: bool = False) -> FakeCluster:
    """Each CRD with `objects` instances holding a finalizer, in two namespaces."""
    cluster = FakeCluster(bulk=bulk)
    for crd in crds:
        cluster.add_crd(crd)
        for k in range(objects):
            cluster.add(f"{crd.resource.plural}-o{k}", ["x"], namespace=f"ns{k % 2}", resource=crd.resource)
    return cluster


def test_each_crd_is_deleted_after_every_one_of_its_instances_was_deleted_and_freed(bulk):
    crds = kinds(12)
    cluster = cluster_with(crds, 3, bulk)
    report = run_engine(cluster, Targets(crds=crds), delete=True)
    assert report.ok, report.failed
    assert cluster.objects == {}
    calls = list(cluster.calls)
    for crd in crds:
        deletes = [i for i, call in enumerate(calls) if call == ("delete", crd.name)]
        assert len(deletes) == 1, f"{crd.name} deleted {len(deletes)} times"
        for k in range(3):
            name = f"{crd.resource.plural}-o{k}"
            assert calls.index(("delete", name)) < calls.index(("patch", name)) < deletes[0]
    assert report.count(Action.DELETED) == 12


def test_the_lists_of_several_crds_are_under_way_at_once():
    crds = kinds(8)
    cluster = cluster_with(crds, 1)
    both = threading.Barrier(2, timeout=5)
    first_two = [crd.resource.plural for crd in crds[:2]]

    def meet(verb, ref):
        if verb == "list" and ref.name in first_two:
            both.wait()  # breaks (and the run fails) unless another list is under way meanwhile

    cluster.hooks.append(meet)
    report = run_engine(cluster, Targets(crds=crds), delete=True)
    assert report.ok, report.failed
    assert not both.broken


def test_a_crd_without_instances_is_deleted_while_another_crds_instances_are_still_freed():
    empty, busy = kinds(2)
    cluster = cluster_with([busy], 2)
    cluster.add_crd(empty)
    deleted = threading.Event()
    waited = []

    def slow(verb, ref):
        if verb == "patch" and ref.resource == busy.resource and not deleted.wait(2):
            waited.append(ref.name)
        if verb == "delete" and ref.name == empty.name:
            deleted.set()

    cluster.hooks.append(slow)
    report = run_engine(cluster, Targets(crds=[busy, empty]), delete=True)
    assert report.ok, report.failed
    assert not waited, "the empty CRD was deleted only after the other CRD's frees"
    assert cluster.objects == {}


def test_a_crd_whose_instance_could_not_be_freed_is_not_deleted_the_others_are(bulk):
    crds = kinds(5)
    cluster = cluster_with(crds, 2, bulk)
    stuck = crds[2]

    def deny(verb, ref):
        if verb == "patch" and ref.name == f"{stuck.resource.plural}-o1":
            raise Forbidden(403, "Forbidden", "denied by a ValidatingAdmissionPolicy")

    cluster.hooks.append(deny)
    report = run_engine(cluster, Targets(crds=crds), delete=True, timeout=0.5)
    assert not report.ok
    assert ("delete", stuck.name) not in cluster.calls
    assert not cluster.stored(stuck.name, CRD_RESOURCE).terminating
    assert [c for c in crds if cluster.stored(c.name, CRD_RESOURCE) is not None] == [stuck]


def test_the_wait_lists_crds_once_per_poll_and_lists_again_only_the_instances_of_a_crd_that_stays(monkeypatch):
    """An object created after the CRD's list (before its DELETE) holds it: the CRD stays,
    so its instances are listed again, once it is overdue; the others are not re-listed,
    and no CRD is read by a GET while several are waited on."""
    monkeypatch.setattr(engine_crds, "RELIST_AFTER", 0.2)
    crds = kinds(10)
    cluster = cluster_with(crds, 1)
    late = crds[4]

    def created_meanwhile(verb, ref):
        if verb == "delete" and ref.name == late.name and cluster.stored("late", late.resource) is None:
            cluster.add("late", ["x"], resource=late.resource)

    cluster.hooks.append(created_meanwhile)
    started = time.monotonic()
    report = run_engine(cluster, Targets(crds=crds), delete=True, timeout=10)
    assert report.ok, report.failed
    assert time.monotonic() - started < 5
    assert cluster.objects == {}
    # One list of CRDs while several were waited on; a GET once the one left is the CRD that stays.
    assert {name for verb, name in cluster.calls if verb == "get"} <= {late.name}
    lists = [name for verb, name in cluster.calls if verb == "list"]
    assert lists.count("customresourcedefinitions") >= 1
    assert lists.count(late.resource.plural) == 2
    assert all(lists.count(c.resource.plural) == 1 for c in crds if c is not late)


def test_a_crd_recreated_meanwhile_is_reported_by_the_list_of_crds_not_waited_on():
    crds = kinds(3)
    cluster = cluster_with(crds, 0)
    again = crds[1]

    def recreate(verb, ref):  # GitOps puts it back before the wait's list of CRDs
        if verb == "list" and ref.name == "customresourcedefinitions":
            cluster.hooks.remove(recreate)
            assert cluster.stored(again.name, CRD_RESOURCE) is None
            cluster.add_crd(again)

    cluster.hooks.append(recreate)
    started = time.monotonic()
    report = run_engine(cluster, Targets(crds=crds), delete=True, timeout=5)
    assert time.monotonic() - started < 2
    recreated = [o for o in report.outcomes if o.action == Action.RECREATED]
    assert [o.name for o in recreated] == [again.name] and "new uid" in recreated[0].message
    assert not [c for c in cluster.calls if c[0] == "get"]


def test_one_review_of_resource_star_per_verb_stands_for_a_groups_crds():
    crds = kinds(30)
    cluster = cluster_with(crds, 0)
    run_engine(cluster, Targets(crds=crds), delete=True)
    reviews = sorted(name for verb, name in cluster.calls if verb == "review")
    assert reviews == ["delete *", "delete customresourcedefinitions", "list *", "patch *"]


def test_a_refused_review_of_star_falls_back_to_each_crd_and_names_the_missing_one():
    crds = kinds(4)
    cluster = cluster_with(crds, 1)
    cluster.denied.add(("patch", crds[3].resource.plural))
    with pytest.raises(PermissionDenied, match=rf"cannot patch {crds[3].resource.plural}\.many\.example\.com"):
        run_engine(cluster, Targets(crds=crds), delete=True)
    assert not [c for c in cluster.calls if c[0] in ("patch", "delete")]
    reviews = [name for verb, name in cluster.calls if verb == "review"]
    assert reviews.count("patch *") == 1 and all(reviews.count(f"patch {c.resource.plural}") == 1 for c in crds)
    assert "list *" in reviews and not [r for r in reviews if r.startswith("list kind")]


def test_a_deleted_crd_is_listed_again_once_its_cleanup_has_been_under_way_a_while_and_then_no_more():
    crd = kinds(1)[0]
    state = engine_crds.CrdState(crd, uid="u1", deleted_at=100.0, relist_every=engine_crds.RELIST_AFTER)
    assert engine_crds.due(engine_crds.CrdState(crd), 0.0), "a CRD not deleted yet is always listed"
    # The cleanup controller not seen at work: hundreds queue behind its workers; not re-listed.
    assert not engine_crds.due(state, 100.0 + engine_crds.UNSEEN_AFTER - 0.1)
    state.began = 103.0  # its resourceVersion changed: the controller set Terminating
    assert not engine_crds.due(state, 103.0 + engine_crds.RELIST_AFTER - 0.1)
    assert engine_crds.due(state, 103.0 + engine_crds.RELIST_AFTER)
    # Creates are refused since the controller began: that list saw every instance left.
    assert not engine_crds.due(state, 1000.0)
    state.blocked = 1  # ...unless one of them could not be freed: then again, at doubling intervals
    at = 103.0 + engine_crds.RELIST_AFTER
    assert not engine_crds.due(state, at + engine_crds.RELIST_AFTER - 0.1)
    assert engine_crds.due(state, at + engine_crds.RELIST_AFTER)
    at += engine_crds.RELIST_AFTER
    assert not engine_crds.due(state, at + 2 * engine_crds.RELIST_AFTER - 0.1), "the intervals double"
    assert engine_crds.due(state, at + 2 * engine_crds.RELIST_AFTER)
    never_seen = engine_crds.CrdState(crd, uid="u2", deleted_at=100.0, relist_every=engine_crds.RELIST_AFTER)
    assert engine_crds.due(never_seen, 100.0 + engine_crds.UNSEEN_AFTER)
    assert engine_crds.due(never_seen, 100.0 + engine_crds.UNSEEN_AFTER + engine_crds.RELIST_AFTER), "never seen: again"
    queued = engine_crds.CrdState(crd, uid="u3", deleted_at=100.0, relist_every=engine_crds.RELIST_AFTER)
    assert not engine_crds.due(queued, 1000.0, seen=True), "waiting its turn while the controller works on others"


def test_the_progress_counts_the_crds_deleted_and_gone_not_only_the_objects():
    """A provider's hundreds of CRDs take longer than their objects: the progress says so."""
    crds = kinds(6)
    cluster = cluster_with(crds, 2)
    progress = []
    report = run_engine(cluster, Targets(crds=crds), delete=True, progress=progress.append)
    assert report.ok, report.failed
    last = progress[-1]
    assert (last.done, last.total, last.crds, last.deleted, last.gone) == (12, 12, 6, 6, 6), last
    assert all(p.gone <= p.deleted <= p.crds == 6 for p in progress), progress
    assert run_engine(cluster_with(crds, 1), Targets(crds=crds), progress=progress.append).ok
    assert progress[-1].crds == 0  # without --delete no CRD is deleted: the line counts objects only


def test_at_the_deadline_crds_left_in_the_api_server_s_cleanup_are_deleting_not_failed():
    """Hundreds of a provider's CRDs queue in the API server's cleanup: the timeout counts
    each one left as deleting (it goes on its own) and says what it waits on, instead of a
    failure, or a 'cannot tell what blocks: out of time before GET' per CRD from reads the
    diagnosis's grace cannot cover."""
    crds = kinds(5)
    cluster = cluster_with(crds, 1)
    cluster.cleanup_paused = True
    report = run_engine(cluster, Targets(crds=crds), delete=True, timeout=0.5)
    assert report.timed_out and report.failures == 0, report.failed
    assert report.count(Action.DELETING) == 5
    assert report.cleanup_seconds == 5 * engine_crds.CLEANUP_SECONDS
    lines = {o.name: o.message for o in report.outcomes if o.action is Action.DELETING}
    assert sorted(lines) == sorted(c.name for c in crds), lines
    assert all("every instance freed; the API server's cleanup is" in m for m in lines.values()), lines
    assert not [m for m in lines.values() if "cannot tell" in m], lines


def test_a_timeout_too_short_for_a_provider_s_crds_is_said_before_the_run():
    assert engine_crds.too_long(300, 300.0) == ""  # a few hundred fit the default 5 minutes
    warning = engine_crds.too_long(2060, 300.0)
    assert warning.startswith("deleting 2060 CRDs takes the API server about 11m"), warning
    assert "--timeout 300s may end first: --timeout 21m would cover a busy server" in warning


def test_at_the_deadline_a_crd_whose_instances_keep_a_finalizer_is_read_and_that_finalizer_named():
    """--finalizer leaves the instances' other finalizers: they, not the API server's
    cleanup, keep the deleted CRD, and the timeout says so."""
    crds = kinds(1)
    cluster = cluster_with(crds, 1)
    for stored in cluster.objects.values():
        stored.finalizers.append("other.test/keep")
    report = run_engine(cluster, Targets(crds=crds), delete=True, timeout=0.5, finalizers=["x"])
    assert report.timed_out
    lines = [o.message for o in report.outcomes if o.action is Action.BLOCKING]
    assert lines and all("cleanup is" not in m for m in lines), lines
    assert any("other.test/keep" in m for m in lines), lines
