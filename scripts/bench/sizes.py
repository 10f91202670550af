"""Cases 5-6, what grows: big objects (a 100 KiB annotation each, as an operator's saved
state leaves them), the tool against the ceiling program with both peak RSS; objects as
`kubectl apply` leaves them (a unique 100 KB last-applied-configuration each: a JSON
document, escaped once more on the wire), the tool against the ceiling and kubectl; and
growth, the tool alone at N = 1,000 / 10,000 / 100,000 small objects, time per object and
peak RSS at each.

Every run is checked as in throughput.py: exit 0, every object left without finalizers."""

from __future__ import annotations

import hashlib
import json
import shlex
import time

import yaml

from .kube import NAMESPACES, PATCH, CrdSpec
from .measure import Sample, check, log, measure
from .throughput import Results, Throughput

BIG_ANNOTATION = 100 * 1024
BIG_KEY = "bench.test/state"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


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


class LastApplied(BigObjects):
    """Objects as `kubectl apply` leaves them: a last-applied-configuration of `size`
    bytes, unique per object (the object's own configuration, as JSON), measured against
    the ceiling and against kubectl (`patch -f objects.yaml`, one process for all)."""

    PEERS = ("tool", "ceiling", "kubectl")

    def populate(self, n: int) -> CrdSpec:
        crd = CrdSpec.fresh()
        self.kube.create_crd(crd)
        started = time.monotonic()
        objects = []
        for i in range(n):
            obj = crd.obj(self.namespaces[i % NAMESPACES], f"item-{i}")
            obj["body"]["metadata"]["annotations"] = {LAST_APPLIED: configuration(obj["body"], self.size)}
            objects.append(obj)
        self.kube.create_objects(objects)
        log(f"    created {n} objects with a {self.size // 1000} KB last-applied in {time.monotonic() - started:.0f}s")
        self.crd_objects = objects
        return crd

    def one(self, peer: str, n: int, kubeconfig: str) -> Sample:
        if peer != "kubectl":
            return super().one(peer, n, kubeconfig)
        crd = self.populate(n)
        listed = self.workdir / "last-applied-objects.yaml"
        names = []
        for o in self.crd_objects:
            body = o["body"]
            meta = {"name": body["metadata"]["name"], "namespace": o["namespace"]}
            names.append({"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": meta})
        listed.write_text(yaml.safe_dump_all(names))
        k = shlex.quote(self.peers.kubectl)
        argv = ["sh", "-c", f"{k} patch -f {shlex.quote(str(listed))} --type=merge -p {shlex.quote(PATCH)} >/dev/null"]
        sample = check(measure(argv, self.peers.env_for(kubeconfig)), f"kubectl on {crd.name}")
        total, finalized = self.kube.count(crd)
        if (total, finalized) != (n, 0):
            raise SystemExit(f"kubectl left {finalized} of {total} objects with finalizers (expected {n}, 0)")
        self.kube.delete_crd(crd.name)
        return sample

    def compare(self, sizes: list[int], repeat: int, kubeconfig: str, label: str) -> Results:
        """Each size `repeat` times per peer, the order rotating."""
        results: Results = {}
        for n in sizes:
            results[n] = {peer: [] for peer in self.PEERS}
            for i in range(repeat):
                for peer in self.PEERS[i % 3 :] + self.PEERS[: i % 3]:
                    sample = self.one(peer, n, kubeconfig)
                    results[n][peer].append(sample)
                    log(f"  {label}: N={n} {peer}: {sample.seconds:.1f}s, {sample.rss_mib:.0f} MiB")
        return results


def configuration(body: dict, size: int) -> str:
    """What kubectl apply would record for `body` with a spec of about `size` bytes: the
    object's configuration as JSON, unique to it."""
    seed = f"{body['metadata'].get('namespace', '')}/{body['metadata']['name']}"
    settings, total = {}, 0
    while total < size:
        digest = hashlib.sha256(f"{seed}/{len(settings)}".encode()).hexdigest()
        value = {"value": digest[:24], "enabled": True, "note": f"knob {len(settings)} of {seed}"}
        settings[f"setting-{len(settings):04d}"] = value
        total += len(json.dumps(value)) + 20
    config = {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": {"name": body["metadata"]["name"]}}
    config["spec"] = {"settings": settings}
    return json.dumps(config, separators=(",", ":"))


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
