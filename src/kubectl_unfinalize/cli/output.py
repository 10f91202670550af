"""Outcomes -> what a person or a script reads. The only module that formats output."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import IO

from ..durations import format_seconds
from ..model import CRD_RESOURCE, Action, Outcome, Progress, Report, Targets
from ..options import DryRun

_VERBS = {
    Action.UNFINALIZED: "unfinalized",
    Action.DELETED: "deleted",
    Action.GONE: "already gone",
    Action.RECREATED: "re-created",
    Action.FAILED: "failed",
    Action.REFINALIZED: "finalizers came back",
    Action.BLOCKING: "still blocking",
    Action.RECONFIGURED: "reconfigured",
    Action.DELETING: "deleting",
}
_DRY = {DryRun.CLIENT: " (dry run)", DryRun.SERVER: " (server dry run)", DryRun.NONE: ""}
_COLORS = {Action.FAILED: "31", Action.REFINALIZED: "33", Action.BLOCKING: "31"}
_EXPLAINED = (Action.FAILED, Action.REFINALIZED, Action.BLOCKING, Action.RECREATED, Action.RECONFIGURED)


def outcome_line(outcome: Outcome, output: str = "text", color: bool = False) -> str | None:
    """One kubectl-style line, or None when this output format does not show it."""
    if output == "name":
        return outcome.ref if outcome.action in (Action.UNFINALIZED, Action.DELETED) else None
    if outcome.action is Action.DELETING:
        return None  # hundreds of a provider's CRDs: one grouped line in the summary (deleting_line)
    verb = _VERBS[outcome.action]
    said = outcome.message and (outcome.action in _EXPLAINED or outcome.action == Action.DELETED)  # a removed webhook
    if outcome.action == Action.GONE and outcome.message == "not found":
        verb = "not found (skipped)"
    elif outcome.action == Action.GONE and outcome.message not in ("", "already gone"):
        verb, said = "gone", True  # by whom, or how: the owner the collector deleted once its dependents went
    details = []
    if outcome.namespace:
        details.append(f"namespace {outcome.namespace}")
    if outcome.finalizers and outcome.action in (Action.UNFINALIZED, *_EXPLAINED):
        label = "removed" if outcome.action == Action.UNFINALIZED else "finalizers"
        details.append(f"{label} {', '.join(outcome.finalizers)}")
    if outcome.leaks:
        details.append(f"may leak: {outcome.leaks}")
    text = f"{outcome.ref} {verb}"
    if details:
        text += f" ({'; '.join(details)})"
    if said:
        text += f": {outcome.message}"
    text += _DRY[outcome.dry_run]
    if color and outcome.action in _COLORS:
        text = f"\033[{_COLORS[outcome.action]}m{text}\033[0m"
    return text


def summary_line(report: Report) -> str:
    parts = [
        f"{report.scanned} scanned",
        f"{report.count(Action.UNFINALIZED)} unfinalized",
        f"{report.count(Action.GONE)} already gone",
        f"{report.failures} failed",
        f"{report.count(Action.DELETED)} deleted",
    ]
    if report.count(Action.DELETING):
        parts.append(f"{report.count(Action.DELETING)} deleting")
    text = ", ".join(parts) + f" in {format_seconds(report.seconds)}"
    if report.timed_out:
        text = "timed out: " + text
    elif report.interrupted:
        text = "interrupted: " + text
    return text + _DRY[report.dry_run]


def deleting_line(report: Report) -> str:
    """The CRDs a deadline left to the API server's cleanup, every instance freed: one line
    for all of them (a provider's 2,000 were 2,000 lines that read as failures)."""
    count = report.count(Action.DELETING)
    if not count:
        return ""
    minutes = max(1, round(report.cleanup_seconds / 60))
    return (
        f"{count} deleted CRDs are left to the API server's cleanup, which removes them a few at a time"
        f" (about {minutes}m for {'them' if count > 1 else 'it'}): they go on their own; every instance was freed"
    )


class DocumentStream:
    """-o json|yaml written as the run goes: each item when it happens, then the summary,
    so a run over any number of objects holds none of them. One item per reported
    outcome, in the order they happened; the document is whole once finish() ran."""

    def __init__(self, output: str, write: Callable[[str], None]) -> None:
        self.output = output
        self._write = write
        self._items = 0

    def item(self, outcome: Outcome) -> None:
        data = outcome.to_dict()
        if self.output == "json":
            lead = '{\n  "items": [\n    ' if not self._items else ",\n    "
            self._write(lead + json.dumps(data))
        else:
            import yaml

            self._write(("items:\n" if not self._items else "") + yaml.safe_dump([data], sort_keys=False))
        self._items += 1

    def finish(self, report: Report) -> None:
        data = report.to_dict()
        del data["items"]
        if self.output == "json":
            head = "\n  ]," if self._items else '{\n  "items": [],'
            self._write(head + json.dumps(data, indent=2)[1:] + "\n")
        else:
            import yaml

            self._write(("" if self._items else "items: []\n") + yaml.safe_dump(data, sort_keys=False))


class ProgressDisplay:
    """A live line on a terminal; plain periodic lines in CI logs (never control codes)."""

    def __init__(self, stream: IO[str] | None = None, live: bool | None = None, interval: float | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.interval = interval if interval is not None else (0.1 if self.live else 5.0)
        self.started = time.monotonic()
        self._last = self.started
        self._shown = False

    def update(self, progress: Progress) -> None:
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        rate = progress.done / max(now - self.started, 1e-6)
        text = f"{progress.phase}: {progress.done}/{progress.total} objects ({rate:.0f}/s)"
        if progress.crds:
            text += f"; CRDs {progress.deleted}/{progress.crds} deleted, {progress.gone} gone"
        if self.live:
            self.stream.write("\r\033[K" + text)
            self._shown = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        if self.live and self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False


def plan_lines(targets: Targets, delete: bool) -> list[str]:
    """What -i shows before asking."""
    verb = "delete and free" if delete else "free the custom resources of"
    lines = [f"will {verb}:"]
    lines += [f"  {CRD_RESOURCE.display}/{c.name}" for c in targets.crds]
    lines += [
        f"  {ref.display}" + (f" (namespace {ref.namespace})" if ref.namespace else "") for ref in targets.objects
    ]
    lines += [f"  namespace/{name} (everything inside with finalizers)" for name in targets.namespaces]
    return lines
