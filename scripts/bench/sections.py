"""The benchmark's sections by name: SECTIONS maps each name `--only` takes to the function
that measures and reports it, in the order a full run takes them. Each reads what the run
set up (the control plane, the peers, the namespaces) from one Bench."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import many_crds, provider, records, small, throttled
from . import scan as scan_section
from .kube import FINALIZERS, NAMESPACES, PATCH, Kube
from .peers import Peers
from .report import Report
from .sizes import BigObjects, LastApplied, growth
from .throttled import Throttled
from .throughput import Results, Throughput


@dataclass
class Bench:
    args: argparse.Namespace
    report: Report
    kube: Kube
    peers: Peers
    env: dict[str, str]
    namespaces: list[str]
    kubeconfig: str
    server: list[int]  # the local control plane's processes, whose CPU some cases report
    workdir: Path
    throughput: Throughput
    results: Results = field(default_factory=dict)  # the throughput section's, which rss and growth reuse

    @property
    def notes(self) -> list[str]:
        return [
            "each cell: tool / ceiling. tool: kubectl-unfinalize crd NAME -q, run as kubectl would exec it;"
            " ceiling: bench/ceiling (client-go).",
            f"{NAMESPACES} namespaces, {len(FINALIZERS)} finalizers per object, a fresh identical CRD per run;"
            " CPU = user+sys of the process and its children.",
        ]

    @property
    def reps(self) -> str:
        return f", median of {self.args.repeat}" if self.args.repeat > 1 else ""


def run_small(b: Bench) -> None:
    startup = small.startup(b.peers, b.env, b.args.runs)
    cases = [small.run_case(c, b.kube, b.peers, b.env, b.namespaces, b.args.runs, b.workdir) for c in small.cases()]
    b.report.small(
        startup,
        cases,
        b.args.runs,
        [
            "tool: kubectl unfinalize -f crds.yaml --delete (finds the objects itself)",
            "kubectl: delete -f objects.yaml --wait=false; patch -f objects.yaml --type=merge"
            f" -p '{PATCH}'; delete -f crds.yaml (waits). Setup before each run is not timed.",
            "tool/kubectl < 1: the tool is faster.",
        ],
    )


def run_throughput(b: Bench) -> None:
    b.results = b.throughput.compare(b.args.sizes, b.args.repeat, b.kubeconfig, "throughput")
    b.report.throughput(
        "throughput", f"throughput: tool vs ceiling{b.reps}", b.results, b.notes, {"repeat": b.args.repeat}
    )


def run_far(b: Bench) -> None:
    for delay in b.args.delays:
        ms = round(delay * 1000)
        with b.throughput.far(delay) as (far, proxy):
            results = b.throughput.compare(b.args.far_sizes, b.args.repeat, far, f"far +{ms}ms")
            accepted = proxy.accepted
        b.report.throughput(
            "far" if ms == 50 else f"far{ms}ms",  # "far": the key +50 ms always had
            f"far: +{ms} ms each way through a loopback proxy ({2 * ms} ms round trip)",
            results,
            [*b.notes, f"the proxy accepted {accepted} TCP connections in all (ceiling: HTTP/2, one per run)."],
            {"repeat": b.args.repeat, "delay_s": delay, "proxy_connections": accepted},
        )


def run_rss(b: Bench) -> None:
    b.report.rss(*b.throughput.rss(b.args.rss_sizes, b.kubeconfig, b.results))


def run_many_crds(b: Bench) -> None:
    measured = many_crds.run(b.kube, b.peers, b.env, b.namespaces, b.args.repeat, b.server)
    many_crds.report(b.report, measured, b.args.repeat)


def run_scan(b: Bench) -> None:
    a = b.args
    scan_section.run(b.report, b.kube, b.peers, b.kubeconfig, b.namespaces, a.scan_types, a.scan_per_type, a.repeat)


def run_throttled(b: Bench) -> None:
    measured = Throttled(b.kube, b.peers, b.throughput, b.workdir).compare(b.args.throttled_sizes, b.args.repeat)
    throttled.report(b.report, measured, b.args.repeat)


def run_big(b: Bench) -> None:
    big = BigObjects(b.throughput)
    results = big.compare(b.args.big_sizes, b.args.repeat, b.kubeconfig, "big")
    b.report.throughput(
        "big",
        f"big: a {big.size // 1024} KiB annotation on each object, tool vs ceiling",
        results,
        [*b.notes, "acceptance: rate tool/ceil >= 0.8, tool peak RSS <= 150 MiB."],
        {"repeat": b.args.repeat, "annotation_bytes": big.size},
    )


def run_growth(b: Bench) -> None:
    b.report.growth(growth(b.throughput, b.args.growth_sizes, b.kubeconfig, b.results))


def run_last_applied(b: Bench) -> None:
    applied = LastApplied(b.throughput)
    results = applied.compare(b.args.last_applied_sizes, b.args.repeat, b.kubeconfig, "last-applied")
    b.report.versus(
        "last_applied",
        f"last-applied: objects as kubectl apply leaves them, a unique {applied.size // 1024} KiB"
        f" last-applied-configuration each{b.reps}",
        results,
        [
            "tool: kubectl-unfinalize crd NAME -q; ceiling: bench/ceiling (client-go);"
            f" kubectl: patch -f objects.yaml --type=merge -p '{PATCH}' (one process for all).",
            f"{NAMESPACES} namespaces, a fresh identical CRD per run. rate tool/ceil > 1 and time tool/kubectl"
            " < 1: the tool is faster.",
            "acceptance: rate tool/ceil >= 0.9, tool peak RSS <= 100 MiB.",
        ],
        {"repeat": b.args.repeat, "annotation_bytes": applied.size},
    )


def run_provider(b: Bench) -> None:
    shape = provider.Provider(crds=b.args.provider_crds, groups=max(1, b.args.provider_crds // 10))
    measured = provider.run(b.kube, b.peers, b.env, b.args.repeat, b.server, b.workdir, shape)
    provider.report(b.report, measured, shape, b.args.repeat)


def run_records(b: Bench) -> None:
    repeat = max(b.args.repeat, 3)  # --delete with and without --backup; the record's own pairs: PAIRS
    measured = records.run(b.throughput, b.args.records_n, repeat, b.kubeconfig, b.workdir)
    records.report(b.report, measured, b.args.records_n)


def run_scan_free(b: Bench) -> None:
    a = b.args
    scan_section.free_case(b.report, b.kube, b.peers, b.kubeconfig, b.namespaces, a.scan_types, a.scan_per_type)


SECTIONS: dict[str, Callable[[Bench], None]] = {
    "small": run_small,
    "throughput": run_throughput,
    "far": run_far,
    "rss": run_rss,
    "many-crds": run_many_crds,
    "scan": run_scan,
    "throttled": run_throttled,
    "big": run_big,
    "growth": run_growth,
    "last-applied": run_last_applied,
    "provider": run_provider,
    "records": run_records,
    "scan-free": run_scan_free,
}


def measure(bench: Bench) -> None:
    """Every section the run was asked for (--only, else all), in SECTIONS' order."""
    for name in bench.args.sections:
        SECTIONS[name](bench)
