"""kubectl-unfinalize: free stuck Kubernetes custom resources, from the shell or Python.

The API is loaded lazily so that `kubectl unfinalize --help` never imports the
kubernetes client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from .api import run, unfinalize
    from .errors import (
        ApiError,
        ClusterError,
        ConfigError,
        IncompleteError,
        InputError,
        PermissionDenied,
        UnfinalizeError,
    )
    from .model import Action, Outcome, Progress, Report, Targets
    from .options import ConnectionOptions, DryRun, Options, Selection
    from .record_api import history, read_record, undo
    from .records.model import RecordSummary, UndoItem, UndoReport
    from .records.reading import Record
    from .scan_api import run_scan, scan, scan_each
    from .scanning.model import Fix, Group, Manager, State, TerminatingCrd, TerminatingNamespace
    from .scanning.options import ScanOptions
    from .scanning.remedy import Scope
    from .scanning.report import ContextScans, FreedCall, ScanReport

__all__ = [
    "Action",
    "ApiError",
    "ClusterError",
    "ConfigError",
    "ConnectionOptions",
    "ContextScans",
    "DryRun",
    "Fix",
    "FreedCall",
    "Group",
    "IncompleteError",
    "InputError",
    "Manager",
    "Options",
    "Outcome",
    "PermissionDenied",
    "Progress",
    "Record",
    "RecordSummary",
    "Report",
    "ScanOptions",
    "ScanReport",
    "Scope",
    "Selection",
    "State",
    "Targets",
    "TerminatingCrd",
    "TerminatingNamespace",
    "UndoItem",
    "UndoReport",
    "UnfinalizeError",
    "__version__",
    "history",
    "read_record",
    "run",
    "run_scan",
    "scan",
    "scan_each",
    "undo",
    "unfinalize",
]

_HOMES = {
    "unfinalize": "api",
    "run": "api",
    "scan": "scan_api",
    "run_scan": "scan_api",
    "scan_each": "scan_api",
    "ScanOptions": "scanning.options",
    "ScanReport": "scanning.report",
    "ContextScans": "scanning.report",
    "Group": "scanning.model",
    "State": "scanning.model",
    "Manager": "scanning.model",
    "Fix": "scanning.model",
    "FreedCall": "scanning.report",
    "Scope": "scanning.remedy",
    "TerminatingCrd": "scanning.model",
    "TerminatingNamespace": "scanning.model",
    "ConnectionOptions": "options",
    "DryRun": "options",
    "Options": "options",
    "Selection": "options",
    "Action": "model",
    "ApiError": "errors",
    "ClusterError": "errors",
    "ConfigError": "errors",
    "InputError": "errors",
    "PermissionDenied": "errors",
    "UnfinalizeError": "errors",
    "IncompleteError": "errors",
    "Outcome": "model",
    "Progress": "model",
    "Report": "model",
    "Targets": "model",
    "history": "record_api",
    "read_record": "record_api",
    "undo": "record_api",
    "Record": "records.reading",
    "RecordSummary": "records.model",
    "UndoItem": "records.model",
    "UndoReport": "records.model",
}


def __getattr__(name: str) -> object:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(name)
