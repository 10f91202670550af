#!/usr/bin/env python3
"""Render krew-manifest.yaml (the krew-release-bot template) for local release archives.

    python packaging/render-krew-manifest.py TAG ARCHIVE... [-o dist/unfinalize.yaml]

Does what the bot does with the template - {{ .TagName }} becomes TAG, each
{{addURIAndSha "URL" .TagName}} becomes `uri: URL` plus `sha256:` - except that the
sha256 comes from the local archive with the same file name
(kubectl-unfinalize_<os>_<arch>.tar.gz) instead of a download. Platforms without a
local archive are left out, so the result installs with
`krew install --manifest=FILE --archive=ARCHIVE` and passes validate-krew-manifest (which
wants the file named after the plugin: unfinalize.yaml).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "krew-manifest.yaml"
ADD_URI_AND_SHA = re.compile(r'\{\{-?\s*addURIAndSha\s+"([^"]*)"\s+\.TagName\s*-?\}\}')
VALUE = re.compile(r"\{\{-?\s*\.(TagName|Version)\s*-?\}\}")
MISSING = "missing-archive"


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (description, caveats) stay `|` blocks as in the template."""


_BlockDumper.add_representer(
    str,
    lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None),
)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def render(template: str, tag: str, archives: dict[str, Path]) -> tuple[str, list[str]]:
    """Return (manifest text, names of the archives the template asked for but were not given)."""
    version = re.search(r"\d+(\.\d+)+", tag)
    values = {"TagName": tag, "Version": version.group(0) if version else tag}
    missing: list[str] = []

    def uri_and_sha(match: re.Match) -> str:
        uri = VALUE.sub(lambda m: values[m.group(1)], match.group(1))
        name = uri.rsplit("/", 1)[-1]
        if name in archives:
            digest = sha256(archives[name])
        else:
            digest = MISSING
            missing.append(name)
        return f"uri: {uri}\n    sha256: {digest}"  # four spaces, as the bot writes it

    text = ADD_URI_AND_SHA.sub(uri_and_sha, template)
    text = VALUE.sub(lambda m: values[m.group(1)], text)
    if "{{" in text:
        line = next(line for line in text.splitlines() if "{{" in line)
        raise SystemExit(f"unsupported template action in {TEMPLATE.name}: {line.strip()}")
    if missing:
        manifest = yaml.safe_load(text)
        manifest["spec"]["platforms"] = [p for p in manifest["spec"]["platforms"] if p.get("sha256") != MISSING]
        if not manifest["spec"]["platforms"]:
            raise SystemExit("none of the archives matches a platform of the template")
        text = yaml.dump(manifest, Dumper=_BlockDumper, sort_keys=False, width=100)
    return text, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag", help="release tag, e.g. v0.1.0")
    parser.add_argument("archives", nargs="+", type=Path, help="kubectl-unfinalize_<os>_<arch>.tar.gz files")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "dist" / "unfinalize.yaml")
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    args = parser.parse_args(argv)
    if not re.fullmatch(r"v\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?", args.tag):
        parser.error(f"tag {args.tag!r} is not a v-prefixed semantic version (krew requires one)")
    archives = {path.name: path for path in args.archives}
    for path in archives.values():
        if not path.is_file():
            parser.error(f"no such archive: {path}")
    text, missing = render(args.template.read_text(encoding="utf-8"), args.tag, archives)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    for name in missing:
        print(f"left out (no local archive): {name}", file=sys.stderr)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
