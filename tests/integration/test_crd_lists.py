"""A -f selection of more CRDs than are worth a GET each is resolved from one list of
CRDs (resolve/crds.GET_AT_MOST): the same CRDs freed and deleted, and a CRD that is
gone still reported as skipped. The request counts are measured by
scripts/count_resolve_requests.py (the tests' audit log records writes only)."""

from __future__ import annotations

import json

from crs import crd_manifest, crd_state, create, wait_until, writes_outside

from kubectl_unfinalize.resolve.crds import GET_AT_MOST

HOLD = "unfinalize.test/hold"


def test_many_crd_documents_free_and_delete_and_report_the_missing_one(
    api_client, make_crd, namespace, cli, audit, tmp_path
):
    crds = [make_crd(kind=f"Many{i}") for i in range(GET_AT_MOST + 2)]
    for crd in crds:
        create(api_client, crd, "x", namespace, finalizers=[HOLD])
    gone = dict(crd_manifest(crds[0]), metadata={"name": "nothings.gone.unfinalize.test"})
    path = tmp_path / "crds.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*map(crd_manifest, crds), gone]}))
    audit.mark()

    result = cli("-f", path, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    assert "customresourcedefinition.apiextensions.k8s.io/nothings.gone.unfinalize.test not found (skipped)" in (
        result.stderr
    )
    for crd in crds:
        assert f"{crd.kind.lower()}.{crd.group}/x unfinalized" in result.stdout
        assert f"customresourcedefinition.apiextensions.k8s.io/{crd.name} deleted" in result.stdout
        wait_until(f"{crd.name} gone", lambda crd=crd: crd_state(api_client, crd.name) is None, timeout=30)
    assert writes_outside(audit.writes(), crds) == []
