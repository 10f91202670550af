"""The `scan` word's flags, help text and checks, beside flags.py's parser (which also
feeds argparse-manpage and completion). Imports nothing heavy."""

from __future__ import annotations

import argparse

from ..durations import ago
from ..scanning.patience import ALIVE_PATIENCE, BUILTIN_PATIENCE, GRACE, WORKING
from .connection_flags import duration

SCAN_WORDS = ("scan",)
SCAN_LISTS = 16  # lists in flight at most (fewer with --concurrency): each holds one page in memory
# Flags that select or change what is freed; scan reads only, so it refuses them.
NOT_FOR_SCAN = {
    "group": "--group",
    "selector": "-l",
    "filename": "-f",
    "delete": "--delete",
    "finalizer": "--finalizer",
    "field_selector": "--field-selector",
    "only_terminating": "--only-terminating",
    "remove_dead_webhooks": "--remove-dead-webhooks",
    "unsafe_delete_corrupt": "--unsafe-delete-corrupt",
    "with_dependents": "--with-dependents",
    "interactive": "-i",
}

SCAN_EPILOG = f"""\
scan (read-only): kubectl unfinalize scan [-n NS|-A] [-o text|wide|json|yaml]
[--older-than DURATION] [--all] [--wait] lists every object being deleted and still held by
finalizers, in every resource type the server serves (built-in, custom, aggregated),
plus Terminating CRDs and namespaces: one group per finalizer and resource type, with
how many, the oldest wait, the namespaces, who owns the finalizer (built-in controller,
CRD group, APIService, the field manager that wrote it) and a verdict from the evidence
the cluster holds (the field manager's writes, Leases, kopf peering). A type that cannot
be listed (403, an unavailable API) is one line on stderr and the rest is still
scanned; at most {SCAN_LISTS} lists are in flight (--concurrency can lower it). -o json|yaml
prints one document (docs/scan.schema.json).

scan as a CI gate for "the teardown left nothing behind": exit 0 when nothing is held
(nothing stuck, blocked or pending) and everything could be read; 1 when something is
stuck or blocked, when objects the API server cannot read from storage are found
(corrupt), or when a type's list failed or an API is unavailable (a type the user may not
list, a 403, is named and does not fail the gate); 3 when
nothing is stuck or blocked but something deleted less than {ago(GRACE)} ago is held with no
controller seen yet (pending: a dead operator's objects look like that right after a
teardown). --wait scans again while something is pending, until it is judged or gone,
within --timeout (default 5m): 3 then means the time ran out. Stuck, blocked and pending
entries are followed by the commands that free them (a blocked one's after a warning:
its controller is alive).

scan verdicts:
  working   the finalizer's field manager wrote after the deletion, within {ago(WORKING)}
  blocked   working, but its conditions or Warning Events have said for over {ago(GRACE)} since
            the deletion that it is refused: the namespace is being terminated, a 403, a 422
  alive     a sign of life: a Lease or kopf peering entry matching the controller is fresh, or
            its field manager wrote an object of the type since the deletion (for {ago(ALIVE_PATIENCE)});
            silent on the held objects past that, it is held (the gate fails) but never freed
            by scan --free: time alone does not prove a controller dead
  pending   deleted less than {ago(GRACE)} ago, no evidence either way yet
  built-in  a Kubernetes controller's or a CSI storage sidecar's finalizer, waiting
            (stuck after {ago(BUILTIN_PATIENCE)})
  stuck     none of the above

scan commands: crd NAME --delete for a Terminating CRD's objects; crd NAME
--only-terminating --finalizer F for the objects of a CRD that stays; TYPE NAME -n NS
--finalizer F for other types; ns NAME --delete for a namespace, after kubectl delete
apiservice NAME for an unavailable APIService; a built-in finalizer only ever with
--finalizer. One finalizer across many CRDs is one command for them all: crd --group G
or --category C where that selects exactly them, else their names.

scan --free: scan --free [-n NS|-A] [--older-than D] [--finalizer F]... [--exclude-namespace
PATTERN]... [--include-blocked] [--wait] [--dry-run=server|client] [--max-objects N]
[--record PATH] frees what the same scan judges stuck, as its commands would, in one run with one record:
only objects being deleted, only the stuck finalizers; never what is working, alive,
pending or blocked (blocked with --include-blocked), nor a built-in controller's finalizer
unless --finalizer names it (--finalizer also narrows it to those finalizers). A stuck
namespace is freed through what holds it, never by freeing everything inside; an
unavailable APIService is named, never deleted. Then it scans again and exits as the gate
(0, 1, 3). --max-objects N refuses before the first write (exit 2) when all the frees
together would change more. -o json|yaml adds `freed` and `record`."""


def add_scan_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--older-than",
        type=duration,
        default=0.0,
        metavar="DURATION",
        help="scan: only what was deleted at least this long ago, e.g. 10m (default: anything terminating)",
    )
    group.add_argument(
        "--all",
        dest="include_live",
        action="store_true",
        help="scan: also list objects that have finalizers but are not being deleted",
    )
    group.add_argument(
        "--free",
        action="store_true",
        help="scan: free what the scan judges stuck (only objects being deleted, only the stuck finalizers; "
        "a built-in controller's only when --finalizer names it), in one run with one record, then scan "
        "again and exit as the gate does; with --wait, wait out what is pending first",
    )
    group.add_argument(
        "--include-blocked",
        action="store_true",
        help="scan --free: also free blocked groups (a live controller that says it cannot finish)",
    )
    group.add_argument(
        "--events",
        action="store_true",
        help="scan --free: one Kubernetes Event per freed group and namespace, on its objects (reason "
        "FinalizersRemoved, the finalizers, the verdict and the record's ID); without the permission "
        "to create Events, a warning and the frees still done",
    )
    group.add_argument(
        "--exclude-namespace",
        action="append",
        default=[],
        metavar="PATTERN",
        help="scan --free: never free objects in namespaces matching this shell pattern (repeatable)",
    )


def scan_problem(args: argparse.Namespace) -> str:
    """Why these flags cannot go with scan, or ""."""
    if args.words[1:]:
        return f"scan takes no names (got {' '.join(args.words[1:])!r}); narrow it with -n NAMESPACE"
    if args.free:
        return _free_problem(args)
    if args.include_blocked or args.exclude_namespace or args.force_lost_pods or args.events:
        return "--include-blocked, --exclude-namespace, --force-lost-pods and --events apply to scan --free"
    used = [flag for dest, flag in NOT_FOR_SCAN.items() if getattr(args, dest)]
    if args.dry_run != "none":
        used.append("--dry-run")
    if used:
        return f"scan reads only: {', '.join(used)} do not apply (scan --free takes --finalizer and --dry-run)"
    if args.output == "name":
        return "scan prints -o text, wide, json or yaml, not name"
    return ""


def _free_problem(args: argparse.Namespace) -> str:
    """scan --free takes --finalizer, --dry-run, --max-objects and --record besides scan's own."""
    used = [flag for dest, flag in NOT_FOR_SCAN.items() if dest != "finalizer" and getattr(args, dest)]
    if used:
        return f"scan --free frees what the scan judges stuck: {', '.join(used)} do not apply"
    if args.include_live:
        return "scan --free frees only objects being deleted: --all does not apply"
    if args.output == "name":
        return "scan --free prints -o text, wide, json or yaml, not name"
    if any(not p.strip() for p in args.exclude_namespace):
        return "--exclude-namespace needs a pattern"
    return ""
