"""Retry rules of the transport, against a scripted connection pool (pure logic)."""

import json

import pytest

from kubectl_unfinalize.deadline import NO_DEADLINE, Deadline
from kubectl_unfinalize.errors import ApiError, ConfigError, DeadlineExceeded, Unreachable
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
    t = Transport("https://cluster", pool, "Bearer t", **kwargs)
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
    t = Transport("https://cluster", pool, "Bearer secret-token", **kwargs)
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
    Transport("https://cluster", pool, "Bearer secret-token", log=lines.append, verbosity=6).request(
        "GET", "/api", query={"limit": 5}
    )
    Transport("https://cluster", pool, "Bearer secret-token", log=lines.append, verbosity=8).request("GET", "/api")
    assert lines[0].startswith("GET https://cluster/api?limit=5 200") and "milliseconds" in lines[0]
    assert "Response Body:" not in lines[0] and 'Response Body: {"kind": "List"}' in lines[1]
    assert not any("secret-token" in line for line in lines)


def test_a_token_with_a_line_break_is_a_configuration_error_and_nothing_is_sent():
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


UNAUTHORIZED = (401, {}, {"kind": "Status", "reason": "Unauthorized", "message": "Unauthorized", "code": 401})


def renewing(*tokens):
    """A credential whose every fetch gives the next header of `tokens` (a ConfigError raises)."""
    from kubectl_unfinalize.kube.credentials import Renewed

    answers = list(tokens)

    def fetch():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer, None

    return Renewed(fetch, 'of kubeconfig user "u"', "exec plugin get-token")


def sent_tokens(pool):
    return [headers["Authorization"] for _, _, _, headers in pool.requests]


def test_a_401_renews_the_credential_and_sends_the_request_again_whatever_its_verb():
    """A 401 is an answer: nothing was applied, so even a write that is not idempotent goes again."""
    pool = ScriptedPool(UNAUTHORIZED, (200, {}, {"ok": True}))
    t = Transport("https://cluster", pool, renewing("Bearer old", "Bearer new"))
    assert t.request("POST", "/x", body={}) == {"ok": True}
    assert sent_tokens(pool) == ["Bearer old", "Bearer new"]
    pool.answers.append((200, {}, {}))
    t.request("GET", "/y")
    assert sent_tokens(pool)[-1] == "Bearer new"  # kept: the plugin is not run per request
    assert t.headers("application/json", None).endswith(b"Authorization: Bearer new\r\n")  # the bulk sender's too


def test_a_fresh_credential_refused_again_is_lasting_and_ends_the_run():
    from kubectl_unfinalize.errors import Unauthorized

    pool = ScriptedPool(UNAUTHORIZED, UNAUTHORIZED, (200, {}, {}))
    t = Transport("https://cluster", pool, renewing("Bearer old", "Bearer new"))
    deadline = Deadline(60)
    with pytest.raises(Unauthorized) as info:
        t.request("GET", "/apis", deadline=deadline)
    assert str(info.value) == (
        'the API server rejected the credentials of kubeconfig user "u" (exec plugin get-token,'
        " obtained again after a 401 and refused too): Unauthorized"
    )
    assert info.value.exit_status == 2 and len(pool.requests) == 2
    assert deadline.expired() and deadline.cause is info.value
    with pytest.raises(Unauthorized, match="rejected the credentials of kubeconfig user"):
        t.request("GET", "/api")  # another deadline's request: not sent either
    assert len(pool.requests) == 2 and not NO_DEADLINE.expired()


@pytest.mark.parametrize(
    ("credential", "how"),
    [
        ("Bearer fixed", "(token)"),  # a fixed one cannot be renewed
        (renewing("Bearer same", "Bearer same"), "(exec plugin get-token, obtained again after a 401 and refused too)"),
        (
            renewing("Bearer old", ConfigError("exec plugin get-token failed with exit code 1")),
            "(exec plugin get-token; obtaining a new one failed: exec plugin get-token failed with exit code 1)",
        ),
    ],
    ids=["fixed", "the-same-again", "renewal-failed"],
)
def test_a_401_nothing_new_can_answer_is_lasting_at_once(credential, how):
    from kubectl_unfinalize.errors import Unauthorized

    pool = ScriptedPool(UNAUTHORIZED, (200, {}, {}))
    with pytest.raises(Unauthorized) as info:
        Transport("https://cluster", pool, credential).request("GET", "/apis")
    assert len(pool.requests) == 1 and how in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("answers", "sent", "fetches"),
    [
        ([UNAUTHORIZED, (200, {}, {})], ["Bearer t1", "Bearer t2"], 2),
        # t2, obtained before this request's 401, refused too: one more renewal, then lasting
        ([UNAUTHORIZED, UNAUTHORIZED, (200, {}, {})], ["Bearer t1", "Bearer t2", "Bearer t3"], 3),
    ],
)
def test_a_401_to_a_token_another_request_renewed_meanwhile_is_sent_again_with_the_renewed_one(answers, sent, fetches):
    """The wave's other requests reuse the renewal: the plugin runs once for all of them,
    and a token obtained before this request's 401 is not yet proof of a lasting refusal."""
    credential = renewing("Bearer t1", "Bearer t2", "Bearer t3")

    class RenewedMeanwhile(ScriptedPool):
        def send(self, *args, **kwargs):
            if not self.requests:
                credential.renew(credential.current())  # another request's 401, while this one was out
            return super().send(*args, **kwargs)

    pool = RenewedMeanwhile(*answers)
    Transport("https://cluster", pool, credential).request("GET", "/x")
    assert sent_tokens(pool) == sent and credential.fetches == fetches


def test_a_probe_answered_503_is_raised_at_once_within_a_deadline():
    """An aggregated API that is down answers 503 through the API server: discovery takes it
    as "unavailable now", where any other request waits it out until the run's deadline."""
    pool = ScriptedPool((503, {}, {"message": "service unavailable"}), (200, {}, {}))
    t = transport(pool)
    with pytest.raises(ApiError) as raised:
        t.request("GET", "/apis/metrics.k8s.io/v1beta1", deadline=Deadline(300), idempotent=True, probe=5.0)
    assert raised.value.status == 503
    assert len(pool.requests) == 1 and t.sleeps == []


def test_a_probe_without_an_answer_in_its_bound_is_not_sent_again():
    from kubectl_unfinalize.errors import NoAnswer

    pool = ScriptedPool(TimeoutError("timed out"), (200, {}, {}))
    t = transport(pool, request_timeout=30.0)
    t.reached = True  # an outage after first contact is otherwise waited out until the deadline
    with pytest.raises(NoAnswer, match="within 5s"):
        t.request("GET", "/apis/metrics.k8s.io/v1beta1", deadline=Deadline(300), idempotent=True, probe=5.0)
    assert len(pool.requests) == 1 and pool.timeouts == [5.0]


def test_a_probe_still_waits_out_throttling_and_a_connection_never_opened():
    pool = ScriptedPool((429, {"Retry-After": "1"}, {}), REFUSED, (200, {}, {"kind": "APIResourceList"}))
    t = transport(pool)
    t.reached = True
    answer = t.request("GET", "/apis/apps/v1", deadline=Deadline(300), idempotent=True, probe=5.0)
    assert answer == {"kind": "APIResourceList"} and len(pool.requests) == 3
