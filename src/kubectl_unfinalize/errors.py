"""Errors a user can act on. cli.main maps each class to an exit code, nowhere else."""

from __future__ import annotations


class UnfinalizeError(Exception):
    """Base class: the message is one line a user can read without a traceback."""


class InputError(UnfinalizeError):
    """Bad flag value, bad manifest, unknown CRD: the user must change the command."""


class ConfigError(UnfinalizeError):
    """No usable cluster configuration (missing kubeconfig, unknown context, bad flag)."""


class ClusterError(UnfinalizeError):
    """The cluster refused or could not be reached; nothing more could be done."""


class ApiError(ClusterError):
    """An API request failed with an HTTP status the engine could not handle."""

    def __init__(self, status: int, reason: str, message: str, method: str = "", path: str = "") -> None:
        self.status = status
        self.reason = reason
        self.method = method
        self.path = path
        super().__init__(message or f"{status} {reason}")

    @property
    def message(self) -> str:
        return str(self)


class Unreachable(ClusterError):
    """Connection refused, DNS failure, TLS failure or request timeout."""


class PermissionDenied(ClusterError):
    """RBAC forbids a verb the plan needs; raised before anything is changed."""
