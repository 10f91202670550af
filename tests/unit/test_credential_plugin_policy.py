"""The kuberc's credential plugin policy, read and applied as kubectl 1.36 does (the
integration tests compare with kubectl itself: tests/integration/test_kuberc.py)."""

from __future__ import annotations

import pytest

from kubectl_unfinalize.errors import ConfigError
from kubectl_unfinalize.kube import kuberc
from kubectl_unfinalize.kube.exec_plugin import ExecPlugin

HEAD = "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n"
PLUGIN = """#!/bin/sh
echo ran >> {marker}
echo '{{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {{"token": "t"}}}}'
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty HOME and no KUBERC: no kuberc at all."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBERC", raising=False)
    return tmp_path / "home"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def plugin(directory, name="get-token"):
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / name
    script.write_text(PLUGIN.format(marker=directory / "runs"))
    script.chmod(0o755)
    return script


def test_no_kuberc_kuberc_off_and_an_empty_file_set_no_policy(home, tmp_path, monkeypatch):
    assert kuberc.load(pytest.fail) is None
    write(home / ".kube" / "kuberc", HEAD + "credentialPluginPolicy: DenyAll\n")
    assert kuberc.load(pytest.fail).kind == "DenyAll"
    monkeypatch.setenv("KUBERC", "off")
    assert kuberc.load(pytest.fail) is None
    monkeypatch.setenv("KUBERC", write(tmp_path / "empty", "\n---\n"))
    assert kuberc.load(pytest.fail) is None


def test_kuberc_names_the_file_and_a_missing_one_is_an_error(home, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERC", write(tmp_path / "rc", HEAD + "credentialPluginPolicy: Allowlist\n"
                                       "credentialPluginAllowlist: [{command: /bin/a}, {name: b}]\n"))  # fmt: skip
    policy = kuberc.load(pytest.fail)
    assert (policy.kind, policy.allowlist, policy.source) == ("Allowlist", ("/bin/a", "b"), str(tmp_path / "rc"))
    monkeypatch.setenv("KUBERC", str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match=rf"^kuberc: open {tmp_path}/nope: no such file or directory$"):
        kuberc.load(pytest.fail)


def test_a_default_kuberc_without_usable_preferences_is_a_warning_and_no_policy(home, monkeypatch):
    write(home / ".kube" / "kuberc", "kind: Foo\n")
    warned = []
    assert kuberc.load(warned.append) is None
    assert warned == [
        f"kuberc: no preferences loaded from {home}/.kube/kuberc: no valid preferences found in"
        f" {home}/.kube/kuberc (document 1: not a kubectl.config.k8s.io Preference (apiVersion (none), kind Foo))"
    ]
    monkeypatch.setenv("KUBERC", str(home / ".kube" / "kuberc"))
    with pytest.raises(ConfigError, match="^kuberc: no valid preferences found in"):
        kuberc.load(pytest.fail)


def test_the_first_usable_document_serves_and_unknown_fields_are_a_warning(home):
    write(home / ".kube" / "kuberc", "apiVersion: v1\nkind: Foo\n---\n" + HEAD + "credentialPluginPolicy: 5\n---\n"
          + HEAD + "credentialPluginPolicy: DenyAll\nextra: 1\n")  # fmt: skip
    warned = []
    assert kuberc.load(warned.append).kind == "DenyAll"
    assert warned == [
        f'kuberc: ignoring strict decoding error in {home}/.kube/kuberc: strict decoding error: unknown field "extra"'
    ]


def test_a_policy_in_a_v1alpha1_preference_is_not_read_as_kubectl_does_not(home):
    write(home / ".kube" / "kuberc", "apiVersion: kubectl.config.k8s.io/v1alpha1\nkind: Preference\n"
          "credentialPluginPolicy: DenyAll\n")  # fmt: skip
    warned = []
    assert kuberc.load(warned.append) is None
    assert warned[0].endswith('unknown field "credentialPluginPolicy"')


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("credentialPluginPolicy: denyall\n", 'unknown plugin policy: "denyall"'),
        ("credentialPluginPolicy: AllowAll\ncredentialPluginAllowlist: []\n",
         'misconfigured credential plugin allowlist: plugin policy is "AllowAll" but allowlist is non-nil'),
        ("credentialPluginPolicy: Allowlist\n",
         'credential plugin policy set to "Allowlist", but allowlist is unspecified'),
        ("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: []\n",
         'credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead'),
        ("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: [{}]\n",
         "misconfigured credential plugin allowlist: empty allowlist entry #1"),
        ("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: [{name: /a//b}]\n",
         'non-normalized file path: "/a//b" vs "/a/b"'),
        ("aliases: [{name: g1, command: get}]\n", "invalid alias name, can only include alphabetical characters"),
    ],
)  # fmt: skip
def test_an_invalid_policy_ends_the_run_in_kubectls_words(home, body, problem):
    path = write(home / ".kube" / "kuberc", HEAD + body)
    with pytest.raises(ConfigError) as info:
        kuberc.load(pytest.fail)
    assert str(info.value) == f"kuberc {path}: {problem}"


def policy(kind, *allowlist):
    return kuberc.PluginPolicy(kind, allowlist, "/home/u/.kube/kuberc")


def test_deny_all_refuses_every_plugin_naming_it_the_policy_and_the_file():
    with pytest.raises(ConfigError) as info:
        policy("DenyAll").check("/opt/bin/get-token")
    assert str(info.value) == (
        'getting credentials: plugin "/opt/bin/get-token" not allowed: policy set to "DenyAll"'
        " (credentialPluginPolicy in kuberc /home/u/.kube/kuberc)"
    )


def test_an_allowlist_entry_matches_the_full_path_or_the_name_path_resolves(tmp_path, monkeypatch):
    script = plugin(tmp_path / "bin")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert policy("Allowlist", str(script)).check(str(script)) == str(script)
    with pytest.raises(ConfigError, match=f'plugin path "{script}" is not permitted by the credential plugin'):
        policy("Allowlist", "get-token").check(str(script))  # get-token is not on PATH
    monkeypatch.setenv("PATH", f"/usr/bin:{script.parent}")
    assert policy("Allowlist", "get-token").check(str(script)) == str(script)
    assert policy("Allowlist", str(script)).check("get-token") == str(script)  # the kubeconfig's bare name
    with pytest.raises(ConfigError, match="is not permitted"):
        policy("Allowlist", "other", "/usr/bin/get-token").check(str(script))


def test_a_plugin_that_cannot_be_resolved_is_refused_unless_listed_verbatim(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as info:
        policy("Allowlist", "other").check("get-token")
    assert str(info.value).startswith(
        'getting credentials: plugin path "get-token" cannot be resolved for credential plugin allowlist check:'
        ' exec: "get-token": executable file not found in $PATH'
    )
    assert policy("Allowlist", "get-token").check("get-token") == "get-token"  # then it fails to start


def test_a_refused_plugin_is_never_started(tmp_path, monkeypatch):
    script = plugin(tmp_path / "bin")
    config = {"apiVersion": "client.authentication.k8s.io/v1", "command": "bin/get-token", "interactiveMode": "Never"}
    with pytest.raises(ConfigError, match="DenyAll"):
        ExecPlugin(config, str(tmp_path), None, policy("DenyAll")).run()
    assert not (tmp_path / "bin" / "runs").exists()
    assert ExecPlugin(config, str(tmp_path), None, policy("Allowlist", str(script))).run().token == "t"
    assert (tmp_path / "bin" / "runs").read_text() == "ran\n"
