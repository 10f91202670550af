"""The engine's loop against in-memory Cluster verbs: order, containment, the deadline,
waiting by uid, diagnosis, the final check, dry runs, and the bulk sender's part (the
fake's own sender: patches answered, refused, or handed back as sent). The integration
tests cover the real API server; these pin the decisions."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from fakecluster import WIDGET_CRD, FakeCluster, run_engine

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.engine import Engine, final_check
from kubectl_unfinalize.errors import Forbidden, Invalid, NotFound, Unreachable
from kubectl_unfinalize.model import CRD, CRD_RESOURCE, Action, ObjectRef, Resource, Targets
from kubectl_unfinalize.options import Options

GADGETS = Resource("example.com", "v1", "gadgets", "Gadget", True)
GADGET_CRD = CRD("gadgets.example.com", GADGETS)


def actions(report):
    return sorted((o.name, o.action.value) for o in report.outcomes)


def test_every_object_is_patched_once_across_pages(bulk):
    cluster = FakeCluster(bulk=bulk)
    for name in "abc":
        cluster.add(name, ["x"])
    cluster.add("free", [])
    report = run_engine(cluster, chunk_size=2)
    assert sorted(n for verb, n in cluster.calls if verb == "patch") == ["a", "b", "c"]
    assert report.scanned == 4 and report.count(Action.UNFINALIZED) == 3 and report.ok
    assert all(not s.finalizers for s in cluster.objects.values())


def test_expired_continue_token_in_the_engine_is_a_list_failure_not_a_crash(bulk):
    """The cluster layer continues or restarts an expired list (test_cluster.py); if it
    still fails, the CRD's outcome says so and the run returns a report."""
    cluster = FakeCluster(bulk=bulk)
    cluster.add("a", ["x"])
    cluster.add("b", ["x"])
    cluster.expire_continue_once = True
    report = run_engine(cluster, chunk_size=1)
    assert [o.message for o in report.failed] == ["cannot list widgets.example.com: continue token too old"]
    assert report.count(Action.UNFINALIZED) == 1


def test_named_finalizer_uses_a_precondition_and_rereads_on_conflict():
    cluster = FakeCluster()
    cluster.add("a", ["keep", "drop"])

    def other_writer(verb, ref):
        stored = cluster.stored("a")
        if verb == "patch" and "new" not in stored.finalizers:
            stored.finalizers.insert(1, "new")
            stored.rv += 1

    cluster.hooks.append(other_writer)
    report = run_engine(cluster, finalizers=("drop",))
    assert cluster.stored("a").finalizers == ["keep", "new"]
    assert [c for c in cluster.calls if c[0] in ("patch", "get")] == [("patch", "a"), ("get", "a"), ("patch", "a")]
    assert report.outcomes[0].finalizers == ["drop"] and report.ok


def test_a_denied_patch_is_that_objects_outcome_and_the_rest_is_freed(bulk):
    cluster = FakeCluster(bulk=bulk)
    cluster.add("a", ["x"])
    cluster.add("b", ["x"])

    def webhook(verb, ref):
        if verb == "patch" and ref.name == "a":
            raise Invalid(400, "BadRequest", 'admission webhook "deny.example.com" denied the request')

    cluster.hooks.append(webhook)
    report = run_engine(cluster)
    assert not report.ok
    assert [(o.name, o.message.split(":")[0]) for o in report.failed] == [("a", "rejected by an admission webhook")]
    assert cluster.stored("b") is not None and cluster.stored("b").finalizers == []


def test_a_worker_error_becomes_an_outcome_and_the_report_survives(bulk):
    cluster = FakeCluster(bulk=bulk)
    for name in "abcd":
        cluster.add(name, ["x"])

    def flaky(verb, ref):
        if verb == "patch" and ref.name == "b":
            raise Unreachable("cannot reach the API server at https://x: connection refused")
        if verb == "patch" and ref.name == "c":
            raise RuntimeError("a bug")

    cluster.hooks.append(flaky)
    report = run_engine(cluster)
    assert actions(report) == [("a", "unfinalized"), ("b", "failed"), ("c", "failed"), ("d", "unfinalized")]
    assert "unexpected RuntimeError: a bug" in {o.message for o in report.failed}


def test_delete_order_each_instance_is_deleted_before_its_finalizers_go_and_the_crd_last():
    cluster = FakeCluster()
    cluster.add_crd()
    for name in "ab":
        cluster.add(name, ["x"])
    report = run_engine(cluster, delete=True)
    assert report.ok, report.failed
    writes = [c for c in cluster.calls if c[0] in ("delete", "patch")]
    for name in "ab":
        assert writes.index(("delete", name)) < writes.index(("patch", name))
    assert writes[-1] == ("delete", WIDGET_CRD.name)
    assert cluster.objects == {}
    assert actions(report) == [("a", "unfinalized"), ("b", "unfinalized"), (WIDGET_CRD.name, "deleted")]


def test_a_deleted_crd_is_watched_from_its_delete_and_its_deleted_event_is_the_read(bulk):
    """The watch starts at the DELETE's resourceVersion, so it sees a deletion that came
    before it: a read of the CRD before the watch costs a round trip and tells nothing
    the watch does not; and its DELETED event, with the uid the run deleted, is the
    server's word that the CRD is gone: no read after it either."""
    cluster = FakeCluster(bulk=bulk)
    cluster.add_crd()
    cluster.add("a", ["x"])
    cluster.cleanup_paused = cluster.watches_deletions = True
    report = run_engine(cluster, delete=True)
    assert report.ok, report.failed
    after = cluster.calls[cluster.calls.index(("delete", WIDGET_CRD.name)) + 1 :]
    assert after == [("watch_deleted", WIDGET_CRD.name)]
    assert cluster.stored(WIDGET_CRD.name, CRD_RESOURCE) is None
    assert actions(report) == [("a", "unfinalized"), (WIDGET_CRD.name, "deleted")]


def test_the_watch_for_deleted_crds_starts_at_the_earliest_delete_so_none_that_went_before_it_is_missed():
    """Another CRD may go between the first DELETE and the last: a watch from the last
    one's answer would wait its whole time for a deletion already in the past."""
    cluster = two_crds()
    cluster.stored(GADGET_CRD.name, CRD_RESOURCE).rv = 10  # the DELETE answers tell the two apart
    cluster.cleanup_paused = cluster.watches_deletions = True
    watched = []
    real = cluster.all_deleted
    cluster.all_deleted = lambda resource, names, since, seconds: (
        watched.append(since) or real(resource, names, since, seconds)
    )
    report = run_engine(cluster, Targets(crds=[WIDGET_CRD, GADGET_CRD]), delete=True)
    assert report.ok, report.failed
    first = next(name for verb, name in cluster.calls if verb == "delete" and name.endswith(".example.com"))
    assert watched == [{WIDGET_CRD.name: "2", GADGET_CRD.name: "11"}[first]]


def two_crds(bulk=False):
    """Widgets and gadgets, one object each, every one with a finalizer."""
    cluster = FakeCluster(bulk=bulk)
    cluster.add_crd()
    cluster.add_crd(GADGET_CRD)
    cluster.add("w", ["x"])
    cluster.add("g", ["x"], resource=GADGETS)
    return cluster


def test_a_crd_whose_instances_cannot_be_freed_is_not_deleted_and_others_are(bulk):
    """Never leave a CRD Terminating over objects the run could not free."""
    cluster = two_crds(bulk)

    def deny(verb, ref):
        if verb == "patch" and ref.name == "w":
            raise Forbidden(403, "Forbidden", "denied by a ValidatingAdmissionPolicy")

    cluster.hooks.append(deny)
    report = run_engine(cluster, Targets(crds=[WIDGET_CRD, GADGET_CRD]), delete=True, timeout=0.3)
    assert report.timed_out and not report.ok
    assert cluster.stored(WIDGET_CRD.name, CRD_RESOURCE) is not None
    assert cluster.stored(WIDGET_CRD.name, CRD_RESOURCE).terminating is False
    assert cluster.stored(GADGET_CRD.name, CRD_RESOURCE) is None
    blocking = [o.message for o in report.failed if o.action == Action.BLOCKING]
    assert blocking == ["timed out: not deleted, because 1 of its objects could not be freed"]


def test_a_denied_crd_delete_is_reported_and_the_other_crd_still_goes():
    cluster = two_crds()

    def deny(verb, ref):
        if verb == "delete" and ref.name == WIDGET_CRD.name:
            raise Forbidden(403, "Forbidden", "deleting this CRD is not allowed by policy")

    cluster.hooks.append(deny)
    started = time.monotonic()
    report = run_engine(cluster, Targets(crds=[WIDGET_CRD, GADGET_CRD]), delete=True, timeout=30)
    assert time.monotonic() - started < 2, "a refused delete is final: no waiting for the timeout"
    assert cluster.stored(GADGET_CRD.name, CRD_RESOURCE) is None
    assert cluster.stored("w") is None and cluster.stored("g") is None  # every instance was freed
    failed = {o.name: o.message for o in report.failed if o.action == Action.FAILED}
    assert "not allowed by policy" in failed[WIDGET_CRD.name]
    assert not report.ok


def test_timeout_bounds_a_pass_and_says_what_blocks():
    cluster = FakeCluster()
    for i in range(50):
        cluster.add(f"o{i}", ["x"])
    report = run_engine(cluster, timeout=1e-9)
    assert report.timed_out and not report.ok
    assert not [c for c in cluster.calls if c[0] == "patch"]
    blocking = [o for o in report.failed if o.action == Action.BLOCKING]
    assert blocking and blocking[0].message.startswith("timed out: 50 widgets.example.com remain: ns/o0 ['x']")
    assert "and 45 more" in blocking[0].message


def test_wait_compares_uids_a_recreated_object_is_reported_not_waited_on():
    cluster = FakeCluster()
    ref = cluster.add("cm", ["x"], resource=GADGETS)

    def recreate(verb, r):
        if verb == "get" and r == ref and cluster.objects.get(ref) is None:
            cluster.add("cm", [], resource=GADGETS)  # GitOps puts it back

    cluster.hooks.append(recreate)
    started = time.monotonic()
    report = run_engine(cluster, Targets(objects=[ref]), delete=True, timeout=5)
    assert time.monotonic() - started < 2
    assert report.ok and not report.timed_out
    assert (ref.name, "recreated") in actions(report)


def test_final_check_waits_only_when_a_freed_object_could_take_finalizers_back(bulk):
    cluster = FakeCluster(bulk=bulk)
    cluster.add("live", ["x"])
    cluster.add("dying", ["x"])
    cluster.stored("dying").terminating = True

    def controller(verb, ref):
        if verb == "list" and cluster.stored("live") is not None:
            cluster.stored("live").finalizers = ["x"]  # re-added between our passes

    report = run_engine(cluster, settle=0.05)
    assert report.ok  # nothing came back yet
    cluster.add("live2", ["x"])
    cluster.hooks.append(controller)
    report = run_engine(cluster, settle=0.05)
    assert ("live", "refinalized") in actions(report)
    assert report.count(Action.UNFINALIZED) == 2 and report.failures == 1  # counts agree with the lines
    quiet = FakeCluster(bulk=bulk)
    quiet.add("dying", ["x"])
    quiet.stored("dying").terminating = True
    started = time.monotonic()
    report = run_engine(quiet, settle=5)
    assert time.monotonic() - started < 1, "only terminating objects were freed: they are gone, no wait"
    assert [c for c in quiet.calls if c[0] == "list"] == [("list", "widgets")]


def test_client_dry_run_sends_no_write_and_reports_what_would_change():
    cluster = FakeCluster()
    cluster.add_crd()
    cluster.add("a", ["x"])
    report = run_engine(cluster, delete=True, dry_run="client")
    assert not [c for c in cluster.calls if c[0] in ("patch", "delete")]
    assert actions(report) == [("a", "unfinalized"), (WIDGET_CRD.name, "deleted")]
    assert all(o.dry_run.value == "client" for o in report.outcomes)
    assert cluster.stored("a").finalizers == ["x"]


def test_a_patch_404_after_a_dropped_connection_is_our_own_success():
    cluster = FakeCluster()
    cluster.add("a", ["x"])

    def applied_then_dropped(verb, ref):
        if verb == "patch":
            del cluster.objects[ref]
            raise NotFound(404, "NotFound", "not found", ambiguous=True)

    cluster.hooks.append(applied_then_dropped)
    report = run_engine(cluster)
    assert actions(report) == [("a", "unfinalized")] and report.ok


def test_the_listener_may_take_its_time_and_runs_outside_the_engine_lock():
    cluster = FakeCluster()
    for i in range(20):
        cluster.add(f"o{i}", ["x"])
    seen = []
    threads = set()

    def slow_listener(outcome):
        threads.add(threading.current_thread().name)
        time.sleep(0.01)
        seen.append(outcome)

    report = run_engine(cluster, outcomes=slow_listener, concurrency=8)
    assert len(seen) == 20 == report.count(Action.UNFINALIZED)
    assert len(threads) > 1, "listeners ran concurrently from the workers, so none held a lock"


def test_permission_denied_before_any_write():
    cluster = FakeCluster()
    cluster.add("a", ["x"])
    cluster.denied.add(("patch", "widgets"))
    with pytest.raises(Exception, match=r"forbidden: user 'tester' cannot patch widgets.example.com in all namespaces"):
        run_engine(cluster)
    assert not [c for c in cluster.calls if c[0] == "patch"]


def test_preflight_asks_once_per_verb_resource_namespace():
    cluster = FakeCluster()
    refs = [cluster.add(f"o{i}", ["x"], resource=GADGETS) for i in range(30)]
    run_engine(cluster, Targets(objects=refs), delete=True)
    reviews = [c for c in cluster.calls if c[0] == "review"]
    assert sorted(r[1] for r in reviews) == ["delete gadgets", "get gadgets", "patch gadgets"]


def test_interrupt_returns_what_was_done():
    cluster = FakeCluster()
    for i in range(10):
        cluster.add(f"o{i}", ["x"])

    def ctrl_c(verb, ref):
        if verb == "list":
            raise KeyboardInterrupt

    cluster.hooks.append(ctrl_c)
    report = run_engine(cluster)
    assert report.interrupted and not report.ok


def test_missing_manifest_object_is_skipped_not_failed():
    cluster = FakeCluster()
    report = run_engine(cluster, Targets(objects=[ObjectRef(GADGETS, "nope", "ns")]))
    assert actions(report) == [("nope", "gone")] and report.ok


def test_an_interrupt_ends_the_run_like_its_deadline_and_reports_it(bulk):
    import threading

    cluster = FakeCluster(bulk=bulk)
    for i in range(50):
        cluster.add(f"o{i}", ["x"])
    stop = threading.Event()
    cluster.hooks.append(lambda verb, ref: stop.set() if verb == "patch" and ref.name == "o3" else None)
    opts = Options(settle=0, concurrency=2)
    report = Engine(cluster, opts, Deadline(60, stop)).run(Targets(crds=[WIDGET_CRD]))
    assert report.interrupted and not report.timed_out and not report.ok
    assert 0 < report.count(Action.UNFINALIZED) < 50
    assert not [o for o in report.outcomes if o.action == Action.BLOCKING]  # no diagnosis after Ctrl-C


def test_the_final_wait_counts_from_the_first_freed_object(bulk, monkeypatch):
    """A long run gave its first objects `settle` already: re-read at once, and a live
    controller still shows on them. (What the final check sleeps is recorded, not timed:
    the whole run's wall clock failed on a loaded machine.)"""
    slept: list[float] = []
    monkeypatch.setattr(final_check, "time", SimpleNamespace(monotonic=time.monotonic, sleep=slept.append))
    cluster = FakeCluster(bulk=bulk)
    for i in range(20):
        cluster.add(f"o{i:02}", ["x"])

    def slow_writer_and_a_controller(verb, ref):
        if verb == "patch":
            time.sleep(0.02)
        if verb == "list" and cluster.stored("o00") is not None and not cluster.stored("o00").finalizers:
            cluster.stored("o00").finalizers = ["x"]  # put back between the pass and the re-read

    cluster.hooks.append(slow_writer_and_a_controller)
    report = run_engine(cluster, concurrency=1, settle=0.3)
    assert slept and all(seconds == 0.0 for seconds in slept), f"the run lasted past settle, yet slept {slept}"
    assert ("o00", "refinalized") in actions(report)


def test_a_run_shorter_than_settle_waits_for_the_rest_of_it(bulk, monkeypatch):
    """The other side of the one above: without it, a check that never sleeps passes."""
    slept: list[float] = []
    monkeypatch.setattr(final_check, "time", SimpleNamespace(monotonic=time.monotonic, sleep=slept.append))
    cluster = FakeCluster(bulk=bulk)
    cluster.add("o00", ["x"])
    run_engine(cluster, concurrency=1, settle=30)
    assert slept and 25 < max(slept) <= 30, slept


def test_final_check_reads_again_only_the_namespaces_where_it_freed_live_objects(bulk):
    """Far away each list page is a round trip; per namespace, the lists run side by side."""
    cluster = FakeCluster(bulk=bulk)
    for i in range(6):
        cluster.add(f"w{i}", ["x"], namespace=f"ns{i % 3}")
    cluster.add("untouched", [], namespace="quiet")
    listed = []

    def controller(verb, ref):
        if verb == "list":
            listed.append(ref.namespace)
            if ref.namespace == "ns2" and cluster.stored("w5") is not None and len(listed) > 1:
                cluster.stored("w5").finalizers = ["x"]  # re-added between our passes

    cluster.hooks.append(controller)
    report = run_engine(cluster, settle=0.01)
    assert listed[0] is None and sorted(listed[1:]) == ["ns0", "ns1", "ns2"]
    assert ("w5", "refinalized") in actions(report) and report.failures == 1


@pytest.mark.parametrize("list_bytes, most", [(40 << 10, 20), (1 << 30, 16)])
def test_final_check_lists_every_namespace_at_once_when_the_run_read_little(list_bytes, most):
    """Sixteen at a time cost a far cluster a second round trip at 17 namespaces; all at
    once holds no more than the run's own list read (a few MB): only a big list is
    read again sixteen namespaces at a time."""
    cluster = FakeCluster()
    for i in range(40):
        cluster.add(f"w{i}", ["x"], namespace=f"ns{i % 20:02d}")
    cluster.list_bytes = list_bytes
    lock, running, peak = threading.Lock(), [0], [0]

    def slow_namespace_list(verb, ref):
        if verb != "list" or ref.namespace is None:
            return
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1

    cluster.hooks.append(slow_namespace_list)
    cluster.expired = True  # a big list's watch history is gone: it is listed again
    report = run_engine(cluster, settle=0.01, concurrency=64)
    assert report.counts[Action.UNFINALIZED] == 40
    assert peak[0] == most


def test_the_first_list_page_is_read_while_the_preflight_is_answered_and_nothing_reported_before(bulk):
    """A far cluster would otherwise spend a round trip on each, one after the other."""
    cluster = FakeCluster(bulk=bulk)
    cluster.add("a", ["x"])
    listing, reviews_done = threading.Event(), threading.Event()
    slow_allowed = cluster.allowed

    def allowed(*args):
        assert listing.wait(5), "the list did not start while the review was under way"
        reviews_done.set()
        return slow_allowed(*args)

    cluster.allowed = allowed
    cluster.hooks.append(lambda verb, ref: listing.set() if verb == "list" else None)
    assert actions(run_engine(cluster)) == [("a", "unfinalized")]
    assert reviews_done.is_set()

    denied = FakeCluster(bulk=bulk)
    denied.add("a", ["x"])
    denied.denied.add(("list", "widgets"))

    def refuse_lists(verb, ref):
        if verb == "list":
            raise Forbidden(403, "Forbidden", "no")

    denied.hooks.append(refuse_lists)
    seen = []
    with pytest.raises(Exception, match="forbidden: user 'tester' cannot list"):
        run_engine(denied, outcomes=seen.append)
    assert seen == [], "a refused list is the preflight's one line, not an outcome as well"


# ----------------------------------------------------------------------------- the bulk path


def stuck_widgets(count: int, terminating: bool = False, crd: bool = False) -> tuple[FakeCluster, list[str]]:
    """A cluster offering the bulk path, with `count` widgets holding a finalizer in three namespaces."""
    cluster = FakeCluster(bulk=True)
    if crd:
        cluster.add_crd()
    names = [f"w{i:03}" for i in range(count)]
    for i, name in enumerate(names):
        cluster.add(name, ["x"], namespace=f"ns{i % 3}")
        cluster.stored(name).terminating = terminating
    return cluster, names


def patched(cluster: FakeCluster) -> list[str]:
    """The names of the PATCHes that reached the fake API server, sorted."""
    return sorted(name for verb, name in cluster.calls if verb == "patch")


@pytest.mark.parametrize("terminating", [False, True], ids=["live", "terminating"])
@pytest.mark.parametrize("delete", [False, True], ids=["free", "delete"])
def test_the_bulk_path_frees_each_object_with_one_patch_and_reports_it_once(delete, terminating):
    cluster, names = stuck_widgets(200, terminating, crd=delete)
    seen, progress = [], []
    report = run_engine(cluster, outcomes=seen.append, progress=progress.append, chunk_size=64, delete=delete)
    assert report.ok, report.failed
    assert sorted(o.name for o in seen if o.action == Action.UNFINALIZED) == names  # each exactly once
    assert [o for o in seen if o.action not in (Action.UNFINALIZED, Action.DELETED)] == []
    assert report.count(Action.UNFINALIZED) == 200 and report.count(Action.GONE) == 0 and report.scanned == 200
    assert patched(cluster) == names  # one PATCH per object
    assert sorted(cluster.sender.sent) == names  # each from the bulk sender, --delete's DELETE first too
    deletes = [name for verb, name in cluster.calls if verb == "delete" and name in names]
    assert sorted(deletes) == (names if delete and not terminating else [])  # one DELETE per live object
    for name in deletes:
        assert cluster.calls.index(("delete", name)) < cluster.calls.index(("patch", name))
    if delete or terminating:
        assert [r.name for r in cluster.objects] == []
    else:
        assert all(not s.finalizers for s in cluster.objects.values())
    assert progress and all(p.done <= p.total for p in progress), [p for p in progress if p.done > p.total][:3]
    assert progress[-1].total == 200


def test_a_delete_that_leaves_a_finalizer_the_run_keeps_is_freed_by_a_worker_not_the_bulk_patch():
    """Another client deleted it in the foreground between the list and the run's DELETE:
    the DELETE's answer shows foregroundDeletion, which the garbage collector owns. The
    bulk patch would remove it; the worker's conditional write keeps it."""
    cluster, names = stuck_widgets(6, crd=True)

    def foreground(verb, ref):
        if verb == "delete" and ref.name == "w003":
            cluster.stored("w003").finalizers.append("foregroundDeletion")

    cluster.hooks.append(foreground)
    seen = []
    run_engine(cluster, outcomes=seen.append, chunk_size=64, delete=True, timeout=1)  # w003 stays: held
    assert cluster.stored("w003").finalizers == ["foregroundDeletion"]
    assert [o.finalizers for o in seen if o.name == "w003" and o.action == Action.UNFINALIZED] == [["x"]]
    assert patched(cluster) == names, "one patch each, w003's the worker's"
    assert sorted(cluster.sender.sent) == [n for n in names if n != "w003"]


def test_patches_the_bulk_sender_hands_back_are_sent_again_and_reported_once():
    """Refused (5xx, 429) or without an answer (the connection dropped before or after
    the server applied it): the workers send it again; one outcome each, all freed."""
    cluster, names = stuck_widgets(10)
    cluster.answers = {"w001": ["refused"], "w002": ["429"], "w003": ["lost"], "w004": ["applied"]}
    seen, progress = [], []
    report = run_engine(cluster, outcomes=seen.append, progress=progress.append, chunk_size=4)
    assert sorted((o.name, o.action, o.message) for o in seen) == [(n, Action.UNFINALIZED, "") for n in names]
    assert report.ok and report.count(Action.UNFINALIZED) == 10 and report.failures == 0
    assert all(not s.finalizers for s in cluster.objects.values())
    again = ["w001", "w002", "w004"]  # reached the server twice; w003's first one never did
    assert patched(cluster) == sorted(names + again)
    assert sorted(cluster.sender.sent) == names and cluster.pushbacks == 1
    assert all(p.done <= p.total for p in progress) and progress[-1].total == 10


@pytest.mark.parametrize("delete", [False, True], ids=["free", "delete"])
def test_a_terminating_object_gone_after_its_sent_patch_is_unfinalized_not_already_gone(delete):
    """The server applied the patch, the object went (it was terminating), and the answer
    was lost: the re-send meets a 404 that is this run's own success."""
    cluster, names = stuck_widgets(3, terminating=True, crd=delete)
    cluster.answers = {"w001": ["applied"]}
    seen = []
    report = run_engine(cluster, outcomes=seen.append, delete=delete)
    assert cluster.stored("w001") is None
    assert [(o.action, o.message) for o in seen if o.name == "w001"] == [
        (Action.UNFINALIZED, "gone right after the patch")
    ]
    assert report.ok and report.count(Action.UNFINALIZED) == 3 and report.count(Action.GONE) == 0


def test_a_terminating_object_gone_before_its_bulk_patch_is_already_gone():
    """A 404 to a patch the server answered is not ours: another writer freed it first."""
    cluster, names = stuck_widgets(3, terminating=True)

    def other_writer(verb, ref):
        if verb == "patch" and ref.name == "w001":
            cluster.objects.pop(ref, None)

    cluster.hooks.append(other_writer)
    seen = []
    report = run_engine(cluster, outcomes=seen.append)
    assert sorted((o.name, o.action, o.message) for o in seen) == [
        ("w000", Action.UNFINALIZED, ""),
        ("w001", Action.GONE, "already gone"),
        ("w002", Action.UNFINALIZED, ""),
    ]
    assert report.ok and report.count(Action.UNFINALIZED) == 2 and report.count(Action.GONE) == 1


@pytest.mark.parametrize("delete", [False, True], ids=["free", "delete"])
def test_credentials_rejected_for_good_stop_the_run_at_once_and_the_report_keeps_what_was_done(bulk, delete):
    """As the transport does on a lasting 401 (test_transport.py): the run's deadline ends
    with it and no request is sent after. The run stops as at its deadline, without listing
    again until it, without a diagnosis (nothing more can be asked), and without a failure
    per object: the run's error says it, and its exit status (2) is the run's."""
    from kubectl_unfinalize.errors import Unauthorized

    cluster = FakeCluster(bulk=bulk)
    for i in range(40):
        cluster.add(f"o{i}", ["x"])
    deadline = Deadline(300)
    rejected = Unauthorized(401, "Unauthorized", "Unauthorized", "PATCH", "/o5")
    rejected.credential = 'of kubeconfig user "u" (exec plugin get-token, obtained again after a 401 and refused too)'

    def revoked(verb, ref):
        if deadline.cause is not None:
            raise Unauthorized(401, "Unauthorized", "Unauthorized")  # the transport sends nothing more
        if verb == "patch" and ref.name == "o5":
            deadline.end(rejected)
            raise rejected

    cluster.hooks.append(revoked)
    opts = Options(settle=0, poll=0.01, concurrency=2, delete=delete)
    report = Engine(cluster, opts, deadline).run(Targets(crds=[WIDGET_CRD]))
    assert report.stopped_by is rejected and report.error == str(rejected) and "\n" not in report.error
    assert not report.timed_out and not report.interrupted and not report.ok
    assert not report.failed  # nothing blamed on an object, nothing diagnosed
    assert 0 < report.count(Action.UNFINALIZED) < 40  # what was done before is reported
    assert len([c for c in cluster.calls if c[0] == "list"]) == 1
    with pytest.raises(Unauthorized):
        report.raise_for_failure()


def test_progress_is_counted_only_for_a_listener(monkeypatch, bulk):
    """The counts were built after every object whether or not anyone showed them: a
    tenth of the submitting thread's CPU on a -q run."""
    from kubectl_unfinalize.engine import loop

    def no_progress(*args, **kwargs):
        raise AssertionError("Progress built with no listener")

    cluster = FakeCluster(bulk=bulk)
    for name in "abc":
        cluster.add(name, ["x"])
    monkeypatch.setattr(loop, "Progress", no_progress)
    report = run_engine(cluster)
    assert report.ok and report.count(Action.UNFINALIZED) == 3
    monkeypatch.undo()
    seen = []
    cluster = FakeCluster(bulk=bulk)
    cluster.add("d", ["x"])
    run_engine(cluster, progress=seen.append)
    assert seen and seen[-1].done == seen[-1].total == 1
