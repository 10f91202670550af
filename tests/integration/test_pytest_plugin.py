"""The pytest plugin on the real control plane (issue 26): an operator's suite in
dask-kubernetes' shape (plugin_suite.py), a real kopf operator under KopfRunner, run as a
pytest session of its own with the plugin found through its entry point. Each suite has
its own CRD group and namespace, and the plugin is narrowed to that group by the suite's
ini file: the control plane is shared with the other tests.

What is proved with the API server's audit log counts the writes whose user agent is the
tool's (kubectl-unfinalize/...): kubectl, kopf and the kubernetes client the operator uses
write as the same user, under their own agents."""

from __future__ import annotations

import secrets
import time
from collections import Counter

import plugin_suite
import pytest
from crs import crd_state
from plugin_suite import PER_NAMESPACE

KOPF = "kopf.zalando.org/KopfFinalizerMarker"
HANG = 30.0  # seconds after `kubectl delete -f crds/` began: the suite's teardown has hung
SECTION = "= unfinalize:"


def ours(audit) -> list[dict]:
    return [e for e in audit.writes() if (e.get("userAgent") or "").startswith("kubectl-unfinalize/")]


@pytest.fixture
def suite(tmp_path, kube_env, kubectl, api_client):
    made: list[plugin_suite.Suite] = []

    def make(delete_args: str = "", workers: int = 1, delete_objects: bool = False) -> plugin_suite.Suite:
        made.append(plugin_suite.write(tmp_path / f"suite{len(made)}", kube_env, secrets.token_hex(3), workers=workers))
        made[-1].env.update(DELETE_ARGS=delete_args, DELETE_OBJECTS="1" if delete_objects else "")
        return made[-1]

    yield make
    from kubectl_unfinalize import unfinalize

    for s in made:
        left = [name for name in s.crds if crd_state(api_client, name) is not None]
        if left:
            unfinalize(crds=left, delete=True, timeout=90, kubeconfig=kube_env["KUBECONFIG"]).raise_for_failure()
        for ns in (s.namespace, f"{s.namespace}-gw0", f"{s.namespace}-gw1"):
            kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)


def crds_left(api_client, suite: plugin_suite.Suite) -> list[str]:
    return [name for name in suite.crds if crd_state(api_client, name) is not None]


def test_plain_pytest_hangs_and_free_frees_what_it_left_then_its_own_teardown(suite, audit, api_client):
    s = suite()
    audit.mark()
    hung = s.run(hang=HANG)
    assert hung.returncode is None and s.teardown_started() is not None, hung.stdout  # killed, HANG s in teardown
    assert ours(audit) == []  # without --unfinalize the plugin sends nothing
    for name in s.crds:  # what a kept cluster inherits: CRDs stuck Terminating
        assert crd_state(api_client, name).metadata.deletion_timestamp is not None
    for marker in [*s.path.glob("teardown-*"), *s.path.glob("ran-*")]:
        marker.unlink()

    freed = s.run("--unfinalize=free")
    ended = time.time()
    assert freed.returncode == 0, freed.stdout
    teardown = ended - s.teardown_started()
    # measured, not asserted (the machine is shared): 7 s on an idle one, grace 5 s
    print(f"free: the session ended {teardown:.1f}s after kubectl delete -f crds/ began (grace 5s)")
    assert crds_left(api_client, s) == []
    out = freed.stdout
    assert f"freed at session start (left by an earlier run): {PER_NAMESPACE} objects" in out, out
    assert f"freed during the teardown: {PER_NAMESPACE} objects" in out, out
    assert f"  {KOPF}" in out and f"ships.{s.group}  3  {s.namespace}  freed" in out, out


def test_strict_fails_the_session_naming_the_finalizer(suite, api_client):
    s = suite()
    strict = s.run("--unfinalize=strict")
    assert strict.returncode == 1, strict.stdout
    assert "1 passed" in strict.stdout and f"{SECTION} strict" in strict.stdout
    assert f"FAILED (--unfinalize=strict): {PER_NAMESPACE} objects had to be freed from {KOPF}" in strict.stdout
    assert f"  {KOPF}" in strict.stdout and f"{s.namespace}/f0-ship" in strict.stdout, strict.stdout
    assert crds_left(api_client, s) == []


def test_report_and_no_mode_write_nothing_and_only_report_says_what_is_held(suite, audit):
    """The suite's teardown does not wait here (kubectl delete --wait=false), so the
    sessions end with the objects held; it deletes them before their CRDs, so that all are
    being deleted when the report looks (the API server's CRD cleanup handles a few CRDs at
    a time, and other tests' stuck CRDs may keep it busy)."""
    quiet, reported = suite("--wait=false", delete_objects=True), suite("--wait=false", delete_objects=True)
    audit.mark()
    plain = quiet.run()
    assert plain.returncode == 0, plain.stdout
    assert SECTION not in plain.stdout and "unfinalize:" not in plain.stdout
    report = reported.run("--unfinalize=report")
    assert report.returncode == 0, report.stdout
    assert ours(audit) == []
    out = report.stdout
    assert f"{SECTION} report" in out and "held by finalizers after the session" in out, out
    assert f"  {KOPF}  (owner: a kopf operator)" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("    ")}
    for plural, count in (("fleets", 3), ("ships", 3), ("buoys", 1)):
        assert rows[f"{plural}.{reported.group}"][:4] == [str(count), reported.namespace, "stuck:", "no"], out
    assert "evidence: last write by kopf" in out


def test_under_xdist_the_controller_frees_each_object_once(suite, audit, api_client):
    s = suite(workers=2)
    audit.mark()
    run = s.run("-n", "2", "--dist", "loadfile", "--unfinalize=free")
    assert run.returncode == 0, run.stdout
    assert "2 passed" in run.stdout and f"freed during the teardown: {2 * PER_NAMESPACE} objects" in run.stdout
    patches = Counter(
        (e["objectRef"]["resource"], e["objectRef"].get("namespace"), e["objectRef"]["name"])
        for e in ours(audit)
        if e["verb"] == "patch"
    )
    assert len(patches) == 2 * PER_NAMESPACE and set(patches.values()) == {1}, patches
    assert {ns for _, ns, _ in patches} == {f"{s.namespace}-gw0", f"{s.namespace}-gw1"}
    assert crds_left(api_client, s) == []
