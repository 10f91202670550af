#!/usr/bin/env python3
"""Generate the man page from cli.build_parser with argparse-manpage.

    python packaging/build-man.py [OUTPUT]     # default: build/man/kubectl-unfinalize.1

The date in the page is SOURCE_DATE_EPOCH, else the last commit time, else the mtime of
pyproject.toml, so the same source always gives the same bytes. setup.py runs this too,
so the wheel installs the page under share/man/man1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "build" / "man" / "kubectl-unfinalize.1"
EXTRA = ROOT / "packaging" / "man-extra.roff"
PROJECT_URL = "https://github.com/kubectl-unfinalize/kubectl-unfinalize"


def source_date_epoch() -> str:
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=True
        ).stdout.strip()
        if out:
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return str(int((ROOT / "pyproject.toml").stat().st_mtime))


def roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'", "[", "/") else text


def epilog_sections(epilog: str) -> str:
    """The --help epilog as man sections: "examples:" lines verbatim, "exit codes: ..." as text."""
    names = {"examples": "EXAMPLES", "exit codes": "EXIT STATUS"}
    out = []
    for paragraph in epilog.strip().split("\n\n"):
        head, _, rest = paragraph.partition(":")
        heading = names.get(head.strip(), head.strip().upper())
        lines = [line.strip() for line in rest.strip("\n").splitlines() if line.strip()]
        if rest.startswith("\n"):  # a list, one entry a line
            body = "\n".join(f".RS 4\n.nf\n{roff(line)}\n.fi\n.RE" for line in lines)
        else:
            body = roff(" ".join(lines))
        out.append(f"[>{heading}]\n{body}\n")
    return "\n".join(out)


def render() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from argparse_manpage.manpage import Manpage

    from kubectl_unfinalize._version import __version__
    from kubectl_unfinalize.cli.flags import build_parser

    parser = build_parser("kubectl unfinalize")  # usage and help say "kubectl unfinalize"
    parser.prog = "kubectl-unfinalize"  # the title and NAME say the file name (what man -k finds)
    extra = EXTRA.read_text(encoding="utf-8")
    synopsis, _, rest = extra.partition("\n\n")
    include = "\n".join([synopsis + "\n", epilog_sections(parser.epilog or ""), rest])
    parser.epilog = None  # rendered above as sections, not as COMMENTS
    data = {
        "project_name": "kubectl-unfinalize",
        "version": __version__,
        "description": "free stuck custom resources and namespaces: remove finalizers in bulk, delete without hanging",
        "manual_title": "kubectl plugins",
        "date": time.strftime("%Y-%m-%d", time.gmtime(int(source_date_epoch()))),
        "url": PROJECT_URL,
    }
    with tempfile.TemporaryDirectory() as tmp:
        data["include"] = os.path.join(tmp, "include.roff")
        Path(data["include"]).write_text(include, encoding="utf-8")
        page = str(Manpage(parser, _data=data))
    # argparse-manpage leaves out -h/--help; list it like the other options
    help_action = next(a for a in parser._actions if isinstance(a, argparse._HelpAction))
    entry = ".TP\n" + ", ".join(f"\\fB{roff(s)}\\fR" for s in help_action.option_strings) + f"\n{help_action.help}\n\n"
    return page.replace(".SH OPTIONS\n", ".SH OPTIONS\n" + entry, 1)


def main(argv: list[str]) -> int:
    output = Path(argv[0]) if argv else DEFAULT_OUTPUT
    text = render()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
