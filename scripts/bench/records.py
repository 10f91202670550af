"""records: what a run's record costs: `crd NAME` on N objects with its record against the same
run with --record=none (time, CPU, peak RSS, record bytes per object), and `crd NAME
--delete` with and without --backup (time and record bytes per object). Each run is
checked: every object freed (--delete: the CRD gone).

The record's question is one of 5%, and on a shared 2-core machine one run of the same
command swings 10% either way (the API server and etcd share the cores). So "none" and
"record" run as PAIRS pairs, back to back on identical fresh populations (what drifts
between pairs cancels within one), half of them "none" first and half "record" first: a
crossover design. The figure is the geometric mean of the two halves' mean ratios, so
that whatever favours the first or the second run of a pair (it did: one run in two was
the slower for a while, whichever ran) cancels too; beside it the median ratio, each
half's, and the ratio of the CPU the tool itself used."""

from __future__ import annotations

import math
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
PAIRS = 8  # none/record pairs, even: as many "none" first as "record" first

Results = dict[str, list[tuple[Sample, int]]]


def run(bench: Throughput, n: int, repeat: int, kubeconfig: str, workdir: Path) -> Results:
    results: Results = {name: [] for name in VARIANTS}
    pairs = (max(PAIRS, repeat) + 1) // 2 * 2
    rounds = [("none", "record")] * pairs + [("delete", "backup")] * repeat
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

    def ratios(what: str) -> list[float]:
        pairs = zip(results["record"], results["none"], strict=True)
        return [getattr(r, what) / getattr(o, what) for (r, _), (o, _) in pairs]

    def crossover(values: list[float]) -> tuple[float, float, float]:
        """(the estimate, the mean ratio of the pairs "none" ran first in, of the others):
        pair i ran "none" first when i is even."""
        halves = [math.exp(statistics.fmean(math.log(v) for v in values[first::2])) for first in (0, 1)]
        return math.sqrt(halves[0] * halves[1]), halves[0], halves[1]

    rows = []
    for name in VARIANTS:
        cells = [f"{med(name, 's'):.2f}", f"{med(name, 'cpu'):.2f}", f"{med(name, 'rss'):.1f}"]
        rows.append([name, str(len(results[name])), *cells, f"{med(name, 'bytes') / max(n, 1):.0f}"])
    times = ratios("seconds")
    estimate, none_first, record_first = crossover(times)
    time_ratio = report.figure("records.time_record_over_none", estimate)
    median_ratio = report.figure("records.time_record_over_none_median", statistics.median(times))
    cpu_ratio = report.figure("records.cpu_record_over_none", crossover(ratios("cpu"))[0])
    cpu_ms = report.figure("records.cpu_ms_per_object", (med("record", "cpu") - med("none", "cpu")) * 1000 / n)
    report.doc["cases"]["records"] = {k: [dict(s.to_json(), record_bytes=b) for s, b in v] for k, v in results.items()}
    rss_delta = report.figure("records.rss_record_minus_none_mib", med("record", "rss") - med("none", "rss"))
    backup_s = report.figure("records.backup_seconds_per_object", (med("backup", "s") - med("delete", "s")) / n)
    backup_b = report.figure("records.backup_bytes_per_object", (med("backup", "bytes") - med("delete", "bytes")) / n)
    report.figure("records.record_bytes_per_object", med("record", "bytes") / n)
    report.table(
        f"records: the record's cost, N={n}, medians",
        ["variant", "runs", "seconds", "CPU s", "peak RSS MiB", "record bytes/object"],
        rows,
        [
            "none: crd NAME --record=none; record: crd NAME; delete: crd NAME --delete; backup: ... --delete --backup",
            f"record/none over {len(times)} pairs: time {time_ratio:.3f} (acceptance <= 1.05; pairs 'none' ran"
            f" first in {none_first:.3f}, the others {record_first:.3f}; median {median_ratio:.3f},"
            f" {min(times):.3f}-{max(times):.3f})",
            f"CPU {cpu_ratio:.3f} ({cpu_ms:+.3f} ms/object); peak RSS {rss_delta:+.1f} MiB (acceptance <= 5)",
            f"--backup costs {backup_s * 1000:.2f} ms and {backup_b:.0f} bytes of record per object deleted",
        ],
    )
    report.save()
