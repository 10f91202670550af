"""The TYPE forms of the command line (kubectl's `TYPE NAME...`, `TYPE/NAME...`,
`TYPE -l SELECTOR`): their rules, checked before connecting, and the Selection they make.
Which type TYPE means is the cluster's to say (resolve/types.py)."""

from __future__ import annotations

import argparse

from ..options import Selection
from .flags import UsageError


def check_type_form(args: argparse.Namespace) -> None:
    """Raise what is wrong with a TYPE NAME..., TYPE/NAME... or TYPE -l command line that
    only a command line can get wrong (kubectl's rules); the rest are Selection's."""
    first, *names = args.words
    if args.group:
        raise UsageError("--group applies to crd, not to TYPE")
    if "/" in first:
        if any("/" not in w for w in args.words):
            raise UsageError("use TYPE NAME... or TYPE/NAME..., not both in one command (kubectl's rule)")
    elif not (names or args.selector or args.field_selector):
        Selection(resource=first)  # raises Selection's "TYPE needs NAME...": an empty -l selects nothing


def type_selection(args: argparse.Namespace) -> Selection:
    first, *names = args.words
    slashed = "/" in first
    return Selection(
        resource=None if slashed else first,
        names=() if slashed else tuple(names),
        objects=tuple(args.words) if slashed else (),
        selector=args.selector,
        field_selector=args.field_selector,
        all_namespaces=args.all_namespaces,
    )
