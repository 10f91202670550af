"""Connections against a local socket that takes requests and never answers: the
watch ends an overdue exchange, and a punctual one is left alone."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kubectl_unfinalize.connections import Connections, Endpoint, reason
from kubectl_unfinalize.wire import header_lines

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


@pytest.fixture
def server():
    """A listener whose connections answer only what the test puts in `answers`:
    (seconds to wait, bytes) for each request, in order."""
    listener = socket.create_server(("127.0.0.1", 0))
    answers: list[tuple[float, bytes]] = []
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    def answer(conn: socket.socket) -> None:
        while conn.recv(65536):
            if answers:
                delay, data = answers.pop(0)
                time.sleep(delay)
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", answers
    listener.close()
    for conn in accepted:
        conn.close()


def test_an_exchange_past_its_timeout_fails_as_a_timeout(server):
    url, _ = server
    connections = Connections(Endpoint(url))
    started = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        connections.send("GET", "/version", None, header_lines([]), timeout=0.3)
    assert 0.3 <= time.monotonic() - started < 2
    assert reason(info.value) == "timed out"
    connections.close()


def test_an_answer_slower_than_the_watch_but_within_its_timeout_keeps_its_connection(server):
    url, answers = server
    connections = Connections(Endpoint(url))
    answers += [(0.0, OK), (0.5, OK), (0.0, OK)]  # the second: five looks of the watch
    for path in ("/a", "/b", "/c"):
        assert connections.send("GET", path, None, header_lines([]), timeout=5).data == b"{}"
    assert len(connections._all) == 1
    connections.close()


def test_close_wakes_an_exchange_under_way(server):
    url, _ = server
    connections = Connections(Endpoint(url))
    failed: list[BaseException] = []

    def send() -> None:
        try:
            connections.send("GET", "/never", None, header_lines([]), timeout=60)
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    time.sleep(0.3)
    connections.close()
    thread.join(timeout=2)
    assert not thread.is_alive() and failed
