"""The tool against a real API server: selection, finalizer removal, --delete, dry runs."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from crs import CLEANUP, assert_cleanup_finalizer_untouched, crd_state, create, delete, snapshot, wait_until

HOLD = "unfinalize.test/hold"
KEEP = "other.test/keep"


@pytest.mark.core
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
        assert f"gadget.{crd.group}/g0 unfinalized (namespace {namespace}; removed {HOLD}, {KEEP})" in result.stdout
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
    kubectl("delete", "crd", crd.name, "--wait=false")
    stuck = wait_until(
        "CRD terminating", lambda: (c := crd_state(api_client, crd.name)) and c.metadata.deletion_timestamp and c
    )
    assert CLEANUP in stuck.metadata.finalizers
    result = cli("crd", crd.name)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("unfinalized") == 2
    wait_until("terminating CRD to disappear", lambda: crd_state(api_client, crd.name) is None, timeout=30)


def test_only_named_finalizer_is_removed(api_client, make_crd, namespace, cli):
    crd = make_crd()
    create(api_client, crd, "a", namespace, finalizers=[HOLD, KEEP])
    create(api_client, crd, "b", namespace, finalizers=[KEEP])
    create(api_client, crd, "c", namespace, finalizers=[KEEP, HOLD, "third.test/x"])
    before = snapshot(api_client, crd)
    result = cli("crd", crd.plural + "." + crd.group, "--finalizer", HOLD)
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
    result = cli("crd", crd.name, "--delete", f"--dry-run={mode}", "-o", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dryRun"] == mode
    assert report["summary"]["unfinalized"] == 3
    assert report["summary"]["deleted"] == 1
    assert snapshot(api_client, crd) == before
    state = crd_state(api_client, crd.name)
    assert state is not None and state.metadata.deletion_timestamp is None
    text = cli("crd", crd.name, f"--dry-run={mode}")
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
        result = cli("crd", target.name, "-n", namespace)
        assert result.returncode == 0, result.stderr
        assert snapshot(api_client, bystander) == bystander_before
        after = snapshot(api_client, target)
        assert after[(other_ns, "t")] == target_before[(other_ns, "t")]
        assert after[(namespace, "t")][1] == ()
    finally:
        kubectl("delete", "namespace", other_ns, "--wait=false")


@pytest.mark.core
def test_delete_frees_crds_and_never_touches_the_cleanup_finalizer(api_client, make_crd, namespace, cli):
    first, second = make_crd(kind="Alpha"), make_crd(kind="Beta")
    for crd in (first, second):
        for i in range(4):
            create(api_client, crd, f"o{i}", namespace, finalizers=[HOLD, KEEP])
    # An object whose other finalizer we are told to keep: the CRD must stay, blocked.
    result = cli("crd", first.name, "--delete", "--finalizer", HOLD, "--timeout", "4s")
    assert result.returncode == 1
    assert "still blocking" in result.stdout and KEEP in result.stdout, result.stdout
    stuck = crd_state(api_client, first.name)
    assert stuck is not None and CLEANUP in stuck.metadata.finalizers
    assert_cleanup_finalizer_untouched(stuck)
    # Now every finalizer, selecting the CRD by its group: it goes.
    result = cli("crd", "--group", first.group, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(f"removed {KEEP}") == 4
    assert crd_state(api_client, first.name) is None
    result = cli("crd", second.name, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"customresourcedefinition.apiextensions.k8s.io/{second.name} deleted" in result.stdout
    assert crd_state(api_client, second.name) is None


def test_crd_label_selector_and_cluster_scoped(api_client, make_crd, cli):
    crd = make_crd(kind="Cluster", scope="Cluster", labels={"app.kubernetes.io/instance": "release-x"})
    create(api_client, crd, "c1", finalizers=[HOLD])
    result = cli("crd", "-l", "app.kubernetes.io/instance=release-x", "--delete", "--timeout", "60s", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [  # instances first, the CRD once they are gone
        f"cluster.{crd.group}/c1",
        f"customresourcedefinition.apiextensions.k8s.io/{crd.name}",
    ]
    assert crd_state(api_client, crd.name) is None


def _interactive(cmd: list[str], env: dict, answer: str) -> tuple[int, str]:
    """Run cmd on a pseudo-terminal, answer the prompt, return (exit code, everything shown)."""
    import os
    import pty
    import subprocess
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    shown, answered, deadline = b"", False, time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
        if not answered and b"Continue? [y/N]" in shown:
            os.write(master, answer.encode() + b"\n")
            answered = True
    os.close(master)
    return proc.wait(timeout=30), shown.decode(errors="replace")


@pytest.mark.parametrize("answer", ["n", "y"])
def test_interactive_shows_the_plan_and_asks(api_client, make_crd, namespace, unfinalize_cmd, cli_env, answer):
    crd = make_crd()
    create(api_client, crd, "w", namespace, finalizers=[HOLD])
    before = snapshot(api_client, crd)
    code, shown = _interactive([*unfinalize_cmd, "crd", crd.name, "-i"], cli_env, answer)
    assert code == 0, shown
    assert f"customresourcedefinition.apiextensions.k8s.io/{crd.name}" in shown
    if answer == "n":
        assert "aborted: nothing was changed" in shown
        assert snapshot(api_client, crd) == before
    else:
        assert snapshot(api_client, crd)[(namespace, "w")][1] == ()


def test_only_terminating_field_selector_and_yaml_output(api_client, make_crd, namespace, cli):
    crd = make_crd()
    for name in ("live", "dying", "other-dying"):
        create(api_client, crd, name, namespace, finalizers=[HOLD])
    delete(api_client, crd, "dying", namespace)
    delete(api_client, crd, "other-dying", namespace)
    result = cli("crd", crd.name, "--only-terminating", "--field-selector", "metadata.name=dying", "-o", "yaml")
    assert result.returncode == 0, result.stderr
    import yaml

    report = yaml.safe_load(result.stdout)
    assert [(i["name"], i["action"]) for i in report["items"]] == [("dying", "unfinalized")]
    after = snapshot(api_client, crd)
    assert (namespace, "dying") not in after
    assert after[(namespace, "live")][1] == (HOLD,) and after[(namespace, "other-dying")][1] == (HOLD,)


@pytest.mark.core
def test_manifest_objects_are_freed_and_deleted_and_missing_ones_skipped(
    api_client, make_crd, namespace, cli, kubectl, tmp_path
):
    import yaml

    crd = make_crd()
    create(api_client, crd, "declared", namespace, finalizers=[HOLD])
    create(api_client, crd, "undeclared", namespace, finalizers=[HOLD])
    kubectl("create", "configmap", "settings", "-n", namespace)
    kubectl(
        "patch",
        "configmap",
        "settings",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        f'{{"metadata":{{"finalizers":["{HOLD}"]}}}}',
    )
    docs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}},
        {
            "apiVersion": crd.api_version,
            "kind": crd.kind,
            "metadata": {"name": "declared", "namespace": namespace},
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gone.example.com"},
        },
        {"apiVersion": "nothing.example.com/v1", "kind": "Ghost", "metadata": {"name": "boo"}},
    ]
    (tmp_path / "app.yaml").write_text(yaml.safe_dump_all(docs))
    result = cli("-f", tmp_path / "app.yaml", "-n", namespace, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"configmap/settings unfinalized (namespace {namespace}; removed {HOLD})" in result.stdout
    assert "customresourcedefinition.apiextensions.k8s.io/gone.example.com not found (skipped)" in result.stderr
    assert "ghost.nothing.example.com/boo not found (skipped)" in result.stderr
    assert kubectl("get", "configmap", "settings", "-n", namespace, check=False).returncode != 0
    after = snapshot(api_client, crd)
    assert (namespace, "declared") not in after
    assert after[(namespace, "undeclared")][1] == (HOLD,)  # not in the manifest: untouched


def test_dead_conversion_webhook_is_diagnosed(api_client, make_crd, namespace, cli, kubectl):
    crd = make_crd(versions=("v1", "v2"))
    create(api_client, crd, "stored-as-v1", namespace, finalizers=[HOLD])
    dead = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                                              "clientConfig": {"url": "https://127.0.0.1:1/convert"}}}  # fmt: skip
    ops = [
        {"op": "replace", "path": "/spec/versions/0/storage", "value": False},
        {"op": "replace", "path": "/spec/versions/1/storage", "value": True},
        {"op": "add", "path": "/spec/conversion", "value": dead},
    ]
    kubectl("patch", "crd", crd.name, "--type=json", "-p", json.dumps(ops))
    try:
        result = cli("crd", crd.name)
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"cannot list {crd.plural}.{crd.group}: conversion webhook" in result.stdout
        assert "set spec.conversion.strategy to None" in result.stdout
    finally:
        restore = [{"op": "replace", "path": "/spec/conversion", "value": {"strategy": "None"}}]
        kubectl("patch", "crd", crd.name, "--type=json", "-p", json.dumps(restore))
    assert snapshot(api_client, crd)[(namespace, "stored-as-v1")][1] == (HOLD,)


def test_delete_order_on_the_audit_trail(api_client, make_crd, namespace, cli, audit):
    """Each finalized object gets its deletionTimestamp (our DELETE) before its finalizers
    go (our PATCH), once each (both from the bulk sender, the PATCH on the DELETE's
    answer), and the CRD is deleted after the last of them."""
    crd = make_crd(kind="Ordered")
    count = 40
    for i in range(count):
        create(api_client, crd, f"o{i}", namespace, finalizers=[HOLD])
    audit.mark()
    result = cli("crd", crd.name, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    writes = [e for e in audit.writes() if e["verb"] in ("delete", "patch")]
    sent = Counter((e["verb"], e["objectRef"].get("name")) for e in writes)
    assert {key: n for key, n in sent.items() if n != 1} == {}, "a write sent twice"
    when = {(e["verb"], e["objectRef"].get("name")): e["stageTimestamp"] for e in writes}
    for i in range(count):
        assert when[("delete", f"o{i}")] <= when[("patch", f"o{i}")], writes
    assert max(when[("patch", f"o{i}")] for i in range(count)) <= when[("delete", crd.name)]
    assert result.stdout.count(" unfinalized ") == count


def test_the_wait_for_a_deleted_crd_ends_when_it_goes_not_at_the_next_poll(
    api_client, make_crd, namespace, kubectl, kubeconfig
):
    """kubectl waits for a deletion with a watch; so does the tool. Here the CRD is held
    by one more finalizer of its own (the tool never touches a CRD's finalizers) and let
    go a few seconds in, when the polls would be seconds apart (poll=5: 10 ms doubling)."""
    import threading
    import time

    from kubectl_unfinalize.api import run
    from kubectl_unfinalize.options import ConnectionOptions, Options, Selection

    crd = make_crd()
    for i in range(2):
        create(api_client, crd, f"w{i}", namespace, finalizers=[HOLD])
    hold = '{"metadata": {"finalizers": ["unfinalize.test/hold-crd"]}}'  # its DELETE adds the cleanup one
    kubectl("patch", "crd", crd.name, "--type=merge", "-p", hold)
    result = {}

    def tool():
        options = Options(delete=True, timeout=60, poll=5.0)
        result["report"] = run(Selection(crds=(crd.name,)), options, ConnectionOptions(kubeconfig=kubeconfig))
        result["ended"] = time.monotonic()

    started = time.monotonic()
    thread = threading.Thread(target=tool, daemon=True)
    thread.start()
    wait_until(
        "the cleanup controller to finish",
        lambda: (
            (c := crd_state(api_client, crd.name)) and list(c.metadata.finalizers or []) == ["unfinalize.test/hold-crd"]
        ),
    )
    time.sleep(max(0.0, started + 3.0 - time.monotonic()))  # polls would now be 2.6 s apart
    kubectl("patch", "crd", crd.name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    released = time.monotonic()
    thread.join(30)
    report = result["report"]
    assert report.failures == 0 and report.count("unfinalized") == 2
    assert crd_state(api_client, crd.name) is None
    late = result["ended"] - released
    assert late < 1.0, f"the run ended {late:.2f}s after the CRD went"
