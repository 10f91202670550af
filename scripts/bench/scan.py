"""Section `scan`: `kubectl unfinalize scan -o json` over TYPES x PER_TYPE terminating
objects (one CRD per type, every object with finalizers, deleted), against bench/lister:
a client-go program that discovers every type and lists them all metadata-only, 16 at
once, as scan does, without the grouping and judging. Wall time and peak RSS of each, and
their ratio; both runs see the same cluster, the peers alternating which goes first."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from .kube import FINALIZERS, NAMESPACES, CrdSpec, Kube
from .measure import Sample, log, measure, med
from .peers import Peers, build_program
from .report import Report

# scanning.evidence.GRACE (tests/unit/test_bench_constants.py holds them equal): deleted longer
# ago than this and held with no writer, an object is stuck, not pending
GRACE = 30

CONCURRENCY = 16  # lists in flight, for both (scan's default)


def populate(kube: Kube, namespaces: list[str], types: int, per_type: int) -> list[CrdSpec]:
    """`types` CRDs of one group, `per_type` objects each with finalizers, then every one
    deleted (a delete-collection per namespace): all Terminating, held by FINALIZERS."""
    group = f"s{secrets.token_hex(4)}.bench.test"
    crds = [CrdSpec(group, f"scan{i:02d}s", f"Scan{i:02d}") for i in range(types)]
    started = time.monotonic()
    for crd in crds:
        kube.create_crd(crd)
    objects = [crd.obj(namespaces[i % NAMESPACES], f"item-{i}") for crd in crds for i in range(per_type)]
    kube.create_objects(objects)
    for crd in crds:
        for ns in namespaces:
            kube.must("DELETE", f"/apis/{group}/v1/namespaces/{ns}/{crd.plural}", ok=(200,))
    log(f"  scan: {types} CRDs x {per_type} terminating objects ready in {time.monotonic() - started:.0f}s")
    return crds


def tool_run(peers: Peers, env: dict[str, str], crds: list[CrdSpec], per_type: int) -> Sample:
    sample = measure([str(peers.plugin), "scan", "-o", "json", "-q", "--concurrency", str(CONCURRENCY)], env)
    if sample.rc not in (0, 1, 3):  # 3: pending, what scan says of objects deleted under 30 s ago (--quick)
        raise SystemExit(f"scan failed with exit code {sample.rc}:\n{sample.stderr[-3000:]}")
    groups = json.loads(sample.stdout)["groups"]
    names = {crd.name for crd in crds}
    for finalizer in FINALIZERS:
        counts = {g["resource"]: g["count"] for g in groups if g["finalizer"] == finalizer and g["resource"] in names}
        if counts != dict.fromkeys(names, per_type):
            raise SystemExit(
                f"scan counted {sum(counts.values())} objects held by {finalizer}, expected {len(names)}x{per_type}"
            )
    return sample


def lister_run(lister: Path, kubeconfig: str, env: dict[str, str], expected: int) -> Sample:
    sample = measure([str(lister), "--kubeconfig", kubeconfig, "--concurrency", str(CONCURRENCY)], env)
    if sample.rc != 0:
        raise SystemExit(f"lister failed with exit code {sample.rc}:\n{sample.stderr[-3000:]}")
    found = json.loads(sample.stdout.strip().splitlines()[-1])["terminating"]
    if found < expected:
        raise SystemExit(f"lister found {found} terminating objects, expected at least {expected}")
    return sample


def run(
    report: Report,
    kube: Kube,
    peers: Peers,
    kubeconfig: str,
    namespaces: list[str],
    types: int,
    per_type: int,
    repeat: int,
) -> None:
    lister = build_program("lister")
    env = peers.env_for(kubeconfig)
    crds = populate(kube, namespaces, types, per_type)
    samples: dict[str, list[Sample]] = {"tool": [], "lister": []}
    try:
        for i in range(repeat):
            for peer in ("tool", "lister") if i % 2 == 0 else ("lister", "tool"):
                if peer == "tool":
                    sample = tool_run(peers, env, crds, per_type)
                else:
                    sample = lister_run(lister, kubeconfig, env, types * per_type)
                samples[peer].append(sample)
                log(f"  scan: {peer}: {sample.seconds:.2f}s, {sample.rss_mib:.0f} MiB")
    finally:
        cleanup = measure(
            [str(peers.plugin), "crd", "--group", crds[0].group, "--delete", "-q", "--timeout", "30m"], env
        )
        if cleanup.rc:
            log(f"  scan: cleanup failed ({cleanup.rc}): {cleanup.stderr[-500:]}")
    n = types * per_type
    tool_s, lister_s = med([s.seconds for s in samples["tool"]]), med([s.seconds for s in samples["lister"]])
    tool_rss, lister_rss = med([s.rss_mib for s in samples["tool"]]), med([s.rss_mib for s in samples["lister"]])
    ratio = report.figure("scan.ratio", tool_s / lister_s)
    report.figure("scan.tool_seconds", tool_s)
    report.figure("scan.lister_seconds", lister_s)
    report.figure("scan.tool_rss_mib", tool_rss)
    report.figure("scan.lister_rss_mib", lister_rss)
    report.doc["cases"]["scan"] = {
        "objects": n,
        "types": types,
        "tool": [s.to_json() for s in samples["tool"]],
        "lister": [s.to_json() for s in samples["lister"]],
    }
    reps = f", median of {repeat}" if repeat > 1 else ""
    report.table(
        f"scan: {n} terminating objects in {types} CRDs, tool vs lister{reps}",
        ["objects", "tool s", "lister s", "tool/lister", "tool RSS MiB", "lister RSS MiB"],
        [[str(n), f"{tool_s:.2f}", f"{lister_s:.2f}", f"{ratio:.2f}", f"{tool_rss:.0f}", f"{lister_rss:.0f}"]],
        [
            "tool: kubectl-unfinalize scan -o json -q (discovery, every type listed metadata-only, grouped, judged);"
            " lister: bench/lister (client-go: discovery, every type listed metadata-only), 16 lists at once each.",
            "targets: tool/lister <= 2, tool RSS < 150 MiB.",
        ],
    )
    report.save()


def free_case(
    report: Report, kube: Kube, peers: Peers, kubeconfig: str, namespaces: list[str], types: int, per_type: int
) -> None:
    """Section `scan-free`: `scan --free` on TYPES x PER_TYPE stuck objects (deleted, held,
    no writer, older than scan's grace) against what it replaces, on an identical second
    population: the scan (`scan -o json`) plus the frees (`crd --group G --only-terminating`).
    The acceptance: scan --free costs at most the two together."""
    env = peers.env_for(kubeconfig)
    timings: dict[str, float] = {}
    for case in ("free", "scan+frees"):
        crds = populate(kube, namespaces, types, per_type)
        time.sleep(GRACE + 1)  # until scan judges them stuck, not pending
        if case == "free":
            sample = measure([str(peers.plugin), "scan", "--free", "-q", "--timeout", "30m"], env)
            timings["free"] = sample.seconds
            log(f"  scan-free: scan --free {sample.seconds:.2f}s (exit {sample.rc}), {sample.rss_mib:.0f} MiB")
        else:
            scan = tool_run(peers, env, crds, per_type)
            frees = measure([str(peers.plugin), "crd", "--group", crds[0].group, "--only-terminating", "-q"], env)
            if frees.rc:
                raise SystemExit(f"crd --group failed ({frees.rc}): {frees.stderr[-2000:]}")
            timings["scan"], timings["frees"] = scan.seconds, frees.seconds
            log(f"  scan-free: scan {scan.seconds:.2f}s + frees {frees.seconds:.2f}s")
        left = sum(kube.count(crd)[0] for crd in crds)
        if left:
            raise SystemExit(f"scan-free: {case} left {left} objects")
        measure([str(peers.plugin), "crd", "--group", crds[0].group, "--delete", "-q", "--timeout", "30m"], env)
    ratio = report.figure("scan_free.ratio", timings["free"] / (timings["scan"] + timings["frees"]))
    for key, value in timings.items():
        report.figure(f"scan_free.{key}_seconds", value)
    report.table(
        f"scan-free: {types * per_type} stuck objects in {types} CRDs, against scan plus the frees",
        ["scan --free s", "scan s", "frees s", "free/(scan+frees)"],
        [[f"{timings['free']:.2f}", f"{timings['scan']:.2f}", f"{timings['frees']:.2f}", f"{ratio:.2f}"]],
        ["frees: crd --group G --only-terminating on an identical population; acceptance: ratio <= 1."],
    )
    report.save()
