"""A throttled user, for real: a FlowSchema puts the tool's (impersonated) user on a
priority level of 3 seats that rejects (429) what does not fit. Every object is freed
within the default timeout, the final check is not ended by a 429, and the 429s the API
server answered (its audit log: the PATCHes) stay below what a storm or a collapse costs.
Not a timing test: the figures go to the test's output (-s shows them)."""

from __future__ import annotations

import math
import subprocess
import time

import pytest
import yaml
from crs import create_many, priority_level, snapshot

SEATS = 3
OBJECTS = 1500
HOLD = "unfinalize.test/hold"
# The 429s of one run. Measured at 3 seats and 2,000 objects: 44-49 (the burst that finds
# the seats from the slow start's 32 in flight, then a try of a 4th seat now and then).
# Halving on every 429 (the pacing this replaced) took ~275, and client-go at 64 in flight
# with its own retries ~250: a storm or a collapse needs several times what pacing costs.
MAX_REFUSED = 120


def shares_for(kubectl, seats: int) -> int:
    """nominalConcurrencyShares giving a new level `seats` seats on this API server: a
    level's seats are ceil(total * shares / sum of all shares), total being
    --max-requests-inflight + --max-mutating-requests-inflight (the harness leaves the
    defaults, 400 + 200)."""
    levels = yaml.safe_load(kubectl("get", "prioritylevelconfigurations", "-o", "yaml").stdout)["items"]
    others = sum((pl["spec"].get("limited") or {}).get("nominalConcurrencyShares") or 0 for pl in levels)
    total = 400 + 200
    for shares in range(1, 100):
        if math.ceil(total * shares / (others + shares)) == seats:
            return shares
    pytest.fail(f"no nominalConcurrencyShares gives {seats} seats next to {others}")


def seats_of(kubectl, level: str) -> int | None:
    """apiserver_flowcontrol_nominal_limit_seats of `level`, from /metrics."""
    for line in kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if line.startswith("apiserver_flowcontrol_nominal_limit_seats{") and f'priority_level="{level}"' in line:
            return int(float(line.rsplit(" ", 1)[1]))
    return None


@pytest.fixture
def throttled_user(kubectl):
    user = f"seats-{time.monotonic_ns() % 10**8}"
    objects = priority_level(user, shares_for(kubectl, SEATS))
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    try:
        deadline = time.monotonic() + 30  # the APF configuration controller picks the level up
        while seats_of(kubectl, user) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert seats_of(kubectl, user) == SEATS, "the level does not have the seats this test is about"
        yield user
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", input=yaml.safe_dump_all(objects))


def test_a_three_seat_level_frees_everything_without_a_storm_and_the_final_check_waits_out_its_429s(
    api_client, make_crd, namespace, kubectl, audit, unfinalize_cmd, cli_env, throttled_user
):
    crd = make_crd(kind="Throttled")
    other = f"{namespace}-b"
    kubectl("create", "namespace", other)
    try:
        create_many(api_client, crd, OBJECTS, [namespace, other], finalizers=[HOLD])
        audit.mark()
        started = time.monotonic()
        # No --delete: the run ends with the final check, whose lists are refused too
        # while the level is busy. The default timeout.
        proc = subprocess.run(
            [*unfinalize_cmd, "crd", crd.name, "--as", throttled_user, "-q"],
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        seconds = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "cannot check" not in proc.stderr
        left = [key for key, (_, finalizers, _) in snapshot(api_client, crd).items() if finalizers]
        assert left == []
        patches = [e for e in audit.writes() if e["verb"] == "patch" and e["objectRef"].get("resource") == crd.plural]
        refused = sum(1 for e in patches if (e.get("responseStatus") or {}).get("code") == 429)
        assert refused > 0, "the level never refused: the test proves nothing"
        assert refused < MAX_REFUSED, f"{refused} 429s: a storm or a collapse"
        print(
            f"\n[throttled] {SEATS} seats, {OBJECTS} objects: {seconds:.1f}s, {len(patches)} patches,"
            f" {refused} answered 429"
        )
    finally:
        kubectl("delete", "namespace", other, "--wait=false", "--ignore-not-found")
