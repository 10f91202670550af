"""The test control plane's fault tools do what fault tests rely on.

A restart that lost data, an audit log that missed writes or a compaction that left
continue tokens valid would make the tests built on them pass for the wrong reason.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse

import pytest
from controlplane import ADMIN_USER
from controlplane.process import pid_alive


def _create_configmap(cp, namespace: str, name: str, data: dict | None = None) -> dict:
    status, body = cp.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"metadata": {"name": name}, "data": data or {"k": "v"}},
    )
    assert status == 201, body
    return json.loads(body)


def _refused(cp) -> bool:
    try:
        cp.get("/readyz", timeout=1)
    except (urllib.error.URLError, ConnectionError):
        return True
    return False


def test_restart_apiserver_keeps_data_port_and_other_processes(control_plane, namespace):
    cp = control_plane
    _create_configmap(cp, namespace, "survivor", {"answer": "42"})
    server, before = cp.server, cp.processes

    # From a thread, as a fault test does while the tool runs in the foreground.
    down_seen = threading.Event()
    restart = threading.Thread(target=cp.restart_apiserver, kwargs={"down_seconds": 1.0})
    t0 = time.monotonic()
    restart.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not down_seen.is_set():
        if _refused(cp):
            down_seen.set()
        time.sleep(0.05)
    restart.join(timeout=90)
    assert not restart.is_alive(), "restart_apiserver did not return"
    assert down_seen.is_set(), "kube-apiserver never refused connections during the restart"
    assert time.monotonic() - t0 >= 1.0

    after = cp.processes
    assert cp.server == server
    assert after["kube-apiserver"] != before["kube-apiserver"]
    assert after["etcd"] == before["etcd"]
    assert after["kube-controller-manager"] == before["kube-controller-manager"]

    status, body = cp.get(f"/api/v1/namespaces/{namespace}/configmaps/survivor")
    assert status == 200, body
    assert json.loads(body)["data"] == {"answer": "42"}

    # The restarted server was forked for a thread that has ended: it must outlive it.
    time.sleep(1.0)
    assert cp.get("/readyz")[0] == 200
    assert cp.exited() == {}
    for name, pid in cp.processes.items():
        assert pid_alive(pid), f"{name} (pid {pid}) is not running"


def test_stop_and_start_apiserver(control_plane, namespace, kubectl):
    cp = control_plane
    cp.stop_apiserver()
    try:
        assert _refused(cp)
        time.sleep(1.0)  # long enough for a watchdog to notice an exit: none is reported
        assert cp.exited() == {}
    finally:
        cp.start_apiserver()
    assert kubectl("get", "namespace", namespace, "-o", "name").stdout.strip() == f"namespace/{namespace}"


def test_audit_records_writes_by_the_admin_and_no_reads(control_plane, namespace, audit, kubectl):
    cp = control_plane
    _create_configmap(cp, namespace, "audited")
    mark = audit.mark()

    kubectl("patch", "configmap", "audited", "-n", namespace, "--type=merge", "-p", '{"data":{"k":"patched"}}')
    kubectl("get", "configmap", "audited", "-n", namespace, "-o", "json")
    kubectl("get", "configmaps", "-n", namespace)

    writes = audit.writes()
    assert [(e["verb"], e["objectRef"]["name"]) for e in writes] == [("patch", "audited")], writes
    event = writes[0]
    assert event["user"]["username"] == ADMIN_USER
    assert event["stage"] == "ResponseComplete"
    assert event["level"] == "Metadata"
    assert event["objectRef"]["resource"] == "configmaps"
    assert event["objectRef"]["namespace"] == namespace
    assert event["objectRef"].get("apiGroup", "") == ""  # the core group
    assert event["responseStatus"]["code"] == 200
    assert event["requestURI"].startswith(f"/api/v1/namespaces/{namespace}/configmaps/audited")
    assert event["stageTimestamp"]
    assert "requestObject" not in event  # Metadata level: no bodies

    everything = audit.events()
    assert everything, "the audit log is empty"
    assert not [e for e in everything if e["verb"] in ("get", "list", "watch")]
    # The create before the mark is not "since the mark", but is in the log.
    assert not [e for e in everything if e["verb"] == "create" and e["objectRef"].get("name") == "audited"]
    earlier = cp.audit_events(since=0)
    assert [e for e in earlier if e["verb"] == "create" and e["objectRef"].get("name") == "audited"]
    assert audit.writes(since=mark) == writes


def test_audit_writes_leave_out_the_control_planes_own_requests(control_plane, audit, kubectl):
    name = f"audit-{time.monotonic_ns()}"
    kubectl("create", "namespace", name)
    try:
        # The namespace controller, the service account and root CA controllers write in it.
        for _ in range(100):
            if [e for e in audit.events() if e["user"]["username"].startswith("system:")]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no write by a system: user was recorded; the filter is not exercised")
        users = {e["user"]["username"] for e in audit.writes()}
        assert users == {ADMIN_USER}
    finally:
        kubectl("delete", "namespace", name, "--wait=false")


def test_compaction_expires_a_continue_token(control_plane, namespace):
    cp = control_plane
    for i in range(3):
        _create_configmap(cp, namespace, f"page-{i}")
    base = f"/api/v1/namespaces/{namespace}/configmaps?limit=1"
    status, body = cp.get(base)
    assert status == 200, body
    first = json.loads(body)
    token = first["metadata"]["continue"]
    assert len(first["items"]) == 1 and token
    status, body = cp.get(f"{base}&continue={urllib.parse.quote(token)}")
    assert status == 200, body  # valid before the compaction

    _create_configmap(cp, namespace, "later")  # a revision past the token's
    revision = cp.etcd_revision()
    assert revision > int(first["metadata"]["resourceVersion"])
    answer = cp.etcd("kv/compaction", {"revision": str(revision), "physical": True})
    # the answer's header carries the store's revision now, which the controllers may
    # have moved past the one compacted (a clean-clone CI run saw 3376 for 3374)
    assert int(answer["header"]["revision"]) >= revision

    status, body = cp.get(f"{base}&continue={urllib.parse.quote(token)}")
    assert status == 410, body
    gone = json.loads(body)
    assert gone["reason"] == "Expired"
    assert gone["metadata"].get("continue"), "a 410 on a list carries a token to go on with"


def test_a_control_plane_without_controllers_needs_and_starts_no_controller_manager(control_plane, monkeypatch):
    """The demo's (controlplane run --no-controller-manager): a fresh machine builds three binaries, not four."""
    import controlplane.controlplane as module

    asked: list[tuple[str, ...]] = []
    real = module.find_binaries
    monkeypatch.setattr(
        module, "find_binaries", lambda names, build: asked.append(tuple(names)) or real(names, build=build)
    )
    with module.ControlPlane(controllers=()) as cp:
        assert sorted(cp.processes) == ["etcd", "kube-apiserver"]
        assert cp.get("/api/v1/namespaces/default")[0] == 200
    assert asked == [("etcd", "kube-apiserver", "kubectl")]
