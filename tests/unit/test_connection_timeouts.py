"""Connections against a local socket that takes requests and never answers: the
watch ends an overdue exchange, and a punctual one is left alone."""

from __future__ import annotations

import threading
import time

import pytest
from loopback import OK, Late, LoopbackServer

from kubectl_unfinalize.net.connections import Connections, Endpoint, reason
from kubectl_unfinalize.net.wire import header_lines


@pytest.fixture
def server():
    """The loopback server answering /b half a second late, /never never, and the rest at once."""
    answers = {"/b": Late(0.5, OK), "/never": None}
    with LoopbackServer(lambda method, path: answers.get(path, OK)) as loopback:
        yield loopback.url


def test_an_exchange_past_its_timeout_fails_as_a_timeout(server):
    connections = Connections(Endpoint(server))
    started = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        connections.send("GET", "/never", None, header_lines([]), timeout=0.3)
    assert 0.3 <= time.monotonic() - started < 2
    assert reason(info.value) == "timed out"
    connections.close()


def test_an_answer_slower_than_the_watch_but_within_its_timeout_keeps_its_connection(server):
    connections = Connections(Endpoint(server))  # /b: five looks of the watch
    for path in ("/a", "/b", "/c"):
        assert connections.send("GET", path, None, header_lines([]), timeout=5).data == b"{}"
    assert len(connections._all) == 1
    connections.close()


def test_close_wakes_an_exchange_under_way(server):
    connections = Connections(Endpoint(server))
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
