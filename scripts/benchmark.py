#!/usr/bin/env python3
"""Benchmark kubectl-unfinalize on a local control plane: ``--help`` says what it measures.

The code is in scripts/bench/ (one module per job); this is its entry point, for
``python scripts/benchmark.py`` and ``make bench``.
"""

import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))  # controlplane: cluster, loopback proxy

from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
