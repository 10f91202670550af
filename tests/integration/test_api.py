"""The Python API from an operator test suite's fixture teardown, in a real pytest run."""

from __future__ import annotations

import textwrap

import pytest
from crs import crd_state, snapshot

pytest_plugins = ["pytester"]

SUITE = """
import os

import pytest
from kubernetes import client, config

from kubectl_unfinalize import unfinalize

GROUP, VERSION, PLURAL = {group!r}, "v1", {plural!r}


@pytest.fixture
def customresources():
    # The operator is gone by teardown time; its finalizers stay behind.
    yield
    report = unfinalize(crds=[PLURAL + "." + GROUP], delete=True, timeout=60)
    report.raise_for_failure()
    assert report.count("unfinalized") == 3


def test_uses_custom_resources(customresources):
    config.load_kube_config(os.environ["KUBECONFIG"])
    api = client.CustomObjectsApi()
    for i in range(3):
        body = {{"apiVersion": GROUP + "/" + VERSION, "kind": {kind!r},
                "metadata": {{"name": "x%d" % i, "finalizers": ["operator.test/never-removed"]}}}}
        api.create_namespaced_custom_object(GROUP, VERSION, {namespace!r}, PLURAL, body)
"""


def test_fixture_teardown_frees_and_deletes_crds(pytester, api_client, make_crd, namespace, kube_env, monkeypatch):
    crd = make_crd(kind="Teardown")
    pytester.makepyfile(
        test_suite=textwrap.dedent(SUITE.format(group=crd.group, plural=crd.plural, kind=crd.kind, namespace=namespace))
    )
    monkeypatch.setenv("KUBECONFIG", kube_env["KUBECONFIG"])
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert crd_state(api_client, crd.name) is None


def test_api_reports_instead_of_printing(api_client, make_crd, namespace, kube_env, capsys):
    from crs import create

    from kubectl_unfinalize import InputError, unfinalize

    crd = make_crd(kind="Quiet")
    create(api_client, crd, "q", namespace, finalizers=["operator.test/x"])
    seen = []
    report = unfinalize(crds=[crd.name], kubeconfig=kube_env["KUBECONFIG"], on_outcome=seen.append)
    assert report.ok and report.count("unfinalized") == 1 and [o.name for o in seen] == ["q"]
    assert capsys.readouterr() == ("", "")
    assert snapshot(api_client, crd)[(namespace, "q")][1] == ()
    with pytest.raises(InputError, match="no CustomResourceDefinition matches"):
        unfinalize(crds=["no-such-thing.example.com"], kubeconfig=kube_env["KUBECONFIG"])
