"""Case 1, small teardowns: `kubectl unfinalize -f crds.yaml --delete` against the plain kubectl
sequence (delete the objects --wait=false, merge-patch their finalizers away, delete the CRDs
and wait), on 1 CRD with 3 stuck objects and on 4 CRDs with 10 in 2 namespaces. Setup before
each run is not timed; the peers alternate which goes first."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .kube import CrdSpec, Kube
from .measure import Sample, check, log, measure
from .peers import Peers

PEERS = ("tool", "kubectl")


@dataclass
class SmallCase:
    key: str  # stable, for the JSON document
    title: str
    crds: list[CrdSpec]
    objects: int
    namespaces: int
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {peer: [] for peer in PEERS})


def cases() -> list[SmallCase]:
    return [
        SmallCase("1crd-3obj", "1 CRD, 3 objects", [CrdSpec("small-a.bench.test", "widgets", "Widget")], 3, 1),
        SmallCase(
            "4crd-10obj-2ns",
            "4 CRDs, 10 objects, 2 ns",
            [CrdSpec("small-b.bench.test", f"things{k}", f"Thing{k}") for k in range(4)],
            10,
            2,
        ),
    ]


def startup(peers: Peers, env: dict[str, str], runs: int) -> list[Sample]:
    """`kubectl unfinalize --version`: kubectl's plugin lookup and the tool's start, nothing sent."""
    return [check(measure(peers.tool_version(), env), "--version") for _ in range(runs)]


def run_case(
    case: SmallCase, kube: Kube, peers: Peers, env: dict[str, str], namespaces: list[str], runs: int, workdir: Path
) -> SmallCase:
    case_dir = workdir / f"small-{case.key}"
    case_dir.mkdir(exist_ok=True)
    crds_yaml, objects_yaml = case_dir / "crds.yaml", case_dir / "objects.yaml"
    crds_yaml.write_text(yaml.safe_dump_all([c.manifest() for c in case.crds]))
    objects = [
        case.crds[i % len(case.crds)].obj(namespaces[i % case.namespaces], f"obj-{i}") for i in range(case.objects)
    ]
    objects_yaml.write_text(yaml.safe_dump_all([o["body"] for o in objects]))
    argv = {"tool": peers.tool_teardown(crds_yaml), "kubectl": peers.kubectl_teardown(objects_yaml, crds_yaml)}
    for i in range(runs + 1):  # run 0 warms caches and is not counted
        for peer in PEERS if i % 2 == 0 else PEERS[::-1]:
            for crd in case.crds:
                kube.create_crd(crd)
            kube.create_objects(objects, threads=8)
            sample = check(measure(argv[peer], env, timeout=300), f"{case.title}: {peer}")
            for crd in case.crds:
                if not kube.gone(crd.name):
                    raise SystemExit(f"{case.title}: {peer} exited 0 but CRD {crd.name} is still there")
            if i:
                case.samples[peer].append(sample)
        log(f"  small: {case.title}: run {i}/{runs}" + (" (warm-up)" if i == 0 else ""))
    return case
