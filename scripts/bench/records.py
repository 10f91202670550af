"""12. What a run's record costs: `crd NAME` on N objects with its record against the same
run with --record=none (time, CPU, peak RSS, record bytes per object), and `crd NAME
--delete` with and without --backup (time and record bytes per object). Each run is
checked: every object freed (--delete: the CRD gone).

The record's question is one of 5%, and on a shared 2-core machine one run of the same
command swings 10% either way (the API server and etcd share the cores). So "none" and
"record" run as PAIRS pairs, back to back on identical fresh populations, the order
alternating; the figure is the median of each pair's ratio (what drifted between pairs
cancels within one), beside the ratio of the CPU the tool itself used."""

from __future__ import annotations

import statistics
from pathlib import Path

from .measure import Sample, check, log, measure
from .report import Report
from .throughput import Throughput

VARIANTS = {
    "none": ["--record=none"],
    "record": [],
    "delete": ["--delete"],
    "backup": ["--delete", "--backup"],
}
PAIRS = 7  # none/record pairs: at least this many (more with --repeat)

Results = dict[str, list[tuple[Sample, int]]]


def run(bench: Throughput, n: int, repeat: int, kubeconfig: str, workdir: Path) -> Results:
    results: Results = {name: [] for name in VARIANTS}
    rounds = [("none", "record")] * max(PAIRS, repeat) + [("delete", "backup")] * repeat
    for i, pair in enumerate(rounds):
        for name in pair if i % 2 == 0 else pair[::-1]:
            results[name].append(_one(bench, n, name, kubeconfig, workdir / f"state-{name}-{i}"))
    return results


def _one(bench: Throughput, n: int, name: str, kubeconfig: str, state: Path) -> tuple[Sample, int]:
    crd = bench.populate(n)
    env = dict(bench.peers.env_for(kubeconfig), XDG_STATE_HOME=str(state))
    argv = [str(bench.peers.plugin), "crd", crd.name, "-q", "--timeout", "30m", *VARIANTS[name]]
    sample = check(measure(argv, env), f"tool {' '.join(VARIANTS[name])} on {crd.name}")
    written = sum(p.stat().st_size for p in state.rglob("*.jsonl"))
    if "--delete" in VARIANTS[name]:
        bench.kube.wait_gone(crd.name, 600)
    else:
        total, finalized = bench.kube.count(crd)
        if (total, finalized) != (n, 0):
            raise SystemExit(f"records: {name} left {finalized} of {total} objects with finalizers")
        bench.kube.delete_crd(crd.name)
    if (written == 0) != (name == "none"):
        raise SystemExit(f"records: {name} wrote {written} bytes of record")
    figures = f"{sample.seconds:.1f}s, CPU {sample.cpu:.2f}s, {sample.rss_mib:.0f} MiB, record {written} bytes"
    log(f"  records: N={n} {name}: {figures}")
    return sample, written


def report(report: Report, results: Results, n: int) -> None:
    def med(name: str, what: str) -> float:
        values = [
            s.seconds if what == "s" else s.cpu if what == "cpu" else s.rss_mib if what == "rss" else b
            for s, b in results[name]
        ]
        return float(statistics.median(values))

    def paired(what: str) -> float:
        pairs = zip(results["record"], results["none"], strict=True)
        return float(statistics.median(getattr(r, what) / getattr(o, what) for (r, _), (o, _) in pairs))

    rows = []
    for name in VARIANTS:
        cells = [f"{med(name, 's'):.2f}", f"{med(name, 'cpu'):.2f}", f"{med(name, 'rss'):.1f}"]
        rows.append([name, str(len(results[name])), *cells, f"{med(name, 'bytes') / max(n, 1):.0f}"])
    time_ratio = report.figure("records.time_record_over_none", paired("seconds"))
    cpu_ratio = report.figure("records.cpu_record_over_none", paired("cpu"))
    cpu_ms = report.figure("records.cpu_ms_per_object", (med("record", "cpu") - med("none", "cpu")) * 1000 / n)
    report.doc["cases"]["records"] = {k: [dict(s.to_json(), record_bytes=b) for s, b in v] for k, v in results.items()}
    rss_delta = report.figure("records.rss_record_minus_none_mib", med("record", "rss") - med("none", "rss"))
    backup_s = report.figure("records.backup_seconds_per_object", (med("backup", "s") - med("delete", "s")) / n)
    backup_b = report.figure("records.backup_bytes_per_object", (med("backup", "bytes") - med("delete", "bytes")) / n)
    report.figure("records.record_bytes_per_object", med("record", "bytes") / n)
    report.table(
        f"12. the record's cost, N={n}, medians",
        ["variant", "runs", "seconds", "CPU s", "peak RSS MiB", "record bytes/object"],
        rows,
        [
            "none: crd NAME --record=none; record: crd NAME; delete: crd NAME --delete; backup: ... --delete --backup",
            f"record/none, median of the {len(results['none'])} pairs' ratios: time {time_ratio:.3f}"
            f" (acceptance <= 1.05), CPU {cpu_ratio:.3f} ({cpu_ms:+.3f} ms/object);"
            f" peak RSS {rss_delta:+.1f} MiB (acceptance <= 5)",
            f"--backup costs {backup_s * 1000:.2f} ms and {backup_b:.0f} bytes of record per object deleted",
        ],
    )
    report.save()
