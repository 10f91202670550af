"""Benchmark kubectl-unfinalize on a local control plane, in one run, against two references
(client-go programs and plain kubectl).

Its sections, by the name --only takes, in the order a full run takes them (sections.py's
SECTIONS):

small: ``kubectl unfinalize -f crds.yaml --delete`` (the one-file binary
   dist/kubectl-unfinalize, run as a kubectl plugin) against the plain kubectl sequence
   (delete the objects --wait=false, merge-patch their finalizers away, delete the CRDs
   and wait): 1 CRD with 3 stuck objects, and 4 CRDs with 10 in 2 namespaces; median,
   min and max of --runs runs each (setup before each run is not timed).
throughput: ``kubectl unfinalize crd NAME -q`` against the ceiling program
   (bench/ceiling: client-go, metadata-only list, 64 merge patches in flight, no client
   rate limit) doing the same job on an identical fresh CRD: objects/s, client CPU per
   object (user+sys of the process and its children), peak RSS.
far: the same through a loopback proxy adding 50 ms, then 150 ms, each way.
rss: peak RSS of the tool at N=10,000 (and 100,000 with --large).
many-crds (many_crds.py): 300 empty CRDs, the tool's crd --group G --delete against
   kubectl delete crd -l; 200 CRDs x 3 finalized objects against one CRD with the 600, and
   the ceiling program doing both shapes (its own ratio is the server's floor).
scan: ``kubectl unfinalize scan`` over 20,000 terminating objects in 50 CRDs against
   bench/lister (client-go listing every type metadata-only): time, peak RSS, ratio.
throttled: a priority level of 3 seats that answers 429 to what does not fit: the tool
   against the ceiling at exactly 3 in flight (ideal) and at 64 (naive), and each one's 429s.
big: 2,000 objects with a 100 KiB annotation each, tool vs ceiling (sizes.py).
growth: the tool alone at N = 1,000 / 10,000 / 100,000 (--growth-n; --no-100k skips the last).
last-applied: 2,000 objects as `kubectl apply` leaves them (a unique 100 KiB
   last-applied-configuration, JSON escaped on the wire), in 20 namespaces: the tool against
   the ceiling and against kubectl (`patch -f objects.yaml`), peak RSS of each (sizes.py).
provider: 300 CRDs of ~45 KiB schema each in 30 groups (a crossplane provider's, generated),
   3 Terminating objects each: the tool's `crd -l --delete` (default --timeout) against the
   ceiling and against kubectl (`patch -f` + `delete crd -l`), with the control plane's CPU
   (provider.py; --provider-crds).
records: `crd NAME` on 10,000 objects with and without its record (8 pairs in a crossover
   design, half of them each way round), and `--delete` with and without --backup: time, CPU,
   peak RSS and record bytes per object (records.py; --records-n).
scan-free: `scan --free` on the scan section's shape of stuck objects against the scan plus
   the frees (`crd --group G --only-terminating`) on an identical population (scan.py).

    python scripts/benchmark.py                       # everything, own control plane
    python scripts/benchmark.py --quick               # smoke: N=200, 3 runs
    python scripts/benchmark.py --only throughput -n 2000
    python scripts/benchmark.py --kubeconfig ~/.kube/config --only small
    python scripts/benchmark.py --tool "python kubectl-unfinalize"   # the checkout, not dist/
    python scripts/benchmark.py --json base.json      # also every sample, medians and ratios
    python scripts/bench_compare.py base.json new.json   # two such runs side by side, new/base

--json PATH writes one document: the settings, what ran, every run's raw samples and the
computed figures (medians, ratios) under stable dotted keys; it is rewritten after each
case ("complete": false until the end). --json - writes it to stdout at the end, and the
tables go to stderr instead.

Not a test. The figures depend on the machine, and the API server, etcd, the client and
this script share it: on a shared 2-core machine the absolute numbers mean little, and
only the ratios within one run are meaningful.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

from controlplane import K8S_VERSION, ControlPlane, find_binaries

from . import ROOT
from .kube import Kube
from .measure import log
from .peers import DEFAULT_TOOL, Peers, build_program, resolve_tool
from .report import Report
from .sections import SECTIONS, Bench, measure
from .throughput import Throughput


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmark.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=list(SECTIONS), action="append", help="repeatable")
    parser.add_argument("--runs", type=int, help="runs per small-N case (default 10)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per throughput/far size; medians (default 1)")
    parser.add_argument("-n", type=int, action="append", metavar="N", help="throughput sizes (default 2000, 10000)")
    parser.add_argument("--far-n", type=int, action="append", metavar="N", help="far sizes (default 2000, 5000)")
    parser.add_argument(
        "--delay", type=float, action="append", help="far: seconds added each way, repeatable (default 0.05, 0.15)"
    )
    parser.add_argument("--throttled-n", type=int, action="append", metavar="N", help="throttled sizes (default 2000)")
    parser.add_argument("--large", action="store_true", help="rss: also N=100,000")
    parser.add_argument("--scan-types", type=int, help="scan: CRDs (default 50)")
    parser.add_argument("--scan-per-type", type=int, help="scan: terminating objects per CRD (default 400)")
    parser.add_argument("--big-n", type=int, action="append", metavar="N", help="big objects sizes (default 2000)")
    parser.add_argument(
        "--growth-n", type=int, action="append", metavar="N", help="growth sizes (default 1000, 10000, 100000)"
    )
    parser.add_argument("--no-100k", action="store_true", help="growth: leave N=100,000 out (it takes long)")
    parser.add_argument(
        "--last-applied-n", type=int, action="append", metavar="N", help="last-applied sizes (default 2000)"
    )
    parser.add_argument("--provider-crds", type=int, help="provider: CRDs (default 300)")
    parser.add_argument("--records-n", type=int, help="records: objects (default 10000)")
    parser.add_argument("--quick", action="store_true", help="smoke run: N=200 everywhere, 3 small-N runs")
    parser.add_argument("--kubeconfig", help="use this cluster instead of starting a local control plane")
    parser.add_argument(
        "--tool", help='command to measure instead of dist/kubectl-unfinalize, e.g. "python kubectl-unfinalize"'
    )
    parser.add_argument(
        "--json", metavar="PATH", help="also write samples and figures as JSON to PATH (- for stdout, tables on stderr)"
    )
    args = parser.parse_args(argv)
    args.sections = [name for name in SECTIONS if not args.only or name in args.only]  # a full run's order
    args.runs = args.runs or (3 if args.quick else 10)
    args.sizes = args.n or ([200] if args.quick else [2000, 10000])
    args.far_sizes = args.far_n or ([200] if args.quick else [2000, 5000])
    args.scan_types = args.scan_types or (5 if args.quick else 50)
    args.scan_per_type = args.scan_per_type or (40 if args.quick else 400)
    args.delays = args.delay or [0.05, 0.15]
    args.throttled_sizes = args.throttled_n or ([200] if args.quick else [2000])
    args.big_sizes = args.big_n or ([200] if args.quick else [2000])
    args.last_applied_sizes = args.last_applied_n or ([200] if args.quick else [2000])
    args.provider_crds = args.provider_crds or (30 if args.quick else 300)
    args.records_n = args.records_n or (200 if args.quick else 10000)
    args.growth_sizes = args.growth_n or ([200, 1000] if args.quick else [1000, 10000, 100000])
    if args.no_100k:
        args.growth_sizes = [n for n in args.growth_sizes if n < 100000]
    args.rss_sizes = [200] if args.quick else [10000] + ([100000] if args.large else [])
    return args


def settings(args: argparse.Namespace) -> dict:
    """What the run was asked to do, for the JSON document: the same flags repeat it."""
    return {
        "sections": args.sections,
        "runs": args.runs,
        "repeat": args.repeat,
        "sizes": args.sizes,
        "far_sizes": args.far_sizes,
        "delays_s": args.delays,
        "throttled_sizes": args.throttled_sizes,
        "rss_sizes": args.rss_sizes,
        "scan_types": args.scan_types,
        "scan_per_type": args.scan_per_type,
        "big_sizes": args.big_sizes,
        "last_applied_sizes": args.last_applied_sizes,
        "provider_crds": args.provider_crds,
        "records_n": args.records_n,
        "growth_sizes": args.growth_sizes,
        "quick": args.quick,
        "tool": args.tool,
        "kubeconfig": args.kubeconfig,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = sys.stderr if args.json == "-" else sys.stdout
    report = Report(out, args.json, ["scripts/benchmark.py", *(sys.argv[1:] if argv is None else argv)], settings(args))
    tool = resolve_tool(args.tool)
    kubectl = find_binaries(("kubectl",))["kubectl"]
    ceiling = build_program("ceiling")
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="unfinalize-bench-")))
        kubeconfig = args.kubeconfig
        server: list[int] = []  # the local control plane's processes, whose CPU some cases report
        if not kubeconfig:
            log("starting a local control plane")
            control_plane = stack.enter_context(ControlPlane())
            kubeconfig, server = control_plane.kubeconfig, list(control_plane.processes.values())
        kube = Kube(kubeconfig)
        stack.callback(kube.close)
        peers = Peers(kubectl, tool, ceiling, workdir)
        env = peers.env_for(kubeconfig)
        namespaces = kube.namespaces()
        notes = []
        if args.tool:
            notes.append(f"measuring --tool {args.tool!r} instead of {DEFAULT_TOOL.relative_to(ROOT)}")
        if args.kubeconfig is None:
            notes.append(f"local control plane {K8S_VERSION}: etcd, kube-apiserver, kube-controller-manager here")
        report.environment(peers.versions(kube, env), notes)
        throughput = Throughput(kube, peers, namespaces, workdir)

        measure(Bench(args, report, kube, peers, env, namespaces, kubeconfig, server, workdir, throughput))
    report.finish()
    return 0
