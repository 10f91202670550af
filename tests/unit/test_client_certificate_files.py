"""A kubeconfig's client certificate and key given as data reach ssl (which reads files
only) through files that exist only while they are read: memory files on Linux, a private
temporary directory elsewhere."""

from __future__ import annotations

import os
import tempfile

import pytest

from kubectl_unfinalize.kube.pem_files import pem_files

CERT, KEY = b"-----BEGIN CERTIFICATE-----\ncert\n", b"-----BEGIN PRIVATE KEY-----\nkey\n"


def ours() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("kubectl-unfinalize-")}


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memory files are Linux's")
def test_data_is_read_from_memory_files_that_are_gone_after():
    before = ours()
    with pem_files(cert_data=CERT, key_data=KEY) as (cert, key):
        assert cert.startswith("/proc/self/fd/") and key is not None and key.startswith("/proc/self/fd/")
        with open(cert, "rb") as c, open(key, "rb") as k:
            assert (c.read(), k.read()) == (CERT, KEY)
        assert ours() == before  # nothing was written to the temporary directory
    with pytest.raises(OSError):
        open(cert, "rb")  # noqa: SIM115 - the descriptor was closed


def test_without_memory_files_a_private_directory_is_removed_after(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delattr(os, "memfd_create", raising=False)
    with pem_files(cert_data=CERT, key_data=KEY) as (cert, key):
        assert key is not None and os.path.dirname(cert) == os.path.dirname(key)
        assert os.stat(key).st_mode & 0o077 == 0
        with open(key, "rb") as k:
            assert k.read() == KEY
    assert not os.path.exists(os.path.dirname(cert))


def test_files_named_in_the_kubeconfig_are_used_as_they_are(tmp_path):
    cert, key = tmp_path / "c.crt", tmp_path / "c.key"
    with pem_files(cert_file=str(cert), key_file=str(key)) as paths:
        assert paths == (str(cert), str(key))
    with pem_files(cert_file=str(cert), key_data=KEY) as (got_cert, got_key):
        assert got_cert == str(cert) and got_key is not None and got_key != str(key)
        with open(got_key, "rb") as k:
            assert k.read() == KEY


def test_certificate_data_that_is_not_a_certificate_is_one_line_naming_the_kubeconfig(tmp_path, monkeypatch):
    """Not the memory file's /proc path, which would mean nothing to the user."""
    import base64

    import yaml

    from kubectl_unfinalize.errors import ConfigError
    from kubectl_unfinalize.kube.config import connect
    from kubectl_unfinalize.options import ConnectionOptions

    garbage = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://a.example:6443"}}],
        "users": [{"name": "u", "user": {"client-certificate-data": garbage, "client-key-data": garbage}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", str(path))
    with pytest.raises(ConfigError, match=r"^invalid client certificate or key \(kubeconfig data\): "):
        connect(ConnectionOptions())
