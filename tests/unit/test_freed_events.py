"""scan --free --events: which Events a run's frees make, what each says, and a refusal
that ends the Events, never the run."""

from __future__ import annotations

from kubectl_unfinalize.errors import ApiError
from kubectl_unfinalize.model import Action, Outcome, Report
from kubectl_unfinalize.scanning import freed_events
from kubectl_unfinalize.scanning.model import Group
from kubectl_unfinalize.scanning.report import FreedCall

DEAD = "shop.example.com/cleanup"


def group(resource="configmaps", kind="ConfigMap", namespaces=("a", "b"), namespaced=True) -> Group:
    return Group(
        finalizer=DEAD, resource=resource, kind=kind, api_version="v1", namespaced=namespaced, count=3,
        terminating=True, oldest_seconds=60, oldest_deletion="", namespaces=list(namespaces), sample=[],
        owner="unknown", owner_kind="unknown", verdict="stuck: no controller seen for 1m",
    )  # fmt: skip


def call(*outcomes: Outcome, groups=None) -> FreedCall:
    report = Report(outcomes=list(outcomes))
    return FreedCall("configmaps", [DEAD], groups or [group()], report)


def freed(name: str, namespace: str | None, action=Action.UNFINALIZED) -> Outcome:
    return Outcome("configmap", name, action, namespace, [DEAD])


def test_one_event_per_group_and_namespace_on_an_object_freed_there():
    made = list(freed_events.freed_groups([call(freed("x", "a"), freed("y", "a"), freed("z", "b"))]))
    assert [(f.namespace, f.name, f.count, f.kind) for f in made] == [
        ("a", "x", 2, "ConfigMap"),
        ("b", "z", 1, "ConfigMap"),
    ]
    unfreed = call(freed("x", "a", Action.FAILED), freed("y", "c"))  # failed; a namespace not the group's
    assert list(freed_events.freed_groups([unfreed])) == []


def test_the_event_says_what_was_removed_from_what_with_the_record_and_the_verdict():
    first, one = freed_events.freed_groups([call(freed("x", "a"), freed("y", "a"), freed("z", "b"))])
    event = freed_events.body(first, "a", "20261207-021717-f6bb", 1_800_000_000.25)
    assert event["eventTime"] == "2027-01-15T08:00:00.250000Z"
    assert event["regarding"] == {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "a"}
    assert event["note"] == (
        f"removed {DEAD} from 2 configmaps (record 20261207-021717-f6bb): stuck: no controller seen for 1m"
    )
    assert (event["reason"], event["action"], event["type"]) == ("FinalizersRemoved", "RemoveFinalizers", "Normal")
    assert event["reportingController"] == "kubectl-unfinalize" and len(event["reportingInstance"]) <= 128
    assert freed_events.body(one, "b", "", 0.0)["note"].startswith(f"removed {DEAD} from configmaps z (record none)")


class Events:
    def __init__(self, refuse: int | None = None) -> None:
        self.created: list[tuple[str, dict]] = []
        self.refuse = refuse

    def create(self, resource, namespace, body, dry_run) -> str:
        if self.refuse is not None:
            raise ApiError(self.refuse, "Forbidden", "forbidden")
        self.created.append((namespace, body))
        return ""


def test_a_refusal_is_one_warning_and_no_more_events():
    warned: list[str] = []
    cluster = Events(refuse=403)
    frees = [call(freed("x", "a"), freed("z", "b"))]
    assert freed_events.announce(cluster, frees, "id", warned.append) == 0  # type: ignore[arg-type]
    assert warned == [
        "no Event written: this user may not create events.k8s.io events in namespace a; the frees are done"
    ]


def test_at_most_a_run_s_share_of_events_and_a_cluster_scoped_one_goes_to_default(monkeypatch):
    monkeypatch.setattr(freed_events, "MOST", 2)
    warned: list[str] = []
    cluster = Events()
    cluster_scoped = call(freed("n", None), groups=[group("nodes", "Node", (), namespaced=False)])
    frees = [cluster_scoped, call(freed("x", "a"), freed("z", "b"))]
    assert freed_events.announce(cluster, frees, "id", warned.append) == 2  # type: ignore[arg-type]
    assert [ns for ns, _ in cluster.created] == ["default", "a"]
    assert "namespace" not in cluster.created[0][1]["regarding"]
    assert warned == ["wrote 2 Events, the most a run writes: the record lists every freed object"]
