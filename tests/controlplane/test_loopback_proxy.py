"""The loopback proxy used by the benchmark and fault tests, against a local echo server."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from controlplane.proxy import LoopbackProxy


@pytest.fixture
def echo_port():
    """A threaded TCP echo server on 127.0.0.1; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            with contextlib.suppress(OSError):
                while data := conn.recv(65536):
                    conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


def roundtrip(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_bytes_pass_both_ways(echo_port):
    payload = bytes(range(256)) * 4096  # 1 MiB: several chunks, back pressure
    with LoopbackProxy("127.0.0.1", echo_port) as proxy:
        assert proxy.url == f"https://127.0.0.1:{proxy.port}"
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            sent = threading.Thread(target=sock.sendall, args=(payload,))
            sent.start()
            got = b""
            while len(got) < len(payload):
                got += sock.recv(65536)
            sent.join()
            assert got == payload
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(10) == b""  # the EOF goes through and comes back
        assert proxy.accepted == 1
        assert proxy.bytes_up == proxy.bytes_down == len(payload)


def test_delay_applies_each_way_without_adding_up(echo_port):
    delay = 0.1
    with LoopbackProxy("127.0.0.1", echo_port, delay=delay) as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            roundtrip(sock, b"warm-up")
            start = time.monotonic()
            assert roundtrip(sock, b"ping") == b"ping"
            one = time.monotonic() - start
            # ten chunks sent 10 ms apart are in flight together: ~2 delays + 90 ms, not 10 round trips
            start = time.monotonic()
            for i in range(10):
                sock.sendall(b"%d;" % i)
                time.sleep(0.01)
            expected = b"".join(b"%d;" % i for i in range(10))
            got = b""
            while len(got) < len(expected):
                got += sock.recv(100)
            many = time.monotonic() - start
    assert got == expected
    assert 1.5 * delay <= one <= 4 * delay
    assert many < 5 * delay


def test_reset_new_resets_the_next_connection(echo_port):
    with LoopbackProxy("127.0.0.1", echo_port) as proxy:
        proxy.reset_new(1)
        with pytest.raises(ConnectionResetError):  # on connect (the RST can beat it) or on first use
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
                roundtrip(sock, b"hello")
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            assert roundtrip(sock, b"hello") == b"hello"
        assert (proxy.accepted, proxy.resets) == (2, 1)


def test_reset_all_and_reset_after_bytes_cut_open_connections(echo_port):
    with LoopbackProxy("127.0.0.1", echo_port) as proxy:
        a = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        b = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        with a, b:
            assert roundtrip(a, b"a") == b"a"
            assert roundtrip(b, b"b") == b"b"
            assert proxy.reset_after_bytes(1, 3) == 1  # the oldest: a
            a.sendall(b"0123456789")
            got = b""
            with pytest.raises(ConnectionResetError):
                while chunk := a.recv(100):
                    got += chunk
            assert len(got) <= 3
            assert roundtrip(b, b"still") == b"still"
            assert proxy.reset_all() == 1
            with pytest.raises(ConnectionResetError):
                roundtrip(b, b"gone")
        assert proxy.resets == 2
