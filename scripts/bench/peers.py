"""What is measured: the tool (run as a kubectl plugin), plain kubectl, and the ceiling program."""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from . import ROOT
from .kube import PATCH, CrdSpec, Kube
from .measure import Sample, check, measure

DEFAULT_TOOL = ROOT / "dist" / "kubectl-unfinalize"
BUILD = ROOT / "bench" / "build.sh"
CEILING_CONCURRENCY = 64


def resolve_tool(spec: str | None) -> list[str]:
    """--tool as an argv: split like a shell; "python" is this interpreter; a word naming a file
    of the checkout is made absolute; a bare command name is looked up on PATH."""
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


def build_program(name: str) -> Path:
    """bench/build.sh NAME: builds (or reuses) the client-go program bench/NAME, prints its path."""
    proc = subprocess.run(["bash", str(BUILD), name], stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise SystemExit(f"{BUILD.relative_to(ROOT)} {name} failed with exit code {proc.returncode}")
    return Path(proc.stdout.strip().splitlines()[-1])


class Peers:
    """The commands of every case, and the environment they run in.

    The tool is installed as `kubectl-unfinalize` in a directory of its own put first on
    PATH, so `kubectl unfinalize` finds it exactly as a user's kubectl would: a symlink to a
    single executable, or a small sh wrapper around a longer --tool command.
    """

    def __init__(self, kubectl: Path, tool_argv: list[str], ceiling: Path, workdir: Path) -> None:
        self.kubectl, self.ceiling, self.workdir = str(kubectl), str(ceiling), workdir
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

    def env_for(self, kubeconfig: str) -> dict[str, str]:
        env = dict(os.environ, KUBECONFIG=kubeconfig, NO_COLOR="1", KUBECACHEDIR=str(self.workdir / "kube-cache"))
        env["XDG_STATE_HOME"] = str(self.workdir / "state")  # the tool's records: the bench's, never the user's
        env["PATH"] = os.pathsep.join([str(self.plugin.parent), str(Path(self.kubectl).parent), env.get("PATH", "")])
        return env

    # small teardowns ----------------------------------------------------------
    def tool_version(self) -> list[str]:
        return [self.kubectl, "unfinalize", "--version"]

    def tool_teardown(self, crds_yaml: Path) -> list[str]:
        return [self.kubectl, "unfinalize", "-f", str(crds_yaml), "--delete"]

    def kubectl_teardown(self, objects_yaml: Path, crds_yaml: Path) -> list[str]:
        k, objects, crds = shlex.quote(self.kubectl), shlex.quote(str(objects_yaml)), shlex.quote(str(crds_yaml))
        return [
            "sh",
            "-c",
            f"{k} delete -f {objects} --wait=false"
            f" && {k} patch -f {objects} --type=merge -p {shlex.quote(PATCH)}"
            f" && {k} delete -f {crds}",
        ]

    # throughput ---------------------------------------------------------------
    def tool_run(self, crd: CrdSpec, env: dict[str, str]) -> Sample:
        # The plugin itself, as kubectl execs it: kubectl's own start (44 MiB, 0.1 s CPU) would
        # otherwise set a floor under the RSS and CPU figures compared with the ceiling's.
        # --timeout: 100,000 objects take longer than the default 5 minutes on a small machine.
        argv = [str(self.plugin), "crd", crd.name, "-q", "--timeout", "30m"]
        return check(measure(argv, env), f"tool on {crd.name}")

    def ceiling_run(self, crd: CrdSpec, kubeconfig: str, env: dict[str, str]) -> Sample:
        argv = [self.ceiling, "--kubeconfig", kubeconfig, "--group", crd.group, "--version", "v1"]
        argv += ["--resource", crd.plural, "--concurrency", str(CEILING_CONCURRENCY), "--chunk-size", "500"]
        return check(measure(argv, env), f"ceiling on {crd.name}")

    def ceiling_teardown(self, group: str, crds: list[str], kubeconfig: str) -> list[str]:
        """The ceiling freeing every object of these CRDs (plural.group) of `group` and deleting them."""
        plurals = ",".join(name.split(".", 1)[0] for name in crds)
        argv = [self.ceiling, "--kubeconfig", kubeconfig, "--group", group, "--resource", plurals]
        return argv + ["--concurrency", str(CEILING_CONCURRENCY), "--delete-crd", ",".join(crds)]

    # what ran -----------------------------------------------------------------
    def versions(self, kube: Kube, env: dict[str, str]) -> dict[str, str]:
        tool = measure(self.tool_version(), env)
        kubectl = measure([self.kubectl, "version", "--client", "-o", "json"], env)
        server = kube.must("GET", "/version")
        try:
            client_version = json.loads(kubectl.stdout)["clientVersion"]["gitVersion"]
        except (ValueError, KeyError):
            client_version = "?"
        tool_line = (tool.stdout or tool.stderr).strip().splitlines()[:1] or ["?"]
        return {
            "tool": f"kubectl unfinalize -> {self.tool_desc}: {tool_line[0]}",
            "kubectl": f"{client_version} ({self.kubectl})",
            "ceiling": f"client-go v0.36.3, {CEILING_CONCURRENCY} in flight ({self.ceiling})",
            "server": f"{server.get('gitVersion', '?')} at {kube.server}",
            "machine": f"{os.cpu_count()} cores, {platform.machine()}, {platform.system()} {platform.release()},"
            f" Python {platform.python_version()}",
        }
