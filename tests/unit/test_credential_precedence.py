"""Which credential a kubeconfig user and the command line give, in client-go's order (as
kubectl 1.36 was seen to choose): a token (--token, else the user's), its tokenFile,
basic auth, an auth provider; the exec plugin only when none of those nor a client
certificate and key is there, so a command-line credential replaces it, unrun. The
integration test: tests/integration/test_credentials.py (--token over a failing plugin)."""

from __future__ import annotations

import base64

import pytest
import yaml
from pki import self_signed_ca

from kubectl_unfinalize.errors import ConfigError
from kubectl_unfinalize.kube.config import ConnectionOptions, connect

FAILING = "#!/bin/sh\necho ran >> {runs}\necho 'no login' >&2\nexit 3\n"


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """(write a kubeconfig with this user -> its path, the plugin's run count, a client certificate and key)."""
    monkeypatch.setenv("KUBERC", "off")
    plugin, runs = tmp_path / "get-token", tmp_path / "runs"
    plugin.write_text(FAILING.format(runs=runs))
    plugin.chmod(0o755)
    cert = tmp_path / "client.crt"
    self_signed_ca(cert)

    def kubeconfig(user: dict) -> str:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "ci"}}],
            "clusters": [{"name": "k", "cluster": {"server": "https://k.example:6443"}}],
            "users": [{"name": "ci", "user": user}],
        }))  # fmt: skip
        return str(path)

    def ran() -> int:
        return len(runs.read_text().splitlines()) if runs.exists() else 0

    exec_ = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}
    return kubeconfig, ran, exec_, (str(cert), str(cert) + ".key")


def test_token_flag_replaces_the_exec_plugin_which_is_not_run(setup):
    kubeconfig, ran, exec_, _ = setup
    t = connect(ConnectionOptions(kubeconfig=kubeconfig({"exec": exec_}), token="flag-token"))
    assert t.authorization() == "Bearer flag-token" and ran() == 0


def test_client_certificate_flags_replace_the_exec_plugin_which_is_not_run(setup):
    kubeconfig, ran, exec_, (cert, key) = setup
    t = connect(ConnectionOptions(kubeconfig=kubeconfig({"exec": exec_}), client_certificate=cert, client_key=key))
    assert t.authorization() is None and ran() == 0
    assert t.credential.how == "client certificate"


def test_the_users_own_token_file_or_certificate_replace_its_exec_plugin(setup, tmp_path):
    kubeconfig, ran, exec_, (cert, key) = setup
    (tmp_path / "token").write_text("file-token\n")
    t = connect(ConnectionOptions(kubeconfig=kubeconfig({"exec": exec_, "tokenFile": "token"})))
    assert t.authorization() == "Bearer file-token"
    data = {name: base64.b64encode(open(path, "rb").read()).decode() for name, path in (("c", cert), ("k", key))}
    user = {"exec": exec_, "client-certificate-data": data["c"], "client-key-data": data["k"]}
    assert connect(ConnectionOptions(kubeconfig=kubeconfig(user))).authorization() is None
    assert ran() == 0


def test_a_token_replaces_an_auth_provider_and_basic_auth_the_plugin(setup):
    kubeconfig, ran, exec_, _ = setup
    oidc = {"name": "oidc", "config": {"client-id": "x", "idp-issuer-url": "https://127.0.0.1:1"}}
    t = connect(ConnectionOptions(kubeconfig=kubeconfig({"auth-provider": oidc}), token="flag-token"))
    assert t.authorization() == "Bearer flag-token"  # the provider (which would fail here) is not asked
    t = connect(ConnectionOptions(kubeconfig=kubeconfig({"exec": exec_, "username": "u", "password": "p"})))
    assert t.authorization() == "Basic " + base64.b64encode(b"u:p").decode() and ran() == 0


def test_a_password_alone_is_not_basic_auth_and_the_plugin_runs(setup):
    kubeconfig, ran, exec_, _ = setup
    with pytest.raises(ConfigError, match="exec plugin .* failed with exit code 3: no login"):
        connect(ConnectionOptions(kubeconfig=kubeconfig({"exec": exec_, "password": "p"})))
    assert ran() == 1


@pytest.mark.parametrize(
    ("user", "flags", "message"),
    [
        ({"exec": "plugin", "auth-provider": {"name": "oidc"}}, {},
         "authProvider cannot be provided in combination with an exec plugin for ci"),
        ({"username": "u", "password": "p"}, {"token": "t"},
         "more than one authentication method found for ci; found [token basicAuth], only one is allowed"),
        ({"exec": "plugin"}, {"client_certificate": "cert"},
         "client-key-data or client-key must be specified for ci to use the clientCert authentication method."),
    ],
)  # fmt: skip
def test_users_kubectl_refuses_are_refused_in_its_words_before_any_plugin_runs(setup, user, flags, message):
    kubeconfig, ran, exec_, (cert, _) = setup
    user = {key: exec_ if value == "plugin" else value for key, value in user.items()}
    flags = {key: cert if value == "cert" else value for key, value in flags.items()}
    with pytest.raises(ConfigError) as info:
        connect(ConnectionOptions(kubeconfig=kubeconfig(user), **flags))
    assert str(info.value) == message and ran() == 0
