"""The bulk sender against a local HTTP server scripted per request path: what a 2xx
records, and that everything else goes back to the workers' threads."""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
import time
from collections.abc import Callable

import pytest

from kubectl_unfinalize.bulk import Bulk, BulkPatch
from kubectl_unfinalize.connections import Connections, Endpoint

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
THROTTLED = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"


class Server:
    """Answers each request by its path, in order, pipelined ones too: `script(path)`
    gives the bytes to send, b"" to close the connection, None to never answer (nor
    anything sent after it on that connection)."""

    def __init__(self, script: Callable[[str], bytes | None]) -> None:
        self.script = script
        self.connections = 0
        self.close_after_answer = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        with conn:
            while chunk := conn.recv(65536):
                data += chunk
                while b"\r\n\r\n" in data:
                    head, _, rest = data.partition(b"\r\n\r\n")
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    data = rest[length:]
                    answer = self.script(head.split(b" ")[1].decode())
                    if answer is None:  # in order, as HTTP/1.1 answers: nothing after it either
                        while conn.recv(65536):
                            pass
                        return
                    if answer == b"":
                        return
                    conn.sendall(answer)
                    if self.close_after_answer:
                        return

    def close(self) -> None:
        self.listener.close()


class Sink:
    def __init__(self) -> None:
        self.finished: list[float] = []
        self.requeued: list[str] = []
        self.failures: list[BaseException] = []
        self.pushbacks = 0

    def requeue(self, job: Callable[[], object]) -> None:
        self.requeued.append(str(job()))

    def failed(self, exc: BaseException) -> None:
        self.failures.append(exc)


def run(script: Callable[[str], bytes | None], paths: list[str], timeout: float = 5.0, cap: int = 4):
    server = Server(script)
    sink = Sink()
    done: list[str] = []
    finished = threading.Semaphore(0)

    def on_finished(started: float) -> None:
        sink.finished.append(started)
        finished.release()

    def on_requeue(job: Callable[[], object]) -> None:
        sink.requeue(job)
        finished.release()

    sink_api = type("S", (), {"finished": staticmethod(on_finished), "requeue": staticmethod(on_requeue),
                              "failed": staticmethod(sink.failed)})()  # fmt: skip
    bulk = Bulk(
        Connections(Endpoint(server.url)),
        lambda: b"Accept: application/json\r\n",
        lambda: timeout,
        lambda: setattr(sink, "pushbacks", sink.pushbacks + 1),
        sink_api,
        cap,
    )
    for path in paths:
        bulk.put(BulkPatch(path, b"{}", lambda path=path: done.append(path), lambda path=path: f"fallback {path}"))
    for _ in paths:
        assert finished.acquire(timeout=timeout + 5), "an object was neither recorded nor handed back"
    bulk.close()
    server.close()
    return done, sink, server


def test_2xx_answers_are_recorded_over_at_most_cap_connections():
    paths = [f"/o/{i}" for i in range(50)]
    done, sink, server = run(lambda path: OK, paths, cap=4)
    assert sorted(done) == sorted(paths)
    assert len(sink.finished) == 50 and sink.requeued == [] and sink.failures == []
    assert server.connections <= 4


def test_anything_but_a_2xx_goes_back_to_the_workers_and_a_429_is_counted():
    answers = {"/ok": OK, "/throttled": THROTTLED, "/chunked": CHUNKED, "/closed": b""}
    done, sink, _ = run(answers.__getitem__, list(answers), cap=1)
    assert done == ["/ok"]
    assert sorted(sink.requeued) == ["fallback /chunked", "fallback /closed", "fallback /throttled"]
    assert sink.pushbacks == 1


def test_an_answer_that_never_comes_goes_back_after_the_timeout():
    started = time.monotonic()
    done, sink, _ = run(lambda path: None if path == "/hung" else OK, ["/hung", "/fine"], timeout=0.5)
    assert done == ["/fine"] and sink.requeued == ["fallback /hung"]
    assert 0.5 <= time.monotonic() - started < 3


def test_when_no_connection_can_be_opened_everything_goes_back():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = Sink()
    released = threading.Semaphore(0)

    class Api:
        def finished(self, started: float) -> None:
            released.release()

        def requeue(self, job: Callable[[], object]) -> None:
            sink.requeue(job)
            released.release()

        def failed(self, exc: BaseException) -> None:
            sink.failures.append(exc)

    bulk = Bulk(Connections(Endpoint(f"http://127.0.0.1:{port}")), lambda: b"", lambda: 1.0, lambda: None, Api(), 2)
    for i in range(3):
        bulk.put(BulkPatch(f"/o/{i}", b"{}", lambda: None, lambda i=i: f"fallback {i}"))
    for _ in range(3):
        assert released.acquire(timeout=10)
    bulk.close()
    assert sorted(sink.requeued) == ["fallback 0", "fallback 1", "fallback 2"]


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "bug"])
def test_after_close_or_a_bug_a_patch_goes_to_the_workers(closed):
    sink = Sink()
    api = type("S", (), {"finished": lambda s, t: None, "requeue": lambda s, job: sink.requeue(job),
                         "failed": lambda s, exc: sink.failures.append(exc)})()  # fmt: skip
    headers = (lambda: b"") if closed else (lambda: 1 / 0)  # a bug when the first patch is sent
    server = Server(lambda path: OK)
    bulk = Bulk(Connections(Endpoint(server.url)), headers, lambda: 1.0, lambda: None, api, 2)
    if closed:
        bulk.close()
    bulk.put(BulkPatch("/o/1", b"{}", lambda: None, lambda: "fallback 1"))
    deadline = time.monotonic() + 5
    while not sink.requeued and time.monotonic() < deadline:
        time.sleep(0.01)
    bulk.close()
    server.close()
    assert sink.requeued == ["fallback 1"]
    assert bool(sink.failures) is not closed


def test_patches_waiting_for_a_connection_go_back_when_one_cannot_be_opened():
    """Handshakes that time out one after another, never all at once: the waiting
    patches went back only when no opener was under way, which could take for ever (a
    hung server kept a 6 s run going for 20 s and more)."""
    server = Server(lambda path: None)  # takes the connection, never answers the TLS hello
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    timeouts = itertools.cycle([0.1, 0.25])  # openers overlap: one always under way
    requeued = threading.Semaphore(0)
    sink = Sink()
    api = type("S", (), {"finished": lambda s, t: None,
                         "requeue": lambda s, job: (sink.requeue(job), requeued.release()),
                         "failed": lambda s, exc: sink.failures.append(exc)})()  # fmt: skip
    url = server.url.replace("http:", "https:")
    bulk = Bulk(Connections(Endpoint(url, context)), lambda: b"", lambda: next(timeouts), lambda: None, api, 2)
    for i in range(3):
        bulk.put(BulkPatch(f"/o/{i}", b"{}", lambda: None, lambda i=i: f"fallback {i}"))
    started = time.monotonic()
    for _ in range(3):
        assert requeued.acquire(timeout=3), "a patch waited for a connection that never came"
    waited = time.monotonic() - started
    bulk.close()
    server.close()
    assert sorted(sink.requeued) == ["fallback 0", "fallback 1", "fallback 2"]
    assert sink.failures == []
    assert waited < 1.0


def test_an_idle_connection_the_server_closed_is_not_used_again():
    server = Server(lambda path: OK)
    server.close_after_answer = True  # as an API server does with an idle connection, in time
    sink = Sink()
    recorded = threading.Semaphore(0)
    api = type("S", (), {"finished": lambda s, t: recorded.release(), "requeue": lambda s, job: sink.requeue(job),
                         "failed": lambda s, exc: sink.failures.append(exc)})()  # fmt: skip
    bulk = Bulk(Connections(Endpoint(server.url)), lambda: b"", lambda: 2.0, lambda: None, api, 1)
    for i in range(3):
        bulk.put(BulkPatch(f"/o/{i}", b"{}", lambda: None, lambda i=i: f"fallback {i}"))
        assert recorded.acquire(timeout=5), f"patch {i} was not recorded (handed back: {sink.requeued})"
        time.sleep(0.2)  # the close reaches the idle connection before the next patch
    bulk.close()
    server.close()
    assert sink.requeued == [] and sink.failures == []
    assert server.connections == 3


def test_released_connections_serve_other_threads_and_come_back():
    """The final check's lists run on other threads: they take the bulk sender's idle
    connections instead of opening (and handshaking) their own."""
    server = Server(lambda path: OK)
    connections = Connections(Endpoint(server.url))
    recorded = threading.Semaphore(0)
    sink = Sink()
    api = type("S", (), {"finished": lambda s, t: recorded.release(), "requeue": lambda s, job: sink.requeue(job),
                         "failed": lambda s, exc: sink.failures.append(exc)})()  # fmt: skip
    bulk = Bulk(connections, lambda: b"", lambda: 2.0, lambda: None, api, 2)
    for i in range(20):
        bulk.put(BulkPatch(f"/o/{i}", b"{}", lambda: None, lambda i=i: f"fallback {i}"))
    for _ in range(20):
        assert recorded.acquire(timeout=5)
    opened = server.connections
    assert 1 <= opened <= 2
    bulk.release()
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda: statuses.append(connections.send("PATCH", "/x", b"{}", b"", 2.0).status))
        for _ in range(opened)
    ]
    for thread in threads:
        thread.start()
        thread.join()
    assert statuses == [200] * opened
    assert server.connections == opened  # nothing new was opened for the other threads
    bulk.put(BulkPatch("/o/last", b"{}", lambda: None, lambda: "fallback last"))
    assert recorded.acquire(timeout=5)
    bulk.close()
    connections.close()
    server.close()
    assert sink.requeued == [] and sink.failures == []
    assert server.connections == opened + 1  # the threads keep theirs: the bulk sender opens anew


def test_a_path_that_cannot_be_sent_goes_to_the_workers_and_the_rest_goes_on():
    done, sink, _ = run(lambda path: OK, ["/o/bad\r\nX-Injected: 1", "/o/good"], cap=1)
    assert done == ["/o/good"]
    assert sink.requeued == ["fallback /o/bad\r\nX-Injected: 1"] and sink.failures == []


def test_beyond_the_connections_a_second_request_waits_behind_the_first():
    """cap 4 is two connections with two requests in flight on each (an HTTP/1.1
    pipeline): half the TLS handshakes, the same number of requests in flight."""
    server = Server(lambda path: OK)
    sink = Sink()
    recorded = threading.Semaphore(0)
    api = type("S", (), {"finished": lambda s, t: recorded.release(), "requeue": lambda s, job: sink.requeue(job),
                         "failed": lambda s, exc: sink.failures.append(exc)})()  # fmt: skip
    bulk = Bulk(Connections(Endpoint(server.url)), lambda: b"", lambda: 2.0, lambda: None, api, 4)
    paths = [f"/o/{i}" for i in range(200)]
    done: list[str] = []
    for path in paths:
        bulk.put(BulkPatch(path, b"{}", lambda path=path: done.append(path), lambda path=path: f"fallback {path}"))
    for _ in paths:
        assert recorded.acquire(timeout=5)
    bulk.close()
    server.close()
    assert sorted(done) == sorted(paths) and sink.requeued == [] and sink.failures == []
    assert server.connections == 2  # four before


def test_what_waits_behind_an_answer_that_never_comes_goes_back_with_it():
    started = time.monotonic()
    done, sink, server = run(lambda path: None if path == "/hung" else OK, ["/hung", "/behind"], timeout=0.5, cap=2)
    assert done == [] and sorted(sink.requeued) == ["fallback /behind", "fallback /hung"]
    assert server.connections == 1
    assert 0.5 <= time.monotonic() - started < 3
