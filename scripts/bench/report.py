"""The results, twice: tables for people, and one JSON document for programs (--json).

The document (format FORMAT) holds every run's raw samples under "cases" and the computed
medians and ratios under "figures", a flat map with stable dotted keys (section.size.peer.what,
e.g. "throughput.2000.tool.objects_per_s", "small.1crd-3obj.ratio.seconds"), so that two runs
can be compared key by key (scripts/bench_compare.py). "higher_is_better" lists the figures
where more is better (rates); for every other figure less is better. The file is rewritten
after each case, with "complete": false until the last one is done.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TextIO

from .measure import Sample, med
from .small import SmallCase
from .throughput import Results

FORMAT = "kubectl-unfinalize-bench/1"
THROUGHPUT_HEADER = ["N", "seconds", "objects/s", "rate tool/ceil", "CPU ms/object", "CPU tool/ceil", "peak RSS MiB"]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def fmt_spread(values: list[float]) -> str:
    return f"{med(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def cpu_split(results: Results) -> dict[str, tuple[float, float]]:
    """Each peer's median CPU as a line through the smallest and the largest N: (fixed
    seconds, milliseconds per object). A ratio of CPU per object at one N mixes the two,
    and a start-up of 0.1 s is half of it at N=2,000; {} with fewer than two sizes."""
    if len(results) < 2:
        return {}
    low, high = min(results), max(results)
    split = {}
    for peer in results[low]:
        cpu_low, cpu_high = (med([s.cpu for s in results[n][peer]]) for n in (low, high))
        marginal = (cpu_high - cpu_low) / (high - low)
        split[peer] = (cpu_low - marginal * low, marginal * 1000)
    return split


def samples_json(samples: list[Sample]) -> list[dict[str, float | int]]:
    return [s.to_json() for s in samples]


class Report:
    def __init__(self, out: TextIO, json_path: str | None, command: list[str], settings: dict) -> None:
        self.out, self.json_path = out, json_path
        self.doc: dict = {
            "format": FORMAT,
            "complete": False,
            "started": now(),
            "finished": None,
            "command": command,
            "settings": settings,
            "environment": {},
            "cases": {},
            "figures": {},
            "higher_is_better": [],
        }

    # output ----------------------------------------------------------------------
    def print(self, line: str = "") -> None:
        print(line, file=self.out, flush=True)

    def table(self, title: str, header: list[str], rows: list[list[str]], notes: list[str]) -> None:
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        self.print(f"\n{title}")
        for r in [header, *rows]:
            cells = [
                str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ]
            self.print("  " + "  ".join(cells))
        for note in notes:
            self.print(f"  {note}")

    def figure(self, key: str, value: float, higher_is_better: bool = False) -> float:
        self.doc["figures"][key] = round(value, 4)
        if higher_is_better and key not in self.doc["higher_is_better"]:
            self.doc["higher_is_better"].append(key)
        return value

    def save(self) -> None:
        """Rewrite the JSON file (atomically); to stdout ("-") it is written once, by finish()."""
        if self.json_path and self.json_path != "-":
            tmp = Path(self.json_path + ".tmp")
            tmp.write_text(json.dumps(self.doc, indent=1) + "\n")
            tmp.replace(self.json_path)

    def finish(self) -> None:
        self.doc["complete"], self.doc["finished"] = True, now()
        if self.json_path == "-":
            sys.stdout.write(json.dumps(self.doc, indent=1) + "\n")
            sys.stdout.flush()
        else:
            self.save()

    # sections --------------------------------------------------------------------
    def environment(self, versions: dict[str, str], notes: list[str]) -> None:
        self.doc["environment"] = versions
        self.print("kubectl-unfinalize benchmark (figures on a shared machine: compare the ratios within this run)")
        for name, line in versions.items():
            self.print(f"  {name + ':':<10} {line}")
        for note in notes:
            self.print(f"  {note}")
        self.save()

    def small(self, startup: list[Sample], cases: list[SmallCase], runs: int, notes: list[str]) -> None:
        doc: dict = {"runs": runs, "startup": {"tool": samples_json(startup)}, "cases": {}}
        secs = [s.seconds for s in startup]
        self.figure("small.startup.tool.seconds", med(secs))
        rows = [["startup: kubectl unfinalize --version", fmt_spread(secs), "", "", ""]]
        for case in cases:
            doc["cases"][case.key] = {
                "title": case.title,
                "crds": len(case.crds),
                "objects": case.objects,
                "namespaces": case.namespaces,
                "samples": {peer: samples_json(s) for peer, s in case.samples.items()},
            }
            times = {peer: [s.seconds for s in samples] for peer, samples in case.samples.items()}
            cpu = {peer: med([s.cpu for s in samples]) for peer, samples in case.samples.items()}
            for peer in times:
                self.figure(f"small.{case.key}.{peer}.seconds", med(times[peer]))
                self.figure(f"small.{case.key}.{peer}.cpu_s", cpu[peer])
            ratio = self.figure(f"small.{case.key}.ratio.seconds", med(times["tool"]) / med(times["kubectl"]))
            row = [case.title, fmt_spread(times["tool"]), fmt_spread(times["kubectl"]), f"{ratio:.2f}"]
            rows.append([*row, f"{cpu['tool']:.2f} / {cpu['kubectl']:.2f}"])
        self.doc["cases"]["small"] = doc
        self.table(
            f"small: teardown, seconds, median (min-max) of {runs} runs",
            ["case", "kubectl unfinalize --delete", "kubectl 3-step", "tool/kubectl", "CPU s tool / kubectl"],
            rows,
            notes,
        )
        self.save()

    def throughput(self, section: str, title: str, results: Results, notes: list[str], extra: dict) -> None:
        """Table and figures of a tool-vs-ceiling section ("throughput" or "far")."""
        self.doc["cases"][section] = {
            **extra,
            "sizes": {str(n): {peer: samples_json(s) for peer, s in peers.items()} for n, peers in results.items()},
        }
        rows = []
        for n, peers in results.items():
            fig: dict[str, dict[str, float]] = {}
            for peer, samples in peers.items():
                key = f"{section}.{n}.{peer}"
                seconds = self.figure(f"{key}.seconds", med([s.seconds for s in samples]))
                fig[peer] = {
                    "seconds": seconds,
                    "rate": self.figure(f"{key}.objects_per_s", n / seconds, higher_is_better=True),
                    "cpu_ms": self.figure(f"{key}.cpu_ms_per_object", med([s.cpu for s in samples]) * 1000 / n),
                    "rss": self.figure(f"{key}.peak_rss_mib", max(s.rss_mib for s in samples)),
                }
            t, c = fig["tool"], fig["ceiling"]
            rate = self.figure(f"{section}.{n}.ratio.rate", t["rate"] / c["rate"], higher_is_better=True)
            cpu = self.figure(f"{section}.{n}.ratio.cpu", t["cpu_ms"] / c["cpu_ms"])
            rows.append(
                [
                    f"{n:,}",
                    f"{t['seconds']:.1f} / {c['seconds']:.1f}",
                    f"{t['rate']:.0f} / {c['rate']:.0f}",
                    f"{rate:.2f}",
                    f"{t['cpu_ms']:.2f} / {c['cpu_ms']:.2f}",
                    f"{cpu:.1f}",
                    f"{t['rss']:.0f} / {c['rss']:.0f}",
                ]
            )
        split = cpu_split(results)
        if split:
            for peer, (fixed, marginal) in split.items():
                self.figure(f"{section}.fixed.{peer}.cpu_s", fixed)
                self.figure(f"{section}.marginal.{peer}.cpu_ms_per_object", marginal)
            (t_fixed, t_marginal), (c_fixed, c_marginal) = split["tool"], split["ceiling"]
            ratio = self.figure(f"{section}.marginal.ratio.cpu", t_marginal / c_marginal)
            low, high = min(results), max(results)
            notes = [
                f"CPU split by the line through N={low:,} and N={high:,}: per object {t_marginal:.3f} / "
                f"{c_marginal:.3f} ms ({ratio:.2f}x), fixed {t_fixed:.2f} / {c_fixed:.2f} s (tool / ceiling).",
                *notes,
            ]
        self.table(title, THROUGHPUT_HEADER, rows, notes)
        self.save()

    def versus(self, section: str, title: str, results: Results, notes: list[str], extra: dict) -> None:
        """A tool-vs-ceiling-vs-kubectl section: medians, the tool's rate over the ceiling's
        and its time over kubectl's, peak RSS of each."""
        self.doc["cases"][section] = {
            **extra,
            "sizes": {str(n): {peer: samples_json(s) for peer, s in peers.items()} for n, peers in results.items()},
        }
        rows = []
        for n, peers in results.items():
            secs, rss = {}, {}
            for peer, samples in peers.items():
                key = f"{section}.{n}.{peer}"
                secs[peer] = self.figure(f"{key}.seconds", med([s.seconds for s in samples]))
                self.figure(f"{key}.objects_per_s", n / secs[peer], higher_is_better=True)
                rss[peer] = self.figure(f"{key}.peak_rss_mib", max(s.rss_mib for s in samples))
            rate = self.figure(f"{section}.{n}.ratio.rate", secs["ceiling"] / secs["tool"], higher_is_better=True)
            kubectl = self.figure(f"{section}.{n}.ratio.seconds_vs_kubectl", secs["tool"] / secs["kubectl"])
            rows.append(
                [
                    f"{n:,}",
                    " / ".join(f"{secs[p]:.1f}" for p in ("tool", "ceiling", "kubectl")),
                    f"{rate:.2f}",
                    f"{kubectl:.2f}",
                    " / ".join(f"{rss[p]:.0f}" for p in ("tool", "ceiling", "kubectl")),
                ]
            )
        header = ["N", "seconds tool / ceiling / kubectl", "rate tool/ceil", "time tool/kubectl", "peak RSS MiB"]
        self.table(title, header, rows, notes)
        self.save()

    def rss(self, base: Sample, results: Results) -> None:
        self.doc["cases"]["rss"] = {
            "sizes": {"0": {"tool": samples_json([base])}}
            | {str(n): {"tool": samples_json(peers["tool"])} for n, peers in results.items()}
        }
        self.figure("rss.0.tool.peak_rss_mib", base.rss_mib)
        rows = [["0 (a CRD without objects)", f"{base.rss_mib:.0f}", "", ""]]
        for n, peers in results.items():
            peak = self.figure(f"rss.{n}.tool.peak_rss_mib", max(s.rss_mib for s in peers["tool"]))
            per_object = self.figure(f"rss.{n}.tool.kib_per_object_over_0", (peak - base.rss_mib) * 1024 / n)
            rows.append([f"{n:,}", f"{peak:.0f}", f"{peak - base.rss_mib:.0f}", f"{per_object:.2f}"])
        self.table(
            "rss: peak RSS of the tool (kubectl-unfinalize crd NAME -q)",
            ["N", "MiB", "MiB over N=0", "KiB/object over N=0"],
            rows,
            ["max RSS of the process or of its largest child (the one-file binary unpacks into a child)."],
        )
        self.save()

    def growth(self, results: Results) -> None:
        """Time per object and peak RSS by N; each size's time per object against 10,000's."""
        self.doc["cases"]["growth"] = {
            "sizes": {str(n): {"tool": samples_json(peers["tool"])} for n, peers in results.items()}
        }
        per = {n: med([s.seconds for s in peers["tool"]]) * 1000 / n for n, peers in results.items()}
        ref = per.get(10000)
        rows = []
        for n, peers in results.items():
            ms = self.figure(f"growth.{n}.tool.ms_per_object", per[n])
            peak = self.figure(f"growth.{n}.tool.peak_rss_mib", max(s.rss_mib for s in peers["tool"]))
            ratio = self.figure(f"growth.{n}.ratio.ms_per_object_vs_10000", ms / ref) if ref else None
            seconds = med([s.seconds for s in peers["tool"]])
            rows.append([f"{n:,}", f"{seconds:.1f}", f"{ms:.2f}", f"{ratio:.2f}" if ratio else "", f"{peak:.0f}"])
        self.table(
            "growth: the tool alone (kubectl-unfinalize crd NAME -q) by N",
            ["N", "seconds", "ms/object", "ms/object vs 10,000", "peak RSS MiB"],
            rows,
            ["acceptance: ms/object at 100,000 <= 1.2x the one at 10,000; peak RSS at 100,000 < 100 MiB."],
        )
        self.save()
