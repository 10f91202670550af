"""The benchmark's own API client and its fixtures: namespaces, CRDs, objects with finalizers.

Plain urllib3 with the kubeconfig's credentials, independent of the tool's own (changing)
transport, so setting up and checking a case costs the same whatever is measured.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import urllib3
import yaml

NAMESPACES = 20
FINALIZERS = ["kopf.zalando.org/KopfFinalizerMarker", "example.com/cleanup"]
PATCH = '{"metadata":{"finalizers":null}}'
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def named(items: list[dict] | None, name: str | None) -> dict:
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
        ctx = named(self.config.get("contexts"), self.config.get("current-context"))["context"]
        self.cluster_entry = named(self.config.get("clusters"), ctx["cluster"])
        cluster = self.cluster_entry["cluster"]
        user = named(self.config.get("users"), ctx["user"])["user"] if ctx.get("user") else {}
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

    def write_kubeconfig(self, path: Path, server: str) -> None:
        """A copy of the kubeconfig whose server is `server` (a proxy in front of the real one)."""
        url = urllib3.util.parse_url(self.server)
        config = json.loads(json.dumps(self.config))
        ctx = named(config["contexts"], config["current-context"])["context"]
        cluster = named(config["clusters"], ctx["cluster"])["cluster"]
        cluster["server"] = server
        if url.host not in ("127.0.0.1", "localhost") and not cluster.get("tls-server-name"):
            cluster["tls-server-name"] = url.host  # keep verifying the real name
        for section, key in (("clusters", "cluster"), ("users", "user")):  # relative file paths
            for entry in config.get(section) or []:
                for field in ("certificate-authority", "client-certificate", "client-key"):
                    if entry.get(key, {}).get(field):
                        entry[key][field] = str(Path(self.kubeconfig).resolve().parent / entry[key][field])
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)

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
