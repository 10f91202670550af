"""A thread done with its connection lends it: the next request of another thread takes
it instead of opening (on a far server, a handshake's round trip) its own."""

from __future__ import annotations

import threading
import time

from loopback import OK, LoopbackServer

from kubectl_unfinalize.net.connections import Connections, Endpoint


def _on_thread(connections: Connections, lend: bool = False) -> int:
    """A request's status, sent from a thread of its own; its exception raised here."""
    answers: list[int | BaseException] = []

    def send() -> None:
        try:
            answers.append(connections.send("GET", "/x", None, b"", 2.0).status)
        except BaseException as exc:  # noqa: BLE001 - raised again on the test's thread
            answers.append(exc)
        if lend:
            connections.lend()

    thread = threading.Thread(target=send)
    thread.start()
    thread.join()
    if isinstance(answers[0], BaseException):
        raise answers[0]
    return answers[0]


def test_a_lent_connection_serves_the_next_thread_and_stays_with_it_while_it_lives():
    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        assert connections.send("GET", "/resolve", None, b"", 2.0).status == 200
        connections.lend()
        took, go_on = threading.Event(), threading.Event()

        def borrower() -> None:
            connections.send("GET", "/x", None, b"", 2.0)
            took.set()
            go_on.wait(5)

        thread = threading.Thread(target=borrower)
        thread.start()
        assert took.wait(5)
        assert server.connections == 1  # the other thread took the lent one
        assert connections.send("GET", "/again", None, b"", 2.0).status == 200
        assert server.connections == 2  # the lender opens anew: it lent its own away
        go_on.set()
        thread.join()
        connections.close()


def test_connections_lent_by_short_lived_threads_are_reused_not_left_open_idle():
    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        for _ in range(3):
            assert _on_thread(connections, lend=True) == 200
        assert server.connections == 1
        connections.close()


def test_the_bulk_sender_does_not_take_a_lent_connection():
    """A far run opens the bulk sender's own at its start; a lent one is for the threads'
    first list or review."""
    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        assert connections.send("GET", "/resolve", None, b"", 2.0).status == 200
        connections.lend()
        wire = connections.open_wire(2.0)
        deadline = time.monotonic() + 5
        while server.connections < 2 and time.monotonic() < deadline:  # accepted on the server's thread
            time.sleep(0.01)
        assert server.connections == 2
        wire.close()
        assert _on_thread(connections) == 200
        assert server.connections == 2
        connections.close()


def test_nothing_is_opened_after_close():
    """A review asked ahead may still be retrying when the run ends (an unknown CRD, an
    unreachable server): it must not open a connection nobody will close."""
    import pytest

    from kubectl_unfinalize.net.connections import NotSent

    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        connections.close()
        with pytest.raises(NotSent):
            _on_thread(connections)
        assert server.connections == 0


def test_the_connection_of_a_thread_that_ended_serves_the_next_thread_that_has_none():
    """A list's read-ahead thread ends with its connection open; the main thread's wait
    for the deleted CRDs then took it instead of opening one after the last write."""
    with LoopbackServer(lambda method, path: OK) as server:
        connections = Connections(Endpoint(server.url))
        assert _on_thread(connections) == 200  # the thread ends without lending
        assert connections.send("GET", "/wait", None, b"", 2.0).status == 200
        assert server.connections == 1
        assert _on_thread(connections) == 200  # the main thread's own stays with it
        assert server.connections == 2
        connections.close()
