"""The TYPE forms of the command line (kubectl's `TYPE NAME...`, `TYPE/NAME...`,
`TYPE -l SELECTOR`): their rules, checked before connecting, and the Selection they make.
Which type TYPE means is the cluster's to say (resolve/types.py)."""

from __future__ import annotations

import argparse

from ..options import Selection

RESERVED_WORDS = ("scan",)  # commands: never read as a resource type


def type_form_error(args: argparse.Namespace) -> str | None:
    """What is wrong with a TYPE NAME..., TYPE/NAME... or TYPE -l command line that only a
    command line can get wrong, if anything (kubectl's rules); the parser raises it as a
    usage error."""
    first = args.words[0]
    if first.lower() in RESERVED_WORDS:
        return f"{first!r} is a command, not a resource type"
    if args.group:
        return "--group applies to crd, not to TYPE"
    if "/" in first:
        if any("/" not in w for w in args.words):
            return "use TYPE NAME... or TYPE/NAME..., not both in one command (kubectl's rule)"
    elif not (args.words[1:] or args.selector or args.field_selector):
        return f"{first} needs NAME..., -l SELECTOR or --field-selector"
    return None  # the rules the Python API shares are Selection's (options.py)


def type_selection(args: argparse.Namespace) -> Selection:
    first = args.words[0]
    slashed = "/" in first
    return Selection(
        resource=None if slashed else first,
        names=() if slashed else tuple(args.words[1:]),
        objects=tuple(args.words) if slashed else (),
        selector=args.selector,
        field_selector=args.field_selector,
        all_namespaces=args.all_namespaces,
    )
