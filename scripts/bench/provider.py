"""A cloud provider's CRDs (crossplane's providers install hundreds, each schema tens of KB):
`crds` CRDs over `groups` API groups, category `managed`, cluster-scoped, each with
`objects` objects left Terminating under crossplane's managed-resource finalizer, as after
the provider was removed. The schemas are generated, not shipped: each CRD's
openAPIV3Schema has forProvider, initProvider and atProvider trees of described fields of
about `schema_kib` KiB in all, a CEL rule and printer columns, as the provider's have.

Three peers do the same teardown (free the objects, delete the CRDs, wait until gone):
the tool (`crd -l LABEL --delete`, the default --timeout), the ceiling program (every
resource listed at once, 64 patches in flight, the CRDs deleted 16 at a time, one list
of CRDs per 50 ms poll), and kubectl (`patch -f objects.yaml` then `delete crd -l`, which
waits). Setup is not timed; the peers alternate which goes first.
"""

from __future__ import annotations

import hashlib
import secrets
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .kube import CRDS, PATCH, Kube
from .measure import Sample, check, log, measure, med, process_cpu
from .peers import Peers
from .report import Report, fmt_spread, samples_json

FINALIZER = "finalizer.managedresource.crossplane.io"
LABEL = "bench.unfinalize/provider"
CATEGORIES = ["crossplane", "managed", "bench"]
PEERS = ("tool", "ceiling", "kubectl")
CONDITION = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
WORDS = (
    "the provider reconciles this field with the external resource on every poll and reports drift in status "
    "when the value in the cloud differs; changing it after creation replaces the resource unless noted"
).split()


@dataclass(frozen=True)
class Provider:
    crds: int = 300
    groups: int = 30
    objects: int = 3
    schema_kib: int = 40
    id: str = field(default_factory=lambda: secrets.token_hex(3))

    def group(self, i: int) -> str:
        return f"svc{i % self.groups:02d}.p{self.id}.bench.test"

    def plural(self, i: int) -> str:
        return f"resource{i:04d}s"

    def kind(self, i: int) -> str:
        return f"Resource{i:04d}"

    def name(self, i: int) -> str:
        return f"{self.plural(i)}.{self.group(i)}"

    def names(self) -> list[str]:
        return [self.name(i) for i in range(self.crds)]

    def manifest(self, i: int) -> dict:
        provider = _fields(f"{self.id}-{i}", self.schema_kib * 1024 // 3)
        spec = {
            "type": "object",
            "properties": {
                "deletionPolicy": {"type": "string", "enum": ["Orphan", "Delete"], "default": "Delete"},
                "forProvider": provider,
                "initProvider": provider,
                "managementPolicies": {"type": "array", "items": {"type": "string"}, "default": ["*"]},
                "providerConfigRef": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "required": ["forProvider"],
            "x-kubernetes-validations": [
                {
                    "rule": "!('*' in self.managementPolicies || 'Create' in self.managementPolicies)"
                    " || has(self.forProvider.region)",
                    "message": "spec.forProvider.region is a required parameter",
                }
            ],
        }
        status = {
            "type": "object",
            "properties": {"atProvider": provider, "conditions": {"type": "array", "items": CONDITION}},
        }
        schema = {"type": "object", "properties": {"spec": spec, "status": status}}
        columns = [
            {"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].status"},
            {"name": "SYNCED", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Synced')].status"},
            {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name(i), "labels": {LABEL: self.id}},
            "spec": {
                "group": self.group(i),
                "scope": "Cluster",
                "names": {
                    "plural": self.plural(i),
                    "singular": self.plural(i)[:-1],
                    "kind": self.kind(i),
                    "listKind": f"{self.kind(i)}List",
                    "categories": CATEGORIES,
                },
                "versions": [
                    {
                        "name": "v1beta1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": schema},
                        "additionalPrinterColumns": columns,
                        "subresources": {"status": {}},
                    }
                ],
            },
        }

    def obj(self, i: int, k: int) -> dict:
        return {
            "apiVersion": f"{self.group(i)}/v1beta1",
            "kind": self.kind(i),
            "metadata": {"name": f"r{i:04d}-{k}", "finalizers": [FINALIZER]},
            "spec": {"forProvider": {"region": "eu-west-1"}},
        }


def _fields(seed: str, size: int) -> dict:
    """A tree of described fields of about `size` bytes of JSON, the same for a seed."""
    properties: dict = {"region": {"type": "string", "description": _text(seed, "region", 40)}}
    n = 0
    total = 0
    while total < size:
        name = f"field{n:03d}"
        text = _text(seed, name, 30)
        if n % 5 == 4:
            entry: dict = {
                "type": "array",
                "description": text,
                "items": {
                    "type": "object",
                    "properties": {
                        f"{name}key{j}": {"type": "string", "description": _text(seed, f"{name}.{j}", 18)}
                        for j in range(4)
                    },
                },
            }
        else:
            entry = {"type": ["string", "number", "boolean"][n % 3], "description": text}
        properties[name] = entry
        total += len(yaml.safe_dump(entry, width=10**6))
        n += 1
    return {"type": "object", "properties": properties}


def _text(seed: str, name: str, words: int) -> str:
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return " ".join(WORDS[(b + i) % len(WORDS)] for i, b in enumerate(digest * (words // len(digest) + 1)))[: words * 8]


def create(kube: Kube, shape: Provider) -> None:
    """The CRDs, served; their objects, each with the finalizer, then deleted: Terminating."""

    def one_crd(i: int) -> None:
        kube.must("POST", CRDS, shape.manifest(i), ok=(201,))

    def served(i: int) -> None:
        path = f"/apis/{shape.group(i)}/v1beta1/{shape.plural(i)}?limit=1"
        deadline = time.monotonic() + 600
        while kube.request("GET", path)[0] != 200:
            if time.monotonic() > deadline:
                raise SystemExit(f"{shape.name(i)} not served after 600s")
            time.sleep(0.5)

    def objects(i: int) -> None:
        path = f"/apis/{shape.group(i)}/v1beta1/{shape.plural(i)}"
        for k in range(shape.objects):
            kube.must("POST", path, shape.obj(i, k), ok=(201,))
            kube.must("DELETE", f"{path}/r{i:04d}-{k}", ok=(200, 202))

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one_crd, range(shape.crds)))
        list(pool.map(served, range(shape.crds)))
        list(pool.map(objects, range(shape.crds)))
    log(
        f"    created {shape.crds} CRDs of ~{shape.schema_kib} KiB, {shape.crds * shape.objects} Terminating objects"
        f" in {time.monotonic() - started:.0f}s"
    )


def argv(peer: str, shape: Provider, peers: Peers, kubeconfig: str, workdir: Path) -> list[str]:
    if peer == "tool":
        return [peers.kubectl, "unfinalize", "crd", "-l", f"{LABEL}={shape.id}", "--delete", "-q"]
    if peer == "ceiling":
        resources = ",".join(f"{shape.plural(i)}.{shape.group(i)}" for i in range(shape.crds))
        return [
            peers.ceiling,
            "--kubeconfig",
            kubeconfig,
            "--version",
            "v1beta1",
            "--resource",
            resources,
            "--concurrency",
            "64",
            "--delete-crd",
            ",".join(shape.names()),
        ]
    objects = workdir / f"provider-{shape.id}-objects.yaml"
    objects.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": {"name": o["metadata"]["name"]}}
                for i in range(shape.crds)
                for o in (shape.obj(i, k) for k in range(shape.objects))
            ]
        )
    )
    k = shlex.quote(peers.kubectl)
    return [
        "sh",
        "-c",
        f"{k} patch -f {shlex.quote(str(objects))} --type=merge -p {shlex.quote(PATCH)} >/dev/null"
        f" && {k} delete crd -l {LABEL}={shape.id} >/dev/null",
    ]


Samples = dict[str, list[Sample]]


def run(
    kube: Kube, peers: Peers, env: dict[str, str], repeat: int, server: list[int], workdir: Path, shape: Provider
) -> tuple[Samples, dict[str, list[float]]]:
    samples: Samples = {peer: [] for peer in PEERS}
    server_cpu: dict[str, list[float]] = {peer: [] for peer in PEERS}
    for i in range(repeat):
        order = PEERS[i % len(PEERS) :] + PEERS[: i % len(PEERS)]
        for peer in order:
            run_shape = Provider(shape.crds, shape.groups, shape.objects, shape.schema_kib)
            create(kube, run_shape)
            before = process_cpu(server)
            sample = check(
                measure(argv(peer, run_shape, peers, env["KUBECONFIG"], workdir), env, timeout=1800),
                f"provider CRDs: {peer}",
            )
            if server:
                server_cpu[peer].append(process_cpu(server) - before)
            left = [n for n in run_shape.names() if not kube.gone(n)]
            if left:
                raise SystemExit(f"provider CRDs: {peer} exited 0 but {len(left)} CRDs are still there")
            samples[peer].append(sample)
            log(
                f"  provider: {shape.crds} CRDs x {shape.objects}, {peer}: {sample.seconds:.1f}s,"
                f" {sample.rss_mib:.0f} MiB (run {i + 1}/{repeat})"
            )
    return samples, server_cpu


def report(out: Report, measured: tuple[Samples, dict[str, list[float]]], shape: Provider, repeat: int) -> None:
    samples, server_cpu = measured
    seconds = {peer: [s.seconds for s in samples[peer]] for peer in PEERS}
    for peer in PEERS:
        out.figure(f"provider.{peer}.seconds", med(seconds[peer]))
        out.figure(f"provider.{peer}.peak_rss_mib", max(s.rss_mib for s in samples[peer]))
        if server_cpu[peer]:
            out.figure(f"provider.{peer}.server_cpu_s", med(server_cpu[peer]))
    out.doc["cases"]["provider"] = {
        "crds": shape.crds,
        "groups": shape.groups,
        "objects_per_crd": shape.objects,
        "schema_kib": shape.schema_kib,
        "samples": {peer: samples_json(value) for peer, value in samples.items()},
    }
    vs_ceiling = out.figure("provider.ratio.tool_vs_ceiling", med(seconds["tool"]) / med(seconds["ceiling"]))
    vs_kubectl = out.figure("provider.ratio.tool_vs_kubectl", med(seconds["tool"]) / med(seconds["kubectl"]))
    rows = [
        [
            peer,
            fmt_spread(seconds[peer]),
            f"{max(s.rss_mib for s in samples[peer]):.0f}",
            fmt_spread(server_cpu[peer]) if server_cpu[peer] else "",
        ]
        for peer in PEERS
    ]
    reps = f", median (min-max) of {repeat}" if repeat > 1 else ""
    out.table(
        f"provider: a provider's CRDs, {shape.crds} CRDs of ~{shape.schema_kib} KiB in {shape.groups} groups,"
        f" {shape.objects} Terminating objects each{reps}",
        ["peer", "seconds", "peak RSS MiB", "control plane CPU s"],
        rows,
        [
            f"tool/ceiling {vs_ceiling:.2f}x (goal <= 1.1), tool/kubectl {vs_kubectl:.2f}x (< 1: the tool is faster).",
            "tool: crd -l LABEL --delete -q (default --timeout); ceiling: bench/ceiling over every resource, the CRDs"
            " deleted 16 at a time; kubectl: patch -f objects.yaml, then delete crd -l (waits).",
        ],
    )
    out.save()
