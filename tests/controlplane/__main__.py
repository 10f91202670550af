"""Command line: a control plane that outlives the shell that started it (``make cluster``).

    PYTHONPATH=tests python -m controlplane up --dir .cluster     # background; .cluster/kubeconfig
    PYTHONPATH=tests python -m controlplane status --dir .cluster
    PYTHONPATH=tests python -m controlplane restart-apiserver --dir .cluster --down 2
    PYTHONPATH=tests python -m controlplane down --dir .cluster
    PYTHONPATH=tests python -m controlplane run -- kubectl get ns  # one command, then stop

``up`` starts a detached supervisor (``_serve``) that owns the processes, records them in
``state.json`` and stops everything when one of them dies by itself, so a half-dead
cluster never passes for a working one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .binaries import K8S_VERSION, ControlPlaneError, find_binaries
from .controlplane import CONTROLLERS, MARKER, STOP_TIMEOUT, ControlPlane
from .process import cmdline, pid_alive, tail

STATE_FILE = "state.json"
RESTART_REQUEST = "restart-apiserver.json"
TESTS_DIR = Path(__file__).resolve().parent.parent  # on PYTHONPATH for the detached supervisor


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
    line = cmdline(pid)
    return pid_alive(pid) and "controlplane" in line and "_serve" in line


def _self_command() -> str:
    env = f"PYTHONPATH={_shortpath(str(TESTS_DIR))}"
    return f"{env} {_shortpath(sys.executable)} -m controlplane"


def _usage(d: Path, state: dict) -> str:
    kc = state["kubeconfig"]
    secs = state.get("startup_seconds")
    timing = f" in {secs:.1f}s" if secs is not None else ""
    return (
        f"control plane ready{timing}: {state['server']} (Kubernetes {state.get('release') or K8S_VERSION})\n"
        f"kubeconfig: {kc}\n"
        f"  export KUBECONFIG={shlex.quote(kc)}\n"
        f"  export PATH={shlex.quote(state['bin_dir'])}:$PATH\n"
        f"  kubectl get namespaces\n"
        f"stop it with: {_self_command()} down --dir {_shortpath(str(d))}"
    )


def _shortpath(path: str) -> str:
    rel = os.path.relpath(path)
    return shlex.quote(path if rel.startswith("..") else rel)


def _cleanup_dir(d: Path) -> None:
    if d.exists() and (d / MARKER).exists():
        shutil.rmtree(d, ignore_errors=True)


def _kill_leftovers(state: dict | None) -> None:
    for name, pid in ((state or {}).get("processes") or {}).items():
        if pid and pid_alive(pid) and name in cmdline(pid):
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
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS_DIR), env.get("PYTHONPATH")) if p)
    with open(d / "supervisor.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "controlplane", "_serve", "--dir", str(d), "--timeout", str(args.timeout)],
            env=env,
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
            print((state or {}).get("error") or tail(d / "supervisor.log", 40), file=sys.stderr)
            return 1
        time.sleep(0.1)
    print(f"timed out waiting for the control plane; see {d}/supervisor.log", file=sys.stderr)
    proc.terminate()
    return 1


def cmd_serve(args) -> int:
    d = Path(args.dir).resolve()
    restart_requested = False

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    def on_restart(_signum, _frame):
        nonlocal restart_requested
        restart_requested = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    signal.signal(signal.SIGUSR1, on_restart)
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
            release=cp.release,
            etcd_url=cp.etcd_url,
            startup_seconds=round(cp.startup_seconds, 2),
            processes=cp.processes,
            apiserver_restarts=0,
        )
        _write_state(d, state)
        print(f"control plane ready in {cp.startup_seconds:.1f}s: {cp.server}", flush=True)
        while True:
            if restart_requested:
                restart_requested = False
                _serve_restart(d, cp, state)
            for name, rc in cp.exited().items():  # a planned restart is not listed: not a crash
                msg = f"{name} exited with code {rc}\n{cp.log_tails()}"
                print(msg, flush=True)
                _write_state(d, {**state, "status": "failed", "error": msg})
                return 1
            time.sleep(0.2)
    finally:
        cp.stop()
        print("control plane stopped", flush=True)


def _serve_restart(d: Path, cp: ControlPlane, state: dict) -> None:
    try:
        request = json.loads((d / RESTART_REQUEST).read_text())
    except (OSError, ValueError):
        request = {}
    down = float(request.get("down_seconds", 0.0))
    print(f"restarting kube-apiserver ({down:g}s down)", flush=True)
    _write_state(d, {**state, "status": "restarting"})
    try:
        cp.restart_apiserver(down_seconds=down)
    except ControlPlaneError as e:  # a server that does not come back is a dead cluster
        msg = f"kube-apiserver restart failed: {e}\n{cp.log_tails()}"
        print(msg, flush=True)
        _write_state(d, {**state, "status": "failed", "error": msg})
        raise SystemExit(1) from e
    state.update(processes=cp.processes, apiserver_restarts=state["apiserver_restarts"] + 1)
    _write_state(d, state)
    print("kube-apiserver ready again", flush=True)


def cmd_restart_apiserver(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    if not (_supervisor_alive(state) and state.get("status") == "ready"):
        print(f"not running ({d})", file=sys.stderr)
        return 1
    before = state.get("apiserver_restarts", 0)
    (d / RESTART_REQUEST).write_text(json.dumps({"down_seconds": args.down}))
    os.kill(state["pid"], signal.SIGUSR1)
    deadline = time.monotonic() + args.down + args.timeout
    while time.monotonic() < deadline:
        state = _read_state(d) or {}
        if state.get("apiserver_restarts", 0) > before and state.get("status") == "ready":
            print(f"kube-apiserver restarted: {state['server']}")
            return 0
        if state.get("status") == "failed" or not _supervisor_alive(state):
            print(state.get("error") or f"the control plane stopped; see {d}/supervisor.log", file=sys.stderr)
            return 1
        time.sleep(0.1)
    print(f"timed out waiting for kube-apiserver; see {d}/supervisor.log", file=sys.stderr)
    return 1


def cmd_down(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    if _supervisor_alive(state):
        pid = state["pid"]
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT + 10
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(pid):
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
        controllers = () if args.no_controller_manager else CONTROLLERS
        with ControlPlane(startup_timeout=args.timeout, controllers=controllers) as cp:
            print(f"control plane ready in {cp.startup_seconds:.1f}s", file=sys.stderr)
            env = dict(os.environ, KUBECONFIG=cp.kubeconfig)
            env["PATH"] = cp.bin_dir + os.pathsep + env.get("PATH", "")
            return subprocess.call(command, env=env)
    except ControlPlaneError as e:
        print(e, file=sys.stderr)
        return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controlplane",
        description="A throwaway Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) on loopback.",
    )
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="{up,down,status,restart-apiserver,run}")
    for name, func, hlp in (
        ("up", cmd_up, "start in the background"),
        ("down", cmd_down, "stop and remove the directory"),
        ("status", cmd_status, "show whether it runs"),
        ("restart-apiserver", cmd_restart_apiserver, "stop kube-apiserver, wait --down seconds, start it again"),
        ("_serve", cmd_serve, None),
    ):
        p = sub.add_parser(name, help=hlp) if hlp else sub.add_parser(name)  # _serve: internal, not listed
        p.add_argument("--dir", default=".cluster", help="state directory (default .cluster)")
        p.add_argument("--timeout", type=float, default=120.0, help="start-up timeout (s)")
        if name == "restart-apiserver":
            p.add_argument("--down", type=float, default=0.0, help="seconds to keep it down (default 0)")
        p.set_defaults(func=func)
    p = sub.add_parser("run", help="start, run a command with KUBECONFIG set, stop")
    p.add_argument("--timeout", type=float, default=120.0, help="start-up timeout (s)")
    p.add_argument(
        "--no-controller-manager",
        action="store_true",
        help="etcd and kube-apiserver only (nothing deleted waits on a controller: the demo); kcm is not built",
    )
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
