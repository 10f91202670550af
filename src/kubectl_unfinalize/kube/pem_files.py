"""A client certificate and key as files, for ssl's load_cert_chain, which reads files only."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from functools import partial


@contextlib.contextmanager
def pem_files(
    cert_file: str | None = None,
    cert_data: bytes | None = None,
    key_file: str | None = None,
    key_data: bytes | None = None,
) -> Iterator[tuple[str, str | None]]:
    """Paths of the client certificate and key. Those given as data (a kubeconfig's, an
    exec plugin's) are written where they are read at once and then gone: on Linux a
    memory file (memfd), so a private key never reaches a disk (and the start-up saves a
    temporary directory's creation and removal: tempfile imports shutil and random);
    elsewhere a private temporary directory."""
    if cert_file and (key_file or not key_data):
        yield cert_file, key_file
        return
    with contextlib.ExitStack() as stack:
        if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
            write: Callable[[str, bytes], str] = partial(_memory_file, stack)
        else:
            import tempfile

            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="kubectl-unfinalize-"))
            write = partial(_private_file, directory)
        cert = cert_file or write("client.crt", cert_data or b"")
        key = key_file or (write("client.key", key_data) if key_data else None)
        yield cert, key


def _memory_file(stack: contextlib.ExitStack, name: str, data: bytes) -> str:
    fd = os.memfd_create(f"kubectl-unfinalize-{name}", os.MFD_CLOEXEC)
    stack.callback(os.close, fd)
    os.write(fd, data)
    return f"/proc/self/fd/{fd}"


def _private_file(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as handle:
        handle.write(data)
    return path
