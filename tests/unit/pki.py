"""A certificate authority of the unit tests' own, made with openssl (which CI installs)."""

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
