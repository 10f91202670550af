"""Where records live and what they are called. Records name every object a run touched
(and, with --backup, hold their bodies), so the folder and the files are the user's alone."""

from __future__ import annotations

import os
import time
from pathlib import Path

SUFFIX = ".jsonl"
NONE = "none"  # --record=none: this run writes no record
KEEP = 200  # records kept in the default folder: a test suite's teardowns write one each, every run


def state_dir() -> Path:
    """$XDG_STATE_HOME/kubectl-unfinalize, as the XDG base directory spec places state
    that should survive a restart but is not worth backing up."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "kubectl-unfinalize"


def new_id(now: float | None = None) -> str:
    """Sortable by time (history lists newest first without reading every file), unique
    without a lock (two runs in the same second get different suffixes)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{os.urandom(2).hex()}"  # what secrets.token_hex(2) is, without its import (hmac, random)


def path_for(record: str | None, run_id: str) -> Path | None:
    """The file a run writes: None for --record=none; a folder (one that exists, or a path
    ending in /) holds it under its id; any other path is the file itself."""
    if record == NONE:
        return None
    if record is None:
        return state_dir() / f"{run_id}{SUFFIX}"
    target = Path(record).expanduser()
    folder = target.is_dir() or record.endswith(("/", os.sep))
    return target / f"{run_id}{SUFFIX}" if folder else target


def record_files(folder: Path | None = None) -> list[Path]:
    """The records in `folder` (default: the state folder), newest first by id."""
    folder = folder or state_dir()
    try:
        files = [p for p in folder.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]
    except OSError:
        return []
    return sorted(files, key=lambda p: p.name, reverse=True)


def prune(folder: Path, keep: int = KEEP) -> None:
    """The default folder keeps the newest `keep` records (as kubectl rollout history keeps
    revisionHistoryLimit): one more run never fills a disk. A folder the user names is theirs."""
    for old in record_files(folder)[keep:]:
        try:
            old.unlink()
        except OSError:
            pass  # another run pruned it, or it is not ours to remove: never the run's failure
