"""A ValidatingWebhookConfiguration left behind by an uninstalled operator, on the real
control plane: UPDATE on the CRD's group, failurePolicy Fail, its URL a closed port on
127.0.0.1 (the API server's only traffic; no Service it could dial is ever created).

Without the opt-in flag the run names the configuration once, stops sending the patches
it refuses (the audit log counts them) and ends well before its timeout with exit 1,
the CRD not left Terminating; with --remove-dead-webhooks the configuration goes and so
does everything else; a -f directory holding it is deleted first under --delete."""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import socket
import time
from collections import Counter

import pytest
import yaml
from crs import crd_manifest, crd_state, create_many
from kubernetes.client import AdmissionregistrationV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

OBJECTS = 100
FINALIZER = "operator.unfinalize.test/cleanup"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cluster_ca(kubeconfig: str) -> str:
    cluster = yaml.safe_load(open(kubeconfig))["clusters"][0]["cluster"]
    if "certificate-authority-data" in cluster:
        return cluster["certificate-authority-data"]
    return base64.b64encode(open(cluster["certificate-authority"], "rb").read()).decode()


@pytest.fixture
def backend():
    """How the webhook is reached: a URL at a closed port (the default)."""
    url = f"https://127.0.0.1:{closed_port()}/validate"
    return {"url": url}, url


@pytest.fixture
def stuck(api_client, kubeconfig, make_crd, namespace, backend):
    """A CRD with OBJECTS finalized objects and a dead webhook refusing their UPDATEs:
    (crd, configuration manifest, what the run says it calls). The configuration is
    removed at teardown, before make_crd's own teardown strips what is left."""
    crd = make_crd(kind="Gadget")
    create_many(api_client, crd, OBJECTS, [namespace], finalizers=[FINALIZER])
    client, url = backend
    name = f"dead-{secrets.token_hex(4)}"
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"validate.{crd.group}",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": dict(client, caBundle=cluster_ca(kubeconfig)),
                "rules": [
                    {"apiGroups": [crd.group], "apiVersions": ["*"], "resources": ["*"], "operations": ["UPDATE"]}
                ],
            }
        ],
    }
    admission = AdmissionregistrationV1Api(api_client)
    admission.create_validating_webhook_configuration(config)
    _wait_refused(api_client, crd, namespace)
    yield crd, config, url
    with contextlib.suppress(ApiException):
        admission.delete_validating_webhook_configuration(name)
    time.sleep(1)  # the API server's webhook cache lets go of it


def _wait_refused(api_client, crd, namespace, timeout=20.0):
    """Until the API server calls the webhook (its configuration cache is eventually consistent)."""
    custom = CustomObjectsApi(api_client)
    patch = {"metadata": {"labels": {"probe": "x"}}}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            custom.patch_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, "o0", patch)
        except ApiException as exc:
            if exc.status == 500 and "failed calling webhook" in (exc.body or ""):
                return
        time.sleep(0.2)
    pytest.fail("the webhook was never called")


def writes_per_object(audit, crd) -> Counter:
    return Counter(
        e["objectRef"].get("name")
        for e in audit.writes()
        if e["objectRef"].get("resource") == crd.plural and e["objectRef"].get("apiGroup") == crd.group
    )


def test_dead_webhook_is_named_once_and_the_run_ends_early_without_flooding_it(stuck, cli, audit, api_client):
    crd, config, url = stuck
    audit.mark()
    started = time.monotonic()
    result = cli("crd", crd.name, "--delete", "--timeout", "60s")
    seconds = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert seconds < 20, seconds
    name = config["metadata"]["name"]
    named = [line for line in result.stdout.splitlines() if line.startswith("validatingwebhookconfiguration")]
    assert len(named) == 1 and f"/{name} still blocking" in named[0], result.stdout
    assert "rule UPDATE on" in named[0] and "failurePolicy Fail" in named[0] and "refuses connections" in named[0]
    assert "--remove-dead-webhooks" in named[0]
    assert result.stdout.count(url) == 1  # the URL once, not once per object
    assert result.stdout.count(" failed (namespace ") == OBJECTS
    writes = writes_per_object(audit, crd)
    assert len(writes) == OBJECTS and max(writes.values()) < 10, writes.most_common(3)
    state = crd_state(api_client, crd.name)
    assert state is not None and state.metadata.deletion_timestamp is None  # not left Terminating
    print(f"ran {seconds:.1f}s; writes per object: max {max(writes.values())}, total {sum(writes.values())}")


def test_the_opt_in_flag_removes_the_dead_configuration_and_everything_goes(stuck, cli, api_client):
    crd, config, _ = stuck
    started = time.monotonic()
    result = cli("crd", crd.name, "--delete", "--timeout", "60s", "--remove-dead-webhooks", "-o", "json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    (removed,) = [i for i in report["items"] if i["resource"].startswith("validatingwebhookconfiguration")]
    assert removed["name"] == config["metadata"]["name"] and removed["action"] == "deleted"
    assert "refuses connections" in removed["message"]
    assert report["summary"]["unfinalized"] == OBJECTS and report["summary"]["failed"] == 0
    assert crd_state(api_client, crd.name) is None
    with pytest.raises(ApiException) as gone:
        AdmissionregistrationV1Api(api_client).read_validating_webhook_configuration(config["metadata"]["name"])
    assert gone.value.status == 404
    print(f"ran {time.monotonic() - started:.1f}s")


def test_a_manifest_directory_with_the_webhook_configuration_is_deleted_first(stuck, cli, api_client, tmp_path):
    crd, config, _ = stuck
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd_manifest(crd)))
    (tmp_path / "webhook.yaml").write_text(yaml.safe_dump(config))
    started = time.monotonic()
    result = cli("-f", tmp_path, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert crd_state(api_client, crd.name) is None
    assert f"validatingwebhookconfiguration.admissionregistration.k8s.io/{config['metadata']['name']} deleted" in (
        result.stdout
    )
    print(f"ran {time.monotonic() - started:.1f}s")


MISSING_SERVICE = (
    {"service": {"namespace": "default", "name": "no-such-webhook-service", "path": "/validate"}},
    "Service default/no-such-webhook-service, which does not exist",
)


@pytest.mark.parametrize("backend", [MISSING_SERVICE], ids=["missing-service"])
def test_without_delete_one_pass_names_a_missing_service_and_sends_each_patch_once(stuck, cli, audit, api_client):
    """A Service that does not exist (never one the API server could dial); no --delete:
    one pass, exit 1, a few writes per object."""
    crd, config, said = stuck
    audit.mark()
    started = time.monotonic()
    result = cli("crd", crd.name, "--timeout", "60s")
    seconds = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    named = [line for line in result.stdout.splitlines() if line.startswith("validatingwebhookconfiguration")]
    assert len(named) == 1 and f"calls {said}" in named[0], result.stdout
    writes = writes_per_object(audit, crd)
    assert max(writes.values()) < 10, writes.most_common(3)
    assert all(e["verb"] == "patch" for e in audit.writes() if e["objectRef"].get("resource") == crd.plural)
    assert AdmissionregistrationV1Api(api_client).read_validating_webhook_configuration(config["metadata"]["name"])
    print(f"ran {seconds:.1f}s; writes per object: max {max(writes.values())}, total {sum(writes.values())}")


def test_a_namespace_held_only_by_objects_the_webhook_refuses_is_not_waited_on(stuck, cli, namespace, audit):
    crd, config, _ = stuck
    audit.mark()
    started = time.monotonic()
    result = cli("ns", namespace, "--delete", "--timeout", "60s")
    seconds = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert seconds < 30, seconds
    assert f"namespace/{namespace} still blocking: not gone: the {OBJECTS} objects left inside are refused" in (
        result.stdout
    )
    writes = writes_per_object(audit, crd)
    assert max(writes.values()) < 10, writes.most_common(3)
    print(f"ran {seconds:.1f}s; writes per object: max {max(writes.values())}, total {sum(writes.values())}")
