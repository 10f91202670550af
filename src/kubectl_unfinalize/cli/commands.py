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
from typing import TYPE_CHECKING

from ..errors import InputError
from ..options import ConnectionOptions, Options, Selection
from .connection_flags import to_connection_options
from .flags import CRD_WORDS, NAMESPACE_WORDS, UsageError, build_parser, normalize_argv
from .process import err, warn
from .record_flags import HISTORY_WORDS, UNDO_WORDS
from .scan_flags import SCAN_LISTS, SCAN_WORDS, scan_problem
from .type_words import check_type_form, type_selection

if TYPE_CHECKING:  # imported where a scan is asked for: a freeing run never builds the scan's classes
    from ..scanning.options import ScanOptions


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
    record: str | None = None  # --record: where the record goes (None: the default place; "none": nowhere)
    contexts: tuple[str, ...] = ()  # --context repeated: the run in each (one context: `connection`'s)
    all_contexts: bool = False


@dataclass(frozen=True)
class ScanCommand:
    """scan: report what is stuck cluster-wide, read-only."""

    options: ScanOptions
    connection: ConnectionOptions
    output: Output
    contexts: tuple[str, ...] = ()  # --context repeated: each its own scan (one context: `connection`'s)
    all_contexts: bool = False


@dataclass(frozen=True)
class HistoryCommand:
    """history [ID|--last]: the records of this context, or one of them."""

    ref: str | None  # the record's id (or path); None: all of them, or --last
    last: bool
    connection: ConnectionOptions
    output: Output
    folder: str | None = None  # --record: where the records are, when not in the default place


@dataclass(frozen=True)
class UndoCommand:
    """undo ID|--last: put back what a recorded run removed."""

    ref: str | None  # the id (or path) of the record undone; None with --last
    last: bool
    dry_run: str
    connection: ConnectionOptions
    output: Output
    folder: str | None = None  # --record: the records' folder (read from, and undo's own record goes there)


Command = Version | RunCommand | ScanCommand | HistoryCommand | UndoCommand


def parse(argv: Sequence[str], prog: str = "kubectl unfinalize") -> Command:
    """The command the line asks for, or UsageError. A bad connection flag stays the
    ConfigError ConnectionOptions raises, as it is from the Python API."""
    args = build_parser(prog).parse_intermixed_args(normalize_argv(argv))  # flags before names too, as kubectl
    output = Output(args.output, args.quiet, args.no_color, args.verbose)
    if args.version:
        return Version(output)
    if args.namespace and args.all_namespaces:
        raise UsageError("-n and -A cannot be combined")
    word = args.words[0].lower() if args.words else None  # the command word: classified here, once
    contexts = tuple(args.context or ())
    if args.all_contexts and contexts:
        raise UsageError("--all-contexts and --context cannot be combined")
    several = len(contexts) > 1 or args.all_contexts
    if several and word in HISTORY_WORDS + UNDO_WORDS:
        raise UsageError(f"{word} reads one context's records: give one --context")
    if several and word not in SCAN_WORDS and (args.interactive or output.format in ("json", "yaml")):
        raise UsageError("-i and -o json|yaml take one context (scan takes several with -o json|yaml)")
    try:
        if word in SCAN_WORDS:
            if not args.free:
                _no_record_flags(args, "scan")
            elif args.backup or args.last:
                raise UsageError("--backup and --last do not apply to scan --free")
            connection = to_connection_options(args, log=err, warn=warn)
            contexts = contexts if several else ()
            return ScanCommand(_scan_options(args), connection, output, contexts, args.all_contexts)
        if word in HISTORY_WORDS + UNDO_WORDS:
            return _record_command(args, word, output)
        if args.last:
            raise UsageError("--last applies to history and undo")
        selection, options = _run_options(args, word)
        connection = to_connection_options(args, log=err, warn=warn)
        contexts = contexts if several else ()
        return RunCommand(
            selection, options, connection, output, args.interactive, args.record, contexts, args.all_contexts
        )
    except InputError as exc:  # the rules the Python API shares live in the option classes
        raise UsageError(str(exc)) from None


def _record_command(args: argparse.Namespace, word: str, output: Output) -> HistoryCommand | UndoCommand:
    """history and undo take one record id, or --last; no selection and no run flags."""
    ids = args.words[1:]
    if len(ids) > 1 or (ids and args.last):
        raise UsageError(f"{word} takes one record ID, or --last")
    if args.filename or args.group or args.selector or args.category or args.delete or args.finalizer:
        raise UsageError(f"{word} takes a record, not a selection")
    if args.backup or args.max_objects is not None:
        raise UsageError(f"--backup and --max-objects apply to a run, not to {word}")
    if output.format in ("name", "wide"):
        raise UsageError(f"{word}: -o text, json or yaml")
    connection = to_connection_options(args, log=err, warn=warn)
    ref = ids[0] if ids else None
    if word in HISTORY_WORDS:
        if args.dry_run != "none":
            raise UsageError("history reads records: --dry-run applies to runs and undo")
        return HistoryCommand(ref, args.last, connection, output, args.record)
    if not (ids or args.last):
        raise UsageError("undo needs a record ID (kubectl unfinalize history lists them) or --last")
    return UndoCommand(ref, args.last, args.dry_run, connection, output, args.record)  # --record: the folder


def _no_record_flags(args: argparse.Namespace, word: str) -> None:
    if args.record is not None or args.backup or args.max_objects is not None or args.last:
        raise UsageError(f"--record, --backup, --max-objects and --last do not apply to {word}")


def _scan_options(args: argparse.Namespace) -> ScanOptions:
    from ..scanning.options import ScanOptions, free_options

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
        free=free_options(
            args.free,
            namespaces=(),
            groups=(),
            finalizers=args.finalizer,
            exclude_namespaces=args.exclude_namespace,
            include_blocked=args.include_blocked,
            dry_run=args.dry_run,
            max_objects=args.max_objects,
            record=args.record,
            force_lost_pods=args.force_lost_pods,
            events=args.events,
        ),
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
    if args.output == "wide" or args.older_than or args.include_live or args.free:
        raise UsageError("-o wide, --older-than, --all and --free apply to scan only")
    if args.include_blocked or args.exclude_namespace or args.events:
        raise UsageError("--include-blocked, --exclude-namespace and --events apply to scan --free")
    if args.category and (args.filename or (word is not None and word not in CRD_WORDS)):
        raise UsageError("--category applies to crd")
    if args.force_lost_pods and word in CRD_WORDS:
        raise UsageError("--force-lost-pods applies to ns, TYPE NAME, -f and scan --free: a CRD's objects are not pods")
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
        unsafe_delete_corrupt=args.unsafe_delete_corrupt,
        force_lost_pods=args.force_lost_pods,
        with_dependents=args.with_dependents,
        backup=args.backup,
        max_objects=args.max_objects,
    )
