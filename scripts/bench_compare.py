#!/usr/bin/env python3
"""Two benchmark runs side by side: every figure of A.json and B.json with the ratio B/A.

    python scripts/benchmark.py --json A.json ...   # e.g. the code before a change
    python scripts/benchmark.py --json B.json ...   # the same flags, after it
    python scripts/bench_compare.py A.json B.json

The last column says which way B moved: "better" or "worse" when B/A is off 1 by more than
--noise (default 0.10; on a shared machine single runs move that much), else blank. Rates
(and their ratios) are better higher; times, CPU, memory and their ratios better lower.
Figures only one run has are shown with "-" for the other.
"""

from __future__ import annotations

import argparse
import json
import sys

FORMAT = "kubectl-unfinalize-bench/1"


def load(path: str) -> dict:
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise SystemExit(f"{path}: not a {FORMAT} document (format {doc.get('format')!r})")
    if not doc.get("complete"):
        print(f"note: {path} is from a run that did not finish", file=sys.stderr)
    return doc


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", metavar="A.json")
    parser.add_argument("b", metavar="B.json")
    parser.add_argument("--noise", type=float, default=0.10, help="B/A within 1 +- this is not called a change")
    args = parser.parse_args()
    a, b = load(args.a), load(args.b)
    fa, fb = a["figures"], b["figures"]
    higher = set(a.get("higher_is_better", [])) | set(b.get("higher_is_better", []))
    keys = list(fa) + [k for k in fb if k not in fa]
    rows = [["figure", "A", "B", "B/A", ""]]
    for key in keys:
        va, vb = fa.get(key), fb.get(key)
        ratio = vb / va if va and vb is not None else None
        verdict = ""
        if ratio is not None and abs(ratio - 1) > args.noise:
            verdict = "better" if (ratio > 1) == (key in higher) else "worse"
        rows.append([key, fmt(va), fmt(vb), "-" if ratio is None else f"{ratio:.2f}", verdict])
    print(f"A: {args.a} ({a.get('started')}): {a.get('environment', {}).get('tool', '?')}")
    print(f"B: {args.b} ({b.get('started')}): {b.get('environment', {}).get('tool', '?')}")
    same = [{k: v for k, v in doc.get("settings", {}).items() if k != "tool"} for doc in (a, b)]
    if same[0] != same[1]:
        print("note: the runs had different settings; compare only the figures both have")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [c.ljust(w) if i in (0, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        print("  ".join(cells).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
