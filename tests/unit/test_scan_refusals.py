"""`blocked`, on plain data: which conditions and Warning Events say that a controller
cannot finish a deletion, from when, and for how long they must have said it."""

from __future__ import annotations

import pytest

from kubectl_unfinalize.scanning import refusals
from kubectl_unfinalize.scanning.evidence import GRACE
from kubectl_unfinalize.scanning.tally import rfc3339

NOW = 1_800_000_000.0
DELETED = 600  # seconds before NOW
TERMINATING = (
    "cannot create ProviderConfigUsage: providerconfigusages.aws.m.upbound.io is forbidden: "
    "unable to create new content in namespace team-a because it is being terminated"
)
RBAC = (
    'widgets.example.com "w1" is forbidden: User "system:serviceaccount:ops:widget-operator" '
    'cannot patch resource "widgets" in API group "example.com" in the namespace "team-a"'
)
INVALID = 'Widget.example.com "w1" is invalid: spec.size: Invalid value: -1: must be at least 0'


def obj(*conditions, deleted=DELETED, uid="u-1"):
    meta = {"name": "w1", "namespace": "team-a", "uid": uid}
    if deleted is not None:
        meta["deletionTimestamp"] = rfc3339(NOW - deleted)
    return {"metadata": meta, "status": {"conditions": list(conditions)}}


def condition(message, changed=300, kind="Synced", status="False", reason="ReconcileError"):
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(NOW - changed),
    }


def core_event(message, first, last, reason="CannotCreate", uid="u-1", kind="Widget"):
    """A core/v1 Event, `first` and `last` seconds before NOW."""
    return {
        "type": "Warning",
        "reason": reason,
        "message": message,
        "involvedObject": {"kind": kind, "namespace": "team-a", "name": "w1", "uid": uid},
        "firstTimestamp": rfc3339(NOW - first),
        "lastTimestamp": rfc3339(NOW - last),
        "count": 12,
    }


def series_event(note, first, last):
    """An events.k8s.io/v1 Event: eventTime (micro time), series, regarding, note."""
    return {
        "type": "Warning",
        "reason": "CannotCreate",
        "note": note,
        "regarding": {"kind": "Widget", "namespace": "team-a", "name": "w1", "uid": "u-1"},
        "eventTime": rfc3339(NOW - first).replace("Z", ".123456Z"),
        "series": {"count": 40, "lastObservedTime": rfc3339(NOW - last).replace("Z", ".654321Z")},
    }


def test_a_condition_that_the_namespace_is_terminating_names_the_cause_and_what_was_refused():
    found = refusals.of_object(obj(condition(TERMINATING)), [], NOW, GRACE)
    assert found is not None
    assert found.cause == "the namespace is being deleted"
    assert found.action == "ProviderConfigUsage create refused"
    assert found.source == "condition Synced=False (ReconcileError)"
    assert found.seconds == 300 and found.message == TERMINATING


@pytest.mark.parametrize(
    ("message", "cause", "action"),
    [
        (RBAC, "forbidden by RBAC", "widgets patch refused"),
        ("admission webhook denied the request: 403 Forbidden", "forbidden", "refused"),
        (INVALID, "refused as invalid", "Widget.example.com refused"),
        ("failed to update object: Unprocessable Entity", "refused as invalid", "object update refused"),
        (
            'providerconfigusages "x" is forbidden: unable to create new content in namespace a because it is being'
            " terminated",
            "the namespace is being deleted",
            "providerconfigusages create refused",
        ),
    ],
)
def test_each_answer_a_retry_cannot_change_is_a_refusal(message, cause, action):
    found = refusals.of_object(obj(condition(message)), [], NOW, GRACE)
    assert found is not None and (found.cause, found.action) == (cause, action)


def test_answers_that_pass_are_no_refusal():
    for message in ("context deadline exceeded", "the object has been modified; please apply your changes", ""):
        assert refusals.of_object(obj(condition(message)), [], NOW, GRACE) is None
    healthy = condition("forbidden answers were retried and succeeded", kind="Ready", status="True")
    assert refusals.of_object(obj(healthy), [], NOW, GRACE) is None


def test_a_condition_older_than_the_deletion_is_ignored():
    assert refusals.of_object(obj(condition(TERMINATING, changed=DELETED + 60)), [], NOW, GRACE) is None


def test_a_condition_said_for_less_than_the_grace_is_not_yet_a_refusal():
    assert refusals.of_object(obj(condition(TERMINATING, changed=GRACE - 5)), [], NOW, GRACE) is None
    assert refusals.of_object(obj(condition(TERMINATING, changed=GRACE + 5)), [], NOW, GRACE) is not None


def test_an_object_not_being_deleted_is_never_blocked():
    assert refusals.of_object(obj(condition(TERMINATING), deleted=None), [], NOW, GRACE) is None


def test_a_warning_event_repeated_after_the_deletion_for_longer_than_the_grace_is_a_refusal():
    found = refusals.of_object(obj(), [core_event(RBAC, first=500, last=2)], NOW, GRACE)
    assert found is not None and found.cause == "forbidden by RBAC"
    assert found.source == "Warning Event CannotCreate" and found.seconds == 498


def test_an_events_k8s_io_event_counts_by_its_series():
    found = refusals.of_object(obj(), [series_event(TERMINATING, first=400, last=1)], NOW, GRACE)
    assert found is not None and found.action == "ProviderConfigUsage create refused"
    assert 398 < found.seconds < 400


def test_events_count_only_from_the_deletion_on():
    assert refusals.of_object(obj(), [core_event(RBAC, first=3600, last=DELETED + 10)], NOW, GRACE) is None
    began_before = refusals.of_object(obj(), [core_event(RBAC, first=3600, last=5)], NOW, GRACE)
    assert began_before is not None and began_before.seconds == DELETED - 5


def test_an_event_repeated_for_less_than_the_grace_is_not_yet_a_refusal():
    assert refusals.of_object(obj(), [core_event(RBAC, first=20, last=1)], NOW, GRACE) is None
    assert refusals.of_object(obj(), [core_event(RBAC, first=5, last=5)], NOW, GRACE) is None


def test_an_event_about_another_object_of_the_name_or_long_past_is_ignored():
    assert refusals.of_object(obj(), [core_event(RBAC, first=500, last=2, uid="u-old")], NOW, GRACE) is None
    deleted_long_ago = obj(deleted=4 * 3600)
    stale = core_event(RBAC, first=4 * 3600 - 10, last=refusals.RECENT + 60)
    assert refusals.of_object(deleted_long_ago, [stale], NOW, GRACE) is None
    normal = dict(core_event(RBAC, first=500, last=2), type="Normal")
    assert refusals.of_object(obj(), [normal], NOW, GRACE) is None


def test_the_longest_refusal_is_the_one_named():
    found = refusals.of_object(
        obj(condition(INVALID, changed=100)), [core_event(TERMINATING, first=550, last=3)], NOW, GRACE
    )
    assert found is not None and found.cause == "the namespace is being deleted"


def test_events_of_either_api_name_their_object():
    assert refusals.about(core_event("x", 1, 1)) == ("team-a", "Widget", "w1", "u-1")
    assert refusals.about(series_event("x", 1, 1)) == ("team-a", "Widget", "w1", "u-1")


def test_a_quote_is_one_short_line():
    assert refusals.quote("short") == "short"
    quoted = refusals.quote(TERMINATING)
    assert len(quoted) <= refusals.QUOTE and quoted.endswith("…")
