"""krew: the release-bot template renders to a valid manifest that installs the archive."""

from __future__ import annotations

import hashlib
import os
import re
import runpy
import subprocess
import sys

import pytest
from pkgtest import ROOT, clean_env, platform_name

render_script = ROOT / "packaging" / "render-krew-manifest.py"
render_module = runpy.run_path(str(render_script))
TEMPLATE = (ROOT / "krew-manifest.yaml").read_text()
PLATFORMS = ["linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"]


def render(tmp_path, tag: str, *archives) -> str:
    out = tmp_path / "unfinalize.yaml"  # validate-krew-manifest wants <plugin name>.yaml
    subprocess.run(
        [sys.executable, str(render_script), tag, *map(str, archives), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    return str(out)


def validate(tools, manifest: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(tools / "validate-krew-manifest"), "-manifest", manifest, *flags], capture_output=True, text=True
    )


def test_template_is_what_krew_release_bot_expects():
    calls = re.findall(r"^( *)\{\{ *addURIAndSha \"([^\"]+)\" \.TagName *\}\}$", TEMPLATE, re.M)
    assert [indent for indent, _ in calls] == ["    "] * len(PLATFORMS)  # the bot writes sha256 at 4 spaces
    names = [url.rsplit("/", 1)[-1] for _, url in calls]
    assert names == [f"kubectl-unfinalize_{p}.tar.gz" for p in PLATFORMS]
    assert all(
        url.startswith("https://github.com/kubectl-unfinalize/kubectl-unfinalize/releases/download/{{ .TagName }}/")
        for _, url in calls
    )
    assert "version: {{ .TagName }}" in TEMPLATE
    assert "orphan" in TEMPLATE  # the description warns what removing finalizers can leave behind


def test_every_platform_renders_and_validates(tools, tmp_path):
    archives = []
    for name in PLATFORMS:
        archives.append(tmp_path / f"kubectl-unfinalize_{name}.tar.gz")
        archives[-1].write_bytes(name.encode())
    manifest = render(tmp_path, "v1.2.3", *archives)
    text = open(manifest).read()
    assert "{{" not in text and text.count("sha256: ") == len(PLATFORMS)
    assert "bin: kubectl-unfinalize.exe" in text
    result = validate(tools, manifest, "-skip-install")
    assert result.returncode == 0, result.stderr


def test_render_fills_uri_and_sha256_for_the_local_archive(tmp_path):
    archive = tmp_path / "kubectl-unfinalize_linux_arm64.tar.gz"
    archive.write_bytes(b"archive bytes")
    text, missing = render_module["render"](TEMPLATE, "v0.9.0", {archive.name: archive})
    assert len(missing) == len(PLATFORMS) - 1
    assert "version: v0.9.0" in text
    assert "uri: https://github.com/kubectl-unfinalize/kubectl-unfinalize/releases/download/v0.9.0/" in text
    assert f"sha256: {hashlib.sha256(b'archive bytes').hexdigest()}" in text
    assert text.count("- selector:") == 1 and "description: |" in text


def test_krew_installs_the_archive(binary, archive, tools, tmp_path):
    manifest = render(tmp_path, "v0.0.0-test", archive)
    result = validate(tools, manifest, "-skip-install")
    assert result.returncode == 0, result.stderr

    krew_root, home, shims = tmp_path / "krew", tmp_path / "home", tmp_path / "shims"
    home.mkdir()
    shims.mkdir()
    (shims / "kubectl-krew").symlink_to(tools / "krew")  # `kubectl krew`, as validate-krew-manifest runs it
    # the built kubectl first; no Python and no git on PATH: krew needs neither for a local archive
    env = clean_env(home, os.pathsep.join([str(krew_root / "bin"), str(shims), str(tools)]), KREW_ROOT=str(krew_root))
    if platform_name() != "linux_amd64":
        env.update(KREW_OS=platform_name().split("_")[0], KREW_ARCH=platform_name().split("_")[1])
    kubectl = str(tools / "kubectl")
    install = subprocess.run(
        [kubectl, "krew", "install", f"--manifest={manifest}", f"--archive={archive}"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert "kubectl_complete-unfinalize" in install.stdout + install.stderr  # the caveat is shown

    store = krew_root / "store" / "unfinalize" / "v0.0.0-test"
    assert sorted(p.name for p in store.iterdir()) == ["LICENSE", "kubectl-unfinalize", "kubectl_complete-unfinalize"]
    link = krew_root / "bin" / "kubectl-unfinalize"
    assert link.is_symlink() and link.resolve() == (store / "kubectl-unfinalize").resolve()

    listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env)
    assert str(link) in listed.stdout, listed.stdout + listed.stderr
    helped = subprocess.run([kubectl, "unfinalize", "--help"], capture_output=True, text=True, env=env)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: kubectl unfinalize crd [NAME...]")
    completed = subprocess.run(
        [str(store / "kubectl_complete-unfinalize"), "crd", "--dry-run="], capture_output=True, text=True, env=env
    )
    assert completed.stdout.splitlines()[-1] == ":4" and "--dry-run=server" in completed.stdout


@pytest.mark.parametrize("tag", ["0.1.0", "v1", "latest"])
def test_render_rejects_tags_krew_would_reject(tag, tmp_path):
    archive = tmp_path / "kubectl-unfinalize_linux_amd64.tar.gz"
    archive.write_bytes(b"x")
    result = subprocess.run([sys.executable, str(render_script), tag, str(archive)], capture_output=True, text=True)
    assert result.returncode == 2 and "semantic version" in result.stderr
