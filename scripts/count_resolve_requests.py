"""Count the requests a run makes to resolve many CRDs, from the API server's audit log.

Starts a throwaway control plane whose audit policy records every request (the tests'
records only writes), creates CRDS CRDs in one group (and GROUPS more CRDs, one per
group, for a manifest of objects across many group versions), then runs each given
checkout's `kubectl-unfinalize` with --dry-run=client (so nothing is written) for:

  crd --group G                 the CRDs of a group
  -f DIR                        a folder of CRD documents
  -f DIR2                       objects of GROUPS group versions

and prints, per case and checkout, the requests by kind: CRD GETs, CRD lists,
discovery reads, and the rest (instance lists, access reviews, object reads); then the
median time of resolving alone (resolve.resolve in a fresh process, 5 times).

    .venv/bin/python scripts/count_resolve_requests.py --crds 300 CHECKOUT [CHECKOUT...]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import controlplane  # noqa: E402
import controlplane.controlplane as cp_module  # noqa: E402

EVERYTHING = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""
GROUP = "measure.unfinalize.test"


def crd_body(kind: str, group: str) -> dict:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def kind_of(event: dict) -> str:
    ref = event.get("objectRef") or {}
    if ref.get("resource") == "customresourcedefinitions":
        return f"CRD {event['verb']}"
    if not ref:
        uri = event.get("requestURI", "")
        return "discovery" if uri.startswith(("/api", "/apis")) else f"other {uri}"
    return f"{event['verb']} {ref.get('resource')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+", help="directories holding a kubectl-unfinalize entry script")
    parser.add_argument("--crds", type=int, default=300)
    parser.add_argument("--groups", type=int, default=20)
    args = parser.parse_args()
    cp_module.AUDIT_POLICY = EVERYTHING
    from kubernetes import client, config

    with controlplane.ControlPlane(audit=True) as cp, tempfile.TemporaryDirectory() as tmp:
        api = config.new_client_from_config(config_file=cp.kubeconfig)
        ext = client.ApiextensionsV1Api(api)
        bodies = [crd_body(f"Kind{i}", GROUP) for i in range(args.crds)]
        others = [crd_body("Thing", f"g{i}.{GROUP}") for i in range(args.groups)]
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(ext.create_custom_resource_definition, bodies + others))
        crd_dir, obj_dir = Path(tmp, "crds"), Path(tmp, "objects")
        crd_dir.mkdir()
        obj_dir.mkdir()
        for body in bodies:
            doc = {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": body["metadata"]}
            (crd_dir / f"{body['metadata']['name']}.yaml").write_text(json.dumps(doc))
        for i, body in enumerate(others):
            doc = {"apiVersion": f"{body['spec']['group']}/v1", "kind": "Thing", "metadata": {"name": f"t{i}"}}
            (obj_dir / f"t{i}.json").write_text(json.dumps(doc))
        env = dict(os.environ, KUBECONFIG=cp.kubeconfig)
        cases = {
            f"crd --group ({args.crds} CRDs)": ["crd", "--group", GROUP],
            f"-f ({args.crds} CRD documents)": ["-f", str(crd_dir)],
            f"-f ({args.groups} objects, {args.groups} group versions)": ["-f", str(obj_dir), "-n", "default"],
        }
        for label, argv in cases.items():
            for checkout in args.checkouts:
                mark = cp.audit_mark()
                started = time.monotonic()
                run = subprocess.run(
                    [sys.executable, str(Path(checkout, "kubectl-unfinalize")), *argv, "--dry-run=client", "-q"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                seconds = time.monotonic() - started
                events = [
                    e for e in cp.audit_events(mark) if not e.get("user", {}).get("username", "").startswith("system:")
                ]
                counts = collections.Counter(kind_of(e) for e in events)
                resolving = {k: v for k, v in counts.items() if k.startswith(("CRD", "discovery"))}
                print(
                    f"{label:45} {checkout:30} exit {run.returncode}  resolving: {dict(sorted(resolving.items()))}"
                    f"  all requests: {sum(counts.values())}  {seconds:.1f}s"
                )
                if run.returncode:
                    print(run.stderr.strip()[-500:])
        for label, argv in cases.items():
            for checkout in args.checkouts:
                seconds = resolve_seconds(checkout, argv, env)
                print(f"{label:45} {checkout:30} resolving alone: {seconds:.3f}s (median of 5)")
    return 0


TIMING = """
import statistics, sys, time
from kubectl_unfinalize.cli.commands import parse
from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.kube.cluster import HttpCluster
from kubectl_unfinalize.kube.config import connect
from kubectl_unfinalize.options import ConnectionOptions
from kubectl_unfinalize.resolve.manifests import read_manifests
from kubectl_unfinalize.resolve import resolve

selection = parse(sys.argv[1:]).selection
documents = read_manifests(list(selection.files), False) if selection.files else []
times = []
with connect(ConnectionOptions()) as transport:
    for _ in range(5):
        started = time.monotonic()
        resolve(HttpCluster(transport, Deadline(60)), selection, documents, "default")
        times.append(time.monotonic() - started)
print(statistics.median(times))
"""


def resolve_seconds(checkout: str, argv: list[str], env: dict[str, str]) -> float:
    run = subprocess.run(
        [sys.executable, "-c", TIMING, *argv],
        env=dict(env, PYTHONPATH=str(Path(checkout, "src"))),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return float(run.stdout.strip())


if __name__ == "__main__":
    sys.exit(main())
