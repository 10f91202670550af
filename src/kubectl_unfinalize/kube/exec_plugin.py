"""A kubeconfig's exec credential plugin (`users[].user.exec`), run as client-go runs it.

The facts relied on (client-go's plugin/pkg/client/auth/exec and the ExecCredential API,
client.authentication.k8s.io v1 and v1beta1):
- The command runs with the process's environment plus the `env` entries, and with
  KUBERNETES_EXEC_INFO holding an ExecCredential (its spec says whether the run is
  interactive, and with `provideClusterInfo` carries the cluster); a command path with a
  separator is relative to the kubeconfig file that names it, a bare name is looked up in
  PATH. Standard input is the plugin's only in an interactive run. Before each run the
  kuberc's credential plugin policy is asked (kuberc.py).
- `interactiveMode`: Never, IfAvailable (standard input is a terminal), Always (which
  fails without a terminal); v1beta1 without it means IfAvailable.
- The answer is an ExecCredential of the same apiVersion whose status has a token, or a
  client certificate and key (both), and optionally `expirationTimestamp` (RFC 3339).
  Without one the credential holds until the API server answers 401.

Standard error is passed through in an interactive run (the plugin may be asking the
user something); otherwise it is read, and its last line names a failure. Every failure
is one line, naming the plugin.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import ConfigError
from .kuberc import PluginPolicy, clean

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"  # a cluster's extension handed to the plugin
_FRACTION = re.compile(r"(\.\d{6})\d+")  # RFC 3339 allows nanoseconds; datetime reads microseconds


@dataclass(frozen=True)
class ExecCredential:
    """One run's answer. `expires`: seconds since the epoch, None when the plugin gave none."""

    token: str | None
    cert: bytes | None = None
    key: bytes | None = None
    expires: float | None = None


class ExecPlugin:
    """The plugin of one kubeconfig user; `run()` runs it once, when `policy` allows it.
    `path`: its command as kubectl takes it (a path made absolute and cleaned)."""

    def __init__(
        self,
        config: dict[str, Any],
        base: str,
        cluster: dict[str, Any] | None = None,
        policy: PluginPolicy | None = None,
    ) -> None:
        command = config.get("command")
        if not command or not isinstance(command, str):
            raise ConfigError("invalid kubeconfig: exec plugin without a command")
        self.command = command
        self.api_version = str(config.get("apiVersion") or "")
        if self.api_version not in API_VERSIONS:
            known = ", ".join(API_VERSIONS)
            raise ConfigError(f"exec plugin {command}: apiVersion {self.api_version or '(none)'} is not one of {known}")
        self.path = command if os.sep not in command else clean(os.path.join(os.path.abspath(base), command))
        self._policy = policy
        self._argv = [self.path, *(str(arg) for arg in config.get("args") or [])]
        self._env = {str(e["name"]): str(e["value"]) for e in config.get("env") or []}
        self._mode = str(config.get("interactiveMode") or "IfAvailable")
        if self._mode not in ("Never", "IfAvailable", "Always"):
            raise ConfigError(f"exec plugin {command}: unknown interactiveMode {self._mode}")
        self._cluster = _cluster_info(cluster or {}, base) if config.get("provideClusterInfo") else None
        hint = " ".join(str(config.get("installHint") or "").split())
        self._hint = f" ({hint})" if hint else ""

    def run(self) -> ExecCredential:
        interactive = self._mode != "Never" and sys.stdin is not None and sys.stdin.isatty()
        if self._mode == "Always" and not interactive:
            raise ConfigError(
                f"exec plugin {self.command}: interactiveMode Always, and standard input is not a terminal"
            )
        spec: dict[str, Any] = {"interactive": interactive}
        if self._cluster is not None:
            spec["cluster"] = self._cluster
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **self._env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        argv = self._argv if self._policy is None else [self._policy.check(self.path), *self._argv[1:]]
        import subprocess  # here: a kubeconfig without an exec plugin does not pay its import at start-up

        try:
            done = subprocess.run(
                argv,
                env=env,
                stdin=None if interactive else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None if interactive else subprocess.PIPE,
                check=False,
            )
        except FileNotFoundError:
            raise ConfigError(f"exec plugin {self.command}: executable not found{self._hint}") from None
        except OSError as exc:
            raise ConfigError(f"exec plugin {self.command}: cannot run it: {exc.strerror or exc}") from None
        if done.returncode != 0:
            said = _last_line(done.stderr)
            raise ConfigError(
                f"exec plugin {self.command} failed with exit code {done.returncode}" + (f": {said}" if said else "")
            )
        return self._answer(done.stdout)

    def _answer(self, stdout: bytes) -> ExecCredential:
        try:
            answer = json.loads(stdout)
        except ValueError:
            raise ConfigError(f"exec plugin {self.command}: its output is not an ExecCredential (not JSON)") from None
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
            raise ConfigError(f"exec plugin {self.command}: its output is not an ExecCredential")
        if answer.get("apiVersion") != self.api_version:
            said = answer.get("apiVersion")
            raise ConfigError(f"exec plugin {self.command}: answered apiVersion {said}, configured {self.api_version}")
        status = answer.get("status")
        if not isinstance(status, dict):
            raise ConfigError(f"exec plugin {self.command}: its answer has no status")
        token = str(status.get("token") or "") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise ConfigError(
                f"exec plugin {self.command}: a client certificate needs its key, and the key its certificate"
            )
        if not token and not cert:
            raise ConfigError(f"exec plugin {self.command}: its answer has neither a token nor a client certificate")
        stamp = status.get("expirationTimestamp")
        return ExecCredential(
            token,
            str(cert).encode() if cert else None,
            str(key).encode() if key else None,
            self._parse_time(stamp) if stamp else None,
        )

    def _parse_time(self, stamp: Any) -> float:
        text = _FRACTION.sub(r"\1", str(stamp).strip())
        try:
            when = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
        except ValueError:
            raise ConfigError(f"exec plugin {self.command}: expirationTimestamp {stamp!r} is not RFC 3339") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when.timestamp()


def _last_line(stderr: bytes | None) -> str:
    lines = [line.strip() for line in (stderr or b"").decode(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _cluster_info(cluster: dict[str, Any], base: str) -> dict[str, Any]:
    """The kubeconfig's cluster as the ExecCredential spec carries it (provideClusterInfo):
    its certificate authority as data even when the kubeconfig names a file."""
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            info[key] = cluster[key]
    data = cluster.get("certificate-authority-data")
    if not data and cluster.get("certificate-authority"):
        path = os.path.join(base, str(cluster["certificate-authority"]))
        try:
            with open(path, "rb") as handle:
                data = base64.b64encode(handle.read()).decode()
        except OSError as exc:
            raise ConfigError(f"file not found: {exc.filename}") from None
    if data:
        info["certificate-authority-data"] = data
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == EXEC_EXTENSION:
            info["config"] = extension.get("extension")
    return info
