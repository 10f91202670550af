"""Every process a pytest run starts ends with it, however the run ends.

A test that times out, fails or is interrupted may leave behind what it started: a tool
run, an operator, a proxy, a control plane of its own. The control plane's components get
SIGKILL when the thread that forked them ends (controlplane/process.py), but a tool or
operator started with plain ``subprocess`` does not, and its own children (kubectl's
plugin, an exec credential plugin) even less. So the pytest process becomes a child
subreaper (Linux): whatever a descendant leaves orphaned is re-parented to pytest instead of
init, and stays findable as a descendant; when pytest unconfigures (passed, failed, timed
out, SIGINT, or SIGTERM, which the conftest turns into an interrupt) every descendant still
running gets SIGTERM, then SIGKILL, and is named in the terminal summary so a leak shows.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

from controlplane.process import cmdline

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process inherit its descendants' orphans; False where the OS has no such thing."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def descendants(root: int | None = None) -> list[int]:
    """The pids of every running (not zombie) process below `root` (default: this one)."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat is not None:
            children.setdefault(stat[0], []).append(int(entry))
            states[int(entry)] = stat[1]
    found: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return [pid for pid in found if states.get(pid) != "Z"]


def _reap_zombies() -> None:
    """Collect the exit status of orphans re-parented here, so they leave the process table."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def end_descendants(grace: float = 5.0) -> list[str]:
    """SIGTERM every descendant, SIGKILL those left after `grace` s; returns 'pid command' of each found."""
    pids = descendants()
    if not pids:
        return []
    named = [f"{pid} {cmdline(pid).strip()[:160] or '?'}" for pid in pids]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap_zombies()
        if not (set(descendants()) & set(pids)):
            break
        time.sleep(0.1)
    for pid in descendants():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    _reap_zombies()
    return named
