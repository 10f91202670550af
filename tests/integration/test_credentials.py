"""Credentials that expire during a run, on a control plane of this module's own whose API
server asks a token webhook of the tests' own (controlplane/token_webhook.py) about bearer
tokens: tokens live a few seconds, users and tokens can be revoked. The credential comes
from an exec plugin (a small Python script that counts its runs in a file) or a token
file, as cloud kubeconfigs and CI pods have them, or is a client certificate an exec
plugin has the control plane's CA sign for a few seconds at each run.

The runs go through a 3-seat priority level (API Priority and Fairness, rejecting what
does not fit), so that they last several token lifetimes. Not timing tests: the figures
go to the output (-s shows them); what is asserted is the outcome, and that the plugin ran
a number of times bounded by the token lifetimes the run lasted, not by its requests.
kube-apiserver keeps a token's success for 10 s (token_webhook.SUCCESS_CACHE) whatever
its expiry, so an expired token is refused 10 s after its first use at the earliest. The
runs free 3,000 objects (some 8-10 s here): 1,000 once took 3 s, too quick to meet a
token issued, or refused, seconds into the run.

The acceptance run of issue 27 (4,000 objects, 15-second tokens) is this module with
UNFINALIZE_CREDENTIALS_OBJECTS=4000 UNFINALIZE_CREDENTIALS_TOKEN_SECONDS=15.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import controlplane
import pytest
import yaml
from controlplane.token_webhook import SUCCESS_CACHE, TokenWebhook, make_token
from crdinfo import CrdInfo
from crs import create_many, snapshot
from pki import signing_folder
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
EXISTING_KUBECONFIG_ENV = "UNFINALIZE_TEST_KUBECONFIG"
OBJECTS = int(os.environ.get("UNFINALIZE_CREDENTIALS_OBJECTS", "3000"))
LIFE = float(os.environ.get("UNFINALIZE_CREDENTIALS_TOKEN_SECONDS", "5"))
SHORT_LIFE = 2.0  # seconds: the revocation test's tokens, so that one is issued after the revocation
# seconds: the client certificates' life; 3,000 objects took 9 s on a quiet machine, which
# must outlast two of them (5 s ones did not, and the test proved nothing)
CERT_LIFE = float(os.environ.get("UNFINALIZE_CREDENTIALS_CERT_SECONDS", "3"))
SEATS = int(os.environ.get("UNFINALIZE_CREDENTIALS_SEATS", "3"))
THROTTLED = "throttled"  # the group the webhook puts the tests' users in: RBAC and the 3-seat level
ADMIN = "ops-admin"  # a webhook user in system:masters, for the tests that need no throttling
HOLD = "unfinalize.test/hold"
NAMESPACES = ("creds-a", "creds-b")
RUN_TIMEOUT = "5m"
# a refusal the webhook explains (its status.error) counts as an error, one without as a failure
FAILED_AUTHENTICATIONS = ('authentication_attempts{result="failure"}', 'authentication_attempts{result="error"}')
PLUGIN = """\
#!{python}
import hashlib, hmac, json, time
from datetime import datetime, timezone
with open({runs!r}, "a") as f:
    f.write(f"{{time.time()}}\\n")
secret = open({secret!r}, "rb").read()
expiry = int((time.time() + {life!r}) * 1000)
payload = f"{user}.{{expiry}}"
status = {{"token": payload + "." + hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()}}
if {first!r} and len(open({runs!r}).read().splitlines()) == 1:
    status["token"] = {first!r}  # issued and used by the test before the run
if {with_expiry!r}:
    status["expirationTimestamp"] = datetime.fromtimestamp(expiry // 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}}))
"""


@dataclass
class Plane:
    cp: controlplane.ControlPlane
    webhook: TokenWebhook
    api: object
    command: list[str]
    env: dict[str, str]

    def kubectl(self, *args: str, input: str | None = None) -> str:
        done = subprocess.run(
            [os.path.join(self.cp.bin_dir, "kubectl"), "--kubeconfig", self.cp.kubeconfig, *args],
            input=input, text=True, capture_output=True, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout

    def refusals(self) -> int:
        """Requests the API server refused authentication so far (401s): its metric."""
        lines = self.kubectl("get", "--raw", "/metrics").splitlines()
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in lines if line.startswith(FAILED_AUTHENTICATIONS))

    def user(self, groups=(THROTTLED,)) -> str:
        name = f"u{secrets.token_hex(4)}"  # no dots: the webhook's tokens are USER.EXPIRY.SIGNATURE
        self.webhook.groups[name] = list(groups)
        return name

    def kubeconfig(self, tmp_path: Path, user: dict) -> str:
        """A kubeconfig for this control plane with `user` as its credentials."""
        admin = yaml.safe_load(Path(self.cp.kubeconfig).read_text())
        ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "k", "cluster": {"server": self.cp.server, "certificate-authority-data": ca}}],
            "users": [{"name": "ci", "user": user}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "ci"}}],
        }))  # fmt: skip
        return str(path)

    def plugin(self, tmp_path: Path, user: str, life: float, with_expiry: bool, first: str = "") -> tuple[dict, Path]:
        """An exec plugin issuing `user` a token living `life` seconds (`first` on its first
        run, when given); and the file its runs are counted in."""
        runs = tmp_path / "plugin-runs"
        script = tmp_path / "get-token"
        script.write_text(
            PLUGIN.format(python=sys.executable, runs=str(runs), secret=str(self.webhook.secret_file),
                          life=life, user=user, with_expiry=with_expiry, first=first)
        )  # fmt: skip
        script.chmod(0o755)
        config = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never"}
        return {"exec": config}, runs

    def run(self, kubeconfig: str, *args: str) -> tuple[subprocess.CompletedProcess, float]:
        started = time.monotonic()
        done = subprocess.run(
            [*self.command, *args, "--kubeconfig", kubeconfig],
            env=self.env, text=True, capture_output=True, timeout=600,
        )  # fmt: skip
        return done, time.monotonic() - started

    def crd(self, kind: str, objects: int) -> CrdInfo:
        """A fresh CRD with `objects` instances held by a finalizer, over NAMESPACES."""
        from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi

        group = f"t{secrets.token_hex(4)}.creds.test"
        crd = CrdInfo.of(group, kind)
        ApiextensionsV1Api(self.api).create_custom_resource_definition(crd.manifest())
        custom = CustomObjectsApi(self.api)

        def served() -> bool:
            try:
                custom.list_cluster_custom_object(group, "v1", crd.plural, limit=1)
            except Exception:  # noqa: BLE001 - not served yet
                return False
            return True

        wait_until(f"{crd.name} to be served", served)
        create_many(self.api, crd, objects, list(NAMESPACES), finalizers=[HOLD])
        return crd

    def left(self, crd: CrdInfo) -> tuple[bool, int]:
        """Whether the CRD is still there, and how many of its objects still have finalizers."""
        from kubernetes.client import ApiextensionsV1Api
        from kubernetes.client.exceptions import ApiException

        try:
            ApiextensionsV1Api(self.api).read_custom_resource_definition(crd.name)
        except ApiException as exc:
            if exc.status == 404:
                return False, 0
            raise
        return True, sum(1 for _, finalizers, _ in snapshot(self.api, crd).values() if finalizers)


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    if os.environ.get(EXISTING_KUBECONFIG_ENV):
        pytest.skip(
            "these tests start a control plane with a token webhook of their own (unset UNFINALIZE_TEST_KUBECONFIG)"
        )
    controlplane.find_binaries(controlplane.BINARIES)
    webhook = TokenWebhook(tmp_path_factory.mktemp("token-webhook"), groups={ADMIN: ["system:masters"]}).start()
    try:
        with controlplane.ControlPlane(controllers=("namespace-controller",), apiserver_args=webhook.flags()) as cp:
            from kubernetes import config

            api = config.new_client_from_config(config_file=cp.kubeconfig)
            env = dict(os.environ, NO_COLOR="1")
            env.pop("KUBECONFIG", None)
            command = [sys.executable, str(ROOT / "kubectl-unfinalize")]
            if os.environ.get("UNFINALIZE_BINARY"):
                plugins = tmp_path_factory.mktemp("plugins")
                shutil.copy2(os.environ["UNFINALIZE_BINARY"], plugins / "kubectl-unfinalize")
                env["PATH"] = os.pathsep.join([str(plugins), cp.bin_dir, env.get("PATH", "")])
                command = [os.path.join(cp.bin_dir, "kubectl"), "unfinalize"]
            plane = Plane(cp, webhook, api, command, env)
            for namespace in NAMESPACES:
                plane.kubectl("create", "namespace", namespace)
            _throttle(plane)
            yield plane
            with contextlib.suppress(Exception):
                api.close()
    finally:
        webhook.stop()


def _throttle(plane: Plane) -> None:
    """Group THROTTLED: cluster-admin, and on a priority level of SEATS seats that rejects
    (429) what does not fit (test_throttling.py's level, for a group)."""
    levels = yaml.safe_load(plane.kubectl("get", "prioritylevelconfigurations", "-o", "yaml"))["items"]
    others = sum((pl["spec"].get("limited") or {}).get("nominalConcurrencyShares") or 0 for pl in levels)
    total = 400 + 200  # --max-requests-inflight + --max-mutating-requests-inflight, the defaults
    shares = next(s for s in range(1, 100) if math.ceil(total * s / (others + s)) == SEATS)
    group = {"kind": "Group", "name": THROTTLED}
    objects = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": THROTTLED},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **group}]},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
         "metadata": {"name": THROTTLED},
         "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "lendablePercent": 0,
                  "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": THROTTLED},
         "spec": {"priorityLevelConfiguration": {"name": THROTTLED}, "matchingPrecedence": 100,
                  "rules": [{"subjects": [{"kind": "Group", "group": {"name": THROTTLED}}],
                             "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                "clusterScope": True, "namespaces": ["*"]}],
                             "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
    ]  # fmt: skip
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))

    def seats() -> int | None:
        for line in plane.kubectl("get", "--raw", "/metrics").splitlines():
            if (
                line.startswith("apiserver_flowcontrol_nominal_limit_seats{")
                and f'priority_level="{THROTTLED}"' in line
            ):
                return int(float(line.rsplit(" ", 1)[1]))
        return None

    assert wait_until("the throttled priority level", seats) == SEATS


def runs_of(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def figures(name: str, seconds: float, runs: int, before: dict, after: dict, answered_401: int) -> str:
    refused = {k: after[k] - before[k] for k in ("expired", "revoked")}
    return (
        f"\n[{name}] {OBJECTS} objects, {LIFE:g}-second tokens, {SEATS} seats: {seconds:.1f}s, plugin runs {runs},"
        f" 401 answers {answered_401}, webhook reviews refused {refused}"
        f" (the API server keeps a success {SUCCESS_CACHE:g}s)"
    )


@pytest.mark.parametrize("with_expiry", [False, True], ids=["without-expiry", "with-expiry"])
def test_an_exec_credential_is_renewed_once_per_token_lifetime_and_the_run_finishes(plane, tmp_path, with_expiry):
    """Without expirationTimestamp the plugin runs again on the first 401 of each wave (the
    token expired), shared by every request of the wave; with it, before it expires (less
    a margin of a quarter of its life here). Either way the run ends well: exit 0, every
    object freed and gone, the CRD deleted.

    Without expiry, the first token is issued and used by the test SUCCESS_CACHE seconds
    (less two) before the run: the API server refuses it two seconds into the run, however
    quick the run is, instead of SUCCESS_CACHE seconds after its first use."""
    user = plane.user()
    crd = plane.crd("Expiring", OBJECTS)
    first = "" if with_expiry else make_token(plane.webhook.secret, user, LIFE)
    credential, runs = plane.plugin(tmp_path, user, LIFE, with_expiry, first)
    kubeconfig = plane.kubeconfig(tmp_path, credential)
    if first:
        assert ask(plane, first) == 201
        time.sleep(SUCCESS_CACHE - 2)
    before, refusals = plane.webhook.counts(), plane.refusals()
    done, seconds = plane.run(kubeconfig, "crd", crd.name, "--delete", "--timeout", RUN_TIMEOUT, "-q")
    after, count, answered_401 = plane.webhook.counts(), runs_of(runs), plane.refusals() - refusals
    print(figures("with expiry" if with_expiry else "without expiry", seconds, count, before, after, answered_401))
    assert done.returncode == 0, done.stderr[-3000:]
    assert plane.left(crd) == (False, 0)
    lifetime = LIFE * 3 / 4 if with_expiry else LIFE  # how long one plugin run's token serves at least
    assert 2 <= count <= seconds / lifetime + 2, f"{count} plugin runs in {seconds:.1f}s"
    if with_expiry:
        assert seconds > LIFE, "the run outlasted no token: the test proves nothing (more objects?)"
    else:
        assert after["expired"] > before["expired"], "no request met an expired token: the test proves nothing"


CERT_PLUGIN = """\
#!{python}
import json, subprocess, time
with open({runs!r}, "a") as f:
    f.write(f"{{time.time()}}\\n")
now = time.time()
end = int(now + {life!r})
stamp = lambda t: time.strftime("%y%m%d%H%M%SZ", time.gmtime(t))
subprocess.run(["openssl", "ca", "-batch", "-config", {config!r}, "-cert", {ca!r}, "-keyfile", {ca_key!r},
                "-in", {csr!r}, "-out", {cert!r}, "-startdate", stamp(now - 60), "-enddate", stamp(end), "-notext"],
               check=True, capture_output=True)
status = {{"clientCertificateData": open({cert!r}).read(), "clientKeyData": open({key!r}).read(),
          "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))}}
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}}))
"""


def _certificate_plugin(plane: Plane, tmp_path: Path, life: float) -> tuple[dict, Path]:
    """An exec plugin answering with a client certificate of the throttled group, signed
    afresh at each run by the control plane's client CA and valid `life` seconds; and the
    file its runs are counted in."""
    issued, pki = tmp_path / "issued", Path(plane.cp.workdir) / "pki"
    ca_config = signing_folder(issued)
    key, csr = issued / "client.key", issued / "client.csr"
    subprocess.run(
        ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(csr), "-subj", f"/O={THROTTLED}/CN={plane.user()}"],
        check=True, capture_output=True,
    )  # fmt: skip
    runs, script = tmp_path / "plugin-runs", tmp_path / "get-certificate"
    script.write_text(CERT_PLUGIN.format(
        python=sys.executable, runs=str(runs), life=life, config=str(ca_config), ca=str(pki / "ca.crt"),
        ca_key=str(pki / "ca.key"), csr=str(csr), cert=str(issued / "client.crt"), key=str(key),
    ))  # fmt: skip
    script.chmod(0o755)
    config = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never"}
    return {"exec": config}, runs


def test_client_certificates_that_expire_every_few_seconds_are_renewed_as_needed_and_the_run_finishes(plane, tmp_path):
    """A plugin whose certificates live CERT_LIFE seconds: the tool asks for a new one before
    each expires (less a quarter of its life), new connections present it and the older
    ones serve no further request; a request the API server answers 401 (its certificate
    expired under way) renews it or takes the one renewed meanwhile, and goes again."""
    crd = plane.crd("Certified", OBJECTS)
    credential, runs = _certificate_plugin(plane, tmp_path, CERT_LIFE)
    refusals = plane.refusals()
    done, seconds = plane.run(plane.kubeconfig(tmp_path, credential), "crd", crd.name, "--delete",
                              "--timeout", RUN_TIMEOUT, "-q")  # fmt: skip
    count, answered_401 = runs_of(runs), plane.refusals() - refusals
    print(
        f"\n[client certificates] {OBJECTS} objects, {CERT_LIFE:g}-second certificates, {SEATS} seats:"
        f" {seconds:.1f}s, plugin runs {count}, 401 answers {answered_401}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert plane.left(crd) == (False, 0)
    assert seconds > 2 * CERT_LIFE, "the run outlasted fewer than two certificates: the test proves nothing"
    assert 3 <= count <= seconds / (CERT_LIFE * 3 / 4) + 2, f"{count} plugin runs in {seconds:.1f}s"


@pytest.mark.parametrize("given", ["token", "client-certificate"])
def test_a_credential_on_the_command_line_replaces_the_users_exec_plugin_which_is_not_run(plane, tmp_path, given):
    """client-go's precedence: --token, or --client-certificate with --client-key, and
    the kubeconfig user's exec plugin (one that would fail) is never started."""
    runs, script = tmp_path / "plugin-runs", tmp_path / "get-token"
    script.write_text(f"#!/bin/sh\necho ran >> {runs}\necho 'login required' >&2\nexit 1\n")
    script.chmod(0o755)
    user = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never"}
    }
    crd = plane.crd("Flagged", 3)
    pki = Path(plane.cp.workdir) / "pki"
    flags = (
        ["--token", make_token(plane.webhook.secret, plane.user(groups=("system:masters",)), 3600)]
        if given == "token"
        else ["--client-certificate", str(pki / "admin.crt"), "--client-key", str(pki / "admin.key")]
    )
    done, seconds = plane.run(plane.kubeconfig(tmp_path, user), "crd", crd.name, "--delete", *flags)
    print(
        f"\n[--{given} over a failing exec plugin] exit {done.returncode} in {seconds:.1f}s,"
        f" plugin runs {runs_of(runs)}"
    )
    assert done.returncode == 0, done.stderr
    assert runs_of(runs) == 0
    assert plane.left(crd) == (False, 0)


@pytest.mark.parametrize("command", ["crd", "scan"])
def test_a_revoked_credential_ends_the_run_at_once_with_one_line_and_nothing_changed(plane, tmp_path, command):
    user = plane.user(groups=("system:masters",))
    plane.webhook.revoke_user(user)
    crd = plane.crd("Revoked", 3)
    credential, runs = plane.plugin(tmp_path, user, 3600, with_expiry=False)
    args = ["crd", crd.name, "--delete"] if command == "crd" else ["scan"]
    done, seconds = plane.run(plane.kubeconfig(tmp_path, credential), *args)
    print(f"\n[revoked] {' '.join(args[:1])}: exit {done.returncode} in {seconds:.1f}s")
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr == (
        f'error: the API server rejected the credentials of kubeconfig user "ci" (exec plugin {tmp_path / "get-token"},'
        " obtained again after a 401 and refused too): Unauthorized\n"
    )
    assert runs_of(runs) == 2  # the first credential, and one renewal
    assert plane.left(crd) == (True, 3)


def _when_freed(plane: Plane, crd: CrdInfo, count: int, then) -> threading.Thread:
    """On a thread: once `count` objects of `crd` lost their finalizers (or are gone), call `then`."""
    held_before = plane.left(crd)[1]

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if held_before - plane.left(crd)[1] >= count:
                then()
                return
            time.sleep(0.1)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_credentials_revoked_during_a_run_stop_it_with_the_error_and_a_summary_of_what_was_done(plane, tmp_path):
    """Was: every request after the revocation a 401, the CRD listed again about five times
    a second until the deadline, exit 1. Now the first 401 a renewed credential still gets
    ends the run: exit 2, the error, and the summary of what was done. (The plugin's tokens
    expire, so the revocation meets the first token issued after it: the API server keeps
    an older token's success for SUCCESS_CACHE seconds.) Its tokens live SHORT_LIFE seconds
    over OBJECTS objects: once the run took 3 s for 1,000 objects and ended, exit 0, before a
    5-second token issued after the revocation was asked for."""
    user = plane.user()
    crd = plane.crd("Stopped", OBJECTS)
    credential, runs = plane.plugin(tmp_path, user, SHORT_LIFE, with_expiry=True)
    revoked_at: list[float] = []

    def revoke() -> None:
        plane.webhook.revoke_user(user)
        revoked_at.append(time.monotonic())

    watcher = _when_freed(plane, crd, OBJECTS // 40, revoke)
    kubeconfig = plane.kubeconfig(tmp_path, credential)
    done, seconds = plane.run(kubeconfig, "crd", crd.name, "--delete", "--timeout", RUN_TIMEOUT)
    watcher.join(timeout=5)
    assert revoked_at, f"the run ended before {OBJECTS // 40} objects were freed: the test proves nothing"
    after = time.monotonic() - revoked_at[0]
    print(
        f"\n[revoked during the run] {OBJECTS} objects: exit {done.returncode} {after:.1f}s after the revocation,"
        f" {seconds:.1f}s in all, {runs_of(runs)} plugin runs"
    )
    if done.returncode == 0:
        assert after > SHORT_LIFE, f"the run ended {after:.1f}s after the revocation, before a token issued after it"
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f'error: the API server rejected the credentials of kubeconfig user "ci" (exec plugin {tmp_path / "get-token"},'
        " obtained again after a 401 and refused too): Unauthorized"
    ], done.stderr[-3000:]
    assert "unfinalized" in done.stderr.splitlines()[-1]  # the summary: what was done
    assert " failed" not in done.stdout and "blocking" not in done.stdout  # no object blamed for it
    assert after < 60, "the run went on long after the revocation"  # its deadline was 5 minutes away
    still_there, held = plane.left(crd)
    assert still_there and 0 < held < OBJECTS


def test_a_token_file_rotated_during_a_run_is_read_again_after_a_401(plane, tmp_path):
    """The kubelet writes a projected service-account token anew before the old one
    expires; a kubeconfig's tokenFile is read at least every minute and after a 401. The
    old token is revoked once the new one is in the file; the API server would keep its
    success SUCCESS_CACHE seconds from its first use, so it is used once that long before
    the run, which then meets the revocation within seconds."""
    user = plane.user()
    crd = plane.crd("Rotated", OBJECTS)
    first = make_token(plane.webhook.secret, user, 3600)
    token_file = tmp_path / "token"
    token_file.write_text(first)

    def rotate() -> None:
        token_file.write_text(make_token(plane.webhook.secret, user, 3600))
        plane.webhook.revoke(first)

    assert ask(plane, first) == 201
    time.sleep(SUCCESS_CACHE - 3)
    watcher = _when_freed(plane, crd, 1, rotate)
    before = plane.webhook.counts()
    kubeconfig = plane.kubeconfig(tmp_path, {"tokenFile": str(token_file)})
    done, seconds = plane.run(kubeconfig, "crd", crd.name, "--delete", "--timeout", RUN_TIMEOUT, "-q")
    watcher.join(timeout=5)
    refused = plane.webhook.counts()["revoked"] - before["revoked"]
    print(
        f"\n[rotated token file] {OBJECTS} objects: exit {done.returncode} in {seconds:.1f}s,"
        f" old token refused {refused}x"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert refused > 0, "the old token was never refused: the test proves nothing"
    assert plane.left(crd) == (False, 0)


def ask(plane: Plane, token: str) -> int:
    """The status of a SelfSubjectReview sent with `token` (201: accepted)."""
    import json
    import ssl
    import urllib.request
    from urllib.error import HTTPError

    admin = yaml.safe_load(Path(plane.cp.kubeconfig).read_text())
    ca = base64.b64decode(admin["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    request = urllib.request.Request(
        plane.cp.server + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        data=json.dumps({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1"}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, context=ssl.create_default_context(cadata=ca), timeout=10) as answer:
            return answer.status
    except HTTPError as exc:
        return exc.code


def test_the_webhook_tokens_expire_and_revoke(plane):
    """The harness itself: what the tests above rely on (each token asked about once, so
    the API server's cache of successes plays no part)."""
    user, other = plane.user(groups=("system:masters",)), plane.user(groups=("system:masters",))
    secret = plane.webhook.secret
    good, short = make_token(secret, user, 60), make_token(secret, user, 1)
    assert ask(plane, good) == 201 and ask(plane, good[:-1] + ("0" if good[-1] != "0" else "1")) == 401
    time.sleep(1.5)
    assert ask(plane, short) == 401  # expired
    revoked = make_token(secret, user, 60)
    plane.webhook.revoke(revoked)
    plane.webhook.revoke_user(other)
    assert ask(plane, revoked) == 401 and ask(plane, make_token(secret, other, 60)) == 401
    assert ask(plane, make_token(secret, user, 60)) == 201
