"""Cases 5-6, what grows: big objects (a 100 KiB annotation each, as `kubectl apply`'s
last-applied-configuration or an operator's saved state leave them), the tool against the
ceiling program with both peak RSS; and growth, the tool alone at N = 1,000 / 10,000 /
100,000 small objects, time per object and peak RSS at each.

Every run is checked as in throughput.py: exit 0, every object left without finalizers."""

from __future__ import annotations

import time

from .kube import NAMESPACES, CrdSpec
from .measure import log
from .throughput import Results, Throughput

BIG_ANNOTATION = 100 * 1024
BIG_KEY = "bench.test/state"


class BigObjects(Throughput):
    """Throughput's runs on objects that each carry an annotation of `size` bytes: a
    metadata-only list still carries every annotation."""

    def __init__(self, base: Throughput, size: int = BIG_ANNOTATION) -> None:
        super().__init__(base.kube, base.peers, base.namespaces, base.workdir)
        self.size = size

    def populate(self, n: int) -> CrdSpec:
        crd = CrdSpec.fresh()
        self.kube.create_crd(crd)
        started = time.monotonic()
        value = "x" * self.size
        objects = []
        for i in range(n):
            obj = crd.obj(self.namespaces[i % NAMESPACES], f"item-{i}")
            obj["body"]["metadata"]["annotations"] = {BIG_KEY: value}
            objects.append(obj)
        self.kube.create_objects(objects)
        log(f"    created {n} objects of {self.size // 1024} KiB in {time.monotonic() - started:.0f}s")
        return crd


def growth(bench: Throughput, sizes: list[int], kubeconfig: str, known: Results) -> Results:
    """The tool alone at each size (a size the throughput case measured is not run again)."""
    results: Results = {}
    for n in sizes:
        if n in known:
            results[n] = {"tool": known[n]["tool"]}
            continue
        sample = bench.one("tool", n, kubeconfig)
        results[n] = {"tool": [sample]}
        ms = sample.seconds * 1000 / n
        log(f"  growth: N={n}: {sample.seconds:.1f}s, {ms:.2f} ms/object, {sample.rss_mib:.0f} MiB")
    return results
