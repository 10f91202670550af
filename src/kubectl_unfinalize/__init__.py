"""kubectl-unfinalize: free stuck Kubernetes custom resources, from the shell or Python.

The API is loaded lazily so that `kubectl unfinalize --help` never imports the
kubernetes client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from .api import run, scan, unfinalize
    from .errors import (
        ApiError,
        ClusterError,
        ConfigError,
        IncompleteError,
        InputError,
        PermissionDenied,
        UnfinalizeError,
    )
    from .model import Action, Outcome, Report, Targets
    from .options import ConnectionOptions, DryRun, Options, Selection
    from .scanning.model import ScanReport

__all__ = [
    "Action",
    "ApiError",
    "ClusterError",
    "ConfigError",
    "ConnectionOptions",
    "DryRun",
    "IncompleteError",
    "InputError",
    "Options",
    "Outcome",
    "PermissionDenied",
    "Report",
    "ScanReport",
    "Selection",
    "Targets",
    "UnfinalizeError",
    "__version__",
    "run",
    "scan",
    "unfinalize",
]

_HOMES = {
    "unfinalize": "api",
    "run": "api",
    "scan": "api",
    "ScanReport": "scanning.model",
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
    "Report": "model",
    "Targets": "model",
}


def __getattr__(name: str) -> object:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(name)
