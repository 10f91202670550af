"""Connection rules that need no cluster: kubeconfig precedence, flags, in-cluster."""

import pytest
import yaml
from pki import self_signed_ca

from kubectl_unfinalize.errors import ConfigError
from kubectl_unfinalize.kube.config import ConnectionOptions, connect


def kubeconfig(path, server, context="ctx", namespace=None, token="t0"):
    # kubectl keeps the first file's entry when names repeat: give each file its own names
    ctx = {"cluster": f"c-{context}", "user": f"u-{context}", **({"namespace": namespace} if namespace else {})}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": f"c-{context}", "cluster": {"server": server}}],
        "users": [{"name": f"u-{context}", "user": {"token": token}}],
        "contexts": [{"name": context, "context": ctx}],
    }))  # fmt: skip
    return str(path)


def test_multi_path_kubeconfig_takes_current_context_from_the_first_file(tmp_path, monkeypatch):
    first = kubeconfig(tmp_path / "a", "https://a.example:6443", context="first", namespace="team-a", token="ta")
    second = kubeconfig(tmp_path / "b", "https://b.example:6443", context="second", token="tb")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    t = connect(ConnectionOptions())
    assert (t.host, t.namespace, t.context) == ("https://a.example:6443", "team-a", "first")
    assert t.authorization() == "Bearer ta"
    t = connect(ConnectionOptions(context="second"))
    assert t.host == "https://b.example:6443" and t.authorization() == "Bearer tb"


def test_flags_override_the_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path / "a", "https://a.example:6443"))
    t = connect(ConnectionOptions(server="https://other:1", token="flag-token", as_user="me", as_groups=["g1", "g2"]))
    assert t.host == "https://other:1" and t.authorization() == "Bearer flag-token"
    assert t._impersonate == [("Impersonate-User", "me"), ("Impersonate-Group", "g1"), ("Impersonate-Group", "g2")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context": "nope"}, "context 'nope' not found in kubeconfig (available: ctx)"),
        ({"cluster": "nope"}, "cluster 'nope' not found in kubeconfig"),
        ({"user": "nope"}, "user 'nope' not found in kubeconfig"),
        ({"as_groups": ["g"]}, "--as-group requires --as"),
        ({"certificate_authority": "/nonexistent/ca.crt"}, "file not found: /nonexistent/ca.crt"),
    ],
)
def test_configuration_errors_are_one_line(tmp_path, monkeypatch, options, message):
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path / "a", "https://a.example:6443"))
    with pytest.raises(ConfigError) as info:
        connect(ConnectionOptions(**options))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_in_cluster_config_when_there_is_no_kubeconfig(in_cluster):
    t = connect(ConnectionOptions())
    assert (t.host, t.namespace, t.context) == ("https://10.96.0.1:443", "ci-jobs", "in-cluster")
    assert t.authorization().lower() == "bearer pod-token"  # the auth scheme is case-insensitive


def test_malformed_kubeconfig_is_one_line_with_file_and_line(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: [x\n")
    with pytest.raises(ConfigError) as info:
        connect(ConnectionOptions(kubeconfig=str(path)))
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(f"invalid kubeconfig: {path}:4: ")


@pytest.mark.parametrize("flag", ["certificate_authority", "client_certificate"])
def test_a_file_that_is_not_a_certificate_is_one_line(tmp_path, monkeypatch, flag):
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path / "a", "https://a.example:6443"))
    garbage = tmp_path / "not-a-cert.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    extra = {"client_key": str(garbage)} if flag == "client_certificate" else {}
    with pytest.raises(ConfigError, match=r"^invalid (certificate authority|client certificate or key) .*not-a-cert"):
        connect(ConnectionOptions(**{flag: str(garbage)}, **extra))


def test_user_is_honoured_with_server_when_the_context_names_no_cluster(tmp_path, monkeypatch):
    """Was silently ignored: --server returned before the user's credentials were loaded."""
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "users": [{"name": "admin", "user": {"token": "admin-token"}}],
        "contexts": [{"name": "bare", "context": {}}], "current-context": "bare",
    }))  # fmt: skip
    t = connect(ConnectionOptions(kubeconfig=str(path), server="https://s.example:6443", user="admin"))
    assert t.host == "https://s.example:6443" and t.authorization() == "Bearer admin-token"


def test_user_without_any_kubeconfig_is_refused_not_ignored(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="--user 'admin' needs a kubeconfig"):
        connect(ConnectionOptions(server="https://s.example:6443", user="admin"))


def test_every_run_has_a_deadline_with_or_without_delete():
    from kubectl_unfinalize.options import DEFAULT_TIMEOUT, Options

    assert Options().deadline_seconds == DEFAULT_TIMEOUT == Options(delete=True).deadline_seconds
    assert Options(timeout=7).deadline_seconds == 7


def test_static_credentials_are_loaded_without_importing_the_kubernetes_client(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    path = kubeconfig(tmp_path / "kc", "https://a.example:6443")
    code = (
        "import sys; from kubectl_unfinalize.kube.config import connect;"
        "from kubectl_unfinalize.options import ConnectionOptions;"
        f"t = connect(ConnectionOptions(kubeconfig={path!r})); token = t.authorization();"
        "assert token == 'Bearer t0', token;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'pydantic', 'requests')))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("user", "client"),
    [
        ({"auth-provider": {"name": "oidc"}}, True),
        ({"username": "u", "password": "p"}, True),
        ({"client-certificate": "relative/client.crt", "client-key": "relative/client.key"}, False),
    ],
)
def test_only_auth_providers_and_basic_auth_are_left_to_the_kubernetes_client(tmp_path, user, client):
    """Everything else, relative paths included, is resolved here, without the client."""
    from kubectl_unfinalize.kube.credentials import user_credential
    from kubectl_unfinalize.kube.kubeconfig import resolve

    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k.example"}}], "users": [{"name": "u", "user": user}],
    }))  # fmt: skip
    found = resolve(ConnectionOptions(), [str(path)])
    assert found is not None and found.user == user and found.server == "https://k.example"
    assert (user_credential(found.user_name, found.user, found.base, found.cluster, warn=pytest.fail) is None) == client
    if not client:
        assert (found.cert_file, found.key_file) == (
            f"{tmp_path}/relative/client.crt",
            f"{tmp_path}/relative/client.key",
        )


def test_each_relative_path_is_relative_to_the_file_that_names_it(tmp_path, monkeypatch):
    """As kubectl reads merged files: the cluster's CA beside the cluster's file, the
    user's token file beside the user's (the client's loader took both from the cluster's)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    self_signed_ca(tmp_path / "a" / "ca.crt")
    (tmp_path / "b" / "token").write_text("from-b")
    (tmp_path / "a" / "kc").write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k.example", "certificate-authority": "ca.crt"}}],
    }))  # fmt: skip
    (tmp_path / "b" / "kc").write_text(yaml.safe_dump({"users": [{"name": "u", "user": {"tokenFile": "token"}}]}))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a' / 'kc'}:{tmp_path / 'b' / 'kc'}")
    monkeypatch.chdir(tmp_path)
    t = connect(ConnectionOptions())
    assert t.authorization() == "Bearer from-b"
    assert t.credential.describe() == f'of kubeconfig user "u" (token file {tmp_path / "b" / "token"})'


@pytest.mark.parametrize(
    ("context", "cluster", "message"),
    [
        ({"cluster": "gone", "user": "u"}, {"server": "https://k"}, "cluster 'gone' of context 'c' not found"),
        ({"user": "u"}, {"server": "https://k"}, "context 'c' names no cluster; pass --cluster or --server"),
        ({"cluster": "k", "user": "u"}, {}, "cluster 'k' has no server in kubeconfig"),
    ],
)
def test_a_context_that_leads_nowhere_is_one_line(tmp_path, context, cluster, message):
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": context}],
        "clusters": [{"name": "k", "cluster": cluster}], "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    with pytest.raises(ConfigError, match=message):
        connect(ConnectionOptions(kubeconfig=str(path)))


def plugin_kubeconfig(tmp_path, user, cluster=None):
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "eks"}}],
        "clusters": [{"name": "k", "cluster": cluster or {"server": "https://k.example"}}],
        "users": [{"name": "eks", "user": user}],
    }))  # fmt: skip
    return str(path)


def counting_plugin(tmp_path):
    """An exec plugin that counts its runs in a file and gives token N on its Nth run."""
    import sys

    runs = tmp_path / "runs"
    plugin = tmp_path / "get-token"
    plugin.write_text(
        f"#!{sys.executable}\nimport json\nwith open({str(runs)!r}, 'a') as f: f.write('.')\n"
        f"n = len(open({str(runs)!r}).read())\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        " 'status': {'token': f'token-{n}'}}))\n"
    )
    plugin.chmod(0o755)
    exec_config = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "./get-token",
        "interactiveMode": "Never",
    }
    return exec_config, runs


def test_an_exec_plugin_is_run_by_the_tool_without_the_kubernetes_client(tmp_path):
    """Its credential is kept as client-go keeps it, which the client's loader does not."""
    import subprocess
    import sys
    from pathlib import Path

    exec_config, runs = counting_plugin(tmp_path)
    path = plugin_kubeconfig(tmp_path, {"exec": exec_config})
    code = (
        "import sys; from kubectl_unfinalize.kube.config import connect;"
        "from kubectl_unfinalize.options import ConnectionOptions;"
        f"t = connect(ConnectionOptions(kubeconfig={path!r})); token = t.authorization();"
        "assert token == 'Bearer token-1', token; assert t.credential.renewable;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'pydantic', 'requests')))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]" and runs.read_text() == "."


def test_beside_a_relative_certificate_authority_an_exec_plugin_and_a_token_file_are_the_tools(tmp_path):
    """The CA is read from beside the kubeconfig; the plugin is run once, and a relative
    tokenFile is read from beside the kubeconfig, again after a 401."""
    self_signed_ca(tmp_path / "ca.crt")
    exec_config, runs = counting_plugin(tmp_path)
    cluster = {"server": "https://k.example", "certificate-authority": "ca.crt"}
    t = connect(ConnectionOptions(kubeconfig=plugin_kubeconfig(tmp_path, {"exec": exec_config}, cluster)))
    assert t.authorization() == "Bearer token-1" and runs.read_text() == "."
    assert t.credential.describe() == 'of kubeconfig user "eks" (exec plugin ./get-token)'
    (tmp_path / "token").write_text("from-the-file")
    t = connect(ConnectionOptions(kubeconfig=plugin_kubeconfig(tmp_path, {"tokenFile": "token"}, cluster)))
    first = t.credential.current()
    assert first.header == "Bearer from-the-file"
    (tmp_path / "token").write_text("rotated")
    assert t.credential.renew(first).header == "Bearer rotated"


def test_the_in_cluster_token_is_read_again_after_a_401(in_cluster):
    t = connect(ConnectionOptions())
    first = t.credential.current()
    (in_cluster / "token").write_text("rotated by the kubelet")
    assert t.credential.renew(first).header == "Bearer rotated by the kubelet"
    assert t.credential.describe() == f"(in-cluster service-account token {in_cluster / 'token'})"


def test_a_relative_path_in_a_kubeconfig_the_client_loads_is_relative_to_that_file(tmp_path, monkeypatch):
    """As kubectl reads it, not relative to the working directory (the client's loader
    did that when handed the merged files)."""
    (tmp_path / "conf").mkdir()
    self_signed_ca(tmp_path / "conf" / "ca.crt")
    path = tmp_path / "conf" / "kc"
    path.write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k.example", "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u", "user": {"username": "u", "password": "p"}}],  # the client's to load
    }))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    t = connect(ConnectionOptions(kubeconfig=str(path)))
    assert t.host == "https://k.example" and t.authorization().startswith("Basic ")
