"""What the unit tests share: both ways a remove-every-finalizer patch can go, and a pod's
view of its cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from pki import self_signed_ca


@pytest.fixture(params=[False, True], ids=["verbs", "bulk"])
def bulk(request) -> bool:
    """Both ways a remove-every-finalizer patch can go: through the verbs on a worker
    thread, or to the cluster's bulk sender."""
    return request.param


@pytest.fixture
def in_cluster(tmp_path, monkeypatch) -> Path:
    """As in a pod with no kubeconfig: the service account's directory (token "pod-token",
    namespace "ci-jobs", a CA) where the kubernetes client reads it, the API server in the
    environment. The directory, for a test to rotate the token in."""
    import kubernetes.config.incluster_config as incluster

    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    (secrets / "token").write_text("pod-token")
    (secrets / "namespace").write_text("ci-jobs")
    self_signed_ca(secrets / "ca.crt")
    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(secrets / "token"))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(secrets / "ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return secrets
