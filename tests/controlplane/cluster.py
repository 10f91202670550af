#!/usr/bin/env python3
"""A throwaway Kubernetes control plane for the integration tests.

etcd, kube-apiserver and kube-controller-manager run as local processes on free loopback
ports, with generated certificates, RBAC authorization and an admin kubeconfig (context
``unfinalize-test``, client certificate in ``system:masters``).

Python API::

    with ControlPlane() as cp:
        subprocess.run([f"{cp.bin_dir}/kubectl", "--kubeconfig", cp.kubeconfig, "get", "ns"])

Command line::

    python tests/controlplane/cluster.py up --dir .cluster     # background; .cluster/kubeconfig
    python tests/controlplane/cluster.py status --dir .cluster
    python tests/controlplane/cluster.py down --dir .cluster
    python tests/controlplane/cluster.py run -- kubectl get ns  # one command, then stop

Binaries come from $KUBEBUILDER_ASSETS when it holds etcd and kube-apiserver, otherwise
(and for whatever it lacks) from the cache filled by build.sh, which is run if needed.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import fcntl
import http.client
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path

K8S_VERSION = "v1.36.3"
CONTEXT = "unfinalize-test"
ADMIN_USER = "unfinalize-admin"
HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
)
MARKER = ".unfinalize-cluster"
STATE_FILE = "state.json"
SERVICE_CIDR = "10.0.0.0/24"
STOP_TIMEOUT = 15.0

try:  # lets children die with their parent even if it is SIGKILLed
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:  # pragma: no cover
    _LIBC = None


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached."""


# --------------------------------------------------------------------------- binaries


def cache_bin_dir() -> Path:
    """The directory build.sh fills (same rule as build.sh)."""
    root = os.environ.get("UNFINALIZE_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "kubectl-unfinalize")
    return Path(root) / f"k8s-{K8S_VERSION}" / "bin"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _search_dirs() -> list[Path]:
    dirs = []
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and all(_executable(Path(assets, n)) for n in ("etcd", "kube-apiserver")):
        dirs.append(Path(assets))
    dirs.append(cache_bin_dir())
    return dirs


def _lookup(names) -> dict[str, Path]:
    found = {}
    for name in names:
        for d in _search_dirs():
            if _executable(d / name):
                found[name] = d / name
                break
    return found


def missing_binaries(names=BINARIES) -> list[str]:
    found = _lookup(names)
    return [n for n in names if n not in found]


def find_binaries(names=BINARIES, *, build: bool = True) -> dict[str, Path]:
    """Map each name to an executable, building missing ones with build.sh."""
    found = _lookup(names)
    missing = [n for n in names if n not in found]
    if missing and build:
        build_binaries()
        found = _lookup(names)
        missing = [n for n in names if n not in found]
    if missing:
        raise ControlPlaneError(
            f"missing binaries {', '.join(missing)}: not in $KUBEBUILDER_ASSETS "
            f"nor in {cache_bin_dir()} (run {BUILD_SCRIPT})"
        )
    return found


def build_binaries(out=None) -> None:
    """Run build.sh (control plane only), streaming its output to `out` (stderr)."""
    out = out or sys.stderr
    cache = cache_bin_dir()
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, UNFINALIZE_SKIP_TOOLS="1")
    tail: deque[str] = deque(maxlen=40)
    with open(cache / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time
        print(f"building the control plane binaries into {cache}", file=out, flush=True)
        try:
            proc = subprocess.Popen(
                ["bash", str(BUILD_SCRIPT)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        except OSError as e:
            raise ControlPlaneError(f"cannot run {BUILD_SCRIPT}: {e}") from e
        for line in proc.stderr:
            tail.append(line)
            print(line, end="", file=out, flush=True)
        if proc.wait() != 0:
            raise ControlPlaneError(f"{BUILD_SCRIPT} failed with exit code {proc.returncode}:\n" + "".join(tail))


# --------------------------------------------------------------------------- helpers


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    try:
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as e:
        raise ControlPlaneError("openssl is needed to generate certificates") from e
    except subprocess.CalledProcessError as e:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {e.stderr}") from e


def _tail(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 200 * lines))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(cannot read: {e})"
    return "\n".join(data.splitlines()[-lines:])


def _child_setup() -> None:  # runs in the forked child, before exec
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


@contextlib.contextmanager
def _deferred_signals():
    """Hold SIGINT/SIGTERM until the block ends (main thread only), so cleanup completes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old[sig] = signal.signal(sig, lambda s, _f: pending.append(s))
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in pending[:1]:
            os.kill(os.getpid(), sig)


class _Process:
    def __init__(self, name: str, argv: list[str], log: Path, cwd: Path):
        self.name = name
        self.log = log
        self._logf = open(log, "ab")
        try:
            self.popen = self._popen(argv, cwd)
        except BaseException:
            self._logf.close()
            raise

    def _popen(self, argv: list[str], cwd: Path) -> subprocess.Popen:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=self._logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group; a terminal's Ctrl-C goes to us only
            preexec_fn=_child_setup,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def close(self) -> None:
        self._logf.close()


# --------------------------------------------------------------------------- control plane


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager on loopback.

    Attributes once started: ``kubeconfig`` (path, str), ``bin_dir`` (directory with
    kubectl, str), ``server`` (URL), ``workdir`` (Path), ``startup_seconds`` (float).
    """

    def __init__(
        self,
        workdir: str | os.PathLike | None = None,
        *,
        controllers=CONTROLLERS,
        startup_timeout: float = 120.0,
        build: bool = True,
        keep_workdir: bool | None = None,
    ):
        self._workdir_arg = Path(workdir) if workdir is not None else None
        self.controllers = tuple(controllers)
        self.startup_timeout = startup_timeout
        self._build = build
        self._keep = keep_workdir
        self.workdir: Path | None = None
        self.kubeconfig: str | None = None
        self.bin_dir: str | None = None
        self.server: str | None = None
        self.startup_seconds: float | None = None
        self.binaries: dict[str, Path] = {}
        self._procs: list[_Process] = []
        self._ports: dict[str, int] = {}
        self._ssl: ssl.SSLContext | None = None

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

    def start(self) -> ControlPlane:
        t0 = time.monotonic()
        self.binaries = find_binaries(build=self._build)
        self.bin_dir = str(self.binaries["kubectl"].parent)
        atexit.register(self.stop)
        try:
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
        with _deferred_signals():
            procs, self._procs = self._procs, []
            deadline = time.monotonic() + STOP_TIMEOUT
            # Reverse start order: kube-apiserver shuts down slowly once etcd is gone.
            for p in reversed(procs):
                p.signal_group(signal.SIGTERM)
                try:
                    p.popen.wait(timeout=max(0.5, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.signal_group(signal.SIGKILL)
                    p.popen.wait()
                p.signal_group(signal.SIGKILL)  # stragglers in the group, if any
                p.close()
            keep = self._keep if self._keep is not None else self._workdir_arg is not None
            if self.workdir is not None and not keep:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    def log_tails(self, lines: int = 25) -> str:
        if self.workdir is None:
            return ""
        out = []
        for log in sorted((self.workdir / "logs").glob("*.log")):
            out.append(f"--- last {lines} lines of {log.name} ---\n{_tail(log, lines)}")
        return "\n".join(out)

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        """GET `path` on the API server as admin; returns (status, body)."""
        try:
            with urllib.request.urlopen(self.server + path, context=self._ssl, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    # internals -------------------------------------------------------------
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
            self.workdir = d
        (self.workdir / MARKER).touch()
        for sub in ("pki", "logs", "kcm-certs"):
            (self.workdir / sub).mkdir()

    def _start(self, deadline: float) -> None:
        wd = self.workdir
        pki = wd / "pki"
        self._make_pki(pki)
        ports = self._ports = {n: _free_port() for n in ("etcd", "etcd-peer", "apiserver", "controller-manager")}
        self.server = f"https://127.0.0.1:{ports['apiserver']}"
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self._ssl = ctx
        self._write_kubeconfig(wd / "kubeconfig", "admin")
        self._write_kubeconfig(wd / "controller-manager.kubeconfig", "controller-manager")
        self.kubeconfig = str(wd / "kubeconfig")

        etcd_url = f"http://127.0.0.1:{ports['etcd']}"
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
            ],
        )
        self._wait("kube-apiserver /readyz", deadline, lambda: self.get("/readyz")[0] == 200)

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
                f"--secure-port={ports['controller-manager']}",
                f"--cert-dir={wd / 'kcm-certs'}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--profiling=false",
            ],
        )
        for ns in ("default", "kube-system"):
            self._wait(
                f"namespace {ns}",
                deadline,
                lambda ns=ns: self.get(f"/api/v1/namespaces/{ns}")[0] == 200,
            )
        kcm_health = f"https://127.0.0.1:{ports['controller-manager']}/healthz"
        self._wait("kube-controller-manager /healthz", deadline, lambda: _http_ok(kcm_health))
        if "serviceaccount-controller" in self.controllers:  # proof that controllers act on the cluster
            self._wait(
                "the default service account",
                deadline,
                lambda: self.get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            )

    def _spawn(self, name: str, args: list[str]) -> None:
        argv = [str(self.binaries[name]), *args]
        log = self.workdir / "logs" / f"{name}.log"
        with open(log, "a") as f:
            f.write(f"$ {shlex.join(argv)}\n")
        self._procs.append(_Process(name, argv, log, self.workdir))

    def _wait(self, what: str, deadline: float, check) -> None:
        last: Exception | None = None
        while True:
            for p in self._procs:
                rc = p.popen.poll()
                if rc is not None:
                    raise ControlPlaneError(f"{p.name} exited with code {rc} (waiting for {what})")
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


# --------------------------------------------------------------------------- CLI


def _read_state(d: Path) -> dict | None:
    try:
        return json.loads((d / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None


def _write_state(d: Path, state: dict) -> None:
    tmp = d / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(d / STATE_FILE)


def _supervisor_alive(state: dict | None) -> bool:
    if not state or not state.get("pid"):
        return False
    pid = state["pid"]
    return _pid_alive(pid) and "cluster.py" in _cmdline(pid)


def _usage(d: Path, state: dict) -> str:
    kc = state["kubeconfig"]
    secs = state.get("startup_seconds")
    timing = f" in {secs:.1f}s" if secs is not None else ""
    rel = _shortpath(str(d))
    return (
        f"control plane ready{timing}: {state['server']} (Kubernetes {K8S_VERSION})\n"
        f"kubeconfig: {kc}\n"
        f"  export KUBECONFIG={shlex.quote(kc)}\n"
        f"  export PATH={shlex.quote(state['bin_dir'])}:$PATH\n"
        f"  kubectl get namespaces\n"
        f"stop it with: {_shortpath(sys.executable)} {_shortpath(__file__)} down --dir {rel}"
    )


def _shortpath(path: str) -> str:
    rel = os.path.relpath(path)
    return shlex.quote(path if rel.startswith("..") else rel)


def _cleanup_dir(d: Path) -> None:
    if d.exists() and (d / MARKER).exists():
        shutil.rmtree(d, ignore_errors=True)


def _kill_leftovers(state: dict | None) -> None:
    for name, pid in ((state or {}).get("processes") or {}).items():
        if _pid_alive(pid) and name in _cmdline(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def cmd_up(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    if _supervisor_alive(state):
        if state.get("status") == "ready":
            print("already running", file=sys.stderr)
            print(_usage(d, state))
            return 0
        print(f"a control plane is starting or stopping in {d} (pid {state['pid']})")
        return 1
    if d.exists() and any(d.iterdir()) and not (d / MARKER).exists():
        print(f"refusing to use {d}: not empty and not a control plane directory", file=sys.stderr)
        return 2
    _kill_leftovers(state)
    _cleanup_dir(d)
    try:
        find_binaries()  # build in the foreground, output to this terminal
    except ControlPlaneError as e:
        print(e, file=sys.stderr)
        return 1
    d.mkdir(parents=True, exist_ok=True)
    (d / MARKER).touch()
    with open(d / "supervisor.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "_serve", "--dir", str(d)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # detached: survives the shell and its Ctrl-C
            close_fds=True,
        )
    deadline = time.monotonic() + args.timeout + 15
    while time.monotonic() < deadline:
        state = _read_state(d)
        if state and state.get("pid") == proc.pid and state.get("status") == "ready":
            print(_usage(d, state))
            return 0
        if state and state.get("status") == "failed" or proc.poll() is not None:
            proc.wait(timeout=STOP_TIMEOUT + 5)
            print(f"control plane failed to start (logs in {d}):", file=sys.stderr)
            print((state or {}).get("error") or _tail(d / "supervisor.log", 40), file=sys.stderr)
            return 1
        time.sleep(0.1)
    print(f"timed out waiting for the control plane; see {d}/supervisor.log", file=sys.stderr)
    proc.terminate()
    return 1


def cmd_serve(args) -> int:
    d = Path(args.dir).resolve()

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    state = {"pid": os.getpid(), "status": "starting", "dir": str(d)}
    _write_state(d, state)
    cp = ControlPlane(d, startup_timeout=args.timeout, build=False, keep_workdir=True)
    try:
        cp.start()
    except ControlPlaneError as e:
        print(e, flush=True)
        _write_state(d, {**state, "status": "failed", "error": str(e)})
        return 1
    try:
        state.update(
            status="ready",
            kubeconfig=cp.kubeconfig,
            bin_dir=cp.bin_dir,
            server=cp.server,
            startup_seconds=round(cp.startup_seconds, 2),
            processes=cp.processes,
        )
        _write_state(d, state)
        print(f"control plane ready in {cp.startup_seconds:.1f}s: {cp.server}", flush=True)
        while True:
            for p in cp._procs:
                if p.popen.poll() is not None:
                    msg = f"{p.name} exited with code {p.popen.returncode}\n{cp.log_tails()}"
                    print(msg, flush=True)
                    _write_state(d, {**state, "status": "failed", "error": msg})
                    return 1
            time.sleep(1)
    finally:
        cp.stop()
        print("control plane stopped", flush=True)


def cmd_down(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    if _supervisor_alive(state):
        pid = state["pid"]
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT + 10
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        print(f"control plane in {d} stopped")
    elif state is None and not d.exists():
        print(f"no control plane in {d}")
        return 0
    else:
        print(f"control plane in {d} was not running; cleaned up")
    _kill_leftovers(state)
    _cleanup_dir(d)
    return 0


def cmd_status(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    if _supervisor_alive(state) and state.get("status") == "ready":
        print(_usage(d, state))
        return 0
    print(f"not running ({d})")
    return 1


def cmd_run(args) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("run: give a command after --", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    try:
        with ControlPlane(startup_timeout=args.timeout) as cp:
            print(f"control plane ready in {cp.startup_seconds:.1f}s", file=sys.stderr)
            env = dict(os.environ, KUBECONFIG=cp.kubeconfig)
            env["PATH"] = cp.bin_dir + os.pathsep + env.get("PATH", "")
            return subprocess.call(command, env=env)
    except ControlPlaneError as e:
        print(e, file=sys.stderr)
        return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, func, hlp in (
        ("up", cmd_up, "start in the background"),
        ("down", cmd_down, "stop and remove the directory"),
        ("status", cmd_status, "show whether it runs"),
        ("_serve", cmd_serve, argparse.SUPPRESS),
    ):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--dir", default=".cluster", help="state directory (default .cluster)")
        p.add_argument("--timeout", type=float, default=120.0, help="start-up timeout (s)")
        p.set_defaults(func=func)
    p = sub.add_parser("run", help="start, run a command with KUBECONFIG set, stop")
    p.add_argument("--timeout", type=float, default=120.0, help="start-up timeout (s)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
