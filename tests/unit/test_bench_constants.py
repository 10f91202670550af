"""The benchmark's copies of the tool's thresholds: it runs the tool as a process and
imports none of it, so the copies are held equal here."""

from pathlib import Path

from kubectl_unfinalize.scanning.evidence import GRACE


def test_the_scan_free_bench_waits_out_scan_s_own_grace():
    path = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "scan.py"
    source = path.read_text()
    assert f"\nGRACE = {GRACE:g}\n" in source, "scripts/bench/scan.py's GRACE differs from scanning.evidence.GRACE"
