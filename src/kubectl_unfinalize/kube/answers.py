"""An error answer of the API server as the typed error the callers decide on.

The Status it carries says more than the HTTP code: its reason (NotFound, Conflict...),
its details' causes (a denied write names the admission webhook or policy), the continue
token of an expired list, and the Retry-After a 429 or 503 asks for.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ApiError, CorruptObjects, api_error_class
from ..net.connections import Response
from .corrupt import is_corrupt_answer


def api_error(method: str, path: str, response: Response, ambiguous: bool) -> ApiError:
    message, reason, token = "", response.reason or "", ""
    details: dict[str, Any] = {}
    try:
        status = json.loads(response.data)
    except (ValueError, TypeError):
        status = None
    if isinstance(status, dict):
        message = str(status.get("message") or "")
        reason = str(status.get("reason") or reason)
        details = status.get("details") or {}
        token = str((status.get("metadata") or {}).get("continue") or "")
    else:
        message = (response.data or b"").decode(errors="replace").strip()[:300]
    retry_after = None
    header = response.headers.get("retry-after")
    if header:
        try:
            retry_after = float(header)
        except ValueError:
            retry_after = None
    cls = CorruptObjects if is_corrupt_answer(response.status, reason, message) else api_error_class(response.status)
    return cls(
        response.status,
        reason,
        message,
        method,
        path,
        details=details if isinstance(details, dict) else {},
        continue_token=token,
        retry_after=retry_after,
        ambiguous=ambiguous,
    )
