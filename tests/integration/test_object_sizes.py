"""Objects of real size: `kubectl apply` and kopf leave annotations of several KiB, and
the API server chunks any answer over 2 KiB. Each object must get one PATCH (the audit
log counts them), be reported unfinalized, and progress must never pass its total."""

from __future__ import annotations

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
