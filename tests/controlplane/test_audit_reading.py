"""The harness's audit log reading: a mark taken while a line was being appended."""

from __future__ import annotations

import json

from controlplane import ControlPlane


def test_events_after_a_mark_that_fell_inside_a_line_leave_that_line_out(tmp_path):
    first = json.dumps({"n": 1, "pad": "x" * 50}).encode() + b"\n"
    second = json.dumps({"n": 2}).encode() + b"\n"
    third = json.dumps({"n": 3}).encode()  # still being written
    cp = ControlPlane(audit=True)
    cp.audit_log = tmp_path / "audit.log"
    cp.audit_log.write_bytes(first + second + third)
    assert [e["n"] for e in cp.audit_events(0)] == [1, 2]
    assert [e["n"] for e in cp.audit_events(len(first))] == [2]  # a mark at a line's end
    assert [e["n"] for e in cp.audit_events(20)] == [2]  # inside the first line: it began before the mark
    assert cp.audit_events(len(first) + 3) == []  # inside the second, the third not complete yet
