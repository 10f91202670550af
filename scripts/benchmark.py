#!/usr/bin/env python3
"""Benchmark kubectl-unfinalize on a local control plane, in one run, against two references:

1. small-N teardown: ``kubectl unfinalize -f crds.yaml --delete`` (the one-file binary
   dist/kubectl-unfinalize, run as a kubectl plugin) against the plain kubectl sequence
   (delete the objects --wait=false, merge-patch their finalizers away, delete the CRDs
   and wait): 1 CRD with 3 stuck objects, and 4 CRDs with 10 in 2 namespaces; median,
   min and max of --runs runs each (setup before each run is not timed).
2. throughput: ``kubectl unfinalize crd NAME -q`` against the ceiling program
   (bench/ceiling: client-go, metadata-only list, 64 merge patches in flight, no client
   rate limit) doing the same job on an identical fresh CRD: objects/s, client CPU per
   object (user+sys of the process and its children), peak RSS.
3. far cluster: the same through a loopback proxy adding 50 ms each way (100 ms round trip).
4. peak RSS of the tool at N=10,000 (and 100,000 with --large).

    python scripts/benchmark.py                       # everything, own control plane
    python scripts/benchmark.py --quick               # smoke: N=200, 3 runs
    python scripts/benchmark.py --only throughput -n 2000
    python scripts/benchmark.py --kubeconfig ~/.kube/config --only small
    python scripts/benchmark.py --tool "python kubectl-unfinalize"   # the checkout, not dist/

Not a test. The figures depend on the machine, and the API server, etcd, the client and
this script share it: on a shared 2-core machine the absolute numbers mean little, and
only the ratios within one run are meaningful.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import platform
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import urllib3
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from controlplane.proxy import LoopbackProxy  # noqa: E402

try:
    from controlplane import K8S_VERSION, ControlPlane, find_binaries
except ImportError:  # before tests/controlplane became a package
    from controlplane.cluster import K8S_VERSION, ControlPlane, find_binaries

NAMESPACES = 20
FINALIZERS = ["kopf.zalando.org/KopfFinalizerMarker", "example.com/cleanup"]
PATCH = '{"metadata":{"finalizers":null}}'
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CEILING_BUILD = ROOT / "bench" / "ceiling" / "build.sh"
DEFAULT_TOOL = ROOT / "dist" / "kubectl-unfinalize"
RUN_TIMEOUT = 30 * 60


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- measuring


@dataclass
class Sample:
    seconds: float  # wall clock
    cpu: float  # user + sys of the process and the children it waited for
    rss_mib: float  # peak RSS of the process or of its largest child
    rc: int
    stdout: str
    stderr: str


# Runs one command and reports its wall time and rusage. It is started fresh for each
# command because Linux carries a process's peak RSS across exec: a command forked from
# this script (hundreds of MB after creating 100,000 objects) would report this script's
# size as its own peak. Forked from this small helper, it reports only its own.
_LAUNCHER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss], out)
"""


def measure(argv: list[str], env: dict[str, str], timeout: float = RUN_TIMEOUT) -> Sample:
    """Run argv to completion; wall time, CPU and peak RSS from os.wait4 in a small launcher."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        launcher = [sys.executable, "-c", _LAUNCHER, str(result), *argv]
        proc = subprocess.Popen(
            launcher, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        rc, seconds, cpu, maxrss = json.loads(result.read_text()) if result.exists() else [-9, timeout, 0.0, 0]
        out.seek(0)
        err.seek(0)
        return Sample(
            seconds=seconds,
            cpu=cpu,
            rss_mib=maxrss / 1024,
            rc=rc,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
        )


def check(sample: Sample, what: str) -> Sample:
    if sample.rc != 0:
        failures = [line for line in sample.stdout.splitlines() if " unfinalized " not in line][-20:]
        raise SystemExit(
            f"{what} failed with exit code {sample.rc}:\n{sample.stderr[-3000:]}" + "\n".join(["", *failures])
        )
    return sample


def med(values: list[float]) -> float:
    return statistics.median(values)


# ----------------------------------------------------------------------------- API client


def _named(items: list[dict] | None, name: str | None) -> dict:
    for item in items or []:
        if item.get("name") == name:
            return item
    raise SystemExit(f"kubeconfig: no entry named {name!r}")


class Kube:
    """Plain urllib3 with the kubeconfig's credentials: one connection pool for many threads
    (independent of the tool's own, changing, transport)."""

    def __init__(self, kubeconfig: str, pool: int = 16) -> None:
        self.kubeconfig = kubeconfig
        with open(kubeconfig) as f:
            self.config = yaml.safe_load(f)
        ctx = _named(self.config.get("contexts"), self.config.get("current-context"))["context"]
        self.cluster_entry = _named(self.config.get("clusters"), ctx["cluster"])
        cluster = self.cluster_entry["cluster"]
        user = _named(self.config.get("users"), ctx["user"])["user"] if ctx.get("user") else {}
        self.server = cluster["server"].rstrip("/")
        self._dir = tempfile.mkdtemp(prefix="unfinalize-bench-")
        base = Path(kubeconfig).resolve().parent

        def material(entry: dict, data_key: str, file_key: str, name: str) -> str | None:
            if entry.get(data_key):
                path = Path(self._dir, name)
                path.write_bytes(base64.b64decode(entry[data_key]))
                path.chmod(0o600)
                return str(path)
            if entry.get(file_key):
                return str(base / os.path.expanduser(entry[file_key]))
            return None

        kw: dict = {"maxsize": pool, "block": True, "retries": False}
        kw["timeout"] = urllib3.Timeout(connect=10, read=120)
        ca = material(cluster, "certificate-authority-data", "certificate-authority", "ca.crt")
        if cluster.get("insecure-skip-tls-verify"):
            kw["cert_reqs"] = "CERT_NONE"
        elif ca:
            kw.update(cert_reqs="CERT_REQUIRED", ca_certs=ca)
        if cluster.get("tls-server-name"):
            kw["server_hostname"] = cluster["tls-server-name"]
        cert = material(user, "client-certificate-data", "client-certificate", "client.crt")
        key = material(user, "client-key-data", "client-key", "client.key")
        if cert and key:
            kw.update(cert_file=cert, key_file=key)
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self.http = urllib3.PoolManager(**kw)

    def close(self) -> None:
        self.http.clear()
        shutil.rmtree(self._dir, ignore_errors=True)

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(6):
            try:
                r = self.http.request(method, self.server + path, body=data, headers=self.headers)
            except urllib3.exceptions.HTTPError:
                if attempt == 5:
                    raise
                time.sleep(0.2 * 2**attempt)
                continue
            if r.status in (429, 500, 503, 504) and attempt < 5:
                time.sleep(0.2 * 2**attempt)
                continue
            try:
                return r.status, json.loads(r.data) if r.data else {}
            except ValueError:
                return r.status, {"raw": r.data[:500].decode(errors="replace")}
        raise AssertionError("unreachable")

    def must(self, method: str, path: str, body: dict | None = None, ok=(200, 201, 202)) -> dict:
        status, doc = self.request(method, path, body)
        if status not in ok:
            raise SystemExit(f"{method} {path}: HTTP {status}: {doc.get('message', doc)}")
        return doc

    # fixtures ---------------------------------------------------------------
    def namespaces(self, count: int = NAMESPACES) -> list[str]:
        names = [f"bench-{i:02d}" for i in range(count)]
        for name in names:
            self.must("POST", "/api/v1/namespaces", {"metadata": {"name": name}}, ok=(201, 409))
        return names

    def create_crd(self, crd: CrdSpec) -> None:
        self.wait_gone(crd.name, timeout=300)  # the same name may still be terminating
        self.must("POST", CRDS, crd.manifest(), ok=(201,))
        deadline = time.monotonic() + 60
        while True:
            _, doc = self.request("GET", f"{CRDS}/{crd.name}")
            conditions = {c["type"]: c["status"] for c in (doc.get("status") or {}).get("conditions") or []}
            if conditions.get("Established") == "True":
                status, _ = self.request("GET", f"/apis/{crd.group}/v1/{crd.plural}?limit=1")
                if status == 200:  # served, not only established
                    return
            if time.monotonic() > deadline:
                raise SystemExit(f"CRD {crd.name} not served after 60s")
            time.sleep(0.05)

    def create_objects(self, objects: list[dict], threads: int = 16) -> None:
        def create(obj: dict) -> None:
            crd: CrdSpec = obj["crd"]
            ns = obj["namespace"]
            self.must("POST", f"/apis/{crd.group}/v1/namespaces/{ns}/{crd.plural}", obj["body"], ok=(201,))

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, objects))

    def gone(self, crd_name: str) -> bool:
        return self.request("GET", f"{CRDS}/{crd_name}")[0] == 404

    def wait_gone(self, crd_name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.gone(crd_name):
            if time.monotonic() > deadline:
                raise SystemExit(f"CRD {crd_name} still there after {timeout:.0f}s")
            time.sleep(0.1)

    def delete_crd(self, crd_name: str, timeout: float = 600) -> None:
        self.must("DELETE", f"{CRDS}/{crd_name}", ok=(200, 202, 404))
        self.wait_gone(crd_name, timeout)

    def count(self, crd: CrdSpec) -> tuple[int, int]:
        """(objects, objects that still have finalizers), across all namespaces."""
        total = finalized = 0
        cont = ""
        while True:
            doc = self.must("GET", f"/apis/{crd.group}/v1/{crd.plural}?limit=500&continue={cont}")
            for item in doc.get("items", []):
                total += 1
                finalized += bool(item["metadata"].get("finalizers"))
            cont = doc.get("metadata", {}).get("continue") or ""
            if not cont:
                return total, finalized


@dataclass(frozen=True)
class CrdSpec:
    group: str
    plural: str
    kind: str

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @staticmethod
    def fresh(prefix: str = "items") -> CrdSpec:
        return CrdSpec(f"b{secrets.token_hex(4)}.bench.test", prefix, prefix.rstrip("s").capitalize())

    def manifest(self) -> dict:
        schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name},
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": {"plural": self.plural, "singular": self.plural.rstrip("s"), "kind": self.kind},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
            },
        }

    def obj(self, namespace: str, name: str) -> dict:
        body = {
            "apiVersion": f"{self.group}/v1",
            "kind": self.kind,
            "metadata": {"name": name, "namespace": namespace, "finalizers": FINALIZERS},
            "spec": {"payload": "x" * 200},
        }
        return {"crd": self, "namespace": namespace, "body": body}


# ----------------------------------------------------------------------------- the bench


class Bench:
    def __init__(self, kubeconfig: str, kubectl: Path, tool_argv: list[str], ceiling: Path, workdir: Path) -> None:
        self.kube = Kube(kubeconfig)
        self.kubeconfig, self.kubectl, self.ceiling, self.workdir = kubeconfig, str(kubectl), str(ceiling), workdir
        plugin_dir = workdir / "plugin"
        plugin_dir.mkdir()
        plugin = plugin_dir / "kubectl-unfinalize"
        if len(tool_argv) == 1:
            plugin.symlink_to(tool_argv[0])
        else:
            plugin.write_text(f'#!/bin/sh\nexec {shlex.join(tool_argv)} "$@"\n')
            plugin.chmod(0o755)
        self.plugin = plugin
        self.tool_desc = shlex.join(tool_argv)
        self.env = self.env_for(kubeconfig)
        self.namespaces = self.kube.namespaces()

    def env_for(self, kubeconfig: str) -> dict[str, str]:
        env = dict(os.environ, KUBECONFIG=kubeconfig, NO_COLOR="1", KUBECACHEDIR=str(self.workdir / "kube-cache"))
        env["PATH"] = os.pathsep.join([str(self.plugin.parent), str(Path(self.kubectl).parent), env.get("PATH", "")])
        return env

    def populate(self, n: int, crd: CrdSpec | None = None) -> CrdSpec:
        crd = crd or CrdSpec.fresh()
        self.kube.create_crd(crd)
        started = time.monotonic()
        self.kube.create_objects([crd.obj(self.namespaces[i % NAMESPACES], f"item-{i}") for i in range(n)])
        if n >= 1000:
            log(f"    created {n} objects in {time.monotonic() - started:.0f}s")
        return crd

    def versions(self) -> list[str]:
        tool = measure([self.kubectl, "unfinalize", "--version"], self.env)
        kubectl = measure([self.kubectl, "version", "--client", "-o", "json"], self.env)
        server = self.kube.must("GET", "/version")
        try:
            client_version = json.loads(kubectl.stdout)["clientVersion"]["gitVersion"]
        except (ValueError, KeyError):
            client_version = "?"
        tool_line = (tool.stdout or tool.stderr).strip().splitlines()[:1] or ["?"]
        return [
            f"tool:      kubectl unfinalize -> {self.tool_desc}: {tool_line[0]}",
            f"kubectl:   {client_version} ({self.kubectl})",
            f"ceiling:   client-go v0.36.3, 64 in flight ({self.ceiling})",
            f"server:    {server.get('gitVersion', '?')} at {self.kube.server}",
            f"machine:   {os.cpu_count()} cores, {platform.machine()}, {platform.system()} {platform.release()},"
            f" Python {platform.python_version()}",
        ]

    # small-N ------------------------------------------------------------------
    def small(self, runs: int) -> list[list[str]]:
        rows = []
        startup = [
            check(measure([self.kubectl, "unfinalize", "--version"], self.env), "--version") for _ in range(runs)
        ]
        secs = [s.seconds for s in startup]
        rows.append(["startup: kubectl unfinalize --version", fmt_spread(secs), "", "", ""])
        cases = [
            ("1 CRD, 3 objects", [CrdSpec("small-a.bench.test", "widgets", "Widget")], 3, 1),
            (
                "4 CRDs, 10 objects, 2 ns",
                [CrdSpec("small-b.bench.test", f"things{k}", f"Thing{k}") for k in range(4)],
                10,
                2,
            ),
        ]
        for title, crds, n, namespaces in cases:
            case_dir = self.workdir / f"small-{len(crds)}"
            case_dir.mkdir(exist_ok=True)
            crds_yaml, objects_yaml = case_dir / "crds.yaml", case_dir / "objects.yaml"
            crds_yaml.write_text(yaml.safe_dump_all([c.manifest() for c in crds]))
            objects = [crds[i % len(crds)].obj(self.namespaces[i % namespaces], f"obj-{i}") for i in range(n)]
            objects_yaml.write_text(yaml.safe_dump_all([o["body"] for o in objects]))
            k = shlex.quote(self.kubectl)
            peers = {
                "tool": [self.kubectl, "unfinalize", "-f", str(crds_yaml), "--delete"],
                "kubectl": [
                    "sh",
                    "-c",
                    f"{k} delete -f {shlex.quote(str(objects_yaml))} --wait=false"
                    f" && {k} patch -f {shlex.quote(str(objects_yaml))} --type=merge -p {shlex.quote(PATCH)}"
                    f" && {k} delete -f {shlex.quote(str(crds_yaml))}",
                ],
            }
            times: dict[str, list[float]] = {"tool": [], "kubectl": []}
            cpu: dict[str, list[float]] = {"tool": [], "kubectl": []}
            for i in range(runs + 1):  # run 0 warms caches and is not counted
                order = ["tool", "kubectl"] if i % 2 == 0 else ["kubectl", "tool"]
                for peer in order:
                    for crd in crds:
                        self.kube.create_crd(crd)
                    self.kube.create_objects(objects, threads=8)
                    s = check(measure(peers[peer], self.env, timeout=300), f"{title}: {peer}")
                    for crd in crds:
                        if not self.kube.gone(crd.name):
                            raise SystemExit(f"{title}: {peer} exited 0 but CRD {crd.name} is still there")
                    if i:
                        times[peer].append(s.seconds)
                        cpu[peer].append(s.cpu)
                log(f"  small: {title}: run {i}/{runs}" + (" (warm-up)" if i == 0 else ""))
            ratio = med(times["tool"]) / med(times["kubectl"])
            rows.append(
                [
                    title,
                    fmt_spread(times["tool"]),
                    fmt_spread(times["kubectl"]),
                    f"{ratio:.2f}",
                    f"{med(cpu['tool']):.2f} / {med(cpu['kubectl']):.2f}",
                ]
            )
        return rows

    # throughput ---------------------------------------------------------------
    def tool_run(self, crd: CrdSpec, env: dict[str, str]) -> Sample:
        # The plugin itself, as kubectl execs it: kubectl's own start (44 MiB, 0.1 s CPU) would
        # otherwise set a floor under the RSS and CPU figures compared with the ceiling's.
        # --timeout: 100,000 objects take longer than the default 5 minutes on a small machine.
        argv = [str(self.plugin), "crd", crd.name, "-q", "--timeout", "30m"]
        return check(measure(argv, env), f"tool on {crd.name}")

    def ceiling_run(self, crd: CrdSpec, kubeconfig: str) -> Sample:
        argv = [self.ceiling, "--kubeconfig", kubeconfig, "--group", crd.group, "--version", "v1"]
        argv += ["--resource", crd.plural, "--concurrency", "64", "--chunk-size", "500"]
        return check(measure(argv, self.env), f"ceiling on {crd.name}")

    def one(self, peer: str, n: int, kubeconfig: str) -> Sample:
        crd = self.populate(n)
        if peer == "tool":
            sample = self.tool_run(crd, self.env_for(kubeconfig))
        else:
            sample = self.ceiling_run(crd, kubeconfig)
            reported = json.loads(sample.stdout.strip().splitlines()[-1])["objects"]
            if reported != n:
                raise SystemExit(f"ceiling patched {reported} objects, expected {n}")
        total, finalized = self.kube.count(crd)
        if (total, finalized) != (n, 0):
            raise SystemExit(f"{peer} left {finalized} of {total} objects with finalizers (expected {n}, 0)")
        self.kube.delete_crd(crd.name)
        return sample

    def compare(self, sizes: list[int], repeat: int, kubeconfig: str, label: str) -> dict[int, dict[str, list[Sample]]]:
        results: dict[int, dict[str, list[Sample]]] = {}
        for n in sizes:
            results[n] = {"tool": [], "ceiling": []}
            for i in range(repeat):
                for peer in ("tool", "ceiling") if i % 2 == 0 else ("ceiling", "tool"):
                    sample = self.one(peer, n, kubeconfig)
                    results[n][peer].append(sample)
                    log(f"  {label}: N={n} {peer}: {sample.seconds:.1f}s, {n / sample.seconds:.0f} objects/s")
        return results

    @contextlib.contextmanager
    def far_kubeconfig(self, delay: float) -> Iterator[tuple[str, LoopbackProxy]]:
        """A copy of the kubeconfig whose server is a loopback proxy adding `delay` each way."""
        url = urllib3.util.parse_url(self.kube.server)
        port = url.port or 443
        with LoopbackProxy(url.host, port, delay=delay) as proxy:
            config = json.loads(json.dumps(self.kube.config))
            ctx = _named(config["contexts"], config["current-context"])["context"]
            cluster = _named(config["clusters"], ctx["cluster"])["cluster"]
            cluster["server"] = proxy.url
            if url.host not in ("127.0.0.1", "localhost") and not cluster.get("tls-server-name"):
                cluster["tls-server-name"] = url.host  # keep verifying the real name
            for section, key in (("clusters", "cluster"), ("users", "user")):  # relative file paths
                for entry in config.get(section) or []:
                    for field in ("certificate-authority", "client-certificate", "client-key"):
                        if entry.get(key, {}).get(field):
                            entry[key][field] = str(Path(self.kubeconfig).resolve().parent / entry[key][field])
            path = self.workdir / "far.kubeconfig"
            path.write_text(yaml.safe_dump(config))
            path.chmod(0o600)
            yield str(path), proxy


def fmt_spread(values: list[float]) -> str:
    return f"{med(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def throughput_rows(results: dict[int, dict[str, list[Sample]]]) -> list[list[str]]:
    rows = []
    for n, peers in results.items():
        t, c = peers["tool"], peers["ceiling"]
        t_rate, c_rate = n / med([s.seconds for s in t]), n / med([s.seconds for s in c])
        t_cpu, c_cpu = med([s.cpu for s in t]) / n, med([s.cpu for s in c]) / n
        rows.append(
            [
                f"{n:,}",
                f"{med([s.seconds for s in t]):.1f} / {med([s.seconds for s in c]):.1f}",
                f"{t_rate:.0f} / {c_rate:.0f}",
                f"{t_rate / c_rate:.2f}",
                f"{t_cpu * 1000:.2f} / {c_cpu * 1000:.2f}",
                f"{t_cpu / c_cpu:.1f}",
                f"{max(s.rss_mib for s in t):.0f} / {max(s.rss_mib for s in c):.0f}",
            ]
        )
    return rows


def table(title: str, header: list[str], rows: list[list[str]], notes: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for r in [header, *rows]:
        print(
            "  "
            + "  ".join(
                str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    for note in notes:
        print(f"  {note}")
    sys.stdout.flush()


# ----------------------------------------------------------------------------- main


def resolve_tool(spec: str | None) -> list[str]:
    if spec is None:
        if not (DEFAULT_TOOL.is_file() and os.access(DEFAULT_TOOL, os.X_OK)):
            raise SystemExit(
                f"{DEFAULT_TOOL.relative_to(ROOT)} not found: build the one-file binary with `make binary`,"
                ' or measure the checkout with --tool "python kubectl-unfinalize"'
            )
        return [str(DEFAULT_TOOL)]
    argv = shlex.split(spec)
    if argv and argv[0] == "python":
        argv[0] = sys.executable
    for i, arg in enumerate(argv):
        if (ROOT / arg).exists():
            argv[i] = str(ROOT / arg)
    if argv and not os.path.isabs(argv[0]):
        argv[0] = shutil.which(argv[0]) or argv[0]
    return argv


def build_ceiling() -> Path:
    proc = subprocess.run(["bash", str(CEILING_BUILD)], stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise SystemExit(f"{CEILING_BUILD.relative_to(ROOT)} failed with exit code {proc.returncode}")
    return Path(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["small", "throughput", "far", "rss"], action="append", help="repeatable")
    parser.add_argument("--runs", type=int, help="runs per small-N case (default 10)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per throughput/far size; medians (default 1)")
    parser.add_argument("-n", type=int, action="append", metavar="N", help="throughput sizes (default 2000, 10000)")
    parser.add_argument("--far-n", type=int, action="append", metavar="N", help="far sizes (default 2000, 5000)")
    parser.add_argument("--delay", type=float, default=0.05, help="far: seconds added each way (default 0.05)")
    parser.add_argument("--large", action="store_true", help="rss: also N=100,000")
    parser.add_argument("--quick", action="store_true", help="smoke run: N=200 everywhere, 3 small-N runs")
    parser.add_argument("--kubeconfig", help="use this cluster instead of starting a local control plane")
    parser.add_argument(
        "--tool", help='command to measure instead of dist/kubectl-unfinalize, e.g. "python kubectl-unfinalize"'
    )
    args = parser.parse_args()
    sections = args.only or ["small", "throughput", "far", "rss"]
    runs = args.runs or (3 if args.quick else 10)
    sizes = args.n or ([200] if args.quick else [2000, 10000])
    far_sizes = args.far_n or ([200] if args.quick else [2000, 5000])
    rss_sizes = [200] if args.quick else [10000] + ([100000] if args.large else [])

    tool = resolve_tool(args.tool)
    kubectl = find_binaries(("kubectl",))["kubectl"]
    ceiling = build_ceiling()
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="unfinalize-bench-")))
        kubeconfig = args.kubeconfig
        if not kubeconfig:
            log("starting a local control plane")
            kubeconfig = stack.enter_context(ControlPlane()).kubeconfig
        bench = Bench(kubeconfig, kubectl, tool, ceiling, workdir)
        stack.callback(bench.kube.close)
        print("kubectl-unfinalize benchmark (figures on a shared machine: compare the ratios within this run)")
        for line in bench.versions():
            print(f"  {line}")
        if args.tool:
            print(f"  measuring --tool {args.tool!r} instead of {DEFAULT_TOOL.relative_to(ROOT)}")
        if args.kubeconfig is None:
            print(f"  local control plane {K8S_VERSION}: etcd, kube-apiserver, kube-controller-manager on this machine")
        sys.stdout.flush()

        if "small" in sections:
            rows = bench.small(runs)
            table(
                f"1. small-N teardown: seconds, median (min-max) of {runs} runs",
                ["case", "kubectl unfinalize --delete", "kubectl 3-step", "tool/kubectl", "CPU s tool / kubectl"],
                rows,
                [
                    "tool: kubectl unfinalize -f crds.yaml --delete (finds the objects itself)",
                    "kubectl: delete -f objects.yaml --wait=false; patch -f objects.yaml --type=merge"
                    f" -p '{PATCH}'; delete -f crds.yaml (waits). Setup before each run is not timed.",
                    "tool/kubectl < 1: the tool is faster.",
                ],
            )
        header = ["N", "seconds", "objects/s", "rate tool/ceil", "CPU ms/object", "CPU tool/ceil", "peak RSS MiB"]
        notes = [
            "each cell: tool / ceiling. tool: kubectl-unfinalize crd NAME -q, run as kubectl would exec it;"
            " ceiling: bench/ceiling (client-go).",
            f"{NAMESPACES} namespaces, {len(FINALIZERS)} finalizers per object, a fresh identical CRD per run;"
            " CPU = user+sys of the process and its children.",
        ]
        throughput: dict[int, dict[str, list[Sample]]] = {}
        if "throughput" in sections:
            throughput = bench.compare(sizes, args.repeat, kubeconfig, "throughput")
            reps = f", median of {args.repeat}" if args.repeat > 1 else ""
            table(f"2. throughput, tool vs ceiling{reps}", header, throughput_rows(throughput), notes)
        if "far" in sections:
            with bench.far_kubeconfig(args.delay) as (far, proxy):
                results = bench.compare(far_sizes, args.repeat, far, "far")
                accepted = proxy.accepted
            table(
                f"3. far cluster: +{args.delay * 1000:.0f} ms each way through a loopback proxy"
                f" ({args.delay * 2000:.0f} ms round trip)",
                header,
                throughput_rows(results),
                [*notes, f"the proxy accepted {accepted} TCP connections in all (ceiling: HTTP/2, one per run)."],
            )
        if "rss" in sections:
            base = bench.one("tool", 0, kubeconfig).rss_mib  # imports, kubeconfig, connection
            rows = [["0 (a CRD without objects)", f"{base:.0f}", "", ""]]
            for n in rss_sizes:
                if n in throughput:
                    samples = throughput[n]["tool"]
                else:
                    samples = [bench.one("tool", n, kubeconfig)]
                    log(f"  rss: N={n}: {samples[0].rss_mib:.0f} MiB")
                peak = max(s.rss_mib for s in samples)
                rows.append([f"{n:,}", f"{peak:.0f}", f"{peak - base:.0f}", f"{(peak - base) * 1024 / n:.2f}"])
            table(
                "4. peak RSS of the tool (kubectl-unfinalize crd NAME -q)",
                ["N", "MiB", "MiB over N=0", "KiB/object over N=0"],
                rows,
                ["max RSS of the process or of its largest child (the one-file binary unpacks into a child)."],
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
