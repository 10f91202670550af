"""A certificate authority of the tests' own, and client certificates signed by one (the
control plane's client CA in the integration tests), made with openssl (which CI installs)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed_ca(path: Path | str) -> None:
    """A self-signed CA certificate at `path`, its key beside it (`path`.key)."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(path) + ".key", "-out", str(path), "-days", "1", "-subj", "/CN=test-ca"],
        check=True, capture_output=True,
    )  # fmt: skip


CA_CONFIG = """[ca]
default_ca = signing
[signing]
database = {directory}/index.txt
new_certs_dir = {directory}
rand_serial = yes
default_md = sha256
policy = any
unique_subject = no
x509_extensions = client
[any]
organizationName = optional
commonName = supplied
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
"""


def signing_folder(directory: Path) -> Path:
    """`directory` made ready for `openssl ca -config` with the client-certificate profile
    above; returns that config file."""
    directory.mkdir(exist_ok=True)
    (directory / "index.txt").touch()
    config = directory / "ca.cnf"
    config.write_text(CA_CONFIG.format(directory=directory))
    return config


def client_certificate(ca: Path, directory: Path, name: str, valid_from: float, valid_to: float) -> tuple[bytes, bytes]:
    """A client certificate for CN=`name` signed by the CA at `ca` (self_signed_ca's),
    valid between two times (seconds since the epoch, to the second), and its key."""
    import time

    signing_folder(directory)
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.crt"
    stamp = lambda t: time.strftime("%y%m%d%H%M%SZ", time.gmtime(t))  # noqa: E731
    for command in (
        ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}"],
        ["ca", "-batch", "-config", str(directory / "ca.cnf"), "-cert", str(ca), "-keyfile", str(ca) + ".key",
         "-in", str(csr), "-out", str(cert), "-startdate", stamp(valid_from), "-enddate", stamp(valid_to),
         "-notext"],
    ):  # fmt: skip
        subprocess.run(["openssl", *command], check=True, capture_output=True)
    return cert.read_bytes(), key.read_bytes()
