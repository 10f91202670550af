"""Retry rules of the transport, against a scripted connection pool (pure logic)."""

import json

import pytest
import urllib3

from kubectl_unfinalize.errors import ApiError, Unreachable
from kubectl_unfinalize.transport import Transport


class ScriptedPool:
    """Answers requests from a script of (status, headers, body) or exceptions."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def request(self, method, url, body=None, headers=None, **_):
        self.requests.append((method, url, body, headers))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, headers, payload = answer
        return urllib3.HTTPResponse(
            body=json.dumps(payload).encode(), status=status, headers=headers, preload_content=True
        )


def transport(pool, **kwargs):
    t = Transport("https://cluster", pool, lambda: "Bearer t", **kwargs)
    t.sleeps = []
    t.sleep = t.sleeps.append
    return t


def test_429_honours_retry_after():
    pool = ScriptedPool((429, {"Retry-After": "3"}, {"message": "slow down"}), (200, {}, {"ok": True}))
    t = transport(pool)
    assert t.request("GET", "/api") == {"ok": True}
    assert t.sleeps == [3.0]


def test_5xx_and_dropped_connections_are_retried_with_backoff():
    pool = ScriptedPool(
        (503, {}, {}), urllib3.exceptions.ProtocolError("connection reset"), (500, {}, {}), (200, {}, {})
    )
    t = transport(pool)
    t.request("PATCH", "/x", body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    assert len(pool.requests) == 4 and len(t.sleeps) == 3
    assert all(0 < s <= 5 for s in t.sleeps)
    assert pool.requests[0][2] == b'{"metadata":{"finalizers":null}}'


def test_client_errors_are_not_retried_and_carry_the_api_message():
    pool = ScriptedPool((404, {}, {"kind": "Status", "message": 'widgets "a" not found'}))
    with pytest.raises(ApiError) as info:
        transport(pool).request("GET", "/w/a")
    assert info.value.status == 404 and str(info.value) == 'widgets "a" not found'
    assert len(pool.requests) == 1


def test_unreachable_gives_up_after_a_few_attempts():
    refused = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: [Errno 111] refused")
    pool = ScriptedPool(*[refused] * 10)
    with pytest.raises(Unreachable, match="cannot reach the API server at https://cluster"):
        transport(pool).request("GET", "/api")
    assert len(pool.requests) == 4


def test_impersonated_groups_are_separate_header_values():
    pool = ScriptedPool((200, {}, {}))
    t = transport(pool, impersonate=[("Impersonate-User", "u"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b")])
    t.request("GET", "/api")
    headers = pool.requests[0][3]
    assert headers.getlist("Impersonate-Group") == ["a", "b"]
    assert headers["Authorization"] == "Bearer t"


def test_a_lasting_500_is_given_up_quickly():
    pool = ScriptedPool(*[(500, {}, {"message": "conversion webhook for x failed"})] * 8)
    with pytest.raises(ApiError, match="conversion webhook"):
        transport(pool).request("GET", "/apis/x/v2/things")
    assert len(pool.requests) == 3
