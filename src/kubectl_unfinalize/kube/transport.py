"""HTTP to the API server: one deadline, typed errors, request logs (retries.py: when again).

The kubernetes client's generated API classes are bypassed because they cannot ask for
metadata-only lists, pick a patch type per request, or retry on 429/5xx. Every request
goes through `Transport.request`, over net.connections' per-thread connections, except
the bulk sender's remove-every-finalizer patches (net.bulk), which take their headers and
timeouts from here and hand anything but a 2xx back to `request`.

A 401 renews a credential that can be renewed (credentials.py) and the request is sent
again: every verb here is idempotent, and a 401 is an answer (nothing was applied). A
connection refused for an exec plugin's expired client certificate (a proxy or a server
that checks it in the handshake) renews it too (_after_error). A
401 to a credential obtained after the request's first 401, or to one that cannot be
renewed, is lasting: the transport sends nothing more, and the deadline of the request
that found it ends with it (Deadline.end), so the run stops as at its deadline.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any
from urllib.parse import urlencode, urlsplit

from .._version import __version__
from ..deadline import NO_DEADLINE, Deadline
from ..errors import ConfigError, Unauthorized
from ..net.connections import Connections, NotSent, header_lines
from ..net.connections import reason as failure
from .answers import api_error
from .credentials import Credential, Token
from .retries import MIN_TIME, Attempts, throttled_wait

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"

READ_TIMEOUT = 60.0
LOG_BODY = 1000

Log = Callable[[str], None]


class Transport:
    """The connections (one per worker thread), credentials and headers of one run.

    `verbosity` follows kubectl's -v: 6 logs one line per request, 8 adds bodies
    (truncated). Credentials never reach the log. `credential`: a fixed Authorization
    header value (or None) is a Credential that is never renewed.
    """

    def __init__(
        self,
        host: str,
        connections: Connections,
        credential: Credential | str | None,
        impersonate: Iterable[tuple[str, str]] = (),
        request_timeout: float | None = None,
        namespace: str = "default",
        context: str = "",
        log: Log | None = None,
        verbosity: int = 0,
    ) -> None:
        self.host = host.rstrip("/")
        self.connections = connections
        self._prefix = urlsplit(self.host).path.rstrip("/")  # a server URL may carry a path
        if not isinstance(credential, Credential):
            credential = Credential(credential, "", "token" if credential else "no credentials")
        self.credential = credential
        self.rejected: Unauthorized | None = None  # the lasting 401: nothing is sent after it
        self._verdict = threading.Lock()
        self._impersonate = list(impersonate)
        self.request_timeout = request_timeout
        self.namespace = namespace
        self.context = context
        self._log = log if verbosity >= 6 else None
        self._bodies = verbosity >= 8
        self.sleep = time.sleep
        self.reached = False  # once the server has answered, an outage is waited out until the deadline
        self.pushbacks = 0  # 429 answers so far
        self.on_refused: Callable[[float], None] | None = None  # told each 429's send time: the engine's pacing
        # How a 429's Retry-After is waited: the engine's workers give the request's place up meanwhile.
        self.parked: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
        self._static = [("User-Agent", f"kubectl-unfinalize/{__version__}")]
        self._static += self._impersonate  # Impersonate-Group may repeat: one header line each
        self._blocks: dict[tuple[str, str | None], bytes] = {}  # the header lines of each kind of request

    def close(self) -> None:
        self.connections.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType] | None) -> None:
        self.close()

    def headers(self, accept: str, content_type: str | None, token: Token | None = None) -> bytes:
        """The header lines of a request, with the credential's current token (or `token`):
        the bulk sender asks for them once per batch, so a renewed token reaches it too."""
        block = self._blocks.get((accept, content_type))
        if block is None:
            fields = [("Accept", accept), *self._static]
            if content_type:
                fields.append(("Content-Type", content_type))
            block = self._blocks[(accept, content_type)] = header_lines(fields)
        header = (token or self.credential.current()).header
        if header:
            block += header_lines([("Authorization", header)])
        return block

    @property
    def logging(self) -> bool:
        return self._log is not None

    def pushed_back(self, sent: float) -> None:
        """A request sent at `sent` (time.monotonic()) was answered 429."""
        self.pushbacks += 1
        if self.on_refused is not None:
            self.on_refused(sent)

    def throttled(self, sent: float, retry_after: str | None) -> float:
        """A bulk patch sent at `sent` was answered 429: counted as any request's, and
        the seconds it waits before it goes again (its Retry-After, capped as here)."""
        self.pushed_back(sent)
        return throttled_wait(retry_after)

    def authorization(self) -> str | None:
        """The Authorization header's value now (an exec plugin's token is renewed when it expires)."""
        return self.credential.current().header

    def timeout(self, deadline: Deadline, bound: float | None = None) -> float:
        seconds = self.request_timeout or READ_TIMEOUT
        return max(deadline.cap(min(seconds, bound) if bound else seconds), MIN_TIME)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        deadline: Deadline = NO_DEADLINE,
        decode: bool = True,
        idempotent: bool = False,
        on_bytes: Callable[[int], None] | None = None,
        parse: Callable[[bytes], Any] = json.loads,
        on_chunk: Callable[[bytes], bool] | None = None,
        probe: float | None = None,
    ) -> Any:
        """Send one request, sent again as retries.Attempts says (it raises ApiError,
        Unreachable, NoAnswer, DeadlineExceeded). Return the decoded JSON body (None with
        decode=False: a bulk write's answer is not read), or what `parse` makes of it (a
        watch's lines); `on_bytes` is told the body's size (list pages are sized by it);
        `on_chunk` reads a watch as its events come (it may end it: nothing is returned)."""
        target = self._target(path, query)
        payload = body if body is None or isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        content_type = content_type or (JSON if body is not None else None)
        attempts = Attempts(self, f"{method} {path}", deadline, idempotent, probe)
        renewed: float | None = None  # when this request's first 401 asked for a new credential
        token: Token | None = None  # the credential to send with; None: the current one
        while True:
            if self.rejected is not None:  # before the deadline, which it may have ended
                raise _again(self.rejected)
            started = attempts.begin()
            token = token or self.credential.current()
            try:
                headers, timeout = self.headers(accept, content_type, token), self.timeout(deadline, probe)
                response = self.connections.send(method, target, payload, headers, timeout, on_chunk)
            except ValueError as exc:  # a header value or name that cannot be sent
                raise ConfigError(str(exc)) from None
            except OSError as exc:
                self._trace(method, target, f"error {failure(exc)}", started, attempts.count, None)
                token, renewed = self._after_error(exc, token, renewed, attempts)
                continue
            self.reached = True
            if self._log is not None:
                result = f"{response.status} {response.reason or ''}".strip()
                self._trace(method, target, result, started, attempts.count, response.data)
            if 200 <= response.status < 300:
                if on_bytes is not None:
                    on_bytes(len(response.data))
                return parse(response.data) if response.data and decode else None
            error = api_error(method, path, response, attempts.ambiguous)
            if isinstance(error, Unauthorized):
                renewed = renewed or time.monotonic()
                token = self._renewed(token, renewed, error, deadline)
                continue
            token = None
            delay = attempts.after_status(error)
            with self.parked() if error.status == 429 else contextlib.nullcontext():
                self.sleep(delay)

    def _after_error(
        self, exc: OSError, token: Token, renewed: float | None, attempts: Attempts
    ) -> tuple[Token, float | None]:
        """After a connection error: the token to send again with, and when this request
        renewed its credential. A client certificate (an exec plugin's) that a TLS alert
        says expired, or whose expirationTimestamp has passed, is renewed, once per request
        (a server that checks it in the handshake refuses it there, often with the alert
        lost to the request written meanwhile: a reset or an end of stream instead). After
        the alert the request goes again at once (the handshake was refused, nothing was
        applied); otherwise as `attempts` says, or it raises."""
        if renewed is None and token.cert is not None:
            alert = _certificate_expired(exc)
            if alert or (token.expires is not None and time.time() >= token.expires):
                with contextlib.suppress(ConfigError):  # else it fails again, and is retried as usual
                    token = self.credential.renew(token)
                renewed = time.monotonic()
                if alert:
                    return token, renewed
        self.sleep(attempts.after_error(exc))
        return token, renewed

    def _target(self, path: str, query: dict[str, Any] | None) -> str:
        params = {k: v for k, v in (query or {}).items() if v not in (None, "", False)}
        return self._prefix + path + ("?" + urlencode(params, doseq=True) if params else "")

    def _renewed(self, refused: Token, since: float, error: Unauthorized, deadline: Deadline) -> Token:
        """After a 401 to `refused`: the credential to send the request again with. Raises
        `error` when the refusal is lasting: the credential cannot be renewed, the refused
        one was obtained `since` this request's first 401, a new one cannot be obtained, or
        it is the refused one again. The first lasting 401 ends `deadline` and stops the
        transport; one that comes after it raises its copy."""
        credential, renewed, fresh, why = self.credential, False, None, ""
        if self.rejected is None and credential.renewable and refused.obtained < since:
            try:
                fresh = credential.renew(refused)
            except ConfigError as exc:
                why = str(exc)
            else:
                renewed = fresh.obtained >= since
                if not (renewed and fresh.header == refused.header and fresh.cert == refused.cert):
                    return fresh
        error.credential = credential.describe(renewed or refused.obtained >= since, why)
        with self._verdict:
            if self.rejected is None:
                self.rejected = error
                if deadline is not NO_DEADLINE:
                    deadline.end(error)
                raise error
        raise _again(self.rejected)

    def _trace(self, method: str, target: str, result: str, started: float, attempt: int, data: bytes | None) -> None:
        if self._log is None:
            return
        url = self.host + target[len(self._prefix) :]
        ms = (time.monotonic() - started) * 1000
        retry = f" (retry {attempt - 1})" if attempt > 1 else ""
        line = f"{method} {url} {result} in {ms:.0f} milliseconds{retry}"
        if self._bodies and data:
            text = data[:LOG_BODY].decode(errors="replace")
            line += f"\nResponse Body: {text}" + ("..." if len(data) > LOG_BODY else "")
        self._log(line)


def _certificate_expired(exc: OSError) -> bool:
    """The server refused the TLS handshake with the alert for an expired client
    certificate (after the request was written, under TLS 1.3)."""
    inner = exc.__cause__ if isinstance(exc, NotSent) else exc
    return isinstance(inner, ssl.SSLError) and inner.reason == "SSLV3_ALERT_CERTIFICATE_EXPIRED"


def _again(error: Unauthorized) -> Unauthorized:
    """The lasting 401 once more, for a request not sent because of it (an exception
    raised on several threads at once would share its traceback)."""
    again = Unauthorized(error.status, error.reason, Exception.__str__(error), error.method, error.path)
    again.credential = error.credential
    return again
