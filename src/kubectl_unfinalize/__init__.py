"""kubectl-unfinalize: free stuck Kubernetes custom resources, from the shell or Python.

The API is loaded lazily so that `kubectl unfinalize --help` never imports the
kubernetes client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from .api import resolve, unfinalize
    from .connection import ConnectionOptions
    from .errors import ApiError, ClusterError, ConfigError, InputError, PermissionDenied, UnfinalizeError
    from .model import IncompleteError, Outcome, Report, Targets

__all__ = [
    "ApiError",
    "ClusterError",
    "ConfigError",
    "ConnectionOptions",
    "IncompleteError",
    "InputError",
    "Outcome",
    "PermissionDenied",
    "Report",
    "Targets",
    "UnfinalizeError",
    "__version__",
    "resolve",
    "unfinalize",
]

_HOMES = {
    "unfinalize": "api",
    "resolve": "api",
    "ConnectionOptions": "connection",
    "ApiError": "errors",
    "ClusterError": "errors",
    "ConfigError": "errors",
    "InputError": "errors",
    "PermissionDenied": "errors",
    "UnfinalizeError": "errors",
    "IncompleteError": "model",
    "Outcome": "model",
    "Report": "model",
    "Targets": "model",
}


def __getattr__(name: str):
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(name)
