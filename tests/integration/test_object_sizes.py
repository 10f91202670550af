"""Objects of real size: `kubectl apply` and kopf leave annotations of several KiB, and
the API server chunks any answer over 2 KiB. Each object must get one PATCH (the audit
log counts them), be reported unfinalized, and progress must never pass its total."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from crs import crd_state, snapshot, wait_until
from kubernetes.client import CustomObjectsApi

from kubectl_unfinalize import Action, unfinalize

HOLD = "unfinalize.test/hold"
COUNT = 40


def _create(api_client, crd, namespace: str, size: int, terminating: bool) -> list[str]:
    custom = CustomObjectsApi(api_client)
    annotation = "x" * size  # as kubectl.kubernetes.io/last-applied-configuration or kopf's last-handled state

    def one(i: int) -> str:
        name = f"big{i}"
        body = {
            "apiVersion": f"{crd.group}/{crd.version}",
            "kind": crd.kind,
            "metadata": {"name": name, "finalizers": [HOLD], "annotations": {"example.test/state": annotation}},
            "spec": {"size": i},
        }
        custom.create_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, body)
        if terminating:
            custom.delete_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, name)
        return name

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(COUNT)))


@pytest.mark.parametrize("delete", [False, True], ids=["free", "delete"])
@pytest.mark.parametrize("terminating", [False, True], ids=["live", "terminating"])
@pytest.mark.parametrize("size", [3 * 1024, 100 * 1024], ids=["3KiB", "100KiB"])
def test_one_patch_per_object_whatever_its_size(
    api_client, make_crd, namespace, kubeconfig, audit, size, terminating, delete
):
    crd = make_crd(kind="Bulky")
    names = _create(api_client, crd, namespace, size, terminating)
    audit.mark()
    progress = []
    report = unfinalize(crds=[crd.name], delete=delete, timeout=120, kubeconfig=kubeconfig, on_progress=progress.append)
    assert report.ok, [o.to_dict() for o in report.outcomes if o.action is not Action.UNFINALIZED]
    freed = {o.name: o for o in report.outcomes if o.resource.startswith(crd.kind.lower() + ".")}
    assert sorted(freed) == sorted(names)
    assert {o.action for o in freed.values()} == {Action.UNFINALIZED}, [o.to_dict() for o in freed.values()]
    assert report.count(Action.UNFINALIZED) == COUNT and report.count(Action.GONE) == 0
    patches = Counter(
        e["objectRef"]["name"]
        for e in audit.writes()
        if e["verb"] == "patch" and e["objectRef"].get("resource") == crd.plural
    )
    assert patches == dict.fromkeys(names, 1), patches  # one PATCH each, none twice
    assert progress and all(p.done <= p.total for p in progress), [(p.done, p.total) for p in progress]
    assert progress[-1].done == progress[-1].total
    if delete:
        wait_until("CRD gone", lambda: crd_state(api_client, crd.name) is None, timeout=30)
    elif terminating:
        wait_until("objects gone", lambda: not snapshot(api_client, crd), timeout=30)
    else:
        assert all(fin == () for _, fin, _ in snapshot(api_client, crd).values())


BIG = 100 * 1024
MANY_BIG = 360  # 36 MB of annotations: more than the final check would read again (final_check.WATCH_OVER)
SPACES = 4


def _reads(audit, plural: str) -> list[tuple[str, dict[str, list[str]], str]]:
    """(verb, query, stage timestamp) of each list or watch of `plural` by the tests' user since the mark."""
    from urllib.parse import parse_qs, urlsplit

    return [
        (e["verb"], parse_qs(urlsplit(e["requestURI"]).query), e["stageTimestamp"])
        for e in audit.events()
        if e.get("verb") in ("list", "watch")
        and e["objectRef"].get("resource") == plural
        and e["stage"] == "ResponseComplete"  # a watch is also recorded as it starts
        and not e["user"]["username"].startswith("system:")  # the garbage collector's informers
    ]


def _last_applied(crd, namespace: str, name: str) -> str:
    """A kubectl last-applied-configuration of BIG bytes, unique to the object: a JSON
    document, so every quote is escaped once more on the wire."""
    import secrets

    settings, size = {}, 0
    while size < BIG:
        value = {"value": secrets.token_hex(12), "enabled": True, "note": f"knob {len(settings)} of {name}"}
        settings[f"setting-{len(settings):04d}"] = value
        size += len(json.dumps(value)) + 20
    config = {"apiVersion": f"{crd.group}/{crd.version}", "kind": crd.kind}
    config["metadata"] = {"name": name, "namespace": namespace}
    config["spec"] = {"settings": settings}
    return json.dumps(config, separators=(",", ":"))


def test_big_objects_are_listed_a_few_mb_a_page_and_the_final_check_reads_only_versions_again(
    api_client, make_crd, namespace, kubeconfig, audit
):
    """Objects as `kubectl apply` leaves them (a unique 100 KiB last-applied-configuration)
    in several namespaces: each list page asks for at most a few MB of objects, and after
    the last patch nothing is listed again: the final check reads the names and versions
    of every namespace at once (a watch that sends them first, as a Table without objects), whatever
    watch history the server still holds; a finalizer a controller puts back after the
    patch is still reported."""
    import secrets
    import threading
    import time

    from controlplane.controlplane import READS_GROUP
    from kubernetes.client import CoreV1Api

    from kubectl_unfinalize.kube.paging import FIRST_LIMIT, PAGE_BYTES

    core = CoreV1Api(api_client)
    spaces = [namespace] + [f"{namespace}-{i}" for i in range(1, SPACES)]
    for extra in spaces[1:]:
        core.create_namespace({"metadata": {"name": extra, "labels": {"unfinalize.test/fixture": "namespace"}}})
    crd = make_crd(kind=f"Big{secrets.token_hex(3)}", group=READS_GROUP)
    custom = CustomObjectsApi(api_client)

    def one(i: int) -> None:
        where, name = spaces[i % SPACES], f"big{i}"
        annotations = {"kubectl.kubernetes.io/last-applied-configuration": _last_applied(crd, where, name)}
        body = {
            "apiVersion": f"{crd.group}/{crd.version}",
            "kind": crd.kind,
            "metadata": {"name": name, "finalizers": [HOLD], "annotations": annotations},
        }
        custom.create_namespaced_custom_object(crd.group, crd.version, where, crd.plural, body)

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(MANY_BIG)))
        stop = threading.Event()

        def controller() -> None:
            """Puts the finalizer back on big7 once, after the run freed it."""
            where = spaces[7 % SPACES]
            while not stop.is_set():
                obj = custom.get_namespaced_custom_object(crd.group, crd.version, where, crd.plural, "big7")
                if not obj["metadata"].get("finalizers"):
                    patch = {"metadata": {"finalizers": [HOLD]}}
                    custom.patch_namespaced_custom_object(crd.group, crd.version, where, crd.plural, "big7", patch)
                    return
                time.sleep(0.05)

        audit.mark()
        thread = threading.Thread(target=controller, daemon=True)
        thread.start()
        try:
            report = unfinalize(crds=[crd.name], timeout=120, kubeconfig=kubeconfig)
        finally:
            stop.set()
            thread.join(10)
    finally:
        for extra in spaces[1:]:
            core.delete_namespace(extra)
    back = [o for o in report.outcomes if o.action is Action.REFINALIZED]
    assert [o.name for o in back] == ["big7"], [o.to_dict() for o in report.outcomes if o.action.is_failure]
    assert report.count(Action.UNFINALIZED) == MANY_BIG and report.failures == 1

    reads = _reads(audit, crd.plural)
    lists = [(q, at) for verb, q, at in reads if verb == "list"]
    limits = [int(q["limit"][0]) for q, _ in lists]
    assert limits and limits[0] == FIRST_LIMIT, limits
    assert all(limit * BIG <= PAGE_BYTES for limit in limits[1:]), limits  # a few MB a page, not 500 objects
    patches = [
        e["stageTimestamp"]
        for e in audit.writes()
        if e["verb"] == "patch" and e["objectRef"].get("resource") == crd.plural
    ]
    first_patch = min(patches)
    listed_again = [q for q, at in lists if at > first_patch and "continue" not in q]
    assert not listed_again, listed_again  # no second full list after the patches
    watches = [q for verb, q, at in reads if verb == "watch"]
    # One for every namespace (the run freed all that its list saw): names and versions, no objects.
    assert len(watches) == 1, watches
    watched = [
        e["objectRef"].get("namespace")
        for e in audit.events()
        if e.get("verb") == "watch" and e["objectRef"].get("resource") == crd.plural
    ]
    assert watched and set(watched) == {None}, watched
    assert all(w["sendInitialEvents"] == ["true"] and w["includeObject"] == ["None"] for w in watches), watches
