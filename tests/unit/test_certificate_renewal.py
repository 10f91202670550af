"""An exec plugin's client certificate renewed during a run: new connections present the
new pair and older ones serve no further request; a 401, or a TLS alert saying the
certificate expired (a server or proxy that checks client certificates in the handshake),
renews it once and the request goes again. Against a TLS server of the test's own that
verifies client certificates and answers with the name in the one presented (the API
server, which answers 401 to an expired one: tests/integration/test_credentials.py)."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from loopback import LoopbackServer
from pki import client_certificate, self_signed_ca

from kubectl_unfinalize.errors import Unauthorized
from kubectl_unfinalize.kube.credentials import PluginCredential
from kubectl_unfinalize.kube.exec_plugin import ExecCredential
from kubectl_unfinalize.kube.pem_files import pem_files
from kubectl_unfinalize.kube.transport import Transport
from kubectl_unfinalize.net.connections import Connections, Endpoint, Response


class Server:
    """HTTPS on 127.0.0.1 requiring a client certificate of `ca`; answers 200 with the
    certificate's CN, or 401 to the names in `refused`. Counts connections."""

    def __init__(self, directory: Path, ca: Path) -> None:
        self.cert, key = directory / "server.crt", directory / "server.key"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(self.cert),
                "-days",
                "1",
                "-subj",
                "/CN=server",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip  (its own CA: the client trusts it alone)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(self.cert, key)
        self.context.load_verify_locations(ca)
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.refused: set[str] = set()
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.listener.accept()
                self.connections += 1
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), self.context.wrap_socket(conn, server_side=True) as tls:
            name = dict(item[0] for item in tls.getpeercert()["subject"])["commonName"]
            while tls.recv(65536):
                status = b"401 Unauthorized" if name in self.refused else b"200 OK"
                body = json.dumps({"name": name}).encode()
                tls.sendall(b"HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body))


class Plugin:
    """An exec plugin giving a new certificate each run: `names` in turn, each valid
    `life` seconds from now (a negative life: expired already)."""

    command = "get-cert"

    def __init__(self, ca: Path, directory: Path, names: list[str], life: float) -> None:
        self.ca, self.directory, self.names, self.life, self.runs = ca, directory, names, life, 0

    def run(self) -> ExecCredential:
        name = self.names[min(self.runs, len(self.names) - 1)]
        self.runs += 1
        now = time.time()
        start, end = (now - 60, now + self.life) if self.life > 0 else (now - 120, now + self.life)
        cert, key = client_certificate(self.ca, self.directory, name, start, end)
        return ExecCredential(None, cert, key, end)


@pytest.fixture
def ca(tmp_path):
    path = tmp_path / "ca.crt"
    self_signed_ca(path)
    return path


def connect(server: Server, plugin: Plugin) -> tuple[Transport, PluginCredential]:
    """What kube/config.py builds: the first certificate in the TLS context, the renewed
    ones handed to the connections."""
    credential = PluginCredential(plugin, 'of kubeconfig user "u"')  # type: ignore[arg-type]
    credential.current()

    def context(cert: bytes, key: bytes) -> ssl.SSLContext:
        made = ssl.create_default_context(cafile=server.cert)
        with pem_files(cert_data=cert, key_data=key) as (cert_file, key_file):
            made.load_cert_chain(cert_file, key_file)
        return made

    assert credential.certificate is not None and credential.key is not None
    connections = Connections(Endpoint(server.url, context(credential.certificate, credential.key)))
    credential.on_certificate = lambda cert, key: connections.renew_tls(context(cert, key))
    return Transport(server.url, connections, credential), credential


def name(transport: Transport) -> str:
    return str(transport.request("GET", "/who", idempotent=True)["name"])


def test_a_certificate_is_renewed_before_its_expiry_and_new_connections_present_it(tmp_path, ca):
    server = Server(tmp_path, ca)
    plugin = Plugin(ca, tmp_path / "issued", ["first", "second"], life=1.2)  # renewed after 1 s
    transport, _ = connect(server, plugin)
    assert [name(transport), name(transport)] == ["first", "first"]
    assert (plugin.runs, server.connections) == (1, 1)
    time.sleep(1.1)
    assert [name(transport), name(transport)] == ["second", "second"]
    assert (plugin.runs, server.connections) == (2, 2)  # the old connection served no further request


def test_a_401_to_a_certificate_renews_it_once_and_the_request_goes_again(tmp_path, ca):
    server = Server(tmp_path, ca)
    server.refused = {"first"}
    plugin = Plugin(ca, tmp_path / "issued", ["first", "second"], life=3600)
    transport, _ = connect(server, plugin)
    assert name(transport) == "second"
    assert plugin.runs == 2


def test_a_certificate_refused_even_when_renewed_is_a_lasting_401(tmp_path, ca):
    server = Server(tmp_path, ca)
    server.refused = {"first", "second"}
    plugin = Plugin(ca, tmp_path / "issued", ["first", "second"], life=3600)
    transport, _ = connect(server, plugin)
    with pytest.raises(Unauthorized) as info:
        name(transport)
    assert plugin.runs == 2 and "obtained again after a 401 and refused too" in info.value.credential


def test_an_expired_certificate_refused_in_the_handshake_is_renewed_and_the_request_sent_again(tmp_path, ca):
    """The server's alert (certificate expired) reaches the client, or is lost to the
    request the client wrote meanwhile (an end of stream): either way, the certificate's
    expirationTimestamp has passed."""
    server = Server(tmp_path, ca)
    plugin = Plugin(ca, tmp_path / "issued", ["expired", "fresh"], life=-60)
    transport, credential = connect(server, plugin)
    plugin.life = 3600  # the next one is valid
    assert name(transport) == "fresh"
    assert plugin.runs == 2 and server.connections == 2


def test_connections_opened_before_a_renewal_are_not_lent_given_or_resumed():
    server = LoopbackServer(lambda method, path: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    connections = Connections(Endpoint(server.url))
    connections.send("GET", "/", None, b"", 5.0)
    old = connections.open_wire(5.0)
    connections.lend()
    connections.renew_tls(ssl.create_default_context())
    connections.give(old)  # opened before: closed, not kept
    fresh = connections.open_wire(5.0)
    assert old.sock.fileno() == -1 and fresh.generation == 1
    connections.give(fresh)
    connections.send("GET", "/", None, b"", 5.0)
    assert server.connections == 3  # the lent one was closed, the new one given back served
    connections.close()
    server.close()


class AlertOnce:
    """Connections whose first exchange meets the TLS alert for an expired certificate."""

    def __init__(self) -> None:
        self.sent = 0

    def send(self, *args: object, **kwargs: object) -> Response:
        self.sent += 1
        if self.sent == 1:
            alert = ssl.SSLError(1, "[SSL: SSLV3_ALERT_CERTIFICATE_EXPIRED] sslv3 alert certificate expired")
            alert.reason = "SSLV3_ALERT_CERTIFICATE_EXPIRED"
            raise alert
        return Response(200, "OK", {}, b'{"name": "again"}')

    def close(self) -> None:
        pass


def test_after_the_alert_even_a_request_not_sent_twice_otherwise_goes_again(tmp_path, ca):
    """The handshake was refused: the server never read the request."""
    plugin = Plugin(ca, tmp_path / "issued", ["first", "second"], life=3600)
    credential = PluginCredential(plugin, "")  # type: ignore[arg-type]
    credential.current()
    connections = AlertOnce()
    transport = Transport("https://127.0.0.1:1", connections, credential)  # type: ignore[arg-type]
    assert transport.request("POST", "/reviews", body={}) == {"name": "again"}
    assert (connections.sent, plugin.runs) == (2, 2)
