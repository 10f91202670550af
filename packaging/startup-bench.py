#!/usr/bin/env python3
"""Start-up time of the one-file binary, of the source checkout, and of kubectl.

    python packaging/startup-bench.py [-n RUNS] [--binary PATH] [--kubeconfig PATH]

Prints the median (and min/max) wall time of RUNS runs (after one warm-up run) of
--help and --version for dist/kubectl-unfinalize and for `.venv/bin/python
kubectl-unfinalize`, with `kubectl version --client` (the kubectl that
tests/controlplane/build.sh builds, or $KUBECTL) as the baseline. With a kubeconfig
(--kubeconfig or $KUBECONFIG) it also times `crd <a name that does not exist>`: one list
request, exit code 2; `kubectl get crd <that name>` is its baseline.

To see what a run imports: .venv/bin/python -X importtime kubectl-unfinalize --version
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MISSING = "no-such-crd.unfinalize.invalid"


def kubectl_path() -> str | None:
    if os.environ.get("KUBECTL"):
        return os.environ["KUBECTL"]
    try:
        out = subprocess.run(
            ["bash", str(ROOT / "tests/controlplane/build.sh")],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "UNFINALIZE_SKIP_TOOLS": "1"},
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(out.splitlines()[-1]) / "kubectl" if out else None
    return str(path) if path and path.exists() else None


def measure(argv: list[str], runs: int, env: dict[str, str], expect: int) -> list[float]:
    times = []
    for index in range(runs + 1):
        start = time.perf_counter()
        code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode
        elapsed = time.perf_counter() - start
        if code != expect:
            raise SystemExit(f"{' '.join(argv)}: exit code {code}, expected {expect}")
        if index:  # the first run warms the page cache
            times.append(elapsed)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=11)
    parser.add_argument("--binary", default=os.environ.get("UNFINALIZE_BINARY", str(ROOT / "dist/kubectl-unfinalize")))
    parser.add_argument("--python", default=str(ROOT / ".venv/bin/python"))
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    if args.kubeconfig:
        env["KUBECONFIG"] = args.kubeconfig
    kubectl = kubectl_path()
    variants = []
    if Path(args.binary).exists():
        variants.append(("binary", [args.binary]))
    else:
        print(f"note: no binary at {args.binary} (run make binary)", file=sys.stderr)
    variants.append(("source", [args.python, str(ROOT / "kubectl-unfinalize")]))

    cases = []
    for label, prefix in variants:
        cases.append((f"{label} --help", prefix + ["--help"], 0))
        cases.append((f"{label} --version", prefix + ["--version"], 0))
    if kubectl:
        cases.append(("kubectl version --client", [kubectl, "version", "--client"], 0))
    if args.kubeconfig:
        for label, prefix in variants:
            cases.append((f"{label} crd {MISSING}", prefix + ["crd", MISSING], 2))
        if kubectl:
            cases.append((f"kubectl get crd {MISSING}", [kubectl, "get", "crd", MISSING], 1))

    width = max(len(name) for name, _, _ in cases)
    print(f"{'command':<{width}}  median s    min s    max s   (runs: {args.runs})")
    for name, argv, expect in cases:
        times = measure(argv, args.runs, env, expect)
        print(f"{name:<{width}}  {statistics.median(times):8.3f} {min(times):8.3f} {max(times):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
