"""The command line parsed once into a command: the command word is classified here alone,
the rules argparse cannot express are checked here, and the option objects are built here,
so a rule the Python API shares (an InputError from the option classes) becomes a usage
error in one place (kubectl's Complete and Validate before Run). Imports nothing heavy.

A new command is one more frozen dataclass here, its branch in parse, and its branch in
main's dispatch."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..options import ConnectionOptions, Options, Selection
from ..scanning.options import ScanOptions
from .connection_flags import to_connection_options
from .flags import CRD_WORDS, NAMESPACE_WORDS, UsageError, build_parser, normalize_argv
from .process import err
from .scan_flags import SCAN_LISTS, SCAN_WORDS, scan_problem
from .type_words import check_type_form, type_selection


@dataclass(frozen=True)
class Output:
    """How a command reports: -o, -q, --no-color, and -v (tracebacks, request lines)."""

    format: str = "text"
    quiet: bool = False
    no_color: bool = False
    verbose: int = 0


@dataclass(frozen=True)
class Version:
    """--version: the versions line, whatever else the line says."""

    output: Output


@dataclass(frozen=True)
class RunCommand:
    """crd, ns, TYPE or -f: free (or --delete) what the selection names."""

    selection: Selection
    options: Options
    connection: ConnectionOptions
    output: Output
    interactive: bool = False  # -i: show the plan and ask first


@dataclass(frozen=True)
class ScanCommand:
    """scan: report what is stuck cluster-wide, read-only."""

    options: ScanOptions
    connection: ConnectionOptions
    output: Output


Command = Version | RunCommand | ScanCommand


def parse(argv: Sequence[str], prog: str = "kubectl unfinalize") -> Command:
    """The command the line asks for, or UsageError. A bad connection flag stays the
    ConfigError ConnectionOptions raises, as it is from the Python API."""
    args = build_parser(prog).parse_args(normalize_argv(argv))
    output = Output(args.output, args.quiet, args.no_color, args.verbose)
    if args.version:
        return Version(output)
    if args.namespace and args.all_namespaces:
        raise UsageError("-n and -A cannot be combined")
    word = args.words[0].lower() if args.words else None  # the command word: classified here, once
    try:
        if word in SCAN_WORDS:
            return ScanCommand(_scan_options(args), to_connection_options(args, log=err), output)
        selection, options = _run_options(args, word)
        return RunCommand(selection, options, to_connection_options(args, log=err), output, args.interactive)
    except InputError as exc:  # the rules the Python API shares live in the option classes
        raise UsageError(str(exc)) from None


def _scan_options(args: argparse.Namespace) -> ScanOptions:
    if problem := scan_problem(args):
        raise UsageError(problem)
    return ScanOptions(
        namespace=args.namespace,
        include_live=args.include_live,
        older_than=args.older_than,
        concurrency=min(args.concurrency, SCAN_LISTS),
        chunk_size=args.chunk_size,
        timeout=args.timeout,
        wait=bool(args.wait),
    )


def _run_options(args: argparse.Namespace, word: str | None) -> tuple[Selection, Options]:
    """Selection and Options of crd, ns, TYPE (any other word) or -f (no word)."""
    _check_run(args, word)
    if word is not None and word not in CRD_WORDS + NAMESPACE_WORDS:
        return type_selection(args), _options(args)
    namespaces = word in NAMESPACE_WORDS
    names = tuple(args.words[1:])
    selection = Selection(
        crds=() if namespaces else names,
        group=args.group,
        crd_selector=args.selector if not (args.filename or namespaces) else None,
        files=tuple(args.filename),
        recursive=args.recursive,
        namespaces=names if namespaces else (),
        namespace_selector=args.selector if namespaces else None,
        categories=tuple(args.category),
    )
    return selection, _options(args)


def _check_run(args: argparse.Namespace, word: str | None) -> None:
    """The combinations only a command line can get wrong, in the order they are reported."""
    if args.output == "wide" or args.older_than or args.include_live:
        raise UsageError("-o wide, --older-than and --all apply to scan only")
    if args.category and (args.filename or (word is not None and word not in CRD_WORDS)):
        raise UsageError("--category applies to crd")
    if word in NAMESPACE_WORDS:
        if not (args.words[1:] or args.selector):
            raise UsageError("ns needs NAME... or -l SELECTOR")
        if args.group:
            raise UsageError("--group applies to crd, not to ns")
        if args.namespace or args.all_namespaces:
            raise UsageError("ns NAME selects the namespaces; -n and -A do not apply")
    elif word in CRD_WORDS:
        if not (args.words[1:] or args.group or args.selector or args.category):
            raise UsageError("crd needs NAME..., --group, --category or -l SELECTOR")
    elif word is not None:
        check_type_form(args)
    elif not args.filename:
        raise UsageError(
            "nothing selected: use 'crd NAME...', 'crd --group GROUP', 'crd -l SELECTOR', 'ns NAME...', "
            "'TYPE NAME...' or '-f PATH'"
        )
    if args.filename and (args.words or args.group):
        raise UsageError("-f cannot be combined with crd NAME, ns NAME or --group")
    if args.interactive and args.dry_run != "none":
        raise UsageError("-i asks before changing anything, and a dry run changes nothing: use one of them")
    if args.interactive and args.output in ("json", "yaml"):
        raise UsageError("-i cannot be combined with -o json or yaml (the prompt would mix with the document)")


def _options(args: argparse.Namespace) -> Options:
    return Options(
        delete=args.delete,
        wait=args.wait is not False,
        timeout=args.timeout,
        dry_run=args.dry_run,
        namespace=args.namespace,
        label_selector=args.selector if args.filename else None,
        field_selector=args.field_selector,
        only_terminating=args.only_terminating,
        finalizers=tuple(args.finalizer),
        concurrency=args.concurrency,
        chunk_size=args.chunk_size,
        remove_dead_webhooks=args.remove_dead_webhooks,
    )
