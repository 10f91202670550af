"""Command line: the argparse parser (also read by argparse-manpage) and main().

main() is the one place that maps errors to exit codes. This module imports nothing
heavy at load time, so --help and --version stay fast and the man page can be built
without the kubernetes client installed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._version import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
CRD_WORDS = ("crd", "crds", "customresourcedefinition", "customresourcedefinitions")

DESCRIPTION = """\
Free stuck custom resources: remove the finalizers of every custom resource of the
selected CustomResourceDefinitions, in every namespace, in bulk; with --delete, delete
the CRDs (and objects declared in manifests) and wait until they are gone.

Removing a finalizer skips whatever cleanup its controller would have done: external
resources (cloud volumes, DNS records, ...) it guarded may be left behind. The CRD's
own customresourcecleanup finalizer is never touched."""

EPILOG = """\
examples:
  kubectl unfinalize crd daskclusters.kubernetes.dask.org
  kubectl unfinalize crd --group kubernetes.dask.org --delete
  kubectl unfinalize crd -l app.kubernetes.io/instance=my-operator --dry-run=server
  kubectl unfinalize -f manifests/crds/ --delete --timeout 60s
  kubectl unfinalize crd widgets --finalizer example.com/cleanup -n team-a

exit codes: 0 done or nothing to do; 1 something failed or timed out;
2 usage or input error; 130 interrupted."""


def _bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {value!r} (use true or false)")


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + error
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def build_parser(prog: str = "kubectl unfinalize") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        usage=f"{prog} crd [NAME...] [--group GROUP] [-l SELECTOR] [options]\n"
        f"       {prog} -f PATH [-f PATH] [-R] [options]",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "words",
        nargs="*",
        metavar="crd NAME",
        help="CRDs by name: the CRD name, "
        "or the resource as kubectl knows it (plural, singular, kind, short name, "
        "plural.group, kind.group)",
    )
    parser.add_argument("--version", action="store_true", help="print versions and exit")

    sel = parser.add_argument_group("selection")
    sel.add_argument("--group", help="every CRD of this API group")
    sel.add_argument(
        "-l", "--selector", help="with crd: select CRDs by label; with -f: only custom resources with these labels"
    )
    sel.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="PATH",
        help="manifest file, directory or - (stdin); CRD documents select the CRD, "
        "other documents select that object (repeatable)",
    )
    sel.add_argument("-R", "--recursive", action="store_true", help="read directories given with -f recursively")
    sel.add_argument("-n", "--namespace", help="only custom resources in this namespace (default: all namespaces)")
    sel.add_argument(
        "-A", "--all-namespaces", action="store_true", help="custom resources in all namespaces (the default)"
    )
    sel.add_argument("--field-selector", help="only custom resources matching this field selector")
    sel.add_argument(
        "--only-terminating", action="store_true", help="only objects that already have a deletionTimestamp"
    )
    sel.add_argument(
        "--finalizer",
        action="append",
        default=[],
        metavar="NAME",
        help="remove only this finalizer and keep the others (repeatable)",
    )

    act = parser.add_argument_group("action")
    act.add_argument(
        "--delete",
        action="store_true",
        help="delete the selected CRDs and objects first, then free them and wait until they are gone",
    )
    act.add_argument(
        "--timeout", metavar="DURATION", help="give up after this long, e.g. 90s, 2m (default 5m with --delete)"
    )
    act.add_argument(
        "--wait",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="with --delete, wait until everything is gone (--wait=false returns after one pass)",
    )
    act.add_argument(
        "--dry-run",
        nargs="?",
        const="client",
        default="none",
        choices=("none", "client", "server"),
        help="client: change nothing; server: send every write with dryRun=All",
    )
    act.add_argument("-i", "--interactive", action="store_true", help="show the plan and ask before changing anything")
    act.add_argument("--concurrency", type=_positive, default=16, metavar="N", help="parallel writes (default 16)")
    act.add_argument("--chunk-size", type=_positive, default=500, metavar="N", help="list page size (default 500)")

    out = parser.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        choices=("text", "name", "json", "yaml"),
        default="text",
        help="results on stdout (logs and progress go to stderr)",
    )
    out.add_argument("-q", "--quiet", action="store_true", help="no progress and no summary on stderr")
    out.add_argument("-v", "--verbose", action="store_true", help="show tracebacks for errors")
    out.add_argument("--no-color", action="store_true", help="no colors (also when NO_COLOR is set)")

    con = parser.add_argument_group("connection (as kubectl)")
    con.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)")
    con.add_argument("--context", help="kubeconfig context to use")
    con.add_argument("--cluster", help="kubeconfig cluster to use")
    con.add_argument("--user", help="kubeconfig user to use")
    con.add_argument("-s", "--server", help="API server address")
    con.add_argument("--token", help="bearer token")
    con.add_argument("--certificate-authority", metavar="PATH", help="CA certificate file")
    con.add_argument("--client-certificate", metavar="PATH", help="client certificate file")
    con.add_argument("--client-key", metavar="PATH", help="client key file")
    con.add_argument(
        "--insecure-skip-tls-verify",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="do not verify the server's certificate",
    )
    con.add_argument("--tls-server-name", help="server name for certificate validation (SNI)")
    con.add_argument("--as", dest="as_user", metavar="USER", help="impersonate this user")
    con.add_argument(
        "--as-group", action="append", default=[], metavar="GROUP", help="impersonate this group (repeatable)"
    )
    con.add_argument("--as-uid", metavar="UID", help="impersonate this UID")
    con.add_argument("--request-timeout", metavar="DURATION", help="give up on a single request after this long")
    return parser


def _versions() -> str:
    import platform

    try:
        from importlib.metadata import version

        client = version("kubernetes")
    except Exception:  # noqa: BLE001 - the frozen binary may lack metadata
        client = "unknown"
    return f"kubectl-unfinalize {__version__} (python {platform.python_version()}, kubernetes client {client})"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["__complete"]:  # hidden: shell completion (kubectl_complete-unfinalize)
        from .completion import main as complete

        return complete(args_list[1:])
    verbose = "-v" in args_list or "--verbose" in args_list
    try:
        return _main(args_list)
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except _UsageError as exc:
        _err(f"error: {exc} (see --help)")
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        from .errors import ConfigError, InputError, UnfinalizeError

        if verbose:
            import traceback

            traceback.print_exc()
        if not isinstance(exc, UnfinalizeError):
            hint = "" if verbose else " (run with -v for details)"
            _err(f"error: unexpected {type(exc).__name__}: {exc}{hint}")
            return EXIT_FAILED
        _err(f"error: {exc}")
        return EXIT_USAGE if isinstance(exc, (InputError, ConfigError)) else EXIT_FAILED


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(_versions())
        return EXIT_OK
    names: list[str] = []
    if args.words:
        if args.words[0].lower() not in CRD_WORDS:
            raise _UsageError(f"unknown command {args.words[0]!r}: use 'crd NAME...' or '-f PATH'")
        names = args.words[1:]
        if not (names or args.group or args.selector):
            raise _UsageError("crd needs NAME..., --group or -l SELECTOR")
        if names and args.selector:
            raise _UsageError("NAME and -l cannot be combined (kubectl has the same rule)")
    elif not args.filename:
        raise _UsageError("nothing selected: use 'crd NAME...', 'crd --group GROUP', 'crd -l SELECTOR' or '-f PATH'")
    if args.filename and (args.words or args.group):
        raise _UsageError("-f cannot be combined with crd NAME or --group")
    if args.namespace and args.all_namespaces:
        raise _UsageError("-n and -A cannot be combined")
    if args.wait is False and not args.delete:
        raise _UsageError("--wait only applies with --delete")
    return _run(args, names)


def _run(args: argparse.Namespace, names: list[str]) -> int:
    from .api import unfinalize
    from .connection import ConnectionOptions
    from .durations import parse_duration
    from .report import ProgressDisplay, outcome_line, render_document, summary_line

    timeout = parse_duration(args.timeout) if args.timeout else None
    connection = ConnectionOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        cluster=args.cluster,
        user=args.user,
        server=args.server,
        token=args.token,
        certificate_authority=args.certificate_authority,
        client_certificate=args.client_certificate,
        client_key=args.client_key,
        insecure_skip_tls_verify=args.insecure_skip_tls_verify,
        tls_server_name=args.tls_server_name,
        as_user=args.as_user,
        as_groups=list(args.as_group),
        as_uid=args.as_uid,
        request_timeout=parse_duration(args.request_timeout) if args.request_timeout else None,
    )
    color = sys.stdout.isatty() and not args.no_color and not os.environ.get("NO_COLOR")
    progress = None if args.quiet else ProgressDisplay()

    def on_outcome(outcome) -> None:
        if args.output in ("json", "yaml"):
            return
        line = outcome_line(outcome, args.output, color)
        if line is not None:
            if progress:
                progress.clear()
            print(line, flush=True)

    def confirm(targets) -> bool:
        from .report import plan_lines

        for line in plan_lines(targets, args.delete):
            _err(line)
        if not sys.stdin.isatty():
            raise _UsageError("-i needs a terminal to ask on")
        sys.stderr.write("Continue? [y/N] ")
        sys.stderr.flush()
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    report = unfinalize(
        names,
        group=args.group,
        crd_selector=args.selector if not args.filename else None,
        files=args.filename,
        recursive=args.recursive,
        delete=args.delete,
        wait=args.wait,
        timeout=timeout,
        dry_run=args.dry_run,
        namespace=args.namespace,
        selector=args.selector if args.filename else None,
        field_selector=args.field_selector,
        only_terminating=args.only_terminating,
        finalizers=args.finalizer,
        concurrency=args.concurrency,
        chunk_size=args.chunk_size,
        connection=connection,
        on_outcome=on_outcome,
        on_progress=progress.update if progress else None,
        confirm=confirm if args.interactive else None,
    )
    if progress:
        progress.clear()
    if args.output in ("json", "yaml"):
        print(render_document(report, args.output))
    if report.aborted:
        _err("aborted: nothing was changed")
        return EXIT_OK
    if not args.quiet:
        for skipped in report.skipped:
            _err(f"{skipped} not found (skipped)")
        if not report.outcomes and not report.scanned and not report.skipped:
            _err("nothing to do: no matching custom resources or CRDs")
        _err(summary_line(report))
    return EXIT_OK if report.ok else EXIT_FAILED
