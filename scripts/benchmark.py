#!/usr/bin/env python3
"""Benchmark: free N stuck custom resources across 20 namespaces and delete their CRD,
with kubectl-unfinalize and with the kubectl patch loops people paste, on one cluster
in one run. Prints seconds, objects per second, ratios, and peak memory (max RSS).

    python scripts/benchmark.py                   # N=1000 and 10000, own control plane
    python scripts/benchmark.py -n 500 --kubeconfig ~/.kube/config

Not a test: figures vary with the machine; compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests" / "controlplane")]

from kubectl_unfinalize.connection import ConnectionOptions, connect  # noqa: E402
from kubectl_unfinalize.errors import ApiError  # noqa: E402

NAMESPACES = 20
FINALIZERS = ["kopf.zalando.org/KopfFinalizerMarker", "example.com/cleanup"]


def timed(cmd: list[str], env: dict, shell: bool = False) -> tuple[float, int, int]:
    """Run a command; return (seconds, exit code, peak RSS of the process in MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, shell=shell)
    errors = proc.stderr.read()  # drain while it runs, or a chatty peer blocks on a full pipe
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.stderr.write(errors.decode(errors="replace")[-2000:])
    return seconds, proc.returncode, usage.ru_maxrss // 1024


class Cluster:
    def __init__(self, kubeconfig: str, kubectl: str) -> None:
        self.kubeconfig, self.kubectl = kubeconfig, kubectl
        self.t = connect(ConnectionOptions(kubeconfig=kubeconfig, pool_size=32))
        self.env = dict(os.environ, KUBECONFIG=kubeconfig, NO_COLOR="1", PATCH=PATCH)
        self.env["PATH"] = f"{Path(kubectl).parent}{os.pathsep}{self.env['PATH']}"

    def namespaces(self) -> list[str]:
        names = [f"bench-{i:02d}" for i in range(NAMESPACES)]
        for name in names:
            try:
                self.t.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
            except ApiError as exc:
                if exc.status != 409:
                    raise
        return names

    def stuck_crd(self, n: int, namespaces: list[str]) -> str:
        """A fresh CRD with n finalized objects spread over the namespaces."""
        group = f"b{secrets.token_hex(3)}.bench.test"
        schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
        self.t.request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            body={
                "metadata": {"name": f"items.{group}"},
                "spec": {
                    "group": group,
                    "scope": "Namespaced",
                    "names": {"plural": "items", "singular": "item", "kind": "Item"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
                },
            },
        )
        subprocess.run(
            [self.kubectl, "wait", "--for=condition=Established", f"crd/items.{group}"],
            env=self.env,
            check=True,
            capture_output=True,
        )
        for _ in range(100):  # served in discovery
            try:
                self.t.request("GET", f"/apis/{group}/v1/items")
                break
            except ApiError:
                time.sleep(0.1)

        def create(i: int) -> None:
            ns = namespaces[i % len(namespaces)]
            body = {
                "apiVersion": f"{group}/v1",
                "kind": "Item",
                "metadata": {"name": f"item-{i}", "finalizers": FINALIZERS},
                "spec": {"payload": "x" * 200},
            }
            self.t.request("POST", f"/apis/{group}/v1/namespaces/{ns}/items", body=body)

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(create, range(n)))
        return f"items.{group}"

    def gone(self, crd: str) -> bool:
        try:
            self.t.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
            return False
        except ApiError as exc:
            return exc.status == 404


PATCH = '{"metadata":{"finalizers":null}}'


def peers(cluster: Cluster, crd: str, n: int, sequential_limit: int) -> dict[str, list[str] | str]:
    """Each peer does the whole job: delete the CRD, free every object, wait until it is gone."""
    k = shlex.quote(cluster.kubectl)
    listing = f"{k} get {crd} -A --no-headers -o custom-columns=NS:.metadata.namespace,N:.metadata.name"
    delete = f"{k} delete crd {crd} --wait=false >/dev/null"
    wait = f"{k} wait --for=delete crd/{crd} --timeout=20m >/dev/null"
    runs: dict[str, list[str] | str] = {
        "kubectl-unfinalize --delete": [
            sys.executable,
            str(ROOT / "kubectl-unfinalize"),
            "crd",
            crd,
            "--delete",
            "--timeout",
            "20m",
            "-q",
        ],
        # xargs appends "NAMESPACE NAME": the fixed part ends with -n.
        "kubectl patch, xargs -P 8": f'{delete} && {listing} | xargs -P 8 -n 2 {k} patch --type=merge -p "$PATCH"'
        f" {crd} -n >/dev/null && {wait}",
    }
    if n <= sequential_limit:
        runs["kubectl patch loop (sequential)"] = (
            f'{delete} && {listing} | while read -r ns name; do {k} patch --type=merge -p "$PATCH" -n "$ns" {crd}'
            f' "$name" || exit 1; done >/dev/null && {wait}'
        )
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, action="append", help="objects per run (repeatable; default 1000 and 10000)")
    parser.add_argument("--kubeconfig", help="use this cluster instead of starting a local control plane")
    parser.add_argument(
        "--sequential-limit",
        type=int,
        default=1000,
        help="run the one-process-at-a-time kubectl loop only up to this N (default 1000)",
    )
    args = parser.parse_args()
    sizes = args.n or [1000, 10000]
    from cluster import ControlPlane, find_binaries

    kubectl = str(find_binaries(("kubectl",))["kubectl"])
    if args.kubeconfig:
        return run(Cluster(args.kubeconfig, kubectl), sizes, args.sequential_limit)
    with ControlPlane() as cp:
        return run(Cluster(cp.kubeconfig, kubectl), sizes, args.sequential_limit)


def run(cluster: Cluster, sizes: list[int], sequential_limit: int) -> int:
    namespaces = cluster.namespaces()
    rows, failed = [], False
    for n in sizes:
        baseline = None
        for name in peers(cluster, "x", n, sequential_limit):
            crd = cluster.stuck_crd(n, namespaces)
            command = peers(cluster, crd, n, sequential_limit)[name]
            seconds, code, rss = timed(command, cluster.env, shell=isinstance(command, str))
            ok = code == 0 and cluster.gone(crd)
            failed |= not ok
            baseline = baseline or seconds
            rows.append(
                (n, name, seconds, n / seconds, seconds / baseline, rss if name.startswith("kubectl-unf") else None, ok)
            )
            print(f"  N={n:>6} {name:<34} {seconds:8.1f}s", file=sys.stderr, flush=True)
    print(f"\n{'N':>6}  {'peer':<34} {'seconds':>8} {'objects/s':>10} {'x tool time':>11} {'peak RSS':>9}  done")
    for n, name, seconds, rate, ratio, rss, ok in rows:
        mem = f"{rss} MiB" if rss is not None else "-"
        print(f"{n:>6}  {name:<34} {seconds:8.1f} {rate:10.0f} {ratio:11.1f} {mem:>9}  {'yes' if ok else 'NO'}")
    print(f"\n{NAMESPACES} namespaces; each object has {len(FINALIZERS)} finalizers; every run ends with the CRD gone.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
