#!/usr/bin/env python3
"""Deterministic .tar.gz of release files, the same on Linux, macOS and Windows.

    python packaging/archive.py OUT.tar.gz FILE...

Members sit at the archive root under their base names, sorted by name, owned by 0:0
with empty owner names, mode 0755 for programs and 0644 otherwise, mtime
SOURCE_DATE_EPOCH (default 0); the gzip header carries no file name and no time. This is
what `tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$SOURCE_DATE_EPOCH`
piped into `gzip -n` gives, without depending on GNU tar being installed.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import tarfile

PROGRAMS = ("kubectl-unfinalize", "kubectl-unfinalize.exe", "kubectl_complete-unfinalize")


def build(output: str, paths: list[str], mtime: int) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(paths, key=os.path.basename):
            info = tarfile.TarInfo(os.path.basename(path))
            with open(path, "rb") as handle:
                data = handle.read()
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o755 if info.name in PROGRAMS else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    with open(output, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(buffer.getvalue())


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build(argv[0], argv[1:], int(os.environ.get("SOURCE_DATE_EPOCH", "0")))
    print(f"wrote {argv[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
