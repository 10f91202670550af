"""A throwaway Kubernetes control plane on loopback, with the faults and records tests need.

etcd, kube-apiserver and kube-controller-manager run as local processes on free loopback
ports, with generated certificates, RBAC authorization and an admin kubeconfig (context
``unfinalize-test``, client certificate ``unfinalize-admin`` in ``system:masters``).
Real binaries instead of fakes, because the tool's job is to get along with the API
server's actual semantics (finalizers, conflicts, pagination, compaction).

Python API::

    with ControlPlane(audit=True) as cp:
        subprocess.run([f"{cp.bin_dir}/kubectl", "--kubeconfig", cp.kubeconfig, "get", "ns"])
        mark = cp.audit_mark()
        ...                                    # requests under test
        cp.audit_events(since=mark)            # what reached the API server since
        cp.restart_apiserver(down_seconds=1)   # same port, same data: clients must cope
"""

from __future__ import annotations

import atexit
import base64
import http.client
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from .binaries import BINARIES, ControlPlaneError, find_binaries
from .process import Process, deferred_signals, free_port, tail
from .releases import apiserver_feature_gates, minor_of, release_of

CONTEXT = "unfinalize-test"
ADMIN_USER = "unfinalize-admin"
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "persistentvolumeclaim-protection-controller",  # a built-in finalizer the tool leaves to its controller
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
)
MARKER = ".unfinalize-cluster"
SERVICE_CIDR = "10.0.0.0/24"
STOP_TIMEOUT = 15.0
# Then SIGKILL. kube-apiserver stops listening at once on SIGTERM but its process can
# linger for many seconds; a restart test wants it gone, and etcd holds all state anyway.
APISERVER_STOP_TIMEOUT = 3.0
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
# The lists and watches of custom resources in this API group are recorded too: a test that
# pins how a list is paged, or that a check watches instead of listing, makes its CRD here.
READS_GROUP = "reads.unfinalize.test"
AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [{", ".join(WRITE_VERBS)}]
- level: Metadata
  verbs: [list, watch]
  resources: [{{group: {READS_GROUP}}}]
- level: None
"""
# audit_reads=True: the admin user's gets and lists too (the tool runs as that user), to
# count what a run reads; the control plane's own components read all the time.
AUDIT_READS_RULE = f"""\
- level: Metadata
  verbs: [get, list]
  users: [{ADMIN_USER}]
"""


def _openssl(*args: str, cwd: Path) -> None:
    try:
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as e:
        raise ControlPlaneError("openssl is needed to generate certificates") from e
    except subprocess.CalledProcessError as e:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {e.stderr}") from e


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager on loopback.

    Attributes once started: ``kubeconfig`` (path, str), ``bin_dir`` (directory with
    kubectl, str), ``server`` (``https://127.0.0.1:PORT``), ``server_address``
    (``(host, port)``, for a proxy in front of it), ``etcd_url`` (etcd's client URL,
    plain HTTP, with its JSON gateway under ``/v3/``), ``workdir`` (Path),
    ``startup_seconds`` (float), ``release`` (``v1.32.13``, what kube-apiserver reports;
    flags are chosen by its minor, ``minor``), ``audit_log`` (Path, with ``audit=True``; with
    ``audit_reads=True`` the admin user's gets and lists are recorded as well).

    ``continue_from_cache=False`` (the default) turns the ListFromCacheSnapshot feature
    off (on servers that know it, 1.33 on): list pages after the first come from etcd,
    as on servers before 1.34 or whose watch cache no longer holds the snapshot. Then a
    compaction through ``etcd()`` expires older continue tokens at once (410 Gone), as it
    eventually does on any server; with the feature on, the watch cache keeps answering them until it learns
    of the compaction (polled every 15 s, and only from the API server's own key).

    ``apiserver_args``: more kube-apiserver flags, for a control plane of a test's own
    (e.g. a token webhook: ``token_webhook.TokenWebhook.flags()``).

    ``aggregated_discovery=False`` (up to 1.29 only) leaves the server only the legacy
    discovery lists, one request per group version, as servers before 1.27 answer.

    ``malformed_deletion=True`` (1.32 on) turns AllowUnsafeMalformedObjectDeletion on: the server
    names each corrupt object of a list and deletes one on request (``corrupt()`` makes one).
    """

    def __init__(
        self,
        workdir: str | os.PathLike | None = None,
        *,
        controllers=CONTROLLERS,
        startup_timeout: float = 120.0,
        build: bool = True,
        keep_workdir: bool | None = None,
        audit: bool = False,
        continue_from_cache: bool = False,
        audit_reads: bool = False,
        apiserver_args: tuple[str, ...] | list[str] = (),
        aggregated_discovery: bool = True,
        malformed_deletion: bool = False,
    ):
        self._workdir_arg = Path(workdir) if workdir is not None else None
        self.controllers = tuple(controllers)
        self.startup_timeout = startup_timeout
        self.audit = audit or audit_reads
        self.audit_reads = audit_reads
        self.continue_from_cache = continue_from_cache
        self.apiserver_args = list(apiserver_args)
        self.aggregated_discovery = aggregated_discovery
        self.malformed_deletion = malformed_deletion
        self._build = build
        self._keep = keep_workdir
        self.workdir: Path | None = None
        self.kubeconfig: str | None = None
        self.bin_dir: str | None = None
        self.server: str | None = None
        self.etcd_url: str | None = None
        self.audit_log: Path | None = None
        self.startup_seconds: float | None = None
        self.release: str | None = None
        self.minor: int | None = None
        self.binaries: dict[str, Path] = {}
        self._procs: list[Process] = []
        self._ports: dict[str, int] = {}
        self._ssl: ssl.SSLContext | None = None
        self._apiserver_lock = threading.RLock()  # one stop/start of kube-apiserver at a time

    # context manager -------------------------------------------------------
    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # public -----------------------------------------------------------------
    @property
    def processes(self) -> dict[str, int]:
        return {p.name: p.pid for p in self._procs}

    def exited(self) -> dict[str, int]:
        """Components that ended by themselves (name -> exit code): a dead cluster, not a planned restart."""
        codes = {p.name: p.exit_code() for p in list(self._procs)}
        return {name: rc for name, rc in codes.items() if rc is not None}

    @property
    def server_address(self) -> tuple[str, int]:
        """(host, port) of kube-apiserver; stays the same across restarts."""
        return "127.0.0.1", self._ports["apiserver"]

    def start(self) -> ControlPlane:
        t0 = time.monotonic()
        # controllers=(): no kube-controller-manager, so it need not be built (the demo)
        names = BINARIES if self.controllers else tuple(n for n in BINARIES if n != "kube-controller-manager")
        self.binaries = find_binaries(names, build=self._build)
        self.bin_dir = str(self.binaries["kubectl"].parent)
        atexit.register(self.stop)
        try:
            self.release = release_of(self.binaries["kube-apiserver"])
            self.minor = minor_of(self.release)
            self._prepare_workdir()
            self._start(time.monotonic() + self.startup_timeout)
        except Exception as e:
            tails = self.log_tails()
            self.stop()
            msg = str(e) if isinstance(e, ControlPlaneError) else f"{type(e).__name__}: {e}"
            raise ControlPlaneError(f"control plane failed to start: {msg}\n{tails}") from e
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop every process started (SIGTERM, then SIGKILL) and remove the temp dir."""
        with deferred_signals():
            procs, self._procs = self._procs, []
            deadline = time.monotonic() + STOP_TIMEOUT
            # Reverse start order: kube-apiserver shuts down slowly once etcd is gone.
            for p in reversed(procs):
                p.stop(timeout=max(0.5, deadline - time.monotonic()))
            keep = self._keep if self._keep is not None else self._workdir_arg is not None
            if self.workdir is not None and not keep:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    def stop_apiserver(self, timeout: float = APISERVER_STOP_TIMEOUT) -> None:
        """Stop kube-apiserver on purpose (SIGTERM, SIGKILL after `timeout` s).

        etcd and kube-controller-manager keep running, and neither the supervisor of
        ``make cluster`` nor start-up waits count this as a crash. Connections in flight
        break; new ones are refused until ``start_apiserver()``.
        """
        with self._apiserver_lock:
            self._process("kube-apiserver").stop(timeout)

    def start_apiserver(self, timeout: float = 60.0) -> None:
        """Start kube-apiserver again with the same argv and wait for /readyz."""
        with self._apiserver_lock:
            proc = self._process("kube-apiserver")
            if proc.stopped:
                proc.start()
            self._wait("kube-apiserver /readyz", time.monotonic() + timeout, self._apiserver_ready)

    def restart_apiserver(self, down_seconds: float = 0.0, timeout: float = 60.0) -> None:
        """Stop kube-apiserver, keep it down `down_seconds`, start it again and wait for /readyz.

        Same port, same etcd data, same certificates: clients reconnect to the "same"
        server, as after a rolling upgrade or a crash of a real one. Safe to call from a
        thread while the main thread runs the tool under test.
        """
        with self._apiserver_lock:
            self.stop_apiserver()
            if down_seconds > 0:
                time.sleep(down_seconds)
            self.start_apiserver(timeout=timeout)

    def restart_controller_manager(self) -> None:
        """Stop kube-controller-manager and start it again with the same argv: its
        controllers start over, as after a leader change (the garbage collector then waits
        for every type's informer before it processes anything, before 1.32)."""
        proc = self._process("kube-controller-manager")
        proc.stop(STOP_TIMEOUT)
        proc.start()

    def log_tails(self, lines: int = 25) -> str:
        if self.workdir is None:
            return ""
        out = []
        for log in sorted((self.workdir / "logs").glob("*.log")):
            out.append(f"--- last {lines} lines of {log.name} ---\n{tail(log, lines)}")
        return "\n".join(out)

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        """GET `path` on the API server as admin; returns (status, body)."""
        return self.request("GET", path, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        *,
        content_type: str = "application/json",
        timeout: float = 5.0,
    ) -> tuple[int, str]:
        """One request to the API server as ``unfinalize-admin``; returns (status, body text).

        Errors come back as a status, not an exception, so a test can assert on 404 or 410.
        """
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def etcd(self, method: str, body: dict, timeout: float = 5.0) -> dict:
        """POST `body` to etcd's JSON gateway ``/v3/<method>`` (e.g. ``kv/range``, ``kv/compaction``).

        Keys and values are base64 in that API; integers (revisions) are strings.
        """
        req = urllib.request.Request(
            f"{self.etcd_url}/v3/{method}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def etcd_revision(self) -> int:
        """etcd's current revision, from the header of any gateway answer."""
        key = base64.b64encode(b"/registry/").decode()
        return int(self.etcd("kv/range", {"key": key, "count_only": True})["header"]["revision"])

    def corrupt(self, key: str, garbage: bytes = b"\x00not an object\xff") -> None:
        """Write `garbage` over an object's bytes in etcd, as a lost encryption key or a bad disk leaves them.

        `key` is the storage key under ``/registry/``: ``secrets/NS/NAME``, ``GROUP/PLURAL/NS/NAME``.
        The key must hold an object: a typo would create a key the API server never reads.
        """
        full = base64.b64encode(b"/registry/" + key.encode()).decode()
        if not self.etcd("kv/range", {"key": full, "count_only": True}).get("count"):
            raise ControlPlaneError(f"no object at /registry/{key} in etcd")
        self.etcd("kv/put", {"key": full, "value": base64.b64encode(garbage).decode()})

    def audit_mark(self) -> int:
        """The audit log's size in bytes: pass it to ``audit_events(since=...)`` later."""
        self._require_audit()
        try:
            return self.audit_log.stat().st_size
        except FileNotFoundError:
            return 0

    def audit_events(self, since: int = 0) -> list[dict]:
        """Audit events (JSON objects) written after byte offset `since`, oldest first.

        The policy records only writes (create, update, patch, delete, deletecollection),
        at level Metadata, one ResponseComplete event per request. The log is written
        synchronously (``--audit-log-mode=blocking``) before the response is sent, so a
        request that has returned is already in it.
        """
        self._require_audit()
        try:
            with open(self.audit_log, "rb") as f:
                f.seek(max(0, since - 1))
                data = f.read()
        except FileNotFoundError:
            return []
        if since > 0:
            # A mark taken while a line was being appended falls inside it: that event began
            # before the mark (one CI run read its second half as a line of its own).
            start = 1 if data[:1] == b"\n" else data.find(b"\n") + 1
            data = data[start:] if start else b""
        end = data.rfind(b"\n") + 1  # a line still being written is left for the next call
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]

    # internals -------------------------------------------------------------
    def _require_audit(self) -> None:
        if self.audit_log is None:
            raise ControlPlaneError("audit log not enabled: start ControlPlane(audit=True)")

    def _process(self, name: str) -> Process:
        for p in self._procs:
            if p.name == name:
                return p
        raise ControlPlaneError(f"{name} is not running (control plane not started or stopped)")

    def _apiserver_ready(self) -> bool:
        return self.get("/readyz")[0] == 200

    def _prepare_workdir(self) -> None:
        if self._workdir_arg is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="unfinalize-cp-"))
        else:
            d = self._workdir_arg.resolve()
            if d.exists() and any(d.iterdir()) and not (d / MARKER).exists():
                raise ControlPlaneError(f"{d} is not empty and not a control plane directory")
            d.mkdir(parents=True, exist_ok=True)
            for sub in ("etcd", "pki", "logs", "kcm-certs"):
                shutil.rmtree(d / sub, ignore_errors=True)
            for name in ("audit.log", "audit-policy.yaml"):
                (d / name).unlink(missing_ok=True)
            self.workdir = d
        (self.workdir / MARKER).touch()
        for sub in ("pki", "logs", "kcm-certs"):
            (self.workdir / sub).mkdir()

    def _audit_args(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.workdir / "audit-policy.yaml"
        reads = AUDIT_READS_RULE if self.audit_reads else ""
        policy.write_text(AUDIT_POLICY.replace("- level: None\n", reads + "- level: None\n"))
        self.audit_log = self.workdir / "audit.log"
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",  # the default, spelled out: one synchronous write per event
            # 0: a plain append-only file instead of a rotating writer (default 100 MB), so
            # offsets from audit_mark() stay valid for the whole session.
            "--audit-log-maxsize=0",
        ]

    def _start(self, deadline: float) -> None:
        wd = self.workdir
        pki = wd / "pki"
        self._make_pki(pki)
        ports = self._ports = {n: free_port() for n in ("etcd", "etcd-peer", "apiserver", "controller-manager")}
        self.server = f"https://127.0.0.1:{ports['apiserver']}"
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self._ssl = ctx
        self._write_kubeconfig(wd / "kubeconfig", "admin")
        self._write_kubeconfig(wd / "controller-manager.kubeconfig", "controller-manager")
        self.kubeconfig = str(wd / "kubeconfig")

        etcd_url = self.etcd_url = f"http://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
        self._spawn(
            "etcd",
            [
                "--name=unfinalize",
                f"--data-dir={wd / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=unfinalize={peer_url}",
                "--unsafe-no-fsync=true",
                # 8 GiB, etcd's largest advised, not 2: `make bench --repeat 3` writes 1.2 GB of 100 KiB
                # objects within the API server's 5-minute compaction and filled the default quota
                "--quota-backend-bytes=8589934592",
                "--log-level=warn",
            ],
        )
        self._wait("etcd health", deadline, lambda: _http_ok(etcd_url + "/health"))

        self._spawn(
            "kube-apiserver",
            [
                "--advertise-address=127.0.0.1",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['apiserver']}",
                f"--etcd-servers={etcd_url}",
                f"--cert-dir={pki}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--profiling=false",
                "--endpoint-reconciler-type=none",
                *apiserver_feature_gates(
                    self.minor,
                    continue_from_cache=self.continue_from_cache,
                    aggregated_discovery=self.aggregated_discovery,
                    malformed_deletion=self.malformed_deletion,
                ),
                *self._audit_args(),
                *self.apiserver_args,
            ],
        )
        self._wait("kube-apiserver /readyz", deadline, self._apiserver_ready)

        if self.controllers:
            self._start_controller_manager()
        for ns in ("default", "kube-system"):
            self._wait(
                f"namespace {ns}",
                deadline,
                lambda ns=ns: self.get(f"/api/v1/namespaces/{ns}")[0] == 200,
            )
        if not self.controllers:
            return
        kcm_health = f"https://127.0.0.1:{self._ports['controller-manager']}/healthz"
        self._wait("kube-controller-manager /healthz", deadline, lambda: _http_ok(kcm_health))
        if "serviceaccount-controller" in self.controllers:  # proof that controllers act on the cluster
            self._wait(
                "the default service account",
                deadline,
                lambda: self.get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            )

    def _start_controller_manager(self) -> None:
        wd, pki = self.workdir, self.workdir / "pki"
        kcm_kubeconfig = str(wd / "controller-manager.kubeconfig")
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={kcm_kubeconfig}",
                f"--authentication-kubeconfig={kcm_kubeconfig}",
                f"--authorization-kubeconfig={kcm_kubeconfig}",
                "--leader-elect=false",
                f"--controllers={','.join(self.controllers)}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self._ports['controller-manager']}",
                f"--cert-dir={wd / 'kcm-certs'}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--profiling=false",
            ],
        )

    def _spawn(self, name: str, args: list[str]) -> None:
        argv = [str(self.binaries[name]), *args]
        log = self.workdir / "logs" / f"{name}.log"
        self._procs.append(Process(name, argv, log, self.workdir))

    def _wait(self, what: str, deadline: float, check) -> None:
        """Poll `check` until true; fail early if a component died (not if it was stopped on purpose)."""
        last: Exception | None = None
        while True:
            for name, rc in self.exited().items():
                raise ControlPlaneError(f"{name} exited with code {rc} (waiting for {what})")
            try:
                if check():
                    return
            except (OSError, http.client.HTTPException, ValueError) as e:
                last = e
            if time.monotonic() > deadline:
                why = f" (last error: {last})" if last else ""
                raise ControlPlaneError(f"timed out waiting for {what}{why}")
            time.sleep(0.1)

    def _make_pki(self, pki: Path) -> None:
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl(
            "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
            "-subj", "/CN=unfinalize-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            cwd=pki,
        )  # fmt: skip
        certs = {
            "apiserver": (
                "/CN=kube-apiserver",
                "serverAuth",
                "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,"
                "DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1",
            ),
            "admin": (f"/O=system:masters/CN={ADMIN_USER}", "clientAuth", None),
            "controller-manager": (
                "/O=system:masters/CN=system:kube-controller-manager",
                "clientAuth",
                None,
            ),
        }
        for name, (subject, usage, san) in certs.items():
            ext = [
                "basicConstraints=critical,CA:FALSE",
                "keyUsage=critical,digitalSignature,keyEncipherment",
                f"extendedKeyUsage={usage}",
                "subjectKeyIdentifier=hash",
                "authorityKeyIdentifier=keyid",
            ]
            if san:
                ext.append(san)
            (pki / f"{name}.ext").write_text("\n".join(ext) + "\n")
            _openssl(
                "req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", subject, cwd=pki,
            )  # fmt: skip
            _openssl(
                "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "3650",
                "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=pki,
            )  # fmt: skip
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", "sa.key", cwd=pki)
        _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)

    def _write_kubeconfig(self, path: Path, identity: str) -> None:
        pki = self.workdir / "pki"

        def b64(name: str) -> str:
            return base64.b64encode((pki / name).read_bytes()).decode()

        user = ADMIN_USER if identity == "admin" else identity
        path.write_text(
            f"""apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: {self.server}
    certificate-authority-data: {b64("ca.crt")}
users:
- name: {user}
  user:
    client-certificate-data: {b64(f"{identity}.crt")}
    client-key-data: {b64(f"{identity}.key")}
contexts:
- name: {CONTEXT}
  context:
    cluster: {CONTEXT}
    user: {user}
current-context: {CONTEXT}
"""
        )
        path.chmod(0o600)


def _http_ok(url: str) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=2) as r:
            return r.status == 200
    except urllib.error.HTTPError:
        return False
