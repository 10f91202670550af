"""A token webhook of the tests' own, on loopback: tokens that expire, that can be revoked.

kube-apiserver asks it (``--authentication-token-webhook-config-file``) whether a bearer
token is valid and who it is, with a TokenReview (authentication.k8s.io/v1). Tokens are
``USER.EXPIRY_MS.SIGNATURE``, signed with a secret this webhook writes to ``secret_file``,
so a credential plugin (a script a test writes) can issue them without asking anyone:
``make_token(secret, user, seconds)``. A token is accepted until its expiry, unless it or
its user was revoked. kube-apiserver keeps a success for SUCCESS_CACHE seconds (its own
token cache in front of every token authenticator, not configurable; this webhook's
cache is made shorter), a refusal not at all: a token used within SUCCESS_CACHE seconds
before it expired, or was revoked, is accepted until that answer is that old.

    webhook = TokenWebhook(workdir, groups={"alice": ["system:masters"]}).start()
    with ControlPlane(apiserver_args=webhook.flags()) as cp:
        token = make_token(webhook.secret, "alice", 15)
        ...
        webhook.revoke_user("alice")
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import secrets
import ssl
import subprocess
import threading
import time
from pathlib import Path

CACHE_TTL = "1s"  # --authentication-token-webhook-cache-ttl: the webhook authenticator's own cache
SUCCESS_CACHE = 10.0  # seconds kube-apiserver keeps a token's success anyway (TokenSuccessCacheTTL)


def make_token(secret: bytes, user: str, seconds: float) -> str:
    """A token for `user` valid `seconds` from now (user names must not contain dots)."""
    expiry = int((time.time() + seconds) * 1000)
    payload = f"{user}.{expiry}"
    return f"{payload}.{hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()}"


class TokenWebhook:
    """Call start() before the control plane (its flags name this server's port)."""

    def __init__(self, workdir: Path, groups: dict[str, list[str]] | None = None) -> None:
        self.workdir = Path(workdir)
        self.groups = dict(groups or {})  # the groups each user is in (default: none)
        self.secret = secrets.token_bytes(32)
        self.secret_file = self.workdir / "token-secret"
        self.config_file = self.workdir / "token-webhook.kubeconfig"
        self.revoked_users: set[str] = set()
        self.revoked_tokens: set[str] = set()
        self.accepted = 0
        self.rejected: dict[str, int] = {"expired": 0, "revoked": 0, "invalid": 0}
        self.lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None

    # -- control
    def start(self) -> TokenWebhook:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.secret_file.write_bytes(self.secret)
        cert, key = self.workdir / "webhook.crt", self.workdir / "webhook.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=token-webhook",
             "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        webhook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server spelling
                review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                status = webhook.review(str((review.get("spec") or {}).get("token") or ""))
                body = json.dumps(
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self._server = server
        threading.Thread(target=server.serve_forever, name="token-webhook", daemon=True).start()
        port = server.server_address[1]
        self.config_file.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters: [{{name: webhook, cluster: {{server: 'https://127.0.0.1:{port}/authenticate',"
            f" certificate-authority: '{cert}'}}}}]\n"
            "users: [{name: kube-apiserver, user: {}}]\n"
            "contexts: [{name: webhook, context: {cluster: webhook, user: kube-apiserver}}]\n"
            "current-context: webhook\n"
        )
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def flags(self) -> list[str]:
        return [
            f"--authentication-token-webhook-config-file={self.config_file}",
            "--authentication-token-webhook-version=v1",
            f"--authentication-token-webhook-cache-ttl={CACHE_TTL}",
        ]

    def revoke_user(self, user: str) -> None:
        with self.lock:
            self.revoked_users.add(user)

    def revoke(self, token: str) -> None:
        with self.lock:
            self.revoked_tokens.add(token)

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {"accepted": self.accepted, **self.rejected}

    # -- the review
    def review(self, token: str) -> dict:
        user, _, rest = token.partition(".")
        expiry, _, signature = rest.partition(".")
        good = hmac.new(self.secret, f"{user}.{expiry}".encode(), hashlib.sha256).hexdigest()
        with self.lock:
            if not expiry.isdigit() or not hmac.compare_digest(signature, good):
                why = "invalid"
            elif user in self.revoked_users or token in self.revoked_tokens:
                why = "revoked"
            elif int(expiry) <= time.time() * 1000:
                why = "expired"
            else:
                self.accepted += 1
                return {"authenticated": True, "user": {"username": user, "groups": self.groups.get(user, [])}}
            self.rejected[why] += 1
        return {"authenticated": False, "error": f"token {why}"}
