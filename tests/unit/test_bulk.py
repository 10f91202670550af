"""The bulk sender against the loopback server: a 2xx answer of any size and framing is
recorded once, anything else goes back to the workers' threads, and a patch that went
out without an answer goes back marked as sent."""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
import time

import pytest
from loopback import OK, Late, LoopbackServer, RecordingSink, chunked

from kubectl_unfinalize.kube.transport import throttled_wait
from kubectl_unfinalize.net import gathering
from kubectl_unfinalize.net.bulk import Bulk
from kubectl_unfinalize.net.bulk_patch import BulkPatch
from kubectl_unfinalize.net.connections import FAR, Connections, Endpoint

THROTTLED = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}"


def patch(path: str, done: list[str] | None = None) -> BulkPatch:
    """A patch whose fallback says whether the sender marked it as sent."""
    return BulkPatch(
        path,
        b"{}",
        (lambda answer: done.append(path)) if done is not None else (lambda answer: None),
        lambda sent: f"{'resent' if sent else 'fallback'} {path}",
        "PATCH",
        "application/json",
        "application/merge-patch+json",
    )


def unthrottled(sent: float, retry_after: str | None) -> float:
    raise AssertionError("no 429 is sent in this test")


class Counted:
    def __init__(self) -> None:
        self.pushbacks = 0

    def __call__(self, sent: float, retry_after: str | None) -> float:
        self.pushbacks += 1
        return throttled_wait(retry_after)


def run(script, paths: list[str], timeout: float = 5.0, cap: int = 4):
    server = LoopbackServer(script)
    sink = RecordingSink()
    pushbacks = Counted()
    done: list[str] = []
    bulk = Bulk(Connections(Endpoint(server.url)), lambda *_: b"Accept: application/json\r\n", lambda: timeout,
                pushbacks, sink, cap)  # fmt: skip
    for path in paths:
        bulk.put(patch(path, done))
    assert sink.wait(len(paths), timeout + 5), "an object was neither recorded nor handed back"
    bulk.close()
    server.close()
    return done, sink, server, pushbacks.pushbacks


def test_2xx_answers_are_recorded_over_at_most_cap_connections_one_request_each():
    paths = [f"/o/{i}" for i in range(200)]
    done, sink, server, _ = run(lambda method, path: OK, paths, cap=4)
    assert sorted(done) == sorted(paths)
    assert len(sink.started) == 200 and sink.requeued == [] and sink.failures == []
    assert 1 <= server.connections <= 4
    assert server.pipelined == 0  # a request waits for the answer before it on its connection
    assert len(server.requests) == 200


@pytest.mark.parametrize("size", [3 * 1024, 100 * 1024])
@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_large_answer_is_read_whole_and_the_patch_sent_once(size, framing):
    """The API server chunks any object over 2 KiB (kubectl's last-applied annotation,
    kopf's state): such an answer was handed back and the object patched again."""
    body = b'{"metadata":{"annotations":{"a":"' + b"x" * size + b'"}}}'
    if framing == "chunked":
        answer = chunked(body)
    else:
        answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    paths = [f"/o/{i}" for i in range(40)]
    done, sink, server, _ = run(lambda method, path: answer, paths, cap=4)
    assert sorted(done) == sorted(paths) and sink.requeued == [] and sink.failures == []
    assert len(server.requests) == 40  # one PATCH per object


def test_anything_but_a_2xx_goes_back_unsent_and_a_429_is_counted_and_waits_its_retry_after():
    answers = {"/ok": OK, "/throttled": THROTTLED, "/refused": chunked(b"{}" * 2000, status=b"422 Unprocessable")}
    done, sink, _, pushbacks = run(lambda method, path: answers[path], list(answers), cap=1)
    assert done == ["/ok"]
    assert sorted(sink.requeued) == ["fallback /refused", "fallback /throttled"]
    assert pushbacks == 1
    assert sorted(zip(sink.requeued, sink.waits, strict=True)) == [
        ("fallback /refused", 0.0),
        ("fallback /throttled", 1.0),
    ]


def test_a_connection_closed_before_the_answer_sends_the_patch_back_as_sent():
    answers = {"/ok": OK, "/closed": b"", "/cut": OK[:-1]}
    done, sink, _, _ = run(lambda method, path: answers[path], list(answers), cap=1)
    assert done == ["/ok"]
    assert sorted(sink.requeued) == ["resent /closed", "resent /cut"]


def test_an_answer_that_never_comes_goes_back_as_sent_after_the_timeout():
    started = time.monotonic()
    done, sink, _, _ = run(lambda method, path: None if path == "/hung" else OK, ["/hung", "/fine"], timeout=0.5)
    assert done == ["/fine"] and sink.requeued == ["resent /hung"]
    assert 0.5 <= time.monotonic() - started < 3


def test_a_late_answer_within_the_timeout_is_recorded():
    done, sink, _, _ = run(lambda method, path: Late(0.3, OK), ["/slow"], timeout=2)
    assert done == ["/slow"] and sink.requeued == []


def test_when_no_connection_can_be_opened_everything_goes_back_unsent():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = RecordingSink()
    bulk = Bulk(
        Connections(Endpoint(f"http://127.0.0.1:{port}")),
        lambda *_: b"",
        lambda: 1.0,
        lambda sent, retry_after: 0.0,
        sink,
        2,
    )
    for i in range(3):
        bulk.put(patch(f"/o/{i}"))
    assert sink.wait(3)
    bulk.close()
    assert sorted(sink.requeued + sink.returns) == ["fallback /o/0", "fallback /o/1", "fallback /o/2"]
    assert len(sink.requeued) == 2, "the two given a place (the cap) go back with it, the third without"


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "bug"])
def test_after_close_or_a_bug_a_patch_goes_to_the_workers(closed):
    sink = RecordingSink()
    headers = (lambda *_: b"") if closed else (lambda *_: 1 / 0)  # a bug when the first patch is sent
    with LoopbackServer(lambda method, path: OK) as server:
        bulk = Bulk(Connections(Endpoint(server.url)), headers, lambda: 1.0, unthrottled, sink, 2)
        if closed:
            bulk.close()
        bulk.put(patch("/o/1"))
        assert sink.wait(1 if closed else 2)
        bulk.close()
    # closed: it never had a place, and goes back without one; the bug: it had one
    assert (sink.returns if closed else sink.requeued) == ["fallback /o/1"]
    assert (sink.requeued if closed else sink.returns) == []
    assert bool(sink.failures) is not closed


def test_patches_waiting_for_a_connection_go_back_when_one_cannot_be_opened():
    """Handshakes that time out one after another, never all at once: the waiting
    patches must go back at the first failure, not when no opener is under way."""
    with LoopbackServer(lambda method, path: None) as server:  # takes the connection, never answers the TLS hello
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        timeouts = itertools.cycle([0.1, 0.25])  # openers overlap: one always under way
        sink = RecordingSink()
        url = server.url.replace("http:", "https:")
        bulk = Bulk(
            Connections(Endpoint(url, context)),
            lambda *_: b"",
            lambda: next(timeouts),
            lambda sent, retry_after: 0.0,
            sink,
            2,
        )
        for i in range(3):
            bulk.put(patch(f"/o/{i}"))
        started = time.monotonic()
        assert sink.wait(3, timeout=3), "a patch waited for a connection that never came"
        waited = time.monotonic() - started
        bulk.close()
    assert sorted(sink.requeued + sink.returns) == ["fallback /o/0", "fallback /o/1", "fallback /o/2"]
    assert sink.failures == []
    assert waited < 1.0


def test_an_idle_connection_the_server_closed_is_not_used_again():
    with LoopbackServer(lambda method, path: OK) as server:
        server.close_after_answer = True  # as an API server does with an idle connection, in time
        sink = RecordingSink()
        bulk = Bulk(Connections(Endpoint(server.url)), lambda *_: b"", lambda: 2.0, unthrottled, sink, 1)
        for i in range(3):
            bulk.put(patch(f"/o/{i}"))
            assert sink.wait(1, timeout=5), f"patch {i} was not recorded"
            time.sleep(0.2)  # the close reaches the idle connection before the next patch
        bulk.close()
    assert sink.requeued == [] and sink.failures == []
    assert server.connections == 3


def test_released_connections_serve_other_threads_and_come_back():
    """The final check's lists run on other threads: they take the bulk sender's idle
    connections instead of opening (and handshaking) their own."""
    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        sink = RecordingSink()
        bulk = Bulk(connections, lambda *_: b"", lambda: 2.0, unthrottled, sink, 2)
        for i in range(20):
            bulk.put(patch(f"/o/{i}"))
        assert sink.wait(20, timeout=5)
        opened = server.connections
        assert 1 <= opened <= 2
        bulk.release()
        statuses: list[int] = []
        done = threading.Event()  # the threads live on, as the workers' do

        def list_page() -> None:
            statuses.append(connections.send("PATCH", "/x", b"{}", b"", 2.0).status)
            done.wait(5)

        threads = [threading.Thread(target=list_page) for _ in range(opened)]
        for thread in threads:
            thread.start()
            deadline = time.monotonic() + 5
            while len(statuses) < threads.index(thread) + 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        assert statuses == [200] * opened
        assert server.connections == opened  # nothing new was opened for the other threads
        bulk.put(patch("/o/last"))
        assert sink.wait(1, timeout=5)
        bulk.close()
        done.set()
        for thread in threads:
            thread.join()
        connections.close()
    assert sink.requeued == [] and sink.failures == []
    assert server.connections == opened + 1  # the threads keep theirs: the bulk sender opens anew


def test_a_path_that_cannot_be_sent_goes_to_the_workers_and_the_rest_goes_on():
    done, sink, _, _ = run(lambda method, path: OK, ["/o/bad\r\nX-Injected: 1", "/o/good"], cap=1)
    assert done == ["/o/good"]
    assert sink.requeued == ["fallback /o/bad\r\nX-Injected: 1"] and sink.failures == []


def test_connections_warmed_and_given_away_are_not_opened_again():
    """A far run's warmed connections, given to the final check's threads, were opened
    again at once (the warm count was still wanted), and closing then waited a round trip
    for those handshakes as the run ended."""
    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        sink = RecordingSink()
        bulk = Bulk(connections, lambda *_: b"", lambda: 2.0, unthrottled, sink, 4)
        bulk.warm(4)
        deadline = time.monotonic() + 5
        while server.connections < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(8):
            bulk.put(patch(f"/o/{i}"))
        assert sink.wait(8, timeout=5)
        bulk.release()
        threads = [threading.Thread(target=connections.send, args=("GET", "/list", None, b"", 2.0)) for _ in range(4)]
        for thread in threads:  # the final check's lists, each on a thread and a connection given away
            thread.start()
            thread.join()
        bulk.close()  # it wakes the sender, which then opened the 4 warmed ones again
        time.sleep(0.2)  # connections are counted on the server's thread
        assert server.connections == 4, f"{server.connections - 4} opened again after release()"
        connections.close()
    assert sink.requeued == [] and sink.failures == []


def test_a_patch_is_sent_once_the_workers_give_it_a_place_and_not_before():
    """Patches are put ahead of their place (the workers' backlog): the sender sends no
    more than places() grants, and a nudge (a place freed on another thread) sends the next."""
    requests = []
    with LoopbackServer(lambda method, path: requests.append(path) or OK) as server:
        sink = RecordingSink()
        sink.room = 1
        done: list[str] = []
        bulk = Bulk(Connections(Endpoint(server.url)), lambda *_: b"", lambda: 2.0, unthrottled, sink, 4)
        for i in range(3):
            bulk.put(patch(f"/o/{i}", done))
        assert sink.wait(1, timeout=5)
        time.sleep(0.2)
        assert requests == ["/o/0"], "sent without a place"
        sink.room = 2
        bulk.nudge()
        assert sink.wait(2, timeout=5), "a nudge with two places free sent nothing"
        bulk.close()
    assert requests == ["/o/0", "/o/1", "/o/2"] and done == requests
    assert sink.requeued == [] and sink.returns == [] and sink.failures == []


@pytest.mark.parametrize(("round_trip", "gathers"), [(0.001, True), (FAR, False), (None, False)])
def test_near_the_answers_gather_before_they_are_read_far_each_is_read_as_it_comes(monkeypatch, round_trip, gathers):
    """Near, with a quarter of the cap in flight and patches queued at the server (their
    answers come 0.8 s late), the sender lets the answers gather before it reads them;
    far, or before any round trip was timed, it reads each answer as it comes."""
    monkeypatch.setattr(gathering, "GATHER", 1.0)
    with LoopbackServer(lambda method, path: Late(0.8, OK)) as server:
        sink = RecordingSink()
        sink.room = 0
        connections = Connections(Endpoint(server.url))
        connections.round_trip = round_trip
        done: list[str] = []
        bulk = Bulk(connections, lambda *_: b"", lambda: 10.0, unthrottled, sink, 8)
        bulk.warm(8)
        deadline = time.monotonic() + 5
        while server.connections < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the openers hand their connections to the sender
        for i in range(16):
            bulk.put(patch(f"/o/{i}", done))
        for _wave in (0, 1):  # eight go in one round, on the eight idle connections
            sink.room = 8
            bulk.nudge()
            assert sink.wait(8, timeout=10)
        bulk.close()
    assert sorted(done) == sorted(f"/o/{i}" for i in range(16)) and sink.requeued == [] and server.connections == 8
    # The second wave, sent once the first one's latency was known: an eighth of 0.8 s, 0.1 s.
    read = [at - sent for at, sent in zip(sink.finished_at[8:], sink.started[8:], strict=True)]
    if gathers:
        assert min(read) >= 0.8 + 0.09, "a near answer was read before the others gathered"
    else:
        assert max(read) < 0.8 + 0.09, "a far answer waited to be read"


def test_the_wait_is_a_share_of_the_time_a_patch_waits_in_the_server_queue():
    near = 0.001
    assert gathering.gather_window(0.081, near, busy=True) == pytest.approx(0.01)
    assert gathering.gather_window(0.041, near, busy=True) == pytest.approx(0.005)
    assert gathering.gather_window(0.0015, near, busy=True) == 0.0, "no queue: nothing to gather"
    assert gathering.gather_window(0.081, near, busy=False) == 0.0, "a small run's few patches"
    assert gathering.gather_window(0.4, FAR, busy=True) == 0.0, "far: the round trip limits the run"
    assert gathering.gather_window(0.4, None, busy=True) == 0.0


@pytest.mark.parametrize("second", ["ok", "refused", "worker"])
def test_what_a_delete_s_answer_returns_is_sent_next_in_its_place_and_the_job_ends_with_it(second):
    """--delete: a DELETE whose 2xx answer names the patch that follows. The patch goes
    in the place the DELETE had (no other is asked for), with its own method and headers,
    and the job ends once, with the patch: finished after its 2xx, or handed back as the
    patch's own fallback (not the DELETE's) after any other answer. A job for a worker
    instead of a patch is handed back in that place, and nothing more is sent."""
    answers = {"DELETE": OK, "PATCH": OK if second == "ok" else THROTTLED.replace(b"429 Too Many", b"500 Not")}
    server = LoopbackServer(lambda method, path: answers[method])
    sink = RecordingSink()
    sink.room = 1  # one place, for one job
    kinds: list[tuple[str, str]] = []
    done: list[str] = []

    def headers(accept: str, content_type: str) -> bytes:
        kinds.append((accept, content_type))
        return b""

    then = patch("/o", done) if second != "worker" else (lambda: "on a worker")
    first = BulkPatch("/o", b"{}", lambda answer: then, lambda sent: "fallback DELETE", "DELETE", "a/meta", "a/json")
    bulk = Bulk(Connections(Endpoint(server.url)), headers, lambda: 2.0, unthrottled, sink, 1)
    bulk.put(first)
    assert sink.wait(1)
    bulk.close()
    server.close()
    if second == "worker":
        assert server.requests == [("DELETE", "/o")] and sink.requeued == ["on a worker"] and sink.started == []
        return
    assert server.requests == [("DELETE", "/o"), ("PATCH", "/o")]
    assert ("a/meta", "a/json") in kinds and ("application/json", "application/merge-patch+json") in kinds
    if second == "ok":
        assert done == ["/o"] and len(sink.started) == 1 and sink.requeued == []
    else:
        assert done == [] and sink.started == [] and sink.requeued == ["fallback /o"]
    assert sink.room == 0, "the patch took no place of its own"
