"""Retry rules of the transport, against a scripted connection pool (pure logic)."""

import json

import pytest

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.errors import ApiError, DeadlineExceeded, Unreachable
from kubectl_unfinalize.kube.transport import Transport
from kubectl_unfinalize.net.connections import NotSent, Response

REFUSED = NotSent("[Errno 111] Connection refused")


class ScriptedPool:
    """Per-thread connections answering from a script of (status, headers, body) or exceptions."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []
        self.timeouts = []

    def send(self, method, target, body, headers, timeout, on_chunk=None):
        self.requests.append((method, target, body, Headers(headers)))
        self.timeouts.append(timeout)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, fields, payload = answer
        headers = {key.lower(): value for key, value in fields.items()}
        return Response(status, "", headers, json.dumps(payload).encode())

    def close(self):
        pass


class Headers(list):
    """The header lines the transport sent, as (name, value) pairs."""

    def __init__(self, block: bytes):
        super().__init__(tuple(line.split(": ", 1)) for line in block.decode("latin-1").split("\r\n") if line)

    def getlist(self, name):
        return [v for k, v in self if k == name]

    def __getitem__(self, name):
        return ", ".join(self.getlist(name))


def transport(pool, **kwargs):
    t = Transport("https://cluster", pool, lambda: "Bearer t", **kwargs)
    t.sleeps = []
    t.sleep = t.sleeps.append
    return t


def test_429_honours_retry_after_up_to_a_second_and_a_503_up_to_thirty():
    pool = ScriptedPool(
        (429, {"Retry-After": "0.5"}, {"message": "slow down"}),
        (429, {"Retry-After": "30"}, {"message": "slow down"}),  # what API Priority and Fairness asks
        (503, {"Retry-After": "3"}, {}),
        (200, {}, {"ok": True}),
    )
    t = transport(pool)
    assert t.request("GET", "/api") == {"ok": True}
    assert t.sleeps == [0.5, 1.0, 3.0]


def test_5xx_and_dropped_connections_are_retried_with_backoff():
    pool = ScriptedPool((503, {}, {}), ConnectionResetError("connection reset"), (500, {}, {}), (200, {}, {}))
    t = transport(pool)
    t.request(
        "PATCH",
        "/x",
        body={"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
        idempotent=True,
    )
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
    pool = ScriptedPool(*[REFUSED] * 10)
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


class Clock:
    """Fake time: sleeping advances it, so deadline tests take no real time."""

    def __init__(self, monkeypatch):
        self.now = 1000.0
        monkeypatch.setattr("kubectl_unfinalize.kube.transport.time.monotonic", lambda: self.now)
        monkeypatch.setattr("kubectl_unfinalize.deadline.time.monotonic", lambda: self.now)

    def sleep(self, seconds):
        self.now += seconds


def clocked(pool, clock, **kwargs):
    t = Transport("https://cluster", pool, lambda: "Bearer secret-token", **kwargs)
    t.sleep = clock.sleep
    return t


def test_sustained_429s_are_retried_until_the_deadline_not_a_fixed_count(monkeypatch):
    from kubectl_unfinalize.deadline import Deadline

    clock = Clock(monkeypatch)
    pool = ScriptedPool(*[(429, {"Retry-After": "1"}, {"message": "slow down"})] * 30, (200, {}, {}))
    t = clocked(pool, clock)
    assert t.request("GET", "/api", deadline=Deadline(60)) == {}
    assert len(pool.requests) == 31
    pool = ScriptedPool(*[(429, {"Retry-After": "1"}, {"message": "slow down"})] * 30)
    deadline = Deadline(10.5)
    with pytest.raises(DeadlineExceeded):  # waited out to the end: not ended by the last 429
        clocked(pool, clock).request("GET", "/api", deadline=deadline)
    assert clock.now == pytest.approx(deadline.at) and len(pool.requests) == 11


def test_an_outage_after_first_contact_is_waited_out_within_the_deadline(monkeypatch):
    from kubectl_unfinalize.deadline import Deadline

    clock = Clock(monkeypatch)
    pool = ScriptedPool((200, {}, {}), *[REFUSED] * 20, (200, {}, {"back": True}))
    t = clocked(pool, clock)
    t.request("GET", "/api", deadline=Deadline(60))
    assert t.request("GET", "/api", deadline=Deadline(60)) == {"back": True}
    never = clocked(ScriptedPool(*[REFUSED] * 20), clock)
    with pytest.raises(Unreachable):
        never.request("GET", "/api", deadline=Deadline(60))  # never reached: a wrong address, not an outage
    assert len(never.connections.requests) == 4


def test_each_attempt_is_capped_by_what_is_left_of_the_deadline(monkeypatch):
    from kubectl_unfinalize.deadline import Deadline

    clock = Clock(monkeypatch)
    pool = ScriptedPool((200, {}, {}))
    clocked(pool, clock).request("GET", "/api", deadline=Deadline(3))
    assert pool.timeouts == [3]


def test_a_404_after_a_dropped_connection_is_marked_ambiguous(monkeypatch):
    from kubectl_unfinalize.deadline import Deadline
    from kubectl_unfinalize.errors import NotFound

    clock = Clock(monkeypatch)
    pool = ScriptedPool((200, {}, {}), ConnectionResetError("reset"), (404, {}, {"reason": "NotFound"}))
    t = clocked(pool, clock)
    t.request("GET", "/api")
    with pytest.raises(NotFound) as info:
        t.request("PATCH", "/x", body={}, deadline=Deadline(30), idempotent=True)
    assert info.value.ambiguous


def test_typed_errors_keep_the_status_details():
    from kubectl_unfinalize.errors import Gone, Invalid

    status = {"reason": "Expired", "message": "too old", "metadata": {"continue": "next"}}
    with pytest.raises(Gone) as gone:
        transport(ScriptedPool((410, {}, status))).request("GET", "/x")
    assert gone.value.continue_token == "next" and gone.value.reason == "Expired"
    denied = {"reason": "Invalid", "message": "denied", "details": {"causes": [{"message": "policy says no"}]}}
    with pytest.raises(Invalid) as invalid:
        transport(ScriptedPool((422, {}, denied))).request("PATCH", "/x")
    assert invalid.value.causes == ["policy says no"]


def test_request_log_at_v6_and_bodies_at_v8_never_show_credentials():
    lines = []
    pool = ScriptedPool((200, {}, {"kind": "List"}), (200, {}, {"kind": "List"}))
    Transport("https://cluster", pool, lambda: "Bearer secret-token", log=lines.append, verbosity=6).request(
        "GET", "/api", query={"limit": 5}
    )
    Transport("https://cluster", pool, lambda: "Bearer secret-token", log=lines.append, verbosity=8).request(
        "GET", "/api"
    )
    assert lines[0].startswith("GET https://cluster/api?limit=5 200") and "milliseconds" in lines[0]
    assert "Response Body:" not in lines[0] and 'Response Body: {"kind": "List"}' in lines[1]
    assert not any("secret-token" in line for line in lines)


def test_a_token_with_a_line_break_is_a_configuration_error_and_nothing_is_sent():
    from kubectl_unfinalize.errors import ConfigError

    pool = ScriptedPool((200, {}, {}))
    t = Transport("https://cluster", pool, "Bearer a\r\nX-Injected: 1")
    with pytest.raises(ConfigError, match="Authorization header"):
        t.request("GET", "/api")
    assert pool.requests == []


def test_a_write_that_may_have_reached_the_server_is_not_sent_again_unless_idempotent():
    """Only the verbs that end in the same state when applied twice declare it; a write
    added later is not repeated blindly after a dropped connection."""
    pool = ScriptedPool(ConnectionResetError("connection reset"), (200, {}, {}))
    with pytest.raises(Unreachable, match="not sent again, since it may have been applied"):
        transport(pool).request("POST", "/x", body={})
    assert len(pool.requests) == 1
    pool = ScriptedPool(REFUSED, (503, {}, {}), (200, {}, {}))  # never reached, and refused: sent again
    transport(pool).request("POST", "/x", body={})
    assert len(pool.requests) == 3


def test_nothing_is_sent_once_the_deadline_has_passed():
    pool = ScriptedPool((200, {}, {}))
    with pytest.raises(DeadlineExceeded, match="out of time before GET /api could be sent"):
        transport(pool).request("GET", "/api", deadline=Deadline(0))
    assert pool.requests == []


def test_a_retry_that_would_start_after_the_deadline_is_not_sent():
    pool = ScriptedPool((503, {}, {}), (200, {}, {}))
    t = transport(pool)
    deadline = Deadline(5)
    t.sleep = lambda seconds: setattr(deadline, "at", deadline.at - 10)  # the backoff outlasts the deadline
    with pytest.raises(DeadlineExceeded):
        t.request("GET", "/api", deadline=deadline, idempotent=True)
    assert len(pool.requests) == 1
