"""kubectl's proxy rules (proxies.py), the same for every kind of kubeconfig, and the
CONNECT tunnel (connections.Endpoint) against a local socket playing the proxy."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import sys
import threading

import pytest
import yaml

from kubectl_unfinalize.errors import ConfigError, ExitStatus
from kubectl_unfinalize.kube.config import ConnectionOptions, connect
from kubectl_unfinalize.kube.proxies import excluded, proxy_for
from kubectl_unfinalize.net.connections import Endpoint, NotSent, reason

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------- NO_PROXY


@pytest.mark.parametrize(
    ("server", "no_proxy", "bypass"),
    [
        # names: the name itself and its subdomains, never a longer name
        ("https://kube.example.com", "example.com", True),
        ("https://example.com", "example.com", True),
        ("https://notexample.com", "example.com", False),
        ("https://KUBE.Example.COM:6443", "example.com", True),  # case does not matter
        ("https://kube.example.com", "EXAMPLE.com", True),
        # a leading dot or *. : subdomains only (golang.org/x/net/http/httpproxy's Config.NoProxy)
        ("https://kube.example.com", ".example.com", True),
        ("https://example.com", ".example.com", False),
        ("https://kube.example.com", "*.example.com", True),
        ("https://example.com", "*.example.com", False),
        # the list: commas, spaces, empty entries
        ("https://kube.test", " other.test , , kube.test ", True),
        ("https://kube.test", "other.test,test.kube", False),
        # ports: an entry with a port matches that port only; the URL's port defaults by scheme
        ("https://kube.test:6443", "kube.test:6443", True),
        ("https://kube.test:6443", "kube.test:443", False),
        ("https://kube.test", "kube.test:443", True),
        ("http://kube.test", "kube.test:80", True),
        ("https://10.1.2.3:6443", "10.1.2.3:6443", True),
        ("https://10.1.2.3:6443", "10.1.2.3:443", False),
        ("https://[2001:db8::1]:6443", "[2001:db8::1]:6443", True),
        ("https://[2001:db8::1]:6443", "[2001:db8::1]:443", False),
        # IP addresses and CIDRs, v4 and v6; a CIDR matches every port
        ("https://10.1.2.3:6443", "10.1.2.3", True),
        ("https://10.1.2.3:6443", "10.1.2.4", False),
        ("https://10.1.2.3:6443", "10.0.0.0/8", True),
        ("https://10.1.2.3:6443", "10.1.2.3/32", True),
        ("https://11.1.2.3:6443", "10.0.0.0/8", False),
        ("https://[2001:db8::1]:6443", "2001:db8::/32", True),
        ("https://[2001:db8::1]:6443", "2001:db8::1", True),
        ("https://[2001:db9::1]:6443", "2001:db8::/32", False),
        ("https://10.1.2.3", "::/0", False),  # another family never matches
        ("https://[::ffff:10.1.2.3]", "10.0.0.0/8", True),  # a v4-mapped address is its v4 address
        # names and addresses do not mix: a CIDR or IP entry never matches a name, a name never an IP
        ("https://kube.test", "0.0.0.0/0", False),
        ("https://10.1.2.3", "2.3", False),
        ("https://10.1.2.3", "10.0.0.0/255.0.0.0", False),  # no netmask form
        # *: everything
        ("https://kube.test", "*", True),
        ("https://10.1.2.3", "other.test,*", True),
        # localhost and loopback addresses never use the environment's proxy, whatever NO_PROXY says
        ("https://localhost:6443", "", True),
        ("https://127.0.0.1:6443", "", True),
        ("https://127.3.2.1:6443", "", True),
        ("https://[::1]:6443", "", True),
        ("https://LOCALHOST:6443", "", False),  # Go compares the name exactly
        ("https://kube.test", "", False),
        ("https://0.0.0.0:6443", "", False),  # not a loopback address
        ("https://0.0.0.0:6443", "0.0.0.0/8", True),
    ],
)
def test_no_proxy_as_go_reads_it(server, no_proxy, bypass):
    assert excluded(server, no_proxy) is bypass


# --------------------------------------------------------------------------- which proxy


def test_https_servers_take_https_proxy_and_http_servers_http_proxy():
    env = {"HTTPS_PROXY": "http://secure:3128", "HTTP_PROXY": "http://plain:3128"}
    assert proxy_for("https://kube.test:6443", environ=env) == "http://secure:3128"
    assert proxy_for("http://kube.test:8080", environ=env) == "http://plain:3128"
    assert proxy_for("https://kube.test:6443", environ={"HTTP_PROXY": "http://plain:3128"}) is None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:1"}, "http://upper:1"),
        ({"HTTPS_PROXY": "", "https_proxy": "http://lower:1"}, "http://lower:1"),  # empty is unset
        ({"https_proxy": "http://lower:1"}, "http://lower:1"),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "kube.test"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "", "no_proxy": "kube.test"}, None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.test", "no_proxy": "kube.test"}, "http://p:1"),
        ({"HTTPS_PROXY": "socks5://p:1", "NO_PROXY": "kube.test"}, None),  # not used, so not refused
    ],
)
def test_uppercase_first_and_empty_as_unset(env, expected):
    assert proxy_for("https://kube.test:6443", environ=env) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("proxy.corp:3128", "http://proxy.corp:3128"),  # no scheme: http://
        ("127.0.0.1:3128", "http://127.0.0.1:3128"),
        ("proxy.corp", "http://proxy.corp"),
        ("HTTP://proxy.corp:3128/", "http://proxy.corp:3128"),
        ("http://user:p%40ss@proxy.corp:3128", "http://user:p%40ss@proxy.corp:3128"),  # credentials kept as written
        ("http://[::1]:3128", "http://[::1]:3128"),
    ],
)
def test_proxy_values_as_go_reads_them(value, expected):
    assert proxy_for("https://kube.test", environ={"HTTPS_PROXY": value}) == expected


def test_the_kubeconfig_proxy_url_wins_for_every_server():
    env = {"HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"}
    for server in ("https://kube.test:6443", "https://127.0.0.1:6443", "https://localhost", "http://[::1]:8080"):
        assert proxy_for(server, "http://kubeconfig:3128", environ=env) == "http://kubeconfig:3128"
    assert proxy_for("https://kube.test", "http://kubeconfig:3128", environ={}) == "http://kubeconfig:3128"


@pytest.mark.parametrize("scheme", ["socks5", "socks5h", "https", "ftp"])
def test_other_proxy_schemes_are_refused_naming_the_variable(scheme):
    with pytest.raises(ConfigError) as info:
        proxy_for("https://kube.test", environ={"https_proxy": f"{scheme}://user:secret@p:1080"})
    message = str(info.value)
    assert (
        message == f"https_proxy {scheme}://***@p:1080: {scheme}:// proxies are not supported, only http:// proxies are"
    )
    assert info.value.exit_status == ExitStatus.USAGE


@pytest.mark.parametrize(
    ("proxy_url", "needle"),
    [
        ("socks5://p:1080", "socks5:// proxies are not supported, only http:// proxies are"),
        ("https://p:3128", "https:// proxies are not supported"),
        ("p:3128", "p:// proxies are not supported"),  # kubectl too: proxy-url needs a scheme
    ],
)
def test_other_proxy_url_schemes_are_refused_naming_the_field(proxy_url, needle):
    with pytest.raises(ConfigError) as info:
        proxy_for("https://kube.test", proxy_url, environ={})
    assert str(info.value).startswith(f"the kubeconfig's proxy-url {proxy_url}: ") and needle in str(info.value)


@pytest.mark.parametrize(
    ("value", "needle"),
    [("http://p:port", "HTTPS_PROXY http://p:port: invalid port"), ("http://[::1", "HTTPS_PROXY: invalid proxy URL")],
)
def test_a_proxy_that_cannot_be_read_is_refused_not_bypassed(value, needle):
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[")):
        proxy_for("https://kube.test", environ={"HTTPS_PROXY": value})


def test_http_proxy_is_refused_in_a_cgi_environment_as_go_does():
    env = {"HTTP_PROXY": "http://p:1", "REQUEST_METHOD": "GET", "HTTPS_PROXY": "http://s:1"}
    with pytest.raises(ConfigError, match="REQUEST_METHOD"):
        proxy_for("http://kube.test", environ=env)
    assert proxy_for("https://kube.test", environ=env) == "http://s:1"


# --------------------------------------------------------------------------- every kind of kubeconfig


def write_kubeconfig(path, server, user, cluster_extra=None):
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": server, **(cluster_extra or {})}}],
        "users": [{"name": "u", "user": user}],
    }))  # fmt: skip
    return str(path)


def exec_user(tmp_path):
    """An exec plugin (the EKS/GKE/AKS kind of kubeconfig): this Python printing a token."""
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "x"}}
    script = tmp_path / "credential.py"
    script.write_text(f"print({json.dumps(json.dumps(credential))})\n")
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(script)]}}


@pytest.fixture(params=["static", "exec"])
def user(request, tmp_path):
    return {"token": "t0"} if request.param == "static" else exec_user(tmp_path)


def endpoint_proxy(options):
    with contextlib.closing(connect(options)) as transport:
        return transport.connections.endpoint.proxy


def test_every_kubeconfig_takes_the_environment_with_no_proxy(tmp_path, monkeypatch, user):
    path = write_kubeconfig(tmp_path / "kc", "https://kube.test:6443", user)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.corp:3128")
    assert endpoint_proxy(ConnectionOptions(kubeconfig=path)) == "http://proxy.corp:3128"
    monkeypatch.setenv("no_proxy", "10.0.0.0/8,.test")
    assert endpoint_proxy(ConnectionOptions(kubeconfig=path)) is None
    assert endpoint_proxy(ConnectionOptions(kubeconfig=path, server="https://kube.example:6443")) is not None
    assert endpoint_proxy(ConnectionOptions(kubeconfig=path, server="https://10.2.3.4:6443")) is None


def test_every_kubeconfig_takes_its_proxy_url(tmp_path, monkeypatch, user):
    path = write_kubeconfig(tmp_path / "kc", "https://127.0.0.1:6443", user, {"proxy-url": "http://a%20b:c@p:3128"})
    monkeypatch.setenv("NO_PROXY", "*")
    assert endpoint_proxy(ConnectionOptions(kubeconfig=path)) == "http://a%20b:c@p:3128"


def test_an_unsupported_proxy_is_refused_by_connect_for_every_kubeconfig(tmp_path, monkeypatch, user):
    path = write_kubeconfig(tmp_path / "kc", "https://kube.test:6443", user)
    monkeypatch.setenv("HTTPS_PROXY", "socks5h://127.0.0.1:1080")
    with pytest.raises(ConfigError, match=r"^HTTPS_PROXY socks5h://127\.0\.0\.1:1080: socks5h:// proxies are not"):
        connect(ConnectionOptions(kubeconfig=path))
    path = write_kubeconfig(tmp_path / "kc2", "https://kube.test:6443", user, {"proxy-url": "socks5://127.0.0.1:1"})
    with pytest.raises(ConfigError, match="^the kubeconfig's proxy-url socks5://"):
        connect(ConnectionOptions(kubeconfig=path))


def test_in_cluster_config_takes_the_environment(in_cluster, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert endpoint_proxy(ConnectionOptions()) == "http://proxy.corp:3128"
    monkeypatch.setenv("NO_PROXY", "10.96.0.0/12")  # the service network, as clusters set it
    assert endpoint_proxy(ConnectionOptions()) is None


# --------------------------------------------------------------------------- the tunnel


@pytest.fixture
def fake_proxy():
    """A socket that reads one CONNECT head, records it, and answers `answer[0]`."""
    listener = socket.create_server(("127.0.0.1", 0))
    heads: list[bytes] = []
    answer = [b"HTTP/1.1 200 Connection established\r\n\r\n"]

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                head = b""
                while b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
                    head += chunk
                heads.append(head)
                conn.sendall(answer[0])
                conn.recv(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], heads, answer
    listener.close()
    thread.join(5)


def test_the_tunnel_names_its_target_with_the_port_and_sends_decoded_credentials(fake_proxy):
    port, heads, _ = fake_proxy
    endpoint = Endpoint("http://kube.test", proxy=f"http://us%40er:p%3Ass%20w@127.0.0.1:{port}")
    endpoint.open(5).close()
    lines = heads[0].decode().split("\r\n")
    assert lines[0] == "CONNECT kube.test:80 HTTP/1.1"  # the port is required in CONNECT's target
    assert "Host: kube.test:80" in lines
    token = base64.b64encode(b"us@er:p:ss w").decode()
    assert f"Proxy-Authorization: Basic {token}" in lines


def test_no_credentials_no_proxy_authorization(fake_proxy):
    port, heads, _ = fake_proxy
    Endpoint("http://[2001:db8::1]:8080", proxy=f"http://127.0.0.1:{port}").open(5).close()
    assert heads[0].startswith(b"CONNECT [2001:db8::1]:8080 HTTP/1.1\r\n")
    assert b"proxy-authorization" not in heads[0].lower()


@pytest.mark.parametrize("status", [b"407 Proxy Authentication Required", b"403 Forbidden", b"502 Bad Gateway"])
def test_a_refused_tunnel_is_one_line_naming_the_proxy_without_its_password(fake_proxy, status):
    port, _, answer = fake_proxy
    answer[0] = b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n"
    with pytest.raises(NotSent) as info:
        Endpoint("https://kube.test:6443", proxy=f"http://user:secret@127.0.0.1:{port}").open(5)
    assert reason(info.value) == (
        f"proxy http://127.0.0.1:{port}: refused the tunnel to kube.test:6443: {status.decode()}"
    )


def test_a_proxy_that_is_not_there_is_named():
    with socket.create_server(("127.0.0.1", 0)) as unused:
        port = unused.getsockname()[1]
    with pytest.raises(NotSent) as info:
        Endpoint("https://kube.test:6443", proxy=f"http://u:secret@127.0.0.1:{port}").open(5)
    assert reason(info.value).startswith(f"proxy http://127.0.0.1:{port}: ")
    assert "secret" not in reason(info.value)


def test_an_endpoint_never_tunnels_through_another_kind_of_proxy():
    with pytest.raises(ValueError, match="socks5"):
        Endpoint("https://kube.test", proxy="socks5://127.0.0.1:1080")


def test_the_rules_import_nothing_of_the_package_but_errors():
    import ast

    import kubectl_unfinalize.kube.proxies as module

    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    relative = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
    absolute = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    absolute |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    assert relative == {"errors"}
    assert not {name for name in absolute if name.split(".")[0] not in sys.stdlib_module_names}
