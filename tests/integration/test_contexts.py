"""scan over several contexts (issue 42): two control planes in one kubeconfig, each with
its own CA and client certificate, held objects on both; a third context whose server
does not answer. Each context is scanned and freed on its own connection with its own
credentials (each API server's audit log shows its own writes), one record per context,
and the exit status is the worst of theirs."""

from __future__ import annotations

import contextlib
import json
import secrets
from pathlib import Path

import controlplane
import pytest
import yaml
from kubernetes import config as kube_config
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

FINALIZER = "shop.example.com/cleanup"


@pytest.fixture(scope="module")
def second(control_plane):
    """A second control plane (its own etcd, PKI and audit log), beside the session's."""
    cp = controlplane.ControlPlane(audit=True, controllers=("namespace-controller",))
    try:
        cp.start()
    except controlplane.ControlPlaneError as exc:
        pytest.fail(f"cannot start a second control plane:\n{exc}", pytrace=False)
    yield cp
    cp.stop()


@pytest.fixture
def merged(control_plane, second, tmp_path) -> Path:
    """One kubeconfig: contexts one (the session's cluster), two (the second) and dead
    (the first's credentials, a port nothing listens on)."""
    entries: dict[str, list] = {"clusters": [], "users": [], "contexts": []}
    for name, cp in (("one", control_plane), ("two", second)):
        doc = yaml.safe_load(Path(cp.kubeconfig).read_text())
        entries["clusters"].append({"name": name, "cluster": doc["clusters"][0]["cluster"]})
        entries["users"].append({"name": name, "user": doc["users"][0]["user"]})
        entries["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    dead = dict(entries["clusters"][0]["cluster"], server="https://127.0.0.1:1")
    entries["clusters"].append({"name": "dead", "cluster": dead})
    entries["contexts"].append({"name": "dead", "context": {"cluster": "dead", "user": "one"}})
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "one", **entries}))
    return path


@pytest.fixture
def held():
    """held(kubeconfig, namespace) -> CoreV1Api: a namespace with a ConfigMap deleted and
    held by a finalizer nothing removes. Afterwards the ConfigMap is let go and the
    namespace deleted, so no later scan of the cluster meets them."""
    made: list[tuple[CoreV1Api, str]] = []

    def make(kubeconfig: str, namespace: str) -> CoreV1Api:
        core = CoreV1Api(kube_config.new_client_from_config(config_file=kubeconfig))
        core.create_namespace({"metadata": {"name": namespace}})
        made.append((core, namespace))
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "cart", "finalizers": [FINALIZER]}})
        core.delete_namespaced_config_map("cart", namespace)
        return core

    yield make
    for core, namespace in made:
        with contextlib.suppress(ApiException):
            core.patch_namespaced_config_map("cart", namespace, {"metadata": {"finalizers": None}})
        with contextlib.suppress(ApiException):
            core.delete_namespace(namespace)


def gone(core: CoreV1Api, namespace: str) -> bool:
    try:
        core.read_namespaced_config_map("cart", namespace)
    except ApiException as exc:
        return exc.status == 404
    return False


@pytest.mark.timeout(240)
def test_scan_and_free_over_every_context_each_with_its_own_connection(control_plane, second, merged, cli, held):
    namespace = f"ctx-{secrets.token_hex(4)}"
    cores = {
        "one": held(control_plane.kubeconfig, namespace),
        "two": held(second.kubeconfig, namespace),
    }
    env = {"KUBECONFIG": str(merged)}
    both = ["--context", "one", "--context", "two", "-n", namespace]

    judged = cli("scan", *both, "--wait", "--timeout", "90s", env=env)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    sections = judged.stdout.split("== context ")
    assert [s.split(" ==")[0] for s in sections[1:]] == ["one", "two"]
    for name, section in zip(("one", "two"), sections[1:], strict=True):
        assert FINALIZER in section and "stuck: no controller seen" in section
        assert f"kubectl unfinalize configmaps cart -n {namespace} --finalizer {FINALIZER} --context {name}" in section

    marks = {"one": control_plane.audit_mark(), "two": second.audit_mark()}
    freed = cli("scan", "--free", *both, "--wait", "--timeout", "60s", "-o", "json", env=env)
    assert freed.returncode == 0, freed.stdout + freed.stderr
    document = json.loads(freed.stdout)
    assert document["ok"] is True and [c["context"] for c in document["contexts"]] == ["one", "two"]
    records = [c["scan"]["record"] for c in document["contexts"]]
    assert len(set(records)) == 2 and all(Path(r).is_file() for r in records)  # one record per context
    for name, record in zip(("one", "two"), records, strict=True):  # what reads it names its context
        hint = f"(kubectl unfinalize history --context {name}; undo ID --context {name} puts back what it freed)"
        assert f"context {name}: record: {record} {hint}" in freed.stderr.splitlines()
    assert all(gone(core, namespace) for core in cores.values())  # read back on each cluster
    for name, cp in (("one", control_plane), ("two", second)):
        patched = [
            e for e in cp.audit_events(marks[name]) if e["verb"] == "patch" and e["objectRef"].get("name") == "cart"
        ]
        assert len(patched) == 1, f"context {name}: {patched}"  # its own cluster, its own client certificate
        assert patched[0]["user"]["username"] == controlplane.ADMIN_USER


@pytest.mark.timeout(240)
def test_an_unreachable_context_is_named_and_fails_the_run_while_the_others_are_freed(
    control_plane, second, merged, cli, held
):
    namespace = f"ctx-{secrets.token_hex(4)}"
    core = held(second.kubeconfig, namespace)
    result = cli(
        "scan",
        "--free",
        "--all-contexts",
        "-n",
        namespace,
        "--wait",
        "--timeout",
        "60s",
        env={"KUBECONFIG": str(merged)},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "== context dead ==\nerror: cannot reach the API server at https://127.0.0.1:1" in result.stdout
    assert [line for line in result.stderr.splitlines() if line.startswith("context dead: error: ")]
    assert gone(core, namespace)


def test_an_unknown_context_is_refused_before_anything_is_sent(merged, cli, control_plane):
    mark = control_plane.audit_mark()
    result = cli("scan", "--free", "--context", "one", "--context", "nope", env={"KUBECONFIG": str(merged)})
    assert result.returncode == 2
    assert result.stderr.strip() == "error: context 'nope' not found in kubeconfig (available: dead, one, two)"
    sent = [e for e in control_plane.audit_events(mark) if e["user"]["username"] == controlplane.ADMIN_USER]
    assert sent == []


@pytest.mark.timeout(240)
def test_a_printed_command_frees_in_its_own_context(control_plane, second, merged, cli, held):
    """The command printed under context two names it: run as printed (the kubeconfig's
    current context is one), it frees the object on cluster two and leaves one's held."""
    namespace = f"ctx-{secrets.token_hex(4)}"
    one, two = held(control_plane.kubeconfig, namespace), held(second.kubeconfig, namespace)
    env = {"KUBECONFIG": str(merged)}
    judged = cli("scan", "--context", "one", "--context", "two", "-n", namespace, "--wait", "--timeout", "90s", env=env)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    section = judged.stdout.split("== context two ==")[1]
    (printed,) = [line.split("free: ", 1)[1] for line in section.splitlines() if "free: " in line]
    assert printed.startswith("kubectl unfinalize ") and printed.endswith(" --context two")
    freed = cli(*printed.split()[2:], env=env)
    assert freed.returncode == 0, freed.stderr
    assert gone(two, namespace) and not gone(one, namespace)


@pytest.mark.timeout(240)
def test_a_freeing_command_runs_in_each_context_with_a_record_each(control_plane, second, merged, cli, held, tmp_path):
    """`configmaps cart -n NS --finalizer F` with --all-contexts: freed on both clusters
    (read back), each line and summary naming its context, one record per context; the
    dead context fails the run by name."""
    namespace = f"ctx-{secrets.token_hex(4)}"
    cores = {"one": held(control_plane.kubeconfig, namespace), "two": held(second.kubeconfig, namespace)}
    # a folder of records of this test alone: "--last" is then this run's, not another test's of the session
    env = {"KUBECONFIG": str(merged), "XDG_STATE_HOME": str(tmp_path / "state")}
    result = cli("configmaps", "cart", "-n", namespace, "--finalizer", FINALIZER, "--all-contexts", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert sorted(result.stdout.splitlines()) == [
        f"{name}: configmap/cart unfinalized (namespace {namespace}; removed {FINALIZER})" for name in ("one", "two")
    ]
    assert all(gone(core, namespace) for core in cores.values())
    records = [line for line in result.stderr.splitlines() if ": record: " in line]
    assert sorted(line.split(":")[0] for line in records) == ["context one", "context two"]
    assert len({line.split("record: ")[1].split()[0] for line in records}) == 2
    # the commands each record line names read that context's record (another's is not this one's)
    for line in records:
        context, path = line.split(":")[0].split()[1], line.split("record: ")[1].split()[0]
        assert f"(history --last --context {context} shows it; undo --last --context {context} puts" in line
        shown = cli("history", "--last", "--context", context, "-o", "json", env=env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["summary"]["id"] == Path(path).stem
    assert "context dead: error: cannot reach the API server at https://127.0.0.1:1" in result.stderr

    both = cli("configmaps", "cart", "-n", namespace, "--context", "one", "--context", "two", env=env)
    assert both.returncode == 0, both.stderr  # nothing left to free: each says so, and nothing failed


def test_scan_each_from_python_returns_one_report_per_context(control_plane, second, merged, held):
    from kubectl_unfinalize import ContextScans, IncompleteError, scan_each
    from kubectl_unfinalize.errors import ExitStatus

    namespace = f"ctx-{secrets.token_hex(4)}"
    held(second.kubeconfig, namespace)
    scans = scan_each(all_contexts=True, kubeconfig=str(merged), namespace=namespace)
    assert isinstance(scans, ContextScans) and scans.contexts == ["one", "two", "dead"]
    assert scans.reports["one"].ok and [g.resource for g in scans.reports["two"].pending] == ["configmaps"]
    assert set(scans.errors) == {"dead"} and scans.errors["dead"].startswith("cannot reach the API server")
    assert scans.statuses == {"one": ExitStatus.OK, "two": ExitStatus.PENDING, "dead": ExitStatus.FAILED}
    assert scans.exit_status == ExitStatus.FAILED
    with pytest.raises(IncompleteError, match=r"context dead: cannot reach.*; context two: 1 configmaps held by"):
        scans.raise_for_failure()
