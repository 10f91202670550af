"""The command line's flags: the argparse parser, also read by argparse-manpage and by
shell completion (commands.py turns what it parses into a command). Imports nothing
heavy, so --help stays fast and the man page builds without the kubernetes client.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from .connection_flags import add_bool_flag, add_connection_flags, duration
from .help_text import DESCRIPTION, EPILOG
from .record_flags import add_record_flags
from .scan_flags import add_scan_flags

CRD_WORDS = ("crd", "crds", "customresourcedefinition", "customresourcedefinitions")
NAMESPACE_WORDS = ("ns", "namespace", "namespaces")


class UsageError(Exception):
    """A flag combination argparse accepted but the tool cannot run; exit 2."""


def _verbosity(value: str) -> int:
    text = value.lstrip("=")
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"invalid verbosity {value!r} (use a number, e.g. -v=6)")
    return int(text)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        raise UsageError(message)


def build_parser(prog: str = "kubectl unfinalize") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        usage=f"{prog} crd [NAME...] [--group GROUP] [--category NAME] [-l SELECTOR] [options]\n"
        f"       {prog} ns [NAME...] [-l SELECTOR] [options]\n"
        f"       {prog} TYPE NAME... | TYPE/NAME... | TYPE -l SELECTOR [-n NAMESPACE | -A] [options]\n"
        f"       {prog} -f PATH [-f PATH] [-R] [options]\n"
        f"       {prog} scan [-n NS|-A] [-o text|wide|json|yaml] [--older-than DURATION] [--all] [--wait] [--free]\n"
        f"       {prog} history [ID | --last] [-o text|json|yaml]\n"
        f"       {prog} undo ID | --last [--dry-run=server]",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "words",
        nargs="*",
        metavar="crd NAME | ns NAME | TYPE NAME | TYPE/NAME | scan | history | undo",
        help="CRDs by name: the CRD name, "
        "or the resource as kubectl knows it (plural, singular, kind, short name, "
        "plural.group, kind.group); or namespaces by name (ns, namespace, namespaces); "
        "or objects of any other type, TYPE spelled as kubectl spells it; "
        "or scan: report what is stuck cluster-wide, read-only; "
        "or history, undo: the records of earlier runs, and putting back what one removed",
    )
    parser.add_argument("--version", action="store_true", help="print versions and exit")

    sel = parser.add_argument_group("selection")
    sel.add_argument("--group", help="every CRD of this API group")
    sel.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="NAME",
        help="with crd, every CRD whose spec.names.categories lists NAME, as kubectl get NAME selects them "
        "(e.g. crossplane's managed); repeatable or comma-separated, any of them matches",
    )
    sel.add_argument(
        "-l",
        "--selector",
        help="selects what the command names: with crd, CRDs by label; with ns, namespaces by label; "
        "with TYPE, its objects by label; with -f, only custom resources with these labels",
    )
    sel.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="PATH",
        help="manifest file, directory or - (stdin); CRD documents select the CRD, "
        "Namespace documents the namespace's contents, other documents select that object (repeatable)",
    )
    sel.add_argument("-R", "--recursive", action="store_true", help="read directories given with -f recursively")
    sel.add_argument(
        "-n",
        "--namespace",
        help="with crd, only custom resources in this namespace (default: all namespaces); "
        "with TYPE, where its objects are (default: the kubeconfig's namespace)",
    )
    sel.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="with crd, custom resources in all namespaces (the default); with TYPE -l, objects in every namespace",
    )
    sel.add_argument(
        "--field-selector", help="only custom resources (with TYPE, objects of that type) matching this field selector"
    )
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

    add_scan_flags(parser.add_argument_group("scan"))

    act = parser.add_argument_group("action")
    act.add_argument(
        "--delete",
        action="store_true",
        help="delete the selected custom resources, free them, then delete the CRDs (and manifest objects) "
        "and wait until they are gone",
    )
    act.add_argument(
        "--timeout",
        type=duration,
        metavar="DURATION",
        help="bound the whole run, retries included, e.g. 90s, 2m (default 5m)",
    )
    act.add_argument(
        "--remove-dead-webhooks",
        action="store_true",
        help="when a finalizer patch or delete is refused because an admission webhook's backend is gone "
        "(connection refused, a timeout, its Service missing or without ready endpoints), delete that "
        "ValidatingWebhookConfiguration or MutatingWebhookConfiguration and send the write again; only "
        "configurations whose rules matched a selected object's write are removed, each one is reported. "
        "Never implied by --delete. Without it, the run names the configuration and stops writing what it refuses",
    )
    act.add_argument(
        "--unsafe-delete-corrupt",
        action="store_true",
        help="delete the selected objects the API server names as unreadable from storage (a lost encryption "
        "key, bytes that do not decode) with its unsafe delete (ignoreStoreReadErrorWithClusterBreakingPotential), "
        "which skips their finalizers and admission and may break the cluster if anything depends on them; "
        "needs kube-apiserver's feature gate AllowUnsafeMalformedObjectDeletion and the RBAC verb "
        "unsafe-delete-ignore-read-errors. Recorded, and not undoable. Never implied, and never used by scan --free",
    )
    act.add_argument(
        "--with-dependents",
        action="store_true",
        help="a selected owner held by foregroundDeletion (deleted with propagationPolicy=Foreground) waits for "
        "its dependents with blockOwnerDeletion: free those dependents of the finalizers scan judges stuck (a "
        "controller that shows no sign of life), and wait for the garbage collector to delete the owner. A live "
        "controller's finalizer stays, and the dependent is named with why. Recorded and undoable like any run",
    )
    act.add_argument(
        "--force-lost-pods",
        action="store_true",
        help="force-delete (gracePeriodSeconds=0, as kubectl delete --force) the selected pods held by a lost node: "
        "being deleted past their grace period on a node that is gone or whose Ready has not been True since. On a "
        "node only cut off from the network their containers may still run, and a StatefulSet may then run two pods "
        "of one identity: Kubernetes' own remedy, once the node is known to be down, is the "
        "node.kubernetes.io/out-of-service taint. For ns, TYPE NAME and scan --free; warns first; recorded, and not "
        "undoable. Never implied",
    )
    add_bool_flag(
        act,
        "--wait",
        None,  # unset: True with --delete, False for scan
        "with --delete, wait until everything is gone (the default; --wait=false returns after one pass); "
        "with scan, scan again while something is pending until it is judged or gone (bounded by --timeout)",
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
    act.add_argument(
        "--concurrency",
        type=int,
        default=64,
        metavar="N",
        help="at most N requests in flight (default 64); the run adapts below it to latency and 429s",
    )
    act.add_argument("--chunk-size", type=int, default=500, metavar="N", help="list page size (default 500)")

    add_record_flags(parser.add_argument_group("record, history and undo"))

    out = parser.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        choices=("text", "name", "wide", "json", "yaml"),
        default="text",
        help="results on stdout (logs and progress go to stderr); wide: scan only, with owners and evidence",
    )
    out.add_argument("-q", "--quiet", action="store_true", help="no progress and no summary on stderr")
    out.add_argument(
        "-v",
        "--v",
        "--verbose",
        dest="verbose",
        type=_verbosity,
        nargs="?",
        const=1,
        default=0,
        metavar="LEVEL",
        help="-v: tracebacks for errors; -v=6: one line per request; -v=8: response bodies too",
    )
    out.add_argument("--no-color", action="store_true", help="no colors (also when NO_COLOR is set)")

    add_connection_flags(parser.add_argument_group("connection (as kubectl)"))
    return parser


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """kubectl spells verbosity -v=6 or -v 6; a bare -v before a word (-v crd x, -qv crd x)
    must not take the word as its level."""
    args = list(argv)
    out: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        switches = arg.startswith("-") and not arg.startswith("--") and arg[1:].isalpha() and arg.endswith("v")
        if (switches or arg in ("--v", "--verbose")) and following and not following.lstrip("=").isdigit():
            if switches and len(arg) > 2:
                out.append(arg[:-1])
            out.append("--verbose=1")
            continue
        out.append(arg)
    return out
