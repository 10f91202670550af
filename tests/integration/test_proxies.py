"""kubectl's proxy rules, side by side with kubectl: through the tests' own CONNECT proxy
(controlplane/connect_proxy.py, every tunnel ends on 127.0.0.1), the tool goes through the
proxy exactly when kubectl does, for static and exec-plugin kubeconfigs alike.

Server names the tests use, none needing DNS: `kube.test` (reachable only through the
proxy, which maps it to 127.0.0.1), a name the hosts file gives 127.0.0.1 (reachable
directly too), and 0.0.0.0 (Linux connects it to this machine; not a loopback address, so
NO_PROXY decides, where 127.0.0.1 and `localhost` never use the environment's proxy). The
serving certificate has none of them: each kubeconfig's `tls-server-name` names a SAN it has.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from controlplane.connect_proxy import ConnectProxy

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY")
SAN = "kubernetes"  # in the API server's certificate (controlplane.py)


@pytest.fixture
def port(control_plane) -> int:
    return control_plane.server_address[1]


@pytest.fixture
def proxy():
    with ConnectProxy() as running:
        yield running


@pytest.fixture
def make_kubeconfig(kubeconfig, tmp_path):
    """make_kubeconfig(server, user="static"|"exec", **cluster fields) -> path: the test
    kubeconfig with another server (and tls-server-name), its client certificate given
    either as data or by an exec plugin (the EKS/GKE/AKS kind of kubeconfig)."""
    count = iter(range(100))

    def make(server: str, user: str = "static", **cluster: str) -> str:
        data = yaml.safe_load(Path(kubeconfig).read_text())
        entry = data["clusters"][0]["cluster"]
        entry.update({"server": server, "tls-server-name": SAN, **cluster})
        if user == "exec":
            data["users"][0]["user"] = exec_plugin(data["users"][0]["user"], tmp_path)
        path = tmp_path / f"kubeconfig-{next(count)}"
        path.write_text(yaml.safe_dump(data))
        return str(path)

    return make


def exec_plugin(static_user: dict, directory: Path) -> dict:
    """An exec credential plugin printing the static user's client certificate and key
    (the test cluster authenticates by certificate, not by token)."""
    status = {
        "clientCertificateData": base64.b64decode(static_user["client-certificate-data"]).decode(),
        "clientKeyData": base64.b64decode(static_user["client-key-data"]).decode(),
    }
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}
    script = directory / "credential-plugin.py"
    script.write_text(f"print({json.dumps(json.dumps(credential))})\n")
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


@dataclass
class Run:
    result: subprocess.CompletedProcess[str]
    targets: list[str]  # the CONNECT targets it asked of the proxies
    connections: int  # TCP connections the proxies accepted from it, HTTP or not


@pytest.fixture
def both(bin_dir, unfinalize_cmd, cli_env, namespace):
    """both(kubeconfig, proxies, **env) -> {"tool": Run, "kubectl": Run}: the tool reading the
    test's namespace (`ns NAME`, which changes nothing there), then `kubectl get --raw
    /version`, each with no proxy variables but `env`'s."""
    base = {k: v for k, v in cli_env.items() if k not in PROXY_VARIABLES}

    def run(path: str, proxies: list[ConnectProxy], **env: str) -> dict[str, Run]:
        commands = {
            "tool": [*unfinalize_cmd, "--kubeconfig", path, "ns", namespace],
            "kubectl": [os.path.join(bin_dir, "kubectl"), "--kubeconfig", path, "get", "--raw", "/version"],
        }
        seen = {}
        for who, command in commands.items():
            targets, accepted = [len(p.targets) for p in proxies], sum(p.accepted for p in proxies)
            result = subprocess.run(
                [*command, "--request-timeout=20s"], env=dict(base, **env), capture_output=True, text=True, timeout=120
            )
            asked = [t for p, n in zip(proxies, targets, strict=True) for t in p.targets[n:]]
            seen[who] = Run(result, asked, sum(p.accepted for p in proxies) - accepted)
        return seen

    return run


def assert_both_work(seen: dict[str, Run], targets: set[str]) -> None:
    """Both succeeded; through the proxies exactly to `targets` (none: directly)."""
    for who, run in seen.items():
        assert run.result.returncode == 0, (who, run.result.stdout, run.result.stderr)
        assert set(run.targets) == targets, (who, run.targets)
        assert bool(run.connections) == bool(targets), (who, run.connections)


def hosts_file_name() -> str:
    """A name other than localhost that /etc/hosts gives 127.0.0.1: resolved with no DNS."""
    hosts = Path("/etc/hosts")
    for line in hosts.read_text().splitlines() if hosts.exists() else []:
        fields = line.split("#")[0].split()
        if fields and fields[0] == "127.0.0.1":
            for name in fields[1:]:
                if name != "localhost" and not name.startswith("localhost."):
                    return name
    message = (
        "no name other than localhost has 127.0.0.1 in /etc/hosts"
        " (add one, e.g. '127.0.0.1 kube.test', to run this case)"
    )
    if os.environ.get("CI"):  # a case CI would otherwise never run
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


# --------------------------------------------------------------------------- the environment


@pytest.mark.parametrize("user", ["static", "exec"])
def test_https_proxy_is_taken_for_every_kubeconfig(both, make_kubeconfig, proxy, port, user):
    path = make_kubeconfig(f"https://kube.test:{port}", user)
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url), {f"kube.test:{port}"})


def test_lowercase_and_scheme_less_proxy_values_are_read_as_go_reads_them(both, make_kubeconfig, proxy, port):
    path = make_kubeconfig(f"https://kube.test:{port}")
    bare = proxy.url.removeprefix("http://")
    assert_both_work(both(path, [proxy], HTTPS_PROXY="", https_proxy=bare), {f"kube.test:{port}"})


def test_http_proxy_is_not_for_https_servers(both, make_kubeconfig, proxy, port):
    path = make_kubeconfig(f"https://{hosts_file_name()}:{port}")
    assert_both_work(both(path, [proxy], HTTP_PROXY=proxy.url), set())


def test_loopback_servers_never_take_the_environments_proxy(both, make_kubeconfig, proxy, port):
    for host in ("127.0.0.1", "localhost"):
        path = make_kubeconfig(f"https://{host}:{port}")
        assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url), set())


@pytest.mark.parametrize("user", ["static", "exec"])
def test_no_proxy_by_name(both, make_kubeconfig, proxy, port, user):
    name = hosts_file_name()
    path = make_kubeconfig(f"https://{name}:{port}", user)
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url), {f"{name}:{port}"})  # reachable through the proxy
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY=f"other.test, {name.upper()}"), set())
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, no_proxy=f"{name}:{port}"), set())
    # a leading dot means subdomains only, another port is another entry
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY=f".{name}"), {f"{name}:{port}"})
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY=f"{name}:1"), {f"{name}:{port}"})


def test_no_proxy_by_cidr_and_address(both, make_kubeconfig, proxy, port):
    path = make_kubeconfig(f"https://0.0.0.0:{port}")
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url), {f"0.0.0.0:{port}"})
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY="10.0.0.0/8,0.0.0.0/8"), set())
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY="0.0.0.0"), set())
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY="10.0.0.0/8,::/0"), {f"0.0.0.0:{port}"})


def test_no_proxy_star(both, make_kubeconfig, proxy, port):
    path = make_kubeconfig(f"https://{hosts_file_name()}:{port}")
    assert_both_work(both(path, [proxy], HTTPS_PROXY=proxy.url, NO_PROXY="*"), set())


# --------------------------------------------------------------------------- proxy-url


@pytest.mark.parametrize("user", ["static", "exec"])
def test_proxy_url_is_taken_for_every_request_loopback_included(both, make_kubeconfig, proxy, port, user):
    path = make_kubeconfig(f"https://127.0.0.1:{port}", user, **{"proxy-url": proxy.url})
    assert_both_work(both(path, [proxy], NO_PROXY="*"), {f"127.0.0.1:{port}"})


def test_proxy_url_wins_over_the_environment(both, make_kubeconfig, proxy, port):
    with ConnectProxy() as environment:
        path = make_kubeconfig(f"https://kube.test:{port}", **{"proxy-url": proxy.url})
        seen = both(path, [proxy, environment], HTTPS_PROXY=environment.url)
    assert_both_work(seen, {f"kube.test:{port}"})
    assert environment.accepted == 0


# --------------------------------------------------------------------------- credentials


def test_a_credentialed_proxy(both, make_kubeconfig, port):
    user, password = "tester", "p@ss:w rd/%"
    with ConnectProxy(credentials=(user, password)) as proxy:
        url = f"http://{quote(user)}:{quote(password, safe='')}@127.0.0.1:{proxy.port}"
        path = make_kubeconfig(f"https://kube.test:{port}")
        assert_both_work(both(path, [proxy], HTTPS_PROXY=url), {f"kube.test:{port}"})
        assert not proxy.refused
        assert set(proxy.authorization) == {"Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

        path = make_kubeconfig(f"https://kube.test:{port}", **{"proxy-url": url})
        assert_both_work(both(path, [proxy]), {f"kube.test:{port}"})


def test_a_proxy_refusing_the_tunnel_is_one_line_naming_it(both, make_kubeconfig, port):
    with ConnectProxy(credentials=("tester", "right")) as proxy:
        url = f"http://tester:wrong@127.0.0.1:{proxy.port}"
        seen = both(make_kubeconfig(f"https://kube.test:{port}"), [proxy], HTTPS_PROXY=url)
    kubectl, tool = seen["kubectl"].result, seen["tool"].result
    assert kubectl.returncode != 0 and "Proxy Authentication Required" in kubectl.stderr, kubectl.stderr
    assert tool.returncode == 1, (tool.stdout, tool.stderr)
    err = tool.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"proxy http://127.0.0.1:{proxy.port}: refused the tunnel to kube.test:{port}: 407" in err, err
    assert "wrong" not in err
    assert proxy.refused and not proxy.targets


# --------------------------------------------------------------------------- refused schemes


@pytest.mark.parametrize("scheme", ["socks5", "socks5h", "https"])
@pytest.mark.parametrize("where", ["HTTPS_PROXY", "proxy-url"])
def test_an_unsupported_scheme_is_one_line_exit_2_and_nothing_is_sent(
    both, make_kubeconfig, proxy, port, scheme, where
):
    url = f"{scheme}://127.0.0.1:{proxy.port}"
    if where == "proxy-url":
        seen = both(make_kubeconfig(f"https://kube.test:{port}", **{"proxy-url": url}), [proxy])
    else:
        seen = both(make_kubeconfig(f"https://kube.test:{port}"), [proxy], HTTPS_PROXY=url)
    tool, kubectl = seen["tool"].result, seen["kubectl"].result
    assert tool.returncode == 2, (tool.stdout, tool.stderr)
    err = tool.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    field = "HTTPS_PROXY" if where == "HTTPS_PROXY" else "proxy-url"
    assert field in err and f"{scheme}:// proxies are not supported, only http:// proxies are" in err, err
    assert seen["tool"].connections == 0
    # kubectl goes to that proxy (speaking SOCKS or TLS to it, so it fails here) or refuses it too: never around it
    assert kubectl.returncode != 0
    if where == "proxy-url" and scheme == "socks5h":
        assert 'unsupported scheme "socks5h"' in kubectl.stderr and not seen["kubectl"].connections
    else:
        assert seen["kubectl"].connections >= 1, kubectl.stderr
    assert not proxy.targets
