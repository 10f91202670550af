"""The TLS server name: ASCII names are verified as before without loading the idna codec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubectl_unfinalize.net.connections import ascii_bytes

SRC = str(Path(__file__).resolve().parents[2] / "src")

# A TLS server for "localhost" on a thread, and one request to it through Connections.
CLIENT = """
import socket, ssl, sys, threading
from kubectl_unfinalize.net.connections import Connections, Endpoint

cert, key, expect_ok = sys.argv[1], sys.argv[2], sys.argv[3] == "ok"
server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server_ctx.load_cert_chain(cert, key)
listener = socket.create_server(("127.0.0.1", 0))
port = listener.getsockname()[1]

def serve():
    conn, _ = listener.accept()
    try:
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
            tls.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
    except (ssl.SSLError, OSError):
        pass

threading.Thread(target=serve, daemon=True).start()
context = ssl.create_default_context(cafile=cert)
name = None if expect_ok else "other.example"
wire = None
try:
    wire = Endpoint(f"https://localhost:{port}", context, name).open(5.0)
    print("connected")
except Exception as exc:
    print("refused", type(exc).__name__, exc)
print("idna loaded" if "encodings.idna" in sys.modules else "idna not loaded")
"""


def _certificate(tmp_path):
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def _client(cert, key, mode):
    return subprocess.run(
        [sys.executable, "-c", CLIENT, str(cert), str(key), mode],
        capture_output=True, text=True, env={"PYTHONPATH": SRC}, timeout=60,
    ).stdout.splitlines()  # fmt: skip


def test_an_ascii_name_is_verified_without_the_idna_codec(tmp_path):
    cert, key = _certificate(tmp_path)
    assert _client(cert, key, "ok") == ["connected", "idna not loaded"]


def test_a_name_the_certificate_does_not_carry_is_still_refused(tmp_path):
    cert, key = _certificate(tmp_path)
    out = _client(cert, key, "mismatch")
    assert out[0].startswith("refused NotSent") and "other.example" in out[0], out


def test_a_non_ascii_name_is_left_to_ssl_and_its_idna_encoding():
    assert ascii_bytes("bücher.example") == "bücher.example"
    assert ascii_bytes("kube.example") == b"kube.example"
