"""Polling with a deadline, shared by the fixtures and the integration tests."""

from __future__ import annotations

import time

import pytest


def wait_until(what: str, check, timeout: float = 30.0, interval: float = 0.2):
    """Return check()'s first truthy value; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
