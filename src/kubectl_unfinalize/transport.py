"""HTTP to the API server with the retry rules the design asks for.

The kubernetes client loads kubeconfig, credentials and TLS settings; its generated API
classes are bypassed because they cannot ask for metadata-only lists, pick a patch type
per request, or retry on 429/5xx. Everything goes through `Transport.request`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlencode

import urllib3

from ._version import __version__
from .errors import ApiError, Unreachable

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

RETRY_STATUSES = {429, 500, 502, 503, 504}
MAX_ATTEMPTS = 8
MAX_ATTEMPTS_500 = 3
MAX_CONNECT_ATTEMPTS = 4


class Transport:
    """One connection pool shared by every worker thread."""

    def __init__(
        self,
        host: str,
        pool: urllib3.PoolManager,
        auth: Callable[[], str | None],
        impersonate: Iterable[tuple[str, str]] = (),
        request_timeout: float | None = None,
        namespace: str = "default",
        context: str = "",
    ) -> None:
        self.host = host.rstrip("/")
        self.pool = pool
        self._auth = auth
        self._impersonate = list(impersonate)
        self.request_timeout = request_timeout
        self.namespace = namespace
        self.context = context
        self._local = threading.local()
        self.sleep = time.sleep

    def _headers(self, accept: str, content_type: str | None) -> urllib3.HTTPHeaderDict:
        headers = urllib3.HTTPHeaderDict()
        headers["Accept"] = accept
        headers["User-Agent"] = f"kubectl-unfinalize/{__version__}"
        if content_type:
            headers["Content-Type"] = content_type
        token = self._auth()
        if token:
            headers["Authorization"] = token
        for key, value in self._impersonate:
            headers.add(key, value)  # Impersonate-Group may repeat: one header line each
        return headers

    def _timeout(self) -> urllib3.Timeout:
        if self.request_timeout:
            return urllib3.Timeout(total=self.request_timeout)
        return urllib3.Timeout(connect=10.0, read=120.0)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
    ) -> Any:
        """Send one request, retrying what is safe to retry; return the decoded JSON body."""
        url = self.host + path
        params = {k: v for k, v in (query or {}).items() if v not in (None, "", False)}
        if params:
            url += "?" + urlencode(params, doseq=True)
        payload = None
        if body is not None:
            payload = json.dumps(body, separators=(",", ":")).encode()
            content_type = content_type or JSON
        started = time.monotonic()
        attempt = internal_errors = 0
        while True:
            attempt += 1
            try:
                response = self.pool.request(
                    method,
                    url,
                    body=payload,
                    headers=self._headers(accept, content_type),
                    timeout=self._timeout(),
                    retries=False,
                    preload_content=True,
                )
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if attempt >= MAX_CONNECT_ATTEMPTS or self._out_of_time(started):
                    raise Unreachable(f"cannot reach the API server at {self.host}: {_reason(exc)}") from exc
                self.sleep(_backoff(attempt))
                continue
            status = response.status
            if 200 <= status < 300:
                data = response.data
                return json.loads(data) if data else None
            error = _api_error(method, path, response)
            # 500 is often lasting (a dead conversion webhook): retry it only briefly.
            internal_errors += status == 500
            retry = status in RETRY_STATUSES and attempt < MAX_ATTEMPTS and internal_errors < MAX_ATTEMPTS_500
            if retry and not self._out_of_time(started):
                self.sleep(_retry_delay(response, attempt))
                continue
            raise error

    def _out_of_time(self, started: float) -> bool:
        return bool(self.request_timeout) and time.monotonic() - started >= self.request_timeout


def _backoff(attempt: int) -> float:
    base = min(0.1 * 2 ** (attempt - 1), 5.0)
    return base * (0.5 + random.random() / 2)


def _retry_delay(response: urllib3.BaseHTTPResponse, attempt: int) -> float:
    retry_after = response.headers.get("Retry-After")
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), 30.0)
        except ValueError:
            pass
    return _backoff(attempt)


def _api_error(method: str, path: str, response: urllib3.BaseHTTPResponse) -> ApiError:
    message = ""
    try:
        status = json.loads(response.data)
        message = status.get("message", "") if isinstance(status, dict) else ""
    except (ValueError, TypeError):
        message = (response.data or b"").decode(errors="replace").strip()[:300]
    return ApiError(response.status, response.reason or "", message, method, path)


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)
    text = str(inner or exc)
    # urllib3 wraps the useful part; keep the last clause.
    if ": " in text and "Failed to establish a new connection" in text:
        text = text.split("Failed to establish a new connection: ", 1)[-1]
    return text.rstrip(")'\"")
