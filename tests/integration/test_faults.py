"""Faults, for real: the API server restarts, API Priority and Fairness answers 429,
connections reset, continue tokens expire, admission denies writes, the deadline runs out
during retries, stdout closes. Each test asserts that nothing selected is left stuck
(or that what is left is named) and, from the API server's audit log, that the tool
wrote nothing outside its selection. Figures go to the test's output (-s shows them)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import yaml
from crdinfo import CrdInfo
from crs import crd_manifest, crd_state, create_many, priority_level, snapshot, wait_until, writes_outside

HOLD = "unfinalize.test/hold"
OTHER = "other.test/keep"


def report(name: str, **figures) -> None:
    print(f"\n[fault] {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


@pytest.fixture
def stuck_crd(api_client, make_crd, namespace, kubectl):
    """A CRD with objects carrying finalizers in two namespaces, and a bystander CRD."""

    def make(count: int, kind: str = "Stuck") -> CrdInfo:
        crd = make_crd(kind=kind)
        other_ns = f"{namespace}-b"
        if not _exists_ns(kubectl, other_ns):
            kubectl("create", "namespace", other_ns)
        create_many(api_client, crd, count, [namespace, other_ns], finalizers=[HOLD, OTHER])
        return crd

    yield make
    for ns in (f"{namespace}-b",):
        kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found")


def _exists_ns(kubectl, name: str) -> bool:
    return kubectl("get", "namespace", name, check=False).returncode == 0


@pytest.fixture
def bystander(api_client, make_crd, namespace):
    crd = make_crd(kind="Bystander")
    create_many(api_client, crd, 3, [namespace], finalizers=[HOLD])
    before = snapshot(api_client, crd)
    yield lambda: snapshot(api_client, crd) == before


def popen(unfinalize_cmd, cli_env, *args, env=None):
    return subprocess.Popen(
        [*unfinalize_cmd, *map(str, args)],
        env=dict(cli_env, **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def through(proxy, kubeconfig, tmp_path):
    """A copy of `kubeconfig` whose cluster is reached through `proxy`."""
    config = yaml.safe_load(open(kubeconfig))
    config["clusters"][0]["cluster"]["server"] = proxy.url
    path = tmp_path / "kubeconfig-proxy"
    path.write_text(yaml.safe_dump(config))
    return path


def patches_seen(audit, crd) -> int:
    return sum(1 for e in audit.writes() if e["verb"] == "patch" and e["objectRef"].get("resource") == crd.plural)


@pytest.mark.parametrize("delete", [True, False], ids=["delete", "no-delete"])
def test_api_server_restart_mid_run_is_waited_out(
    control_plane, audit, api_client, stuck_crd, bystander, unfinalize_cmd, cli_env, delete
):
    crd = stuck_crd(2000)
    audit.mark()
    started = time.monotonic()
    args = ["crd", crd.name, "--timeout", "120s", "-q", "-o", "name"] + (["--delete"] if delete else [])
    proc = popen(unfinalize_cmd, cli_env, *args)
    wait_until("the tool's first patches", lambda: patches_seen(audit, crd) >= 50, timeout=60, interval=0.05)
    control_plane.restart_apiserver(down_seconds=3)
    out, err = proc.communicate(timeout=180)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, err
    if delete:
        assert crd_state(api_client, crd.name) is None
    else:
        assert all(fin == () for _, fin, _ in snapshot(api_client, crd).values())
    assert bystander()
    outside = writes_outside(audit.writes(), [crd])
    assert outside == []
    report(
        f"apiserver restart ({'--delete' if delete else 'no --delete'})",
        seconds=f"{seconds:.1f}",
        restarts=1,
        objects_left_stuck=0,
        writes_outside_selection=len(outside),
    )


def test_api_priority_and_fairness_429s_are_retried_to_the_end(
    api_client, stuck_crd, bystander, kubectl, audit, unfinalize_cmd, cli_env
):
    """A FlowSchema puts the tool's (impersonated) user on a priority level with one seat
    that rejects what does not fit: most of its requests get 429."""
    crd = stuck_crd(1000)
    user = f"apf-{crd.group.split('.')[0]}"
    objects = priority_level(user, shares=1)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    try:
        time.sleep(1)  # the APF configuration controller picks the new objects up
        audit.mark()
        started = time.monotonic()
        proc = popen(unfinalize_cmd, cli_env, "crd", crd.name, "--delete", "--as", user, "--timeout", "170s")
        out, err = proc.communicate(timeout=200)
        seconds = time.monotonic() - started
        assert proc.returncode == 0, err[-2000:]
        assert crd_state(api_client, crd.name) is None
        assert bystander()
        writes = audit.writes()
        rejected = sum(1 for e in writes if (e.get("responseStatus") or {}).get("code") == 429)
        assert rejected > 0, "the priority level never pushed back: the test proves nothing"
        outside = writes_outside(writes, [crd])
        assert outside == []
        report("APF 429s", seconds=f"{seconds:.1f}", rejected_writes=rejected, objects_left_stuck=0, outside=0)
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", input=yaml.safe_dump_all(objects))


def test_connection_resets_on_new_and_pooled_connections(
    control_plane, audit, api_client, stuck_crd, bystander, kubeconfig, unfinalize_cmd, cli_env, tmp_path
):
    from controlplane.proxy import LoopbackProxy

    crd = stuck_crd(1500)
    host, port = control_plane.server_address
    with LoopbackProxy(host, port) as proxy:
        via_proxy = through(proxy, kubeconfig, tmp_path)
        proxy.reset_new(2)  # the first connections die at once
        audit.mark()
        started = time.monotonic()
        proc = popen(unfinalize_cmd, cli_env, "crd", crd.name, "--delete", "--kubeconfig", via_proxy, "-q")
        wait_until("the tool's first patches", lambda: patches_seen(audit, crd) >= 20, timeout=60, interval=0.02)
        for _ in range(3):  # pooled connections, mid-run
            proxy.reset_all()
            time.sleep(0.3)
        out, err = proc.communicate(timeout=120)
        seconds = time.monotonic() - started
        resets = proxy.resets
    assert proc.returncode == 0, err
    assert resets >= 3
    assert crd_state(api_client, crd.name) is None
    assert bystander()
    outside = writes_outside(audit.writes(), [crd])
    assert outside == []
    report("connection resets", seconds=f"{seconds:.1f}", resets=resets, objects_left_stuck=0, outside=0)


def test_a_server_that_stops_answering_mid_run_times_out_at_the_deadline(
    control_plane, audit, api_client, stuck_crd, bystander, kubeconfig, unfinalize_cmd, cli_env, tmp_path
):
    """Connections open, requests in flight, and no answer ever comes (a hung API server or a
    black-holed network): each request times out, the retries end at the deadline."""
    from controlplane.proxy import LoopbackProxy

    crd = stuck_crd(2000)
    host, port = control_plane.server_address
    with LoopbackProxy(host, port) as proxy:
        via_proxy = through(proxy, kubeconfig, tmp_path)
        audit.mark()
        started = time.monotonic()
        proc = popen(
            unfinalize_cmd, cli_env, "crd", crd.name, "--kubeconfig", via_proxy, "--request-timeout", "1s",
            "--timeout", "6s",
        )  # fmt: skip
        wait_until("the tool's first patches", lambda: patches_seen(audit, crd) >= 20, timeout=60, interval=0.02)
        proxy.delay = 3600.0  # what is sent from now on arrives in an hour
        out, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - started
    assert proc.returncode == 1, err
    assert "timed out" in err
    assert seconds < 6 + 5 + 5, f"{seconds:.1f}s: the deadline plus the diagnosis grace and one request"
    assert bystander()
    assert writes_outside(audit.writes(), [crd]) == []
    report("server stops answering", seconds=f"{seconds:.1f}", timeout="6s", request_timeout="1s")


def test_an_expired_continue_token_does_not_stall_the_run(control_plane, audit, api_client, stuck_crd, kubeconfig):
    """etcd is compacted between two pages of the tool's list, so its continue token
    expires (410); the list goes on without waiting."""
    from kubectl_unfinalize import ConnectionOptions, unfinalize

    crd = stuck_crd(600)
    log: list[str] = []
    compacted = threading.Event()

    def compact_once(outcome) -> None:
        if compacted.is_set():
            return
        compacted.set()
        control_plane.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"generateName": "rv-"}})
        control_plane.etcd("kv/compaction", {"revision": str(control_plane.etcd_revision()), "physical": True})

    started = time.monotonic()
    result = unfinalize(
        [crd.name],
        chunk_size=50,
        concurrency=2,
        on_outcome=compact_once,
        connection=ConnectionOptions(kubeconfig=kubeconfig, verbosity=6, log=log.append),
        timeout=120,
    )
    seconds = time.monotonic() - started
    gone = [line for line in log if " 410 " in line]
    assert result.ok, result.failed
    assert gone, "no continue token expired: the test proves nothing"
    assert all(fin == () for _, fin, _ in snapshot(api_client, crd).values())
    assert result.count("unfinalized") == 600
    assert seconds < 20, f"the run stalled: {seconds:.1f}s"
    report("expired continue token", seconds=f"{seconds:.1f}", expired_tokens=len(gone), objects_left_stuck=0)


def _deny(kubectl, name: str, resource: dict, operations: list[str], expression: str):
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{**resource, "operations": operations}]},
            "validations": [{"expression": expression, "message": f"denied by policy {name}"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([policy, binding]))
    return lambda: kubectl("delete", "-f", "-", "--ignore-not-found", input=yaml.safe_dump_all([policy, binding]))


def test_a_denied_crd_delete_leaves_the_others_freed_and_deleted(
    api_client, make_crd, namespace, kubectl, audit, cli, tmp_path
):
    crds = [make_crd(kind=k) for k in ("Alpha", "Beta", "Gamma")]
    for crd in crds:
        create_many(api_client, crd, 5, [namespace], finalizers=[HOLD])
    denied = crds[1]
    undo = _deny(
        kubectl,
        f"deny-{denied.group.split('.')[0]}",
        {"apiGroups": ["apiextensions.k8s.io"], "apiVersions": ["v1"], "resources": ["customresourcedefinitions"]},
        ["DELETE"],
        f"oldObject.metadata.name != '{denied.name}'",
    )
    try:
        manifest = tmp_path / "crds.yaml"
        manifest.write_text(yaml.safe_dump_all([crd_manifest(c) for c in crds]))
        wait_until(
            "the policy to deny",
            lambda: "denied" in kubectl("delete", "crd", denied.name, "--dry-run=server", check=False).stderr,
        )
        audit.mark()
        started = time.monotonic()
        result = cli("-f", manifest, "--delete", "--timeout", "60s")
        seconds = time.monotonic() - started
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"customresourcedefinition.apiextensions.k8s.io/{denied.name} failed" in result.stdout
        assert "denied by policy" in result.stdout
        assert seconds < 30, "a refused delete is final: the run must not wait for its timeout"
        for crd in crds:
            if crd is not denied:
                assert crd_state(api_client, crd.name) is None
        state = crd_state(api_client, denied.name)
        assert state is not None and state.metadata.deletion_timestamp is None  # not left Terminating
        assert writes_outside(audit.writes(), crds) == []
        report("denied CRD delete", seconds=f"{seconds:.1f}", denied=1, crds_deleted=2, outside=0)
    finally:
        undo()


def test_a_denied_patch_is_named_and_everything_else_is_freed(api_client, make_crd, namespace, kubectl, audit, cli):
    crd = make_crd(kind="Guarded")
    create_many(api_client, crd, 10, [namespace], finalizers=[HOLD])
    name = f"deny-{crd.group.split('.')[0]}"
    undo = _deny(
        kubectl,
        name,
        {"apiGroups": [crd.group], "apiVersions": ["*"], "resources": [crd.plural]},
        ["UPDATE"],
        "object.metadata.name != 'o3'",
    )
    try:
        wait_until(
            "the policy to deny",
            lambda: kubectl(
                "patch", crd.plural + "." + crd.group, "o3", "-n", namespace, "--type=merge",
                "-p", '{"metadata":{"labels":{"x":"y"}}}', "--dry-run=server", check=False,
            ).returncode != 0,
        )  # fmt: skip
        audit.mark()
        result = cli("crd", crd.name, "--timeout", "30s")
        assert result.returncode == 1
        assert f"{crd.kind.lower()}.{crd.group}/o3 failed" in result.stdout
        assert "denied by policy" in result.stdout
        after = snapshot(api_client, crd)
        assert after[(namespace, "o3")][1] == (HOLD,)
        assert all(fin == () for key, (_, fin, _) in after.items() if key[1] != "o3")
        assert "9 unfinalized" in result.stderr and "1 failed" in result.stderr
        assert writes_outside(audit.writes(), [crd]) == []
    finally:
        undo()


def test_a_deadline_that_expires_during_retries_ends_the_run_with_a_diagnosis(
    control_plane, api_client, stuck_crd, unfinalize_cmd, cli_env, audit
):
    crd = stuck_crd(2000)
    audit.mark()
    started = time.monotonic()
    proc = popen(unfinalize_cmd, cli_env, "crd", crd.name, "--delete", "--timeout", "6s")
    try:
        wait_until("the tool's first patches", lambda: patches_seen(audit, crd) >= 20, timeout=60, interval=0.02)
        control_plane.stop_apiserver()
        out, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - started
    finally:
        control_plane.start_apiserver()
    assert proc.returncode == 1
    assert "timed out" in err
    assert "still blocking" in out or "failed" in out
    assert seconds < 6 + 5 + 5, f"{seconds:.1f}s: the deadline plus the diagnosis grace and one request"
    report("deadline during retries", seconds=f"{seconds:.1f}", timeout="6s", restarts=0, left="named")


def test_a_closed_stdout_ends_quietly_after_the_work(api_client, stuck_crd, unfinalize_cmd, cli_env):
    crd = stuck_crd(1000)
    command = " ".join(f"'{c}'" for c in unfinalize_cmd) + f" crd {crd.name} -q | head -3"
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}; echo exit=${{PIPESTATUS[0]}} >&2"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(proc.stdout.splitlines()) == 3
    assert "exit=0" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert all(fin == () for _, fin, _ in snapshot(api_client, crd).values())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-s", *sys.argv[1:]]))


def test_ctrl_c_reports_what_was_done(api_client, stuck_crd, unfinalize_cmd, cli_env, audit):
    import signal

    crd = stuck_crd(2000)
    audit.mark()
    proc = popen(unfinalize_cmd, cli_env, "crd", crd.name, "--concurrency", "2")
    wait_until("the tool's first patches", lambda: patches_seen(audit, crd) >= 20, timeout=60, interval=0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    summary = err.strip().splitlines()[-1]
    assert summary.startswith("interrupted: ") and " unfinalized" in summary, err
    freed = sum(1 for _, fin, _ in snapshot(api_client, crd).values() if fin == ())
    assert out.count(" unfinalized") >= freed - 2 * 4  # every object freed was reported (bar those in flight)
    assert 0 < freed < 2000
