"""The cluster fixtures: a control plane, its audit log, a kubeconfig, kubectl, an API client
and a fresh namespace, for the tests that need a Kubernetes API server.

tests/integration/conftest.py names these fixtures (a test elsewhere cannot reach them);
a scratch suite loads the module as a plugin (``pytest -p clusterfixtures``). They are
lazy: a local control plane (the ``controlplane`` package next to this file) starts once
per session, only when a test asks for ``kubeconfig`` (directly or through
``kube_env``/``kubectl``/``api_client``/``namespace``/``make_crd``). Set
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
import subprocess
from pathlib import Path

import controlplane
import pytest

EXISTING_KUBECONFIG_ENV = "UNFINALIZE_TEST_KUBECONFIG"
OWN_CONTROL_PLANE_NEEDED = "fault tests need the project's own control plane (unset UNFINALIZE_TEST_KUBECONFIG)"
STARTUP_KEY = pytest.StashKey[float]()


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
    request.config.stash[STARTUP_KEY] = cp.startup_seconds
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
