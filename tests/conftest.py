"""Shared fixtures.

The cluster fixtures are lazy: a local control plane (the ``controlplane`` package next to
this file) starts once per session, only when a test asks for ``kubeconfig`` (directly or
through ``kube_env``/``kubectl``/``api_client``/``namespace``/``make_crd``). Set
``UNFINALIZE_TEST_KUBECONFIG=PATH`` to use an existing cluster instead. A control plane
that cannot start fails the tests; it never skips them. Fault tests (``control_plane``,
``audit``) need the project's own control plane and are skipped, with a reason saying so,
on an existing cluster.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import controlplane
import pytest
import reaping
from crdinfo import CrdInfo
from waiting import wait_until

TESTS_DIR = Path(__file__).resolve().parent
INTEGRATION_DIR = TESTS_DIR / "integration"
EXISTING_KUBECONFIG_ENV = "UNFINALIZE_TEST_KUBECONFIG"
MERGE_PATCH = "application/merge-patch+json"
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
OWN_CONTROL_PLANE_NEEDED = "fault tests need the project's own control plane (unset UNFINALIZE_TEST_KUBECONFIG)"
_STARTUP_KEY = pytest.StashKey[float]()
_ENDED_KEY = pytest.StashKey[list]()


# --------------------------------------------------------------------------- hooks


def pytest_configure(config):
    # Whatever a test starts ends with this process (tests/reaping.py), and SIGTERM (CI
    # cancelling a job, `timeout` ending a phase) tears the session down as Ctrl-C does.
    reaping.become_subreaper()
    _sigterm_as_interrupt()
    # Every run the tests start writes a record: into a folder of this session's, never the
    # user's own state (each fixture's environment, and tests that build one from os.environ).
    state = tempfile.mkdtemp(prefix="unfinalize-test-state-")
    os.environ["XDG_STATE_HOME"] = state
    config.add_cleanup(lambda: shutil.rmtree(state, ignore_errors=True))
    config.addinivalue_line("markers", "integration: needs a Kubernetes API server (started automatically)")
    config.addinivalue_line(
        "markers",
        "core: the integration tests run against every supported release too (make test-version), not only the"
        " pinned one: crd/ns/-f --delete, TYPE NAME, scan, completion",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_DIR in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """After every fixture is torn down: end what is still running, to name it in the summary."""
    session.config.stash[_ENDED_KEY] = reaping.end_descendants()


def pytest_unconfigure(config):
    """The last word, also when the session was interrupted before it could finish."""
    for line in reaping.end_descendants():
        sys.stderr.write(f"ended a process the tests left running: {line}\n")


def pytest_terminal_summary(terminalreporter, config):
    seconds = config.stash.get(_STARTUP_KEY, None)
    if seconds is not None:
        terminalreporter.write_line(f"test control plane started in {seconds:.1f}s")
    for line in config.stash.get(_ENDED_KEY, ()):
        terminalreporter.write_line(f"ended a process the tests left running: {line}")


# --------------------------------------------------------------------------- helpers


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl run; str() includes its output."""

    def __str__(self) -> str:
        return (
            f"{shlex.join(['kubectl', *self.cmd[1:]])} exited with {self.returncode}\n"
            f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        )


def _find_binaries(request, names):
    """Locate binaries, building missing ones with pytest's output capture suspended."""
    try:
        if not controlplane.missing_binaries(names):
            return controlplane.find_binaries(names, build=False)
        capman = request.config.pluginmanager.getplugin("capturemanager")
        suspended = capman.global_and_fixture_disabled() if capman else contextlib.nullcontext()
        with suspended:
            return controlplane.find_binaries(names)
    except controlplane.ControlPlaneError as e:
        error = str(e)
    pytest.fail(f"cannot provide the Kubernetes binaries:\n{error}", pytrace=False)


def _sigterm_as_interrupt() -> None:
    """Let SIGTERM interrupt pytest like Ctrl-C, so session teardown stops what the tests started."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


# --------------------------------------------------------------------------- cluster


@pytest.fixture(scope="session")
def _control_plane(request):
    """The session's own control plane (None when using UNFINALIZE_TEST_KUBECONFIG)."""
    if os.environ.get(EXISTING_KUBECONFIG_ENV):
        yield None
        return
    _find_binaries(request, controlplane.BINARIES)
    cp = controlplane.ControlPlane(audit=True)  # cheap: writes only, one line per request
    error = None
    try:
        cp.start()
    except controlplane.ControlPlaneError as e:
        error = str(e)
    if error is not None:
        pytest.fail(f"cannot start the test control plane:\n{error}", pytrace=False)
    request.config.stash[_STARTUP_KEY] = cp.startup_seconds
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def control_plane(request) -> controlplane.ControlPlane:
    """The session's ControlPlane, for tests that restart kube-apiserver, read its audit log or reach etcd.

    Skipped (with a reason) when UNFINALIZE_TEST_KUBECONFIG names an existing cluster,
    which cannot be restarted or audited from here; fails, like every cluster fixture,
    when the control plane cannot be built or started.
    """
    if os.environ.get(EXISTING_KUBECONFIG_ENV):
        pytest.skip(OWN_CONTROL_PLANE_NEEDED)
    return request.getfixturevalue("_control_plane")


class Audit:
    """The write requests that reached the API server during one test, from its audit log.

    To prove "no write outside the selection": ``audit.mark()`` right before running the
    tool, then check that every write since names an object the test selected, e.g.::

        audit.mark()
        cli("crd", crd.name, ...)
        touched = {(e["objectRef"]["resource"], e["objectRef"].get("name")) for e in audit.writes()}
        assert touched <= {(crd.plural, name) for name in selected}

    ``writes()`` leaves out requests by the control plane's own components (users
    ``system:*``: controllers, service accounts, the API server itself), which write all
    the time; the tests' admin client is ``unfinalize-admin`` and the tool run with the
    test kubeconfig is the same user. Server-side dry runs are recorded too (their
    ``requestURI`` has ``dryRun=All``): they are requests, even if nothing is stored.
    """

    def __init__(self, cp: controlplane.ControlPlane):
        self.control_plane = cp
        self.since = cp.audit_mark()

    def mark(self) -> int:
        """Start counting from here; returns the byte offset, which writes(since=...) also takes."""
        self.since = self.control_plane.audit_mark()
        return self.since

    def events(self, since: int | None = None) -> list[dict]:
        """Every recorded event (any user) since the mark, or since byte offset `since`."""
        return self.control_plane.audit_events(self.since if since is None else since)

    def writes(self, since: int | None = None) -> list[dict]:
        """Write events (create, update, patch, delete, deletecollection) by non-system users since the mark."""
        return [
            e
            for e in self.events(since)
            if e.get("verb") in controlplane.WRITE_VERBS
            and not e.get("user", {}).get("username", "").startswith("system:")
        ]


@pytest.fixture
def audit(control_plane) -> Audit:
    """Audit(control_plane), marked at the start of the test: ``.mark()``, ``.writes(since=None)``."""
    return Audit(control_plane)


@pytest.fixture(scope="session")
def kubeconfig(request) -> str:
    """Path to an admin kubeconfig for the test cluster."""
    existing = os.environ.get(EXISTING_KUBECONFIG_ENV)
    if existing:
        path = Path(existing).expanduser()
        if not path.is_file():
            pytest.fail(f"{EXISTING_KUBECONFIG_ENV}={existing}: no such file", pytrace=False)
        return str(path.resolve())
    return request.getfixturevalue("_control_plane").kubeconfig


@pytest.fixture(scope="session")
def server_minor(api_client) -> int:
    """The API server's minor version (36 for v1.36.3), for expectations that differ by
    release: the test names both, e.g. ``403 if server_minor >= 34 else 405``."""
    from kubernetes.client import VersionApi

    return int(re.match(r"\d+", VersionApi(api_client).get_code().minor).group())


@pytest.fixture(scope="session")
def bin_dir(request) -> str:
    """Directory holding the built kubectl (controlplane.K8S_VERSION's, or $KUBEBUILDER_ASSETS's)."""
    return str(_find_binaries(request, ("kubectl",))["kubectl"].parent)


@pytest.fixture(scope="session")
def kube_env(kubeconfig, bin_dir, tmp_path_factory) -> dict[str, str]:
    """os.environ plus KUBECONFIG, PATH (bin_dir first), NO_COLOR=1, a private KUBECACHEDIR and
    XDG_STATE_HOME (the tool's records), PYTHONFAULTHANDLER."""
    env = dict(os.environ)
    env["KUBECONFIG"] = kubeconfig
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["NO_COLOR"] = "1"
    env["KUBECACHEDIR"] = str(tmp_path_factory.mktemp("kube-cache"))
    env["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))  # the tool's records, never the user's
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a crash of the tool leaves every thread's stack in its stderr
    return env


@pytest.fixture(scope="session")
def kubectl(bin_dir, kube_env):
    """kubectl(*args, input=None, check=True, timeout=60) -> CompletedProcess (text)."""
    exe = os.path.join(bin_dir, "kubectl")

    def run(*args, input=None, check=True, timeout=60):
        cmd = [exe, *map(str, args)]
        proc = subprocess.run(cmd, input=input, env=kube_env, text=True, capture_output=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise KubectlError(proc.returncode, cmd, proc.stdout, proc.stderr)
        return proc

    return run


@pytest.fixture(scope="session")
def api_client(kubeconfig):
    """A kubernetes.client.ApiClient for the kubeconfig's current context."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=kubeconfig)
    yield client
    with contextlib.suppress(Exception):
        client.close()


@pytest.fixture
def namespace(api_client):
    """A fresh namespace ``ut-<random>``; deleted (without waiting) afterwards."""
    from kubernetes.client import CoreV1Api
    from kubernetes.client.exceptions import ApiException

    core = CoreV1Api(api_client)
    name = f"ut-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name, "labels": {"unfinalize.test/fixture": "namespace"}}})
    yield name
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


@pytest.fixture
def make_crd(api_client):
    """Factory creating an Established CRD in a unique group; ``make(...)`` returns its CrdInfo.

    At teardown the objects of each CRD lose their finalizers and the CRD is deleted
    (best effort). The CRD's own cleanup finalizer is never touched.
    """
    from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi

    ext = ApiextensionsV1Api(api_client)
    custom = CustomObjectsApi(api_client)
    created: list[CrdInfo] = []

    def make(
        kind="Widget",
        plural=None,
        scope="Namespaced",
        short_names=(),
        group=None,
        versions=("v1",),
        labels=None,
        categories=(),
    ) -> CrdInfo:
        singular = kind.lower()
        plural = plural or singular + "s"
        group = group or f"t{secrets.token_hex(4)}.unfinalize.test"
        versions = [versions] if isinstance(versions, str) else list(versions)
        name = f"{plural}.{group}"
        schema = {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        }
        names = {"plural": plural, "singular": singular, "kind": kind, "listKind": kind + "List"}
        if short_names:
            names["shortNames"] = list(short_names)
        if categories:
            names["categories"] = list(categories)
        body = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {
                "group": group,
                "scope": scope,
                "names": names,
                "versions": [
                    {
                        "name": v,
                        "served": True,
                        "storage": i == 0,
                        "schema": schema,
                        "subresources": {"status": {}},
                    }
                    for i, v in enumerate(versions)
                ],
            },
        }
        ext.create_custom_resource_definition(body)
        info = CrdInfo(name, group, plural, kind, tuple(versions), scope)
        created.append(info)

        def established():
            crd = ext.read_custom_resource_definition(name)
            conditions = (crd.status and crd.status.conditions) or []
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        wait_until(f"CRD {name} to be Established", established)
        for v in versions:  # and served in discovery
            wait_until(
                f"{group}/{v} discovery to list {plural}",
                lambda v=v: _discovery_lists(custom, group, v, plural),
            )
        return info

    yield make
    # Not unfinalize(..., delete=True): the product's bug in teardown would go unseen and leave CRDs behind.
    for info in reversed(created):
        _delete_crd(ext, custom, info)


def _discovery_lists(custom, group: str, version: str, plural: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        resources = custom.get_api_resources(group, version).resources
    except ApiException:
        return False
    return any(r.name == plural for r in resources or ())


def _strip_finalizers(custom, info: CrdInfo) -> None:
    """Merge-patch finalizers away from every object of the CRD (all namespaces)."""
    from kubernetes.client.exceptions import ApiException

    group, version, plural = info.group, info.version, info.plural
    try:
        items = custom.list_cluster_custom_object(group, version, plural)["items"]
    except ApiException:
        return
    patch = {"metadata": {"finalizers": None}}
    for obj in items:
        meta = obj.get("metadata", {})
        if not meta.get("finalizers"):
            continue
        with contextlib.suppress(ApiException):
            if meta.get("namespace"):
                custom.patch_namespaced_custom_object(
                    group, version, meta["namespace"], plural, meta["name"], patch, _content_type=MERGE_PATCH
                )
            else:
                custom.patch_cluster_custom_object(
                    group, version, plural, meta["name"], patch, _content_type=MERGE_PATCH
                )


def _delete_crd(ext, custom, info: CrdInfo, timeout: float = 20.0) -> None:
    from kubernetes.client.exceptions import ApiException

    _strip_finalizers(custom, info)
    try:
        ext.delete_custom_resource_definition(info.name)
    except ApiException as e:
        if e.status == 404:
            return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ext.read_custom_resource_definition(info.name)
        except ApiException as e:
            if e.status == 404:
                return
        _strip_finalizers(custom, info)  # objects created or re-finalized meanwhile
        time.sleep(0.2)
