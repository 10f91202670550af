"""Errors a user can act on, and their exit codes (the command line maps every exit status in cli/exit.py)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any


class ExitStatus(IntEnum):
    """The command line's exit codes: 128 + the signal for a run a signal stopped, as a
    shell reports a process the signal killed. PENDING is scan's alone: a CI gate fails on
    it as on any non-zero code, and a script that wants to tell "wait and look again"
    from "stuck" (1) and "bad input" (2) can."""

    OK = 0
    FAILED = 1
    USAGE = 2
    PENDING = 3  # scan: nothing stuck, but something deleted moments ago is held and not judged yet
    INTERRUPTED = 130  # Ctrl-C (SIGINT)
    TERMINATED = 143  # SIGTERM: what CI sends when it cancels a job


# "1 over 3 over 0": one context stuck or failed fails the whole, one only pending makes it pending
_RANK = {ExitStatus.OK: 0, ExitStatus.PENDING: 1, ExitStatus.FAILED: 2}


def worst_status(statuses: Iterable[ExitStatus]) -> ExitStatus:
    """The exit status of several contexts' outcomes: FAILED over PENDING over OK; any
    other status (a usage error in one context) counts as FAILED."""
    ranked = [status if status in _RANK else ExitStatus.FAILED for status in statuses]
    return max(ranked, key=_RANK.__getitem__, default=ExitStatus.OK)


class UnfinalizeError(Exception):
    """Base class: the message is one line a user can read without a traceback."""

    exit_status = ExitStatus.FAILED


class InputError(UnfinalizeError):
    """Bad flag value, bad manifest, unknown CRD: the user must change the command."""

    exit_status = ExitStatus.USAGE


class ConfigError(UnfinalizeError):
    """No usable cluster configuration (missing kubeconfig, unknown context, bad flag)."""

    exit_status = ExitStatus.USAGE


class IncompleteError(UnfinalizeError):
    """Raised by raise_for_failure() of a Report or a ScanReport: something is still blocked."""


class ClusterError(UnfinalizeError):
    """The cluster refused or could not be reached; nothing more could be done."""


class Unreachable(ClusterError):
    """Connection refused, DNS failure, TLS failure, or out of time while retrying those."""


class NoAnswer(Unreachable):
    """A probe (Transport.request's `probe`) was sent and not answered within its bound:
    the API behind it is down or stuck, not necessarily the API server."""


class DeadlineExceeded(ClusterError):
    """The run's time was up before a request could be sent: nothing was sent."""


class PermissionDenied(ClusterError):
    """RBAC forbids a verb the plan needs; raised before anything is changed."""


class ApiError(ClusterError):
    """The API server answered with a status the caller must decide about.

    Keeps the server's Status (reason, details.causes, metadata.continue) because what to
    do next depends on it: a 410 on a list carries a token to go on with, a denied write
    names the admission plugin or webhook in its causes.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        method: str = "",
        path: str = "",
        *,
        details: dict[str, Any] | None = None,
        continue_token: str = "",
        retry_after: float | None = None,
        ambiguous: bool = False,
    ) -> None:
        self.status = status
        self.reason = reason  # the Status reason (NotFound, Conflict, ...) or the HTTP reason phrase
        self.method = method
        self.path = path
        self.details = details or {}
        self.continue_token = continue_token
        self.retry_after = retry_after
        # An earlier attempt of this request failed in flight: the server may have applied it.
        self.ambiguous = ambiguous
        super().__init__(message or f"{status} {reason}")

    @property
    def message(self) -> str:
        return str(self)

    @property
    def causes(self) -> list[str]:
        return [str(c.get("message") or c.get("reason") or "") for c in self.details.get("causes") or []]


class Unauthorized(ApiError):
    """401, and lasting: the credentials are wrong, revoked, or refused even when fresh (the
    transport renews one that can be renewed once before it says so). A run stops with it
    (exit 2): no other request can succeed. `credential` says whose credentials and how they
    were obtained (kube.credentials), when the transport knows."""

    exit_status = ExitStatus.USAGE
    credential = ""

    def __str__(self) -> str:
        detail = super().__str__()
        if self.credential:
            return f"the API server rejected the credentials {self.credential}: {detail}"
        return f"the API server rejected the credentials ({detail}): check the token or kubeconfig user"


class NotFound(ApiError):
    """404: for a write, the object is already gone; unless the answer names its namespace."""

    def names_namespace(self, namespace: str | None) -> bool:
        """NamespaceLifecycle's answer to an update of an object whose namespace is gone
        (removed through /finalize while the object was held): the object stands, and
        nothing can change it until the namespace exists again."""
        details = self.details
        return bool(namespace) and details.get("kind") == "namespaces" and details.get("name") == namespace


class Conflict(ApiError):
    """409: a resourceVersion precondition failed; re-read and try again."""


class Gone(ApiError):
    """410: a continue token expired (etcd compacted); the Status may carry a new one."""


class Forbidden(ApiError):
    """403: RBAC, or a terminating namespace or CRD refusing a create."""


class Invalid(ApiError):
    """400/422: the server or an admission check (webhook, policy) rejected the request."""


class TooManyRequests(ApiError):
    """429: API Priority and Fairness (or a webhook) asks to slow down."""


class CorruptObjects(ApiError):
    """500: objects the API server cannot read from storage (a lost encryption key, bytes that
    do not decode: KEP-3926). An answer that will not change however often it is asked, so
    never sent again; kube.corrupt reads which objects it names."""


# What ends a run, not one object's job: its deadline (or Ctrl-C), or credentials the API
# server rejects for good (the run's deadline then ends with it). The engine records no
# outcome for a request they stopped; the report says why the run ended.
RUN_ENDED = (DeadlineExceeded, Unauthorized)

_BY_STATUS: dict[int, type[ApiError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def api_error_class(status: int) -> type[ApiError]:
    return _BY_STATUS.get(status, ApiError)


def yaml_problem(exc: Exception, source: str | None = None) -> tuple[str, str]:
    """("SOURCE:LINE", the problem) from a YAML error, whose own text spans several lines.
    SOURCE defaults to the file name the parser recorded."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = source if source is not None else getattr(mark, "name", "")
    if mark:
        where += f":{mark.line + 1}"
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    return where, " ".join(str(problem).split())
