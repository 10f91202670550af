"""The kuberc's credential plugin policy with kubectl 1.36 itself as the reference. For each
kuberc, kubectl and the tool are given the same kubeconfig, whose user's exec plugin (a
script that appends a line to a file at each run, and answers with the test admin's client
certificate) frees or reads nothing by itself: the tool must run it exactly when kubectl
does. When it does not, the tool sends nothing (no write in the audit log), exits 2, and its
one line names the policy, the kuberc and the plugin. Completion, which lists through the
API too, runs the plugin exactly then as well.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from crs import create, snapshot

HOLD = "unfinalize.test/hold"
HEAD = {"apiVersion": "kubectl.config.k8s.io/v1beta1", "kind": "Preference"}
PLUGIN = """#!{python}
import json
with open({runs!r}, "a") as f:
    f.write("ran\\n")
print(json.dumps({answer}))
"""
# name -> (the kuberc: None for none, "off" for KUBERC=off over a DenyAll default file;
#          the plugin's directory on PATH; kubectl runs the plugin)
CASES = {
    "deny-all": ({"credentialPluginPolicy": "DenyAll"}, False, False),
    "default-file-deny-all": ("default", False, False),
    "allowlist-without-it": ({"credentialPluginPolicy": "Allowlist",
                              "credentialPluginAllowlist": [{"name": "other-plugin"}]}, False, False),
    "allowlist-full-path": ({"credentialPluginPolicy": "Allowlist",
                             "credentialPluginAllowlist": [{"name": "{plugin}"}]}, False, True),
    "allowlist-basename-on-path": ({"credentialPluginPolicy": "Allowlist",
                                    "credentialPluginAllowlist": [{"command": "get-cred"}]}, True, True),
    "allowlist-basename-not-on-path": ({"credentialPluginPolicy": "Allowlist",
                                        "credentialPluginAllowlist": [{"command": "get-cred"}]}, False, False),
    "kuberc-off": ("off", False, True),
}  # fmt: skip


def _plugin(directory: Path, admin: dict) -> tuple[Path, Path]:
    """The plugin script and the file its runs are counted in."""
    directory.mkdir()
    runs, script = directory / "runs", directory / "get-cred"
    status = {
        "clientCertificateData": base64.b64decode(admin["client-certificate-data"]).decode(),
        "clientKeyData": base64.b64decode(admin["client-key-data"]).decode(),
    }
    answer = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}
    script.write_text(PLUGIN.format(python=sys.executable, runs=str(runs), answer=repr(answer)))
    script.chmod(0o755)
    return script, runs


def _runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("case", list(CASES))
def test_the_tool_runs_the_exec_plugin_exactly_when_kubectl_does(
    case, tmp_path, kubeconfig, bin_dir, cli, unfinalize_cmd, api_client, make_crd, namespace, audit
):
    rc, on_path, kubectl_runs_it = CASES[case]
    admin = yaml.safe_load(Path(kubeconfig).read_text())
    script, runs = _plugin(tmp_path / "bin", admin["users"][0]["user"])
    admin["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                          "command": str(script), "interactiveMode": "Never"}}  # fmt: skip
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump(admin))
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    env = {"HOME": str(home), "KUBERC": ""}  # empty: the default file
    if rc in ("default", "off"):
        (home / ".kube" / "kuberc").write_text(yaml.safe_dump({**HEAD, "credentialPluginPolicy": "DenyAll"}))
        env["KUBERC"] = "off" if rc == "off" else ""
        source = str(home / ".kube" / "kuberc")
    else:
        source = str(tmp_path / "kuberc")
        Path(source).write_text(json.dumps({**HEAD, **rc}).replace("{plugin}", str(script)))
        env["KUBERC"] = source
    if on_path:
        env["PATH"] = f"{script.parent}{os.pathsep}{os.environ['PATH']}"
    crd = make_crd(kind="Keyed")
    create(api_client, crd, "held", namespace, finalizers=[HOLD])

    full_env = dict(os.environ, **env, KUBECONFIG=str(config))
    done = subprocess.run(
        [os.path.join(bin_dir, "kubectl"), "get", crd.name, "-n", namespace, "-o", "name"],
        env=full_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    ran_in_kubectl = _runs(runs) > 0
    said = (done.stderr.strip().splitlines() or [""])[-1]
    print(f"\n[{case}] kubectl: exit {done.returncode}, plugin runs {_runs(runs)}: {said}")
    assert ran_in_kubectl == kubectl_runs_it, done.stderr  # the reference is as this table says
    assert (done.returncode == 0) == ran_in_kubectl, done.stderr

    runs.unlink(missing_ok=True)
    audit.mark()
    result = cli(crd.name, "held", "-n", namespace, "--kubeconfig", str(config), env=env)
    print(f"[{case}] tool: exit {result.returncode}, plugin runs {_runs(runs)}: {result.stderr.strip()}")
    assert (_runs(runs) > 0) == ran_in_kubectl, result.stderr
    runs.unlink(missing_ok=True)
    completion = subprocess.run(
        [*unfinalize_cmd, "__complete", crd.name, "-n", namespace, ""],
        env=full_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (_runs(runs) > 0) == ran_in_kubectl, completion.stderr  # completion asks the API too
    assert ("held" in completion.stdout.splitlines()) == ran_in_kubectl, completion.stdout
    if ran_in_kubectl:
        assert result.returncode == 0, result.stderr
        assert snapshot(api_client, crd)[(namespace, "held")][1] == ()
        return
    assert result.returncode == 2 and result.stdout == ""
    assert audit.writes() == []
    assert snapshot(api_client, crd)[(namespace, "held")][1] == (HOLD,)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: getting credentials: plugin"), result.stderr
    assert str(script) in lines[0] and f"kuberc {source})" in lines[0], lines[0]
    assert ('policy set to "DenyAll"' if "deny" in case else "credential plugin allowlist") in lines[0]
