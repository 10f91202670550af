"""An HTTP CONNECT proxy for tests: it records what clients ask of it, and every tunnel
ends on 127.0.0.1, whatever host was asked for.

So a kubeconfig may name its server `kube.test` (a name no resolver knows) and both the
tool and kubectl reach the test API server through the proxy, and only through it: no
DNS, no traffic off the machine. Pure standard library, one thread per connection::

    with ConnectProxy(credentials=("user", "p@ss")) as proxy:
        env = {"HTTPS_PROXY": proxy.url}          # http://127.0.0.1:PORT
        ...
        proxy.targets       # ["kube.test:6443", ...]: every CONNECT that was let through
        proxy.refused       # CONNECTs answered 407 (missing or wrong credentials)
        proxy.authorization # every Proxy-Authorization header value received
        proxy.accepted      # TCP connections, HTTP or not (a SOCKS client counts)
"""

from __future__ import annotations

import base64
import contextlib
import socket
import threading

__all__ = ["ConnectProxy"]

_HEAD_LIMIT = 64 * 1024
_CHUNK = 64 * 1024


class ConnectProxy:
    def __init__(self, credentials: tuple[str, str] | None = None, timeout: float = 10.0) -> None:
        self.credentials = credentials
        self.timeout = timeout
        self.targets: list[str] = []
        self.refused: list[str] = []
        self.authorization: list[str] = []
        self.accepted = 0
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name="connect-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ConnectProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() that close() alone would leave blocked
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(5)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            self._track(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            client.settimeout(self.timeout)
            head, rest = self._read_head(client)
            if head is None:
                client.close()  # not HTTP (a SOCKS greeting, TLS): nothing to answer
                return
            request, *fields = head.decode("latin-1").split("\r\n")
            method, _, target = request.partition(" ")
            target = target.rpartition(" ")[0]
            headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields if f)}
            auth = headers.get("proxy-authorization")
            with self._lock:
                if auth is not None:
                    self.authorization.append(auth)
            if method != "CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                client.close()
                return
            if self.credentials and auth != self._expected():
                with self._lock:
                    self.refused.append(target)
                client.sendall(
                    b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\n'
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
                client.close()
                return
            port = int(target.rpartition(":")[2])
            upstream = socket.create_connection(("127.0.0.1", port), self.timeout)  # any host: this machine
            self._track(upstream)
            with self._lock:
                self.targets.append(target)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            client.settimeout(None)
            upstream.settimeout(None)
            if rest:
                upstream.sendall(rest)
            back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
            back.start()
            _pipe(client, upstream)
            back.join()
            upstream.close()
        client.close()

    def _read_head(self, client: socket.socket) -> tuple[bytes | None, bytes]:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(4096)
            if not chunk or (not data and not chunk[:1].isalpha()) or len(data) > _HEAD_LIMIT:
                return None, b""
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        return head, rest

    def _expected(self) -> str:
        user, password = self.credentials or ("", "")
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy until `src` ends, then end `dst`'s writing side so the other direction finishes too."""
    with contextlib.suppress(OSError):
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
