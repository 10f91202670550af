"""Credentials as client-go treats them (pure logic, a fake clock): an exec credential kept
until its expirationTimestamp less a small margin, token files read again every minute,
renewals after a 401 shared by the requests that wait for them; and exec plugins run for
real (small scripts)."""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from kubectl_unfinalize.errors import ConfigError
from kubectl_unfinalize.kube import credentials
from kubectl_unfinalize.kube.credentials import MARGIN, REREAD, Renewed, token_file
from kubectl_unfinalize.kube.exec_plugin import ExecCredential, ExecPlugin


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0  # monotonic
        self.epoch = 1_700_000_000.0  # wall

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.epoch + self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Plugin:
    """A fetch that counts its runs, each giving a new token living `life` seconds (None: no expiry)."""

    def __init__(self, clock: Clock, life: float | None = None, delay: float = 0.0) -> None:
        self.clock, self.life, self.delay, self.runs = clock, life, delay, 0
        self.lock = threading.Lock()

    def __call__(self) -> tuple[str | None, float | None]:
        with self.lock:
            self.runs += 1
            run = self.runs
        time.sleep(self.delay)
        return f"Bearer t{run}", None if self.life is None else self.clock.wall() + self.life


def renewed(plugin: Plugin, clock: Clock, period: float | None = None) -> Renewed:
    return Renewed(plugin, 'of kubeconfig user "u"', "exec plugin p", period, clock.monotonic, clock.wall)


@pytest.mark.parametrize(("life", "kept"), [(15.0, 15.0 * 3 / 4), (14 * 60.0, 14 * 60.0 - MARGIN)])
def test_an_exec_credential_is_kept_until_its_expiry_less_a_small_margin(life, kept):
    """Not five minutes (the kubernetes client's margin, which made a 15-minute token
    expired for most of its life): ten seconds, or a quarter of a short life."""
    clock = Clock()
    plugin = Plugin(clock, life)
    credential = renewed(plugin, clock)
    first = credential.current()
    clock.advance(kept - 0.01)
    assert credential.current() is first and plugin.runs == 1
    clock.advance(0.02)
    assert credential.current().header == "Bearer t2" and plugin.runs == 2


def test_without_an_expiry_the_credential_is_kept_until_a_401():
    clock = Clock()
    plugin = Plugin(clock)
    credential = renewed(plugin, clock)
    first = credential.current()
    clock.advance(10 * 3600)
    assert credential.current() is first and plugin.runs == 1
    second = credential.renew(first)
    assert second.header == "Bearer t2" and credential.current() is second


def test_a_401_wave_shares_one_renewal():
    """Requests refused with the same token renew it once; one refused with the renewed
    token renews again (client-go's maybeRefreshCreds compares what the request carried)."""
    clock = Clock()
    plugin = Plugin(clock)
    credential = renewed(plugin, clock)
    first = credential.current()
    second = credential.renew(first)
    assert credential.renew(first) is second and plugin.runs == 2
    assert credential.renew(second).header == "Bearer t3" and plugin.runs == 3


def test_threads_refused_at_once_wait_for_one_plugin_run():
    clock = Clock()
    plugin = Plugin(clock, delay=0.2)
    credential = renewed(plugin, clock)
    first = credential.current()
    got: list[str | None] = []
    threads = [threading.Thread(target=lambda: got.append(credential.renew(first).header)) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert plugin.runs == 2 and got == ["Bearer t2"] * 32


def test_a_failed_renewal_keeps_the_credential_a_while_but_a_first_failure_is_an_error():
    clock = Clock()
    answers: list[object] = [("Bearer a", clock.wall() + 20), ConfigError("exec plugin p failed")]

    def fetch():
        answer = answers.pop(0) if answers else ConfigError("exec plugin p failed again")
        if isinstance(answer, Exception):
            raise answer
        return answer

    credential = Renewed(fetch, "", "exec plugin p", None, clock.monotonic, clock.wall)
    first = credential.current()
    clock.advance(20)
    assert credential.current() is first  # the next request's 401, if any, will tell
    with pytest.raises(ConfigError, match="failed again"):
        credential.renew(first)
    with pytest.raises(ConfigError, match="cannot be had"):
        Renewed(lambda: (_ for _ in ()).throw(ConfigError("cannot be had")), "", "x").current()


def test_a_token_file_is_read_again_every_minute_and_after_a_401(tmp_path):
    path = tmp_path / "token"
    path.write_text("one\n")
    credential = token_file(str(path), "")
    first = credential.current()
    assert first.header == "Bearer one" and credential.how == f"token file {path}"
    path.write_text("two")  # the kubelet rotates it
    assert credential.current() is first  # within the minute
    assert credential.renew(first).header == "Bearer two"  # a 401 reads it again
    path.write_text("three")
    clock = Clock()
    periodic = Renewed(credential._fetch, "", "token file", REREAD, clock.monotonic, clock.wall)
    assert periodic.current().header == "Bearer three"
    path.write_text("four")
    clock.advance(REREAD - 1)
    assert periodic.current().header == "Bearer three"
    clock.advance(1)
    assert periodic.current().header == "Bearer four"
    assert REREAD <= 60


def test_an_empty_or_missing_token_file_is_one_line(tmp_path):
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        token_file(str(tmp_path / "empty"), "")
    with pytest.raises(ConfigError, match="cannot read the token file .*missing"):
        token_file(str(tmp_path / "missing"), "")


def test_describe_names_the_user_and_how_the_credential_was_obtained():
    credential = renewed(Plugin(Clock()), Clock())
    assert credential.describe() == 'of kubeconfig user "u" (exec plugin p)'
    assert credential.describe(renewed=True).endswith("(exec plugin p, obtained again after a 401 and refused too)")
    assert credential.describe(failure="exit 1").endswith("(exec plugin p; obtaining a new one failed: exit 1)")


# -- exec plugins, run for real


def write_plugin(tmp_path, body: str, name: str = "plugin.py"):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n{body}\n")
    path.chmod(0o755)
    return path


def answer(status, api="client.authentication.k8s.io/v1"):
    return f"print(json.dumps({{'apiVersion': {api!r}, 'kind': 'ExecCredential', 'status': {status!r}}}))"


def test_a_plugin_gets_its_env_and_exec_info_and_its_expiry_is_read(tmp_path):
    expiry = (datetime.now(timezone.utc) + timedelta(minutes=14)).replace(microsecond=0)
    stamp = expiry.strftime("%Y-%m-%dT%H:%M:%S.123456789Z")  # RFC 3339 with nanoseconds
    body = (
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "open(sys.argv[1], 'w').write(json.dumps([info, os.environ['REGION']]))\n"
        + answer({"token": "tok", "expirationTimestamp": stamp})
    )
    plugin = write_plugin(tmp_path, body)
    seen = tmp_path / "seen.json"
    config = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(plugin),
        "args": [str(seen)],
        "env": [{"name": "REGION", "value": "eu-west-1"}],
        "interactiveMode": "Never",
        "provideClusterInfo": True,
    }
    cluster = {"server": "https://k.example", "certificate-authority-data": "Q0E=", "extensions": [
        {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k"}}]}  # fmt: skip
    got = ExecPlugin(config, str(tmp_path), cluster).run()
    assert got.token == "tok" and got.expires == pytest.approx(expiry.timestamp() + 0.123456, abs=1e-3)
    info, region = json.loads(seen.read_text())
    assert region == "eu-west-1" and info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {
        "server": "https://k.example", "certificate-authority-data": "Q0E=", "config": {"audience": "k"}}  # fmt: skip


def test_a_relative_command_is_found_beside_its_kubeconfig(tmp_path):
    (tmp_path / "bin").mkdir()
    write_plugin(tmp_path / "bin", answer({"token": "near"}, api="client.authentication.k8s.io/v1beta1"), "get-token")
    config = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "./bin/get-token"}
    assert ExecPlugin(config, str(tmp_path)).run() == ExecCredential("near")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("sys.stderr.write('first\\nlogin expired: run aws sso login\\n'); sys.exit(3)",
         "failed with exit code 3: login expired: run aws sso login"),
        ("print('not json')", "not an ExecCredential (not JSON)"),
        (answer({"token": "t"}, api="client.authentication.k8s.io/v1beta1"), "answered apiVersion"),
        (answer({}), "neither a token nor a client certificate"),
        (answer({"clientCertificateData": "c"}), "needs its key"),
        (answer({"token": "t", "expirationTimestamp": "soon"}), "expirationTimestamp 'soon' is not RFC 3339"),
    ],
)  # fmt: skip
def test_a_plugin_failure_is_one_line_naming_it(tmp_path, body, message):
    plugin = write_plugin(tmp_path, body)
    config = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}
    with pytest.raises(ConfigError) as info:
        ExecPlugin(config, str(tmp_path)).run()
    assert str(info.value).startswith(f"exec plugin {plugin}") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_missing_plugin_says_so_with_its_install_hint(tmp_path):
    config = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "no-such-plugin-anywhere",
        "installHint": "install it with\n  brew install no-such-plugin",
    }
    with pytest.raises(ConfigError, match=r"^exec plugin no-such-plugin-anywhere: executable not found \(install it"):
        ExecPlugin(config, str(tmp_path)).run()


def test_the_exec_credential_runs_the_plugin_once_at_start_then_on_renewal(tmp_path):
    runs = tmp_path / "runs"
    plugin = write_plugin(
        tmp_path, f"open({str(runs)!r}, 'a').write('.')\nn = len(open({str(runs)!r}).read())\n" + answer({"token": "x"})
    )
    config = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}
    credential, cert, key = credentials.exec_credential(ExecPlugin(config, str(tmp_path)), "")
    assert (cert, key) == (None, None) and runs.read_text() == "."
    first = credential.current()
    assert credential.current() is first and runs.read_text() == "."
    credential.renew(first)
    assert runs.read_text() == ".."
