"""A run stopped from outside, and runs that overlap: what CI does to a teardown step.
SIGTERM (a cancelled job) ends the run like Ctrl-C; SIGKILL leaves work a rerun
finishes; two runs over the same CRDs both end well."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from crs import crd_manifest, crd_state, create_many, snapshot, wait_until

HOLD = "unfinalize.test/hold"


@pytest.fixture
def finalized(api_client, make_crd, namespace):
    def make(count: int):
        crd = make_crd(kind="Held")
        create_many(api_client, crd, count, [namespace], finalizers=[HOLD])
        return crd

    return make


def start(unfinalize_cmd, cli_env, *args) -> subprocess.Popen:
    return subprocess.Popen(
        [*unfinalize_cmd, *map(str, args)], env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def patched(audit, crd) -> int:
    return sum(1 for e in audit.writes() if e["verb"] == "patch" and e["objectRef"].get("resource") == crd.plural)


def test_sigterm_ends_the_run_with_a_summary_and_143(api_client, finalized, unfinalize_cmd, cli_env, audit):
    crd = finalized(1000)
    audit.mark()
    proc = start(unfinalize_cmd, cli_env, "crd", crd.name, "--delete", "--concurrency", "2")
    wait_until("the tool's first patches", lambda: patched(audit, crd) >= 20, timeout=60, interval=0.02)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    seconds = time.monotonic() - sent
    assert proc.returncode == 143, err
    assert seconds < 10, f"{seconds:.1f}s from SIGTERM to exit"
    assert "Traceback" not in err
    summary = err.strip().splitlines()[-1]
    assert summary.startswith("interrupted: "), err
    assert crd_state(api_client, crd.name) is not None  # stopped before the CRD could go
    rerun = subprocess.run(
        [*unfinalize_cmd, "crd", crd.name, "--delete"], env=cli_env, capture_output=True, text=True, timeout=180
    )
    assert rerun.returncode == 0, rerun.stderr
    wait_until("CRD gone", lambda: crd_state(api_client, crd.name) is None, timeout=30)


def test_a_rerun_after_sigkill_finishes_the_job(api_client, finalized, unfinalize_cmd, cli_env, audit):
    crd = finalized(1000)
    audit.mark()
    proc = start(unfinalize_cmd, cli_env, "crd", crd.name, "--delete", "--concurrency", "2")
    wait_until("a few hundred patches", lambda: patched(audit, crd) >= 200, timeout=120, interval=0.05)
    proc.kill()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    left = snapshot(api_client, crd)
    assert left and any(fin for _, fin, _ in left.values())  # killed half way: work left for the rerun
    rerun = subprocess.run(
        [*unfinalize_cmd, "crd", crd.name, "--delete"], env=cli_env, capture_output=True, text=True, timeout=180
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "Traceback" not in rerun.stderr
    wait_until("CRD gone", lambda: crd_state(api_client, crd.name) is None, timeout=30)


def test_two_teardowns_at_once_both_end_well(api_client, make_crd, namespace, unfinalize_cmd, cli_env, tmp_path):
    import yaml

    crds = [make_crd(kind=f"Twin{i}") for i in range(2)]
    for crd in crds:
        create_many(api_client, crd, 500, [namespace], finalizers=[HOLD])
    (tmp_path / "crds.yaml").write_text(yaml.safe_dump_all([crd_manifest(crd) for crd in crds]))
    runs = [start(unfinalize_cmd, cli_env, "-f", tmp_path, "--delete", "-q") for _ in range(2)]
    results = [(proc, *proc.communicate(timeout=180)) for proc in runs]
    for proc, _, err in results:
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    for crd in crds:
        wait_until("CRD gone", lambda crd=crd: crd_state(api_client, crd.name) is None, timeout=30)
