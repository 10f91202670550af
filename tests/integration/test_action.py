"""The GitHub Action (action.yml, packaging/github-action.sh): its one step, run as the
runner runs it (action.yml's env and run line, the inputs substituted), against a local
copy of a release (the archive and its .sha256 that `make binary` wrote) and the test
control plane.

The archive is dist/'s, or the one next to UNFINALIZE_BINARY; without it the tests are
skipped with the reason, except under CI, where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from crs import create, delete

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
TAG = "v0.0.0-test"


@pytest.fixture(scope="module")
def archive() -> Path:
    binary = os.environ.get("UNFINALIZE_BINARY")
    folder = Path(binary).resolve().parent if binary else ROOT / "dist"
    found = sorted(folder.glob("kubectl-unfinalize_*.tar.gz"))
    if not found:
        message = f"no release archive in {folder}: run make binary"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found[0]


@pytest.fixture
def releases(archive, tmp_path) -> Path:
    """<releases>/download/TAG/ with the archive and its .sha256, as a GitHub release has them."""
    folder = tmp_path / "releases" / "download" / TAG
    folder.mkdir(parents=True)
    shutil.copy2(archive, folder / archive.name)
    shutil.copy2(f"{archive}.sha256", folder / f"{archive.name}.sha256")
    return tmp_path / "releases"


def run_action(tmp_path: Path, env: dict[str, str], **inputs: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The composite action's step with these inputs (the others their defaults), in a
    runner-like environment; returns the result and the runner's folder."""
    (step,) = ACTION["runs"]["steps"]
    assert ACTION["runs"]["using"] == "composite" and step["shell"] == "bash"
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()} | inputs

    def expand(text: str) -> str:
        return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: values[m.group(1)], text)

    runner = tmp_path / "runner"
    runner.mkdir(exist_ok=True)
    step_env = dict(
        env,
        GITHUB_ACTION_PATH=str(ROOT),
        RUNNER_TEMP=str(runner),
        GITHUB_PATH=str(runner / "path"),
        GITHUB_OUTPUT=str(runner / "output"),
        **{name: expand(value) for name, value in step["env"].items()},
    )
    result = subprocess.run(
        ["bash", "-c", step["run"]], env=step_env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    return result, runner


def test_the_action_installs_the_release_checks_it_and_runs_the_given_command(
    api_client, make_crd, namespace, kube_env, releases, tmp_path
):
    crd = make_crd()
    create(api_client, crd, "held", namespace, finalizers=["example.com/gone-controller"])
    delete(api_client, crd, "held", namespace)
    args = f"crd {crd.name} --delete"
    result, runner = run_action(tmp_path, kube_env, version=TAG, releases=releases.as_uri(), args=args)
    assert result.returncode == 0, result.stderr
    assert f"installed kubectl-unfinalize {TAG} (" in result.stdout
    assert f"+ kubectl unfinalize {args}" in result.stdout
    assert f"{crd.kind.lower()}.{crd.group}/held unfinalized" in result.stdout
    assert "1 scanned, 1 unfinalized, 0 already gone, 0 failed, 1 deleted" in result.stderr
    # the CRD is gone (read back), so its object is too
    from kubernetes.client import ApiextensionsV1Api
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as gone:
        ApiextensionsV1Api(api_client).read_custom_resource_definition(crd.name)
    assert gone.value.status == 404

    # later steps find it on PATH; the step's output names it
    install = Path((runner / "path").read_text().strip())
    binary = next(install.glob("kubectl-unfinalize*"))
    assert (runner / "output").read_text() == f"path={binary}\n"
    later = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    assert later.stdout.startswith("kubectl-unfinalize ")


def test_the_default_command_scans_and_its_exit_code_is_the_step_s(
    api_client, make_crd, namespace, kube_env, releases, tmp_path
):
    """Defaults: scan --wait --timeout 2m; given instead a scan that cannot wait, a held
    object just deleted is pending: exit 3, the step fails with it."""
    assert ACTION["inputs"]["args"]["default"] == "scan --wait --timeout 2m"
    crd = make_crd()
    create(api_client, crd, "held", namespace, finalizers=["example.com/gone-controller"])
    delete(api_client, crd, "held", namespace)
    result, _ = run_action(tmp_path, kube_env, version=TAG, releases=releases.as_uri(), args=f"scan -n '{namespace}'")
    assert result.returncode == 3, result.stdout + result.stderr
    assert crd.name.split(".")[0] in result.stdout and "pending" in result.stdout


def test_a_wrong_checksum_fails_before_anything_is_unpacked_or_run(
    api_client, make_crd, namespace, kube_env, releases, archive, tmp_path
):
    crd = make_crd()
    create(api_client, crd, "held", namespace, finalizers=["example.com/gone-controller"])
    sums = releases / "download" / TAG / f"{archive.name}.sha256"
    sums.write_text("0" * 64 + f"  {archive.name}\n")
    result, runner = run_action(tmp_path, kube_env, version=TAG, releases=releases.as_uri(), args=f"crd {crd.name}")
    assert result.returncode == 2
    assert "does not match its .sha256" in result.stderr and "not installed" in result.stderr
    assert "installed kubectl-unfinalize" not in result.stdout
    assert not list(runner.rglob("kubectl-unfinalize")) and not list(runner.rglob("kubectl-unfinalize.exe"))
    assert not (runner / "path").exists()
    from kubernetes.client import CustomObjectsApi

    held = CustomObjectsApi(api_client).get_namespaced_custom_object(
        crd.group, crd.version, namespace, crd.plural, "held"
    )
    assert held["metadata"]["finalizers"] == ["example.com/gone-controller"]  # nothing ran


def test_no_args_only_installs(kube_env, releases, tmp_path):
    result, runner = run_action(tmp_path, kube_env, version=TAG, releases=releases.as_uri(), args="")
    assert result.returncode == 0, result.stderr
    assert "+ kubectl unfinalize" not in result.stdout
    assert (runner / "path").read_text().strip()


def test_a_missing_release_is_one_clear_error(kube_env, releases, tmp_path):
    result, _ = run_action(tmp_path, kube_env, version="v9.9.9", releases=releases.as_uri())
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("::error title=kubectl-unfinalize::cannot download ")
