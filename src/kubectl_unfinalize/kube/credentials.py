"""The run's credential: the Authorization header each request carries, and its renewal.

Credentials as client-go treats them (facts relied on, from client-go's exec plugin
authenticator and its cached file token source):
- An exec plugin's answer is kept until its `expirationTimestamp`, and without one until
  the API server answers 401. One run at a time (a lock guards the plugin), and after a
  401 the plugin runs again only if the credential that request carried is still the one
  kept: the requests of one wave of 401s share one run.
- A token file is read again once its last read is a minute old, less ten seconds of
  leeway, and after a 401 to a request sent with a token read before it. A failed re-read
  keeps the token read last.
client-go does not send the refused request again; here, every verb is idempotent and a
401 is an answer (nothing was applied), so the transport sends it once more with the
renewed credential. The kubernetes Python client counts a credential with less than five
minutes left as expired: a plugin giving 15-minute tokens ran for most requests. Here the
margin is ten seconds, or a quarter of the credential's life when that is shorter.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from . import kuberc
from .exec_plugin import ExecPlugin

REREAD = 50.0  # seconds: token files and auth providers are read again this often
MARGIN = 10.0  # seconds before its expirationTimestamp an exec credential is renewed
AFTER_FAILURE = 5.0  # seconds a kept credential serves after a renewal failed, before the next try
MIN_LIFE = 1.0  # an exec credential given already expired (a skewed clock) still serves this long

Fetch = Callable[[], tuple[str | None, "float | None"]]  # (the Authorization header, expiry: epoch seconds)


@dataclass(eq=False)
class Token:
    """An Authorization header as obtained once. Compared by identity: a request's 401
    renews the credential only while the token it carried is still the one kept."""

    header: str | None
    obtained: float  # time.monotonic() then
    fresh_until: float = float("inf")  # after this, current() obtains another
    cert: bytes | None = None  # the client certificate that came with it (an exec plugin's)
    expires: float | None = None  # its expirationTimestamp (time.time()), if it had one


class Credential:
    """A fixed header (or none: a client certificate), never renewed: --token, a
    kubeconfig's token, basic auth. A 401 to it is lasting. `whose` and `how` name it in
    the error a lasting 401 becomes."""

    renewable = False

    def __init__(self, header: str | None, whose: str, how: str) -> None:
        self._token = Token(header, 0.0)
        self.whose = whose
        self.how = how

    def current(self) -> Token:
        return self._token

    def renew(self, refused: Token) -> Token:
        """A token to send the request refused with `refused` again with."""
        return self._token

    def describe(self, renewed: bool = False, failure: str = "") -> str:
        """Whose credentials and how obtained, for Unauthorized: 'of kubeconfig user "u" (token file /t)'."""
        how = self.how
        if failure:
            how += f"; obtaining a new one failed: {failure}"
        elif renewed:
            how += ", obtained again after a 401 and refused too"
        return f"{self.whose} ({how})".strip()


class Renewed(Credential):
    """Obtained by `fetch` (run the plugin, read the file), kept until its expiry less the
    margin, or for `period` seconds when it has none (token files, auth providers; None:
    until a 401). Thread-safe: one fetch at a time, and those waiting reuse its result."""

    renewable = True

    def __init__(
        self,
        fetch: Fetch,
        whose: str,
        how: str,
        period: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(None, whose, how)
        self._fetch = fetch
        self._period = period
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._kept: Token | None = None
        self.fetches = 0  # how many times it was obtained
        self.certificate: bytes | None = None  # `fetch` sets it when it gives a client certificate

    def current(self) -> Token:
        kept = self._kept
        if kept is not None and self._clock() < kept.fresh_until:
            return kept
        with self._lock:
            kept = self._kept
            if kept is not None and self._clock() < kept.fresh_until:
                return kept
            try:
                return self._obtain()
            except ConfigError:
                if kept is None:
                    raise  # nothing to go on with: the first request fails with it
                kept.fresh_until = self._clock() + AFTER_FAILURE  # a 401 will say whether it still serves
                return kept

    def renew(self, refused: Token) -> Token:
        """After a 401 to a request sent with `refused`: the kept token when another request
        has renewed it since (or it expired and was replaced), else a new one, obtained now.
        Raises ConfigError when it cannot be obtained."""
        with self._lock:
            kept = self._kept
            if kept is not None and kept is not refused and self._clock() < kept.fresh_until:
                return kept
            return self._obtain()

    def _obtain(self) -> Token:
        header, expires = self._fetch()
        self.fetches += 1
        now = self._clock()
        token = Token(header, now, cert=self.certificate, expires=expires)
        if expires is not None:
            life = expires - self._wall()
            token.fresh_until = now + max(life - min(MARGIN, life / 4), MIN_LIFE)
        elif self._period is not None:
            token.fresh_until = now + self._period
        self._kept = token
        return token


def bearer(token: str | None) -> str | None:
    return f"Bearer {token}" if token else None


def token_file(path: str, whose: str, how: str = "") -> Renewed:
    """A token read from `path` now and again (a kubeconfig's tokenFile, the in-cluster
    service-account token the kubelet rotates)."""

    def read() -> tuple[str | None, float | None]:
        try:
            with open(path, encoding="utf-8") as handle:
                token = handle.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the token file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not token:
            raise ConfigError(f"the token file {path} is empty")
        return bearer(token), None

    credential = Renewed(read, whose, how or f"token file {path}", period=REREAD)
    credential.current()  # a missing or empty file is a configuration error before the first request
    return credential


class PluginCredential(Renewed):
    """An exec plugin's credential: a token, a client certificate and key, or both, renewed
    as Renewed says (before its expirationTimestamp, after a 401, and by the transport
    after a TLS alert saying the certificate expired). A new certificate goes to
    `on_certificate` (new connections present it) before the token it came with is kept,
    so no request is sent with that token over a connection of the old certificate."""

    def __init__(self, plugin: ExecPlugin, whose: str) -> None:
        first = plugin.run()
        how = f"exec plugin {plugin.command}" + ("" if first.token else " (client certificate)")
        super().__init__(self._run, whose, how)
        self._plugin = plugin
        self._answers = [first]
        self.key: bytes | None = None
        self.on_certificate: Callable[[bytes, bytes], None] | None = None

    def _run(self) -> tuple[str | None, float | None]:
        answer = self._answers.pop() if self._answers else self._plugin.run()
        if answer.cert and answer.key and (answer.cert, answer.key) != (self.certificate, self.key):
            if self.certificate is not None and self.on_certificate is not None:
                self.on_certificate(answer.cert, answer.key)
            self.certificate, self.key = answer.cert, answer.key
        return bearer(answer.token), answer.expires


def exec_credential(plugin: ExecPlugin, whose: str) -> tuple[Credential, bytes | None, bytes | None]:
    """The plugin's credential, run once now, and the client certificate and key it gave
    (for the TLS context)."""
    credential = PluginCredential(plugin, whose)
    credential.current()
    return credential, credential.certificate, credential.key


def user_credential(
    name: str,
    user: dict[str, Any],
    base: str,
    cluster: dict[str, Any],
    flag_token: str | None = None,
    certificate: bool = False,
    *,
    warn: Callable[[str], None],
) -> tuple[Credential, bytes | None, bytes | None] | None:
    """The credential of kubeconfig user `name` (its entry `user`, from a file in
    directory `base`) and the command line, with client-go's precedence: a token
    (--token, else the user's), else its tokenFile, else basic auth or an auth provider
    (None: the kubernetes client loads them); its exec plugin only without any of those
    and without a client certificate and key (`certificate`: the user's or
    --client-certificate and --client-key), so a credential given on the command line
    replaces the plugin, which is not run. Also the client certificate and key an exec
    plugin gave. A user kubectl refuses (an exec plugin and an auth provider; a token and
    basic auth) is refused in its words."""
    whose = f'of kubeconfig user "{name}"' if name else ""
    plugin = user.get("exec")
    if isinstance(plugin, dict) and user.get("auth-provider"):
        raise ConfigError(f"authProvider cannot be provided in combination with an exec plugin for {name}")
    token = flag_token or str(user.get("token") or "")
    if token and (user.get("username") or user.get("password")):
        raise ConfigError(
            f"more than one authentication method found for {name}; found [token basicAuth], only one is allowed"
        )
    if token:
        return (
            Credential(bearer(token), whose, "token from --token" if flag_token else "token in the kubeconfig"),
            None,
            None,
        )
    if user.get("tokenFile"):
        return token_file(os.path.join(base, str(user["tokenFile"])), whose), None, None
    if user.get("username") or user.get("auth-provider"):
        return None
    if isinstance(plugin, dict) and not certificate:
        return exec_credential(ExecPlugin(plugin, base, cluster, kuberc.load(warn)), whose)
    return Credential(None, whose, "client certificate" if certificate else "no credentials"), None, None
