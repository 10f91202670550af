"""12. What a run's record costs: `crd NAME` on N objects with its record against the same
run with --record=none (time, peak RSS, record bytes per object), and `crd NAME --delete`
with and without --backup (time and record bytes per object). The variants alternate
which goes first; medians of --repeat runs. Each run is checked: every object freed
(--delete: the CRD gone)."""

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


def run(bench: Throughput, n: int, repeat: int, kubeconfig: str, workdir: Path) -> dict[str, list[tuple[Sample, int]]]:
    results: dict[str, list[tuple[Sample, int]]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            crd = bench.populate(n)
            state = workdir / f"state-{name}-{i}"
            env = dict(bench.peers.env_for(kubeconfig), XDG_STATE_HOME=str(state))
            argv = [str(bench.peers.plugin), "crd", crd.name, "-q", "--timeout", "30m", *VARIANTS[name]]
            sample = check(measure(argv, env), f"tool {' '.join(VARIANTS[name])} on {crd.name}")
            written = sum(p.stat().st_size for p in state.rglob("*.jsonl"))
            if VARIANTS[name] and VARIANTS[name][0] == "--delete":
                bench.kube.wait_gone(crd.name, 600)
            else:
                total, finalized = bench.kube.count(crd)
                if (total, finalized) != (n, 0):
                    raise SystemExit(f"records: {name} left {finalized} of {total} objects with finalizers")
                bench.kube.delete_crd(crd.name)
            if (written == 0) != (name == "none"):
                raise SystemExit(f"records: {name} wrote {written} bytes of record")
            results[name].append((sample, written))
            log(f"  records: N={n} {name}: {sample.seconds:.1f}s, {sample.rss_mib:.0f} MiB, record {written} bytes")
    return results


def report(report: Report, results: dict[str, list[tuple[Sample, int]]], n: int, repeat: int) -> None:
    def med(name: str, what: str) -> float:
        values = [
            s.seconds if what == "s" else s.cpu if what == "cpu" else s.rss_mib if what == "rss" else b
            for s, b in results[name]
        ]
        return float(statistics.median(values))

    rows = []
    for name in VARIANTS:
        cells = [f"{med(name, 's'):.2f}", f"{med(name, 'cpu'):.2f}", f"{med(name, 'rss'):.1f}"]
        rows.append([name, *cells, f"{med(name, 'bytes') / max(n, 1):.0f}"])
    time_ratio = report.figure("records.time_record_over_none", med("record", "s") / med("none", "s"))
    cpu_ratio = report.figure("records.cpu_record_over_none", med("record", "cpu") / med("none", "cpu"))
    report.doc["cases"]["records"] = {k: [dict(s.to_json(), record_bytes=b) for s, b in v] for k, v in results.items()}
    rss_delta = report.figure("records.rss_record_minus_none_mib", med("record", "rss") - med("none", "rss"))
    backup_s = report.figure("records.backup_seconds_per_object", (med("backup", "s") - med("delete", "s")) / n)
    backup_b = report.figure("records.backup_bytes_per_object", (med("backup", "bytes") - med("delete", "bytes")) / n)
    report.figure("records.record_bytes_per_object", med("record", "bytes") / n)
    report.table(
        f"12. the record's cost, N={n}, median of {repeat}",
        ["variant", "seconds", "CPU s", "peak RSS MiB", "record bytes/object"],
        rows,
        [
            "none: crd NAME --record=none; record: crd NAME; delete: crd NAME --delete; backup: ... --delete --backup",
            f"record/none time {time_ratio:.3f} (acceptance <= 1.05), CPU {cpu_ratio:.3f},"
            f" peak RSS {rss_delta:+.1f} MiB (acceptance <= 5)",
            f"--backup costs {backup_s * 1000:.2f} ms and {backup_b:.0f} bytes of record per object deleted",
        ],
    )
    report.save()
