"""Many CRDs (an uninstalled crossplane provider leaves hundreds): two cases, each a ratio
measured in the same invocation, medians over --repeat.

(a) 300 CRDs of one group with no instances: the tool's ``crd --group G --delete`` against
    ``kubectl delete crd -l LABEL`` (which waits for them to go, as the tool does).
(b) 200 CRDs with 3 finalized objects each, ``crd --group G --delete``, against one CRD
    holding the same 600 objects, ``crd NAME --delete``: both by the tool. A tool that
    handles many CRDs as one job costs about the same for both. The ceiling program does
    both shapes too (all 200 resources listed at once, the CRDs deleted at once, one list
    per poll): its own ratio is what the API server makes any client pay for 200 CRDs, and
    the tool's 200-CRD run is compared with the ceiling's.

Setup (creating the CRDs and objects, waiting until they are served) is not timed; the
peers alternate which goes first.
"""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .kube import CRDS, Kube
from .measure import Sample, check, log, measure, med, process_cpu
from .peers import Peers
from .report import Report, fmt_spread, samples_json

EMPTY_CRDS = 300
FINALIZED_CRDS = 200
OBJECTS_PER_CRD = 3
LABEL = "bench.unfinalize/many"
# case (b): the tool's two shapes (the keys of earlier JSON documents), then the ceiling's
FINALIZED = ("finalized.many", "finalized.one", "ceiling.many", "ceiling.one")


@dataclass(frozen=True)
class Group:
    """`count` CRDs of one fresh API group, labelled with it, each with `objects` objects."""

    count: int
    objects: int
    group: str = field(default_factory=lambda: f"m{secrets.token_hex(4)}.bench.test")

    def plural(self, i: int) -> str:
        return f"kind{i:03d}s"

    def names(self) -> list[str]:
        return [f"{self.plural(i)}.{self.group}" for i in range(self.count)]

    def manifest(self, i: int) -> dict:
        schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
        plural = self.plural(i)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{self.group}", "labels": {LABEL: self.group.split(".")[0]}},
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": plural[:-1], "kind": f"Kind{i:03d}"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
            },
        }


def create(kube: Kube, spec: Group, namespaces: list[str]) -> None:
    """The CRDs, served; then their objects, spread over the namespaces, each with finalizers."""

    def one_crd(i: int) -> None:
        kube.must("POST", CRDS, spec.manifest(i), ok=(201,))

    def served(i: int) -> None:
        path = f"/apis/{spec.group}/v1/{spec.plural(i)}?limit=1"
        deadline = time.monotonic() + 300
        while kube.request("GET", path)[0] != 200:
            if time.monotonic() > deadline:
                raise SystemExit(f"{spec.plural(i)}.{spec.group} not served after 300s")
            time.sleep(0.2)

    def objects(i: int) -> None:
        plural = spec.plural(i)
        for k in range(spec.objects):
            ns = namespaces[(i * spec.objects + k) % len(namespaces)]
            body = {
                "apiVersion": f"{spec.group}/v1",
                "kind": f"Kind{i:03d}",
                "metadata": {"name": f"o{k}", "namespace": ns, "finalizers": ["example.com/cleanup"]},
            }
            kube.must("POST", f"/apis/{spec.group}/v1/namespaces/{ns}/{plural}", body, ok=(201,))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one_crd, range(spec.count)))
        list(pool.map(served, range(spec.count)))
        if spec.objects:
            list(pool.map(objects, range(spec.count)))


def create_one(kube: Kube, objects: int, namespaces: list[str]) -> Group:
    """One CRD holding `objects` objects: the reference of case (b)."""
    spec = Group(1, 0)
    create(kube, spec, namespaces)
    plural = spec.plural(0)

    def one(k: int) -> None:
        ns = namespaces[k % len(namespaces)]
        body = {
            "apiVersion": f"{spec.group}/v1",
            "kind": "Kind000",
            "metadata": {"name": f"o{k}", "namespace": ns, "finalizers": ["example.com/cleanup"]},
        }
        kube.must("POST", f"/apis/{spec.group}/v1/namespaces/{ns}/{plural}", body, ok=(201,))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(objects)))
    return spec


def all_gone(kube: Kube, spec: Group, what: str) -> None:
    left = [n for n in spec.names() if not kube.gone(n)]
    if left:
        raise SystemExit(f"{what} exited 0 but {len(left)} CRDs are still there, e.g. {left[0]}")


Samples = dict[str, list[Sample]]


def run(
    kube: Kube, peers: Peers, env: dict[str, str], namespaces: list[str], repeat: int, server: list[int]
) -> tuple[Samples, dict[str, list[float]]]:
    """The samples, and the control plane's CPU seconds during each run of case (b) (its
    processes `server`; none with --kubeconfig): how much of the difference is the API
    server's own work, which no client can take off it."""
    samples: Samples = {key: [] for key in ("empty.tool", "empty.kubectl", *FINALIZED)}
    server_cpu: dict[str, list[float]] = {key: [] for key in FINALIZED}
    kubectl = peers.kubectl
    for i in range(repeat):
        order = ("tool", "kubectl") if i % 2 == 0 else ("kubectl", "tool")
        for peer in order:
            spec = Group(EMPTY_CRDS, 0)
            create(kube, spec, namespaces)
            if peer == "tool":
                argv = [kubectl, "unfinalize", "crd", "--group", spec.group, "--delete", "-q"]
            else:
                argv = [kubectl, "delete", "crd", "-l", f"{LABEL}={spec.group.split('.')[0]}"]
            sample = check(measure(argv, env, timeout=900), f"{EMPTY_CRDS} empty CRDs: {peer}")
            all_gone(kube, spec, peer)
            samples[f"empty.{peer}"].append(sample)
            log(f"  many-crds: {EMPTY_CRDS} empty CRDs, {peer}: {sample.seconds:.2f}s (run {i + 1}/{repeat})")
        for key in FINALIZED if i % 2 == 0 else FINALIZED[::-1]:
            total = FINALIZED_CRDS * OBJECTS_PER_CRD
            if key.endswith("many"):
                spec = Group(FINALIZED_CRDS, OBJECTS_PER_CRD)
                create(kube, spec, namespaces)
            else:
                spec = create_one(kube, total, namespaces)
            if key.startswith("ceiling"):
                argv = peers.ceiling_teardown(spec.group, spec.names(), env["KUBECONFIG"])
            elif spec.count > 1:
                argv = [kubectl, "unfinalize", "crd", "--group", spec.group, "--delete", "-q"]
            else:
                argv = [kubectl, "unfinalize", "crd", spec.names()[0], "--delete", "-q"]
            before = process_cpu(server)
            sample = check(measure(argv, env, timeout=900), f"{total} objects in {spec.count} CRDs: {key}")
            if server:
                server_cpu[key].append(process_cpu(server) - before)
            all_gone(kube, spec, key)
            samples[key].append(sample)
            log(
                f"  many-crds: {total} objects in {spec.count} CRD(s), {key}:"
                f" {sample.seconds:.2f}s (run {i + 1}/{repeat})"
            )
    return samples, server_cpu


def report(out: Report, measured: tuple[Samples, dict[str, list[float]]], repeat: int) -> None:
    samples, server_cpu = measured

    def seconds(key: str) -> list[float]:
        return [s.seconds for s in samples[key]]

    def ratio(key: str, measured: str, reference: str) -> float:
        return out.figure(f"many_crds.{key}.ratio.seconds", med(seconds(measured)) / med(seconds(reference)))

    empty = ratio("empty", "empty.tool", "empty.kubectl")
    many = ratio("finalized", "finalized.many", "finalized.one")
    floor = ratio("ceiling", "ceiling.many", "ceiling.one")
    versus = ratio("finalized_vs_ceiling", "finalized.many", "ceiling.many")
    for key in samples:
        out.figure(f"many_crds.{key}.seconds", med(seconds(key)))
    out.doc["cases"]["many_crds"] = {key: samples_json(value) for key, value in samples.items()}
    total = FINALIZED_CRDS * OBJECTS_PER_CRD
    shapes = (f"{FINALIZED_CRDS} CRDs", f"1 CRD x {total}")
    rows = [
        [
            f"{EMPTY_CRDS} CRDs, no instances",
            f"tool crd --group G --delete: {fmt_spread(seconds('empty.tool'))}",
            f"kubectl delete crd -l: {fmt_spread(seconds('empty.kubectl'))}",
            f"{empty:.2f}x (goal <= 0.3)",
        ],
        [
            f"{FINALIZED_CRDS} CRDs x {OBJECTS_PER_CRD} finalized",
            f"tool, {shapes[0]}: {fmt_spread(seconds('finalized.many'))}",
            f"tool, {shapes[1]}: {fmt_spread(seconds('finalized.one'))}",
            f"{many:.2f}x (goal <= 2)",
        ],
        [
            "  the same, ceiling",
            f"ceiling, {shapes[0]}: {fmt_spread(seconds('ceiling.many'))}",
            f"ceiling, {shapes[1]}: {fmt_spread(seconds('ceiling.one'))}",
            f"{floor:.2f}x (the server's floor)",
        ],
        [
            f"  {shapes[0]}, tool vs ceiling",
            f"tool: {fmt_spread(seconds('finalized.many'))}",
            f"ceiling: {fmt_spread(seconds('ceiling.many'))}",
            f"{versus:.2f}x",
        ],
    ]
    notes = [
        "ratio: measured / reference, medians; < 1: the measured run is faster. Setup is not timed.",
        "ceiling: bench/ceiling with every resource listed at once (16 lists in flight), 64 patches,"
        " the CRDs deleted 16 at a time, one list of CRDs per 50 ms poll.",
    ]
    for peer, key in (("tool", "finalized"), ("ceiling", "ceiling")):
        many_key, one_key = f"{key}.many", f"{key}.one"
        if not (server_cpu[many_key] and server_cpu[one_key]):
            continue
        many_cpu, one_cpu = med(server_cpu[many_key]), med(server_cpu[one_key])
        out.figure(f"many_crds.{key}.server_cpu.many", many_cpu)
        out.figure(f"many_crds.{key}.server_cpu.one", one_cpu)
        out.figure(f"many_crds.{key}.server_cpu.ratio", many_cpu / one_cpu)
        rows.append(
            [
                f"  control plane CPU s, {peer}",
                f"{shapes[0]}: {fmt_spread(server_cpu[many_key])}",
                f"{shapes[1]}: {fmt_spread(server_cpu[one_key])}",
                f"{many_cpu / one_cpu:.2f}x",
            ]
        )
    if server_cpu["finalized.many"]:
        notes.append(
            "control plane CPU: etcd, kube-apiserver and kube-controller-manager during the run (/proc):"
            " the server's own work, which no client can take off it."
        )
    reps = f", median (min-max) of {repeat}" if repeat > 1 else ""
    out.table(f"many CRDs, seconds{reps}", ["case", "measured", "reference", "ratio"], rows, notes)
    out.save()
