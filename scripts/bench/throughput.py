"""Cases 2-4 on N objects of a fresh CRD each run: `kubectl-unfinalize crd NAME -q` against the
ceiling program doing the same job (throughput), the same through a loopback proxy adding
latency each way (far cluster), and the tool's peak RSS by N.

Every run is checked: the peer exits 0, every object is left without finalizers, and the
ceiling reports N objects patched."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import urllib3
from controlplane.proxy import LoopbackProxy

from .kube import NAMESPACES, CrdSpec, Kube
from .measure import Sample, log
from .peers import Peers

PEERS = ("tool", "ceiling")
Results = dict[int, dict[str, list[Sample]]]  # N -> peer -> samples


class Throughput:
    def __init__(self, kube: Kube, peers: Peers, namespaces: list[str], workdir: Path) -> None:
        self.kube, self.peers, self.namespaces, self.workdir = kube, peers, namespaces, workdir

    def populate(self, n: int) -> CrdSpec:
        crd = CrdSpec.fresh()
        self.kube.create_crd(crd)
        started = time.monotonic()
        self.kube.create_objects([crd.obj(self.namespaces[i % NAMESPACES], f"item-{i}") for i in range(n)])
        if n >= 1000:
            log(f"    created {n} objects in {time.monotonic() - started:.0f}s")
        return crd

    def one(self, peer: str, n: int, kubeconfig: str) -> Sample:
        crd = self.populate(n)
        env = self.peers.env_for(kubeconfig)
        if peer == "tool":
            sample = self.peers.tool_run(crd, env)
        else:
            sample = self.peers.ceiling_run(crd, kubeconfig, env)
            reported = json.loads(sample.stdout.strip().splitlines()[-1])["objects"]
            if reported != n:
                raise SystemExit(f"ceiling patched {reported} objects, expected {n}")
        total, finalized = self.kube.count(crd)
        if (total, finalized) != (n, 0):
            raise SystemExit(f"{peer} left {finalized} of {total} objects with finalizers (expected {n}, 0)")
        self.kube.delete_crd(crd.name)
        return sample

    def compare(self, sizes: list[int], repeat: int, kubeconfig: str, label: str) -> Results:
        """Each size `repeat` times per peer; the peers alternate which goes first."""
        results: Results = {}
        for n in sizes:
            results[n] = {peer: [] for peer in PEERS}
            for i in range(repeat):
                for peer in PEERS if i % 2 == 0 else PEERS[::-1]:
                    sample = self.one(peer, n, kubeconfig)
                    results[n][peer].append(sample)
                    log(f"  {label}: N={n} {peer}: {sample.seconds:.1f}s, {n / sample.seconds:.0f} objects/s")
        return results

    @contextlib.contextmanager
    def far(self, delay: float) -> Iterator[tuple[str, LoopbackProxy]]:
        """A kubeconfig whose server is a loopback proxy adding `delay` seconds each way."""
        url = urllib3.util.parse_url(self.kube.server)
        with LoopbackProxy(url.host, url.port or 443, delay=delay) as proxy:
            path = self.workdir / "far.kubeconfig"
            self.kube.write_kubeconfig(path, proxy.url)
            yield str(path), proxy

    def rss(self, sizes: list[int], kubeconfig: str, known: Results) -> tuple[Sample, Results]:
        """The tool at N=0 (imports, kubeconfig, a connection) and at each size; sizes already
        measured by the throughput case (`known`) are not run again."""
        base = self.one("tool", 0, kubeconfig)
        results: Results = {}
        for n in sizes:
            if n in known:
                results[n] = {"tool": known[n]["tool"]}
            else:
                sample = self.one("tool", n, kubeconfig)
                results[n] = {"tool": [sample]}
                log(f"  rss: N={n}: {sample.rss_mib:.0f} MiB")
        return base, results
