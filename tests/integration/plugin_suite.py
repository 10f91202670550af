"""An operator's test suite in dask-kubernetes' shape, for the pytest plugin's tests
(test_pytest_plugin.py): a session fixture applies the CRDs, yields, and deletes them with a
waiting `kubectl delete -f crds/`; the kopf operator (operator/owner_operator.py: fleets own
ships, everything gets kopf's finalizer) runs under kopf.testing.KopfRunner for each test
and has stopped by then. Written into a directory of its own and run as a separate
pytest session, with the plugin found through its entry point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import entry_points
import yaml
from crdinfo import CrdInfo

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = Path(__file__).parent / "operator" / "owner_operator.py"
KINDS = {"Fleet": "fleets", "Ship": "ships", "Buoy": "buoys"}
PER_NAMESPACE = 3 + 3 + 1  # fleets, their ships, a buoy

CONFTEST = """
import os, subprocess, time
from pathlib import Path

import pytest
from kopf.testing import KopfRunner

HERE = Path(__file__).parent
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
NAMESPACE = os.environ["SUITE_NAMESPACE"] + (f"-{WORKER}" if WORKER else "")


def kubectl(*args):
    return subprocess.run(["kubectl", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def customresources():
    for attempt in range(3):  # under xdist both workers create the CRDs: one may find them just created
        applied = subprocess.run(["kubectl", "apply", "-f", str(HERE / "crds")], capture_output=True, text=True)
        if applied.returncode == 0:
            break
        assert "AlreadyExists" in applied.stderr and attempt < 2, applied.stderr
    kubectl("wait", "--for=condition=Established", "-f", str(HERE / "crds"), "--timeout=60s")
    yield
    # under xdist, each worker has this session fixture: the CRDs go once every worker's test ended
    deadline = time.monotonic() + 120
    while len(list(HERE.glob("ran-*"))) < int(os.environ.get("SUITE_WORKERS", "1")):
        assert time.monotonic() < deadline, "the other worker's test never ended"
        time.sleep(0.1)
    written = HERE / f".teardown-{WORKER or 'main'}"
    written.write_text(str(time.time()))
    written.rename(HERE / written.name[1:])  # whole when the test reads it
    if os.environ.get("DELETE_OBJECTS"):  # their deletion not left to the API server's CRD cleanup, which may lag
        kinds = ",".join(p.stem + "s." + os.environ["OPERATOR_GROUP"] for p in sorted((HERE / "crds").iterdir()))
        kubectl("delete", kinds, "--all", "-n", NAMESPACE, "--wait=false")
    kubectl("delete", "-f", str(HERE / "crds"), "--ignore-not-found", *os.environ.get("DELETE_ARGS", "").split())


@pytest.fixture(scope="session")
def namespace(customresources):
    subprocess.run(["kubectl", "create", "namespace", NAMESPACE], capture_output=True)  # kept from a last run?
    return NAMESPACE


@pytest.fixture
def kopf_runner(customresources, namespace):
    try:
        with KopfRunner(["run", "--standalone", "--namespace", namespace, os.environ["OPERATOR"]], timeout=60) as run:
            yield run
    finally:  # the operator has stopped: under xdist, the other worker's teardown may go on
        (HERE / f"ran-{WORKER or 'main'}").write_text("ran")
"""

TEST = """
import json, os, time

from conftest import HERE, WORKER, kubectl

KOPF = "kopf.zalando.org/KopfFinalizerMarker"


def create(namespace, kind, name):
    manifest = {"apiVersion": os.environ["OPERATOR_GROUP"] + "/v1", "kind": kind, "metadata": {"name": name}}
    path = HERE / f"{name}-{WORKER}.json"
    path.write_text(json.dumps(manifest))
    kubectl("create", "-n", namespace, "-f", str(path))


def test_fleets_launch_ships(kopf_runner, namespace):
    for i in range(3):
        create(namespace, "Fleet", f"f{i}")
    create(namespace, "Buoy", "b0")
    deadline = time.monotonic() + 60
    while True:
        kinds = ",".join(f"{plural}.{os.environ['OPERATOR_GROUP']}" for plural in ("fleets", "ships", "buoys"))
        items = json.loads(kubectl("get", kinds, "-n", namespace, "-o", "json"))["items"]
        if len(items) == 7 and all(KOPF in (o["metadata"].get("finalizers") or []) for o in items):
            break
        assert time.monotonic() < deadline, items
        time.sleep(0.2)
"""


@dataclass
class Suite:
    path: Path
    group: str
    namespace: str  # the namespace of the tests (under xdist: NAMESPACE-gw0, NAMESPACE-gw1)
    env: dict[str, str]

    @property
    def crds(self) -> list[str]:
        return [f"{plural}.{self.group}" for plural in KINDS.values()]

    def teardown_started(self) -> float | None:
        """When the first `kubectl delete -f crds/` began (epoch seconds)."""
        times = [float(p.read_text()) for p in self.path.glob("teardown-*")]
        return min(times) if times else None

    def run(self, *args: str, timeout: float = 240, hang: float | None = None) -> subprocess.CompletedProcess:
        """`python -m pytest ARGS` in the suite. `hang`: seconds after the teardown began
        after which the session counts as hung and is killed (returncode None)."""
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
        proc = subprocess.Popen(
            command, cwd=self.path, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,  # the session and its kubectl, killed together if it hangs
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            started = self.teardown_started()
            if hang is not None and started is not None and time.time() - started > hang:
                break
            time.sleep(0.2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0]
            return subprocess.CompletedProcess(command, None, out, "")  # type: ignore[arg-type]
        return subprocess.CompletedProcess(command, proc.returncode, proc.communicate()[0], "")


def write(path: Path, kube_env: dict[str, str], tag: str, ini: str = "", workers: int = 1) -> Suite:
    group = f"pl{tag}.unfinalize.test"
    (path / "crds").mkdir(parents=True)
    for kind, plural in KINDS.items():
        crd = CrdInfo.of(group, kind, plural).manifest(status=True)
        (path / "crds" / f"{kind.lower()}.yaml").write_text(yaml.safe_dump(crd))
    (path / "conftest.py").write_text(CONFTEST)
    for name in ("test_widgets.py", "test_widgets_too.py")[:workers]:
        (path / name).write_text(TEST)
    # the suite's own ini: the plugin looks only at this test's API group (the control plane is shared)
    (path / "pytest.ini").write_text(f"[pytest]\nunfinalize_groups = {group}\n{ini}")
    site = entry_points.install(path.parent / f"{path.name}-site")
    env = {k: v for k, v in kube_env.items() if not k.startswith(("PYTEST_", "UNFINALIZE_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(site), str(ROOT / "src")]),
        OPERATOR=str(OPERATOR),
        OPERATOR_GROUP=group,
        OPERATOR_KINDS="fleets,ships,Ship,buoys",
        SUITE_NAMESPACE=f"plugin-{tag}",
        SUITE_WORKERS=str(workers),
    )
    return Suite(path, group, f"plugin-{tag}", env)
