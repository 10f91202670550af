"""The benchmark behind ``python scripts/benchmark.py`` / ``make bench``, one module per job:

measure.py     run one command: wall time, CPU and peak RSS from os.wait4 in a small launcher
kube.py        the benchmark's own API client (urllib3) and the fixtures: namespaces, CRDs, objects
peers.py       what is measured: the tool (as a kubectl plugin), plain kubectl, the ceiling program
small.py       case 1: small teardowns, the tool against the kubectl 3-step sequence
throttled.py   case 5: a 3-seat APF level, the tool against the ceiling at 3 (ideal) and 64 (naive)
throughput.py  cases 2-4: throughput and the far cluster against the ceiling, the tool's peak RSS
sizes.py       cases 8-10: big objects against the ceiling, growth of the tool by N, objects as kubectl
               apply leaves them against the ceiling and kubectl
provider.py    case 11: a cloud provider's CRDs (hundreds, schemas of tens of KB), tool, ceiling and kubectl
records.py     case 12: what a run's record costs, and --backup
scan.py        cases 5 and 13: scan against the lister; scan --free against the scan plus the frees
report.py      tables for people, one JSON document (--json) for programs (scripts/bench_compare.py)
cli.py         the flags and the order of the cases
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
