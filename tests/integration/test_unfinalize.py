"""The tool against a real API server: selection, finalizer removal, --delete, dry runs."""

from __future__ import annotations

import json

import pytest
from crs import CLEANUP, assert_cleanup_finalizer_untouched, crd_state, create, delete, snapshot, wait_until

HOLD = "unfinalize.test/hold"
KEEP = "other.test/keep"


def test_clears_all_finalizers_in_every_namespace(api_client, make_crd, namespace, cli, kubectl):
    crd = make_crd(kind="Gadget", short_names=("gdg",))
    kubectl("create", "namespace", namespace + "-b")
    try:
        for ns in (namespace, namespace + "-b"):
            for i in range(3):
                create(api_client, crd, f"g{i}", ns, finalizers=[HOLD, KEEP])
        delete(api_client, crd, "g0", namespace)
        result = cli("crd", "gdg")
        assert result.returncode == 0, result.stderr
        assert f"gadget.{crd['group']}/g0 unfinalized (namespace {namespace}; removed {HOLD}, {KEEP})" in result.stdout
        assert len(result.stdout.splitlines()) == 6
        assert "6 scanned, 6 unfinalized" in result.stderr
        after = snapshot(api_client, crd)
        assert (namespace, "g0") not in after  # it was terminating: freed, so gone
        assert all(fin == () for _, fin, _ in after.values())
        assert len(after) == 5
    finally:
        kubectl("delete", "namespace", namespace + "-b", "--wait=false")


def test_already_terminating_crd_is_freed_without_delete(api_client, make_crd, namespace, cli, kubectl):
    crd = make_crd()
    for i in range(2):
        create(api_client, crd, f"w{i}", namespace, finalizers=[HOLD])
    kubectl("delete", "crd", crd["name"], "--wait=false")
    stuck = wait_until(
        "CRD terminating", lambda: (c := crd_state(api_client, crd["name"])) and c.metadata.deletion_timestamp and c
    )
    assert CLEANUP in stuck.metadata.finalizers
    result = cli("crd", crd["name"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("unfinalized") == 2
    wait_until("terminating CRD to disappear", lambda: crd_state(api_client, crd["name"]) is None, timeout=30)


def test_only_named_finalizer_is_removed(api_client, make_crd, namespace, cli):
    crd = make_crd()
    create(api_client, crd, "a", namespace, finalizers=[HOLD, KEEP])
    create(api_client, crd, "b", namespace, finalizers=[KEEP])
    create(api_client, crd, "c", namespace, finalizers=[KEEP, HOLD, "third.test/x"])
    before = snapshot(api_client, crd)
    result = cli("crd", crd["plural"] + "." + crd["group"], "--finalizer", HOLD)
    assert result.returncode == 0, result.stderr
    after = snapshot(api_client, crd)
    assert after[(namespace, "a")][1] == (KEEP,)
    assert after[(namespace, "b")] == before[(namespace, "b")]  # not written at all
    assert after[(namespace, "c")][1] == (KEEP, "third.test/x")
    assert "b unfinalized" not in result.stdout


@pytest.mark.parametrize("mode", ["client", "server"])
def test_dry_runs_change_nothing(api_client, make_crd, namespace, cli, mode):
    crd = make_crd()
    for i in range(3):
        create(api_client, crd, f"w{i}", namespace, finalizers=[HOLD])
    delete(api_client, crd, "w0", namespace)
    before = snapshot(api_client, crd)
    result = cli("crd", crd["name"], "--delete", f"--dry-run={mode}", "-o", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dryRun"] == mode
    assert report["summary"]["unfinalized"] == 3
    assert report["summary"]["deleted"] == 1
    assert snapshot(api_client, crd) == before
    state = crd_state(api_client, crd["name"])
    assert state is not None and state.metadata.deletion_timestamp is None
    text = cli("crd", crd["name"], f"--dry-run={mode}")
    suffix = "(dry run)" if mode == "client" else "(server dry run)"
    assert text.stdout.count(suffix) == 3, text.stdout
    assert snapshot(api_client, crd) == before


def test_other_crds_and_namespaces_are_untouched(api_client, make_crd, namespace, cli, kubectl):
    target, bystander = make_crd(kind="Target"), make_crd(kind="Bystander")
    other_ns = namespace + "-other"
    kubectl("create", "namespace", other_ns)
    try:
        for ns in (namespace, other_ns):
            create(api_client, target, "t", ns, finalizers=[HOLD])
            create(api_client, bystander, "b", ns, finalizers=[HOLD])
        bystander_before = snapshot(api_client, bystander)
        target_before = snapshot(api_client, target)
        result = cli("crd", target["name"], "-n", namespace)
        assert result.returncode == 0, result.stderr
        assert snapshot(api_client, bystander) == bystander_before
        after = snapshot(api_client, target)
        assert after[(other_ns, "t")] == target_before[(other_ns, "t")]
        assert after[(namespace, "t")][1] == ()
    finally:
        kubectl("delete", "namespace", other_ns, "--wait=false")


def test_delete_frees_crds_and_never_touches_the_cleanup_finalizer(api_client, make_crd, namespace, cli):
    first, second = make_crd(kind="Alpha"), make_crd(kind="Beta")
    for crd in (first, second):
        for i in range(4):
            create(api_client, crd, f"o{i}", namespace, finalizers=[HOLD, KEEP])
    # An object whose other finalizer we are told to keep: the CRD must stay, blocked.
    result = cli("crd", first["name"], "--delete", "--finalizer", HOLD, "--timeout", "4s")
    assert result.returncode == 1
    assert "still blocking" in result.stdout and KEEP in result.stdout, result.stdout
    stuck = crd_state(api_client, first["name"])
    assert stuck is not None and CLEANUP in stuck.metadata.finalizers
    assert_cleanup_finalizer_untouched(stuck)
    # Now every finalizer, selecting the CRD by its group: it goes.
    result = cli("crd", "--group", first["group"], "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(f"removed {KEEP}") == 4
    assert crd_state(api_client, first["name"]) is None
    result = cli("crd", second["name"], "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"customresourcedefinition.apiextensions.k8s.io/{second['name']} deleted" in result.stdout
    assert crd_state(api_client, second["name"]) is None


def test_crd_label_selector_and_cluster_scoped(api_client, make_crd, cli):
    crd = make_crd(kind="Cluster", scope="Cluster", labels={"app.kubernetes.io/instance": "release-x"})
    create(api_client, crd, "c1", finalizers=[HOLD])
    result = cli("crd", "-l", "app.kubernetes.io/instance=release-x", "--delete", "--timeout", "60s", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        f"customresourcedefinition.apiextensions.k8s.io/{crd['name']}",
        f"cluster.{crd['group']}/c1",
    ]
    assert crd_state(api_client, crd["name"]) is None
