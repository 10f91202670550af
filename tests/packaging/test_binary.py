"""The one-file binary and its release archive."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
import tarfile

import pytest
from pkgtest import ROOT, clean_env

from kubectl_unfinalize._version import __version__


def run(binary, tmp_path, *args):
    # no Python of ours, no kubeconfig, no site-packages: only what the binary carries
    return subprocess.run([str(binary), *args], capture_output=True, text=True, env=clean_env(tmp_path), timeout=60)


def test_version_and_help_without_any_python_environment(binary, tmp_path):
    version = run(binary, tmp_path, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith(f"kubectl-unfinalize {__version__} (python ")
    assert "kubernetes client unknown" not in version.stdout  # the metadata is bundled
    helped = run(binary, tmp_path, "--help")
    assert helped.returncode == 0 and "--dry-run" in helped.stdout


def test_a_run_reaches_the_kubernetes_client(binary, tmp_path):
    """Exercises the lazily imported modules (connection, kubernetes.config): a config error, not an ImportError."""
    result = run(binary, tmp_path, "crd", "widgets", "--kubeconfig", str(tmp_path / "missing"))
    assert (result.returncode, result.stderr.strip()) == (2, f"error: kubeconfig not found: {tmp_path / 'missing'}")
    (tmp_path / "config").write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    result = run(binary, tmp_path, "crd", "widgets", "--kubeconfig", str(tmp_path / "config"))
    assert result.returncode == 1 and "cannot reach the API server" in result.stderr, result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="the credential plugin is a shell script")
def test_an_exec_credential_plugin_runs_and_basic_auth_loads_the_kubernetes_client(binary, tmp_path):
    """The tool runs an exec plugin itself (subprocess, json, datetime: in the binary);
    basic auth is read by the kubernetes client (pydantic, dateutil, ...): on Linux its
    libraries come out of lazy-binaries.zip on first import. A missing one would end the
    run as an unexpected ImportError, not as the unreachable server."""
    plugin = tmp_path / "credential"
    plugin.write_text(
        '#!/bin/sh\necho \'{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",'
        ' "status": {"token": "from-the-plugin"}}\'\n'
    )
    plugin.chmod(0o755)
    users = {
        "exec": f"{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: {plugin}, interactiveMode: Never}}}}",
        "basic": "{username: u, password: p}",
    }
    for kind, user in users.items():
        (tmp_path / kind).write_text(
            "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
            f"users: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n"
            "current-context: x\n"
        )
        result = run(binary, tmp_path, "crd", "widgets", "--kubeconfig", str(tmp_path / kind), "-v")
        assert result.returncode == 1, (kind, result.stderr)
        assert result.stderr.strip().endswith(
            "error: cannot reach the API server at https://127.0.0.1:1: Connection refused"
        ), (kind, result.stderr)
        assert "ImportError" not in result.stderr and "ModuleNotFoundError" not in result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="lazy-binaries.zip is built on Linux only")
def test_the_client_paths_libraries_are_not_unpacked_at_every_start(binary):
    """What one-file start-up unpacks (typecodes b, x) holds none of the client path's
    extension modules; lazy-binaries.zip carries them."""
    from PyInstaller.archive.readers import CArchiveReader

    toc = CArchiveReader(str(binary)).toc
    unpacked = {name for name, entry in toc.items() if entry[-1] in "bxd"}
    assert "lazy-binaries.zip" in unpacked
    assert not [n for n in unpacked if n.startswith(("pydantic_core/", "charset_normalizer/", "certifi/"))]
    assert not [n for n in unpacked if n.split("/")[-1].startswith(("_decimal.", "_ctypes.", "libffi."))]
    assert [n for n in unpacked if n.split("/")[-1].startswith("_ssl.")]  # the tool's own path stays


# What a freeing run imports before and while it writes (its record is memory-mapped; the
# credential code imports subprocess): the whole package's run path, from the source.
RUN_PATH = (
    "kubectl_unfinalize.cli.main",
    "kubectl_unfinalize.cli.run_command",
    "kubectl_unfinalize.cli.output",
    "kubectl_unfinalize.api",
    "kubectl_unfinalize.engine.loop",
    "kubectl_unfinalize.kube.config",
    "kubectl_unfinalize.records.mapped",
    "kubectl_unfinalize.records.recorded",
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="lazy-binaries.zip is built on Linux only")
def test_a_freeing_run_never_unpacks_the_client_paths_libraries(binary):
    """lazy-binaries.zip is inflated whole (3 MB, 30 ms of CPU) on the first import of any
    module in it: one the tool's own run imports (mmap for its record) cost every writing
    run that, for a 60 KB library. So none of the run path's extension modules is in it."""
    import io
    import zipfile

    from PyInstaller.archive.readers import CArchiveReader

    lazy = zipfile.ZipFile(io.BytesIO(CArchiveReader(str(binary)).extract("lazy-binaries.zip"))).namelist()
    lazy_modules = {name.split("/")[-1].split(".")[0] for name in lazy if name.endswith(".so")}
    code = (
        "import importlib, sys\n"
        f"for name in {RUN_PATH!r}: importlib.import_module(name)\n"
        "files = {n: getattr(m, '__file__', '') or '' for n, m in list(sys.modules.items())}\n"
        "print(' '.join(sorted(n for n, f in files.items() if f.endswith('.so'))))"
    )
    env = {"PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    imported = {name.split(".")[-1] for name in result.stdout.split()}
    assert "mmap" in imported and "_ssl" in imported  # the run path was imported
    assert imported & lazy_modules == set(), sorted(imported & lazy_modules)


def test_the_binary_carries_its_interpreters_precompiled_dataclass_methods(binary, tmp_path):
    """dataclass-code.marshal is unpacked beside the hook that reads it, and was written by
    the interpreter the binary runs (the hook ignores a table of any other)."""
    import marshal

    from PyInstaller.archive.readers import CArchiveReader

    reader = CArchiveReader(str(binary))
    assert "dataclass_code_rthook" in reader.toc
    version, table = marshal.loads(reader.extract("dataclass-code.marshal"))
    python = run(binary, tmp_path, "--version").stdout.split("(python ")[1].split(",")[0]
    assert version.split()[0] == python
    assert len(table) > 200 and all(text.startswith("def __create_fn__(") for text in table)


def test_binary_completes(binary, tmp_path):
    result = run(binary, tmp_path, "__complete", "crd", "x", "-o", "")
    assert (result.returncode, result.stdout) == (0, "text\nname\nwide\njson\nyaml\n:4\n")


def test_archive_is_deterministic_and_complete(binary, archive, tmp_path):
    raw = archive.read_bytes()
    assert raw[4:8] == b"\0\0\0\0" and raw[3] & 0x08 == 0  # gzip: no mtime, no file name (gzip -n)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        assert set(names) == {"LICENSE", "kubectl-unfinalize", "kubectl-unfinalize.1", "kubectl_complete-unfinalize"}
        assert len({m.mtime for m in members}) == 1
        for member in members:
            assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
            assert member.mode == (0o755 if member.name.startswith("kubectl") and "." not in member.name else 0o644)
        assert tar.extractfile("kubectl-unfinalize").read() == binary.read_bytes()
        assert tar.extractfile("LICENSE").read() == (ROOT / "LICENSE").read_bytes()
        assert tar.extractfile("kubectl-unfinalize.1").read().startswith(b".TH KUBECTL\\-UNFINALIZE")
    digest, name = archive.with_name(archive.name + ".sha256").read_text().split()
    assert (digest, name) == (hashlib.sha256(raw).hexdigest(), archive.name)
    assert gzip.decompress(raw)  # and it is a valid stream
