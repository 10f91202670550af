"""A run's record on a real API server: the audit log is the witness that the record
holds every write and nothing else; undo puts back what the run removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from crs import crd_state, create, create_many, snapshot, wait_until
from kubernetes.client import CustomObjectsApi

HOLD = "unfinalize.test/hold"
LATE = "controller.test/came-back"


def record_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def the_record(folder: Path) -> Path:
    files = sorted(folder.glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def tool_writes(audit) -> list[tuple[str, str, str | None, str]]:
    """(verb, resource, namespace, name) of every write the API server took (2xx)."""
    return sorted(
        (e["verb"], e["objectRef"]["resource"], e["objectRef"].get("namespace"), e["objectRef"].get("name"))
        for e in audit.writes()
        if 200 <= e.get("responseStatus", {}).get("code", 0) < 300
        and not e["objectRef"]["resource"].endswith("accessreviews")  # asks, changes nothing
    )


VERBS = {"unfinalize": "patch", "delete": "delete", "reconfigure": "patch", "refinalize": "patch", "create": "create"}


def recorded_writes(lines: list[dict]) -> list[tuple[str, str, str | None, str]]:
    return sorted(
        (VERBS[x["op"]], x["resource"]["plural"], x["namespace"], x["name"])
        for x in lines
        if x["type"] == "write" and x["outcome"] == "ok"
    )


def test_the_record_and_the_audit_log_agree_write_for_write(api_client, make_crd, namespace, cli, audit, tmp_path):
    crd = make_crd()
    create_many(api_client, crd, 60, [namespace], finalizers=[HOLD])
    for i in range(5):
        create(api_client, crd, f"plain{i}", namespace)  # nothing to free: never written, never recorded
    CustomObjectsApi(api_client).delete_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, "o0")
    audit.mark()
    result = cli("crd", crd.name, "--delete", "--record", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = record_lines(the_record(tmp_path))
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "end"
    assert tool_writes(audit) == recorded_writes(lines)
    freed = [x for x in lines if x["type"] == "write" and x["op"] == "unfinalize"]
    assert len(freed) == 60 and all(x["removed"] == [HOLD] and x["uid"] for x in freed)
    manifests = [x for x in lines if x["type"] == "crd"]
    assert [m["name"] for m in manifests] == [crd.name] and manifests[0]["manifest"]["spec"]["group"] == crd.group
    crd_reads = [
        e
        for e in audit.events()
        if e["verb"] == "get"
        and e["objectRef"].get("name") == crd.name
        and not e["user"]["username"].startswith("system:")
    ]
    assert crd_reads == []  # the manifest came with the DELETE's answer: no read for the record


def test_undo_puts_back_every_removed_finalizer_and_keeps_a_controllers(
    api_client, make_crd, namespace, cli, audit, tmp_path
):
    crd = make_crd()
    names = [name for _, name in create_many(api_client, crd, 500, [namespace], finalizers=[HOLD])]
    env = {"XDG_STATE_HOME": str(tmp_path)}
    result = cli("crd", crd.name, env=env)
    assert result.returncode == 0, result.stderr
    assert all(fin == () for _, fin, _ in snapshot(api_client, crd).values())
    custom = CustomObjectsApi(api_client)
    for name in names[:50]:  # a controller that came back adds its own finalizer to some
        custom.patch_namespaced_custom_object(
            crd.group, crd.version, namespace, crd.plural, name, {"metadata": {"finalizers": [LATE]}}
        )
    audit.mark()
    result = cli("undo", "--last", env=env)
    assert result.returncode == 0, result.stderr
    after = snapshot(api_client, crd)
    assert all(after[(namespace, n)][1] == (LATE, HOLD) for n in names[:50])
    assert all(after[(namespace, n)][1] == (HOLD,) for n in names[50:])
    assert tool_writes(audit) == sorted(("patch", crd.plural, namespace, n) for n in names)
    history = json.loads(cli("history", "-o", "json", env=env).stdout)
    assert [h["undoes"] for h in history["items"]][:2] == [history["items"][1]["id"], None]
    again = cli("undo", "--last", "--dry-run=server", env=env)
    assert again.returncode == 2 and "undone already" in again.stderr  # never an undo of the undo


def test_delete_with_backup_then_undo_brings_the_crd_and_its_objects_back(
    api_client, make_crd, namespace, cli, tmp_path
):
    crd = make_crd()
    for i in range(20):
        create(
            api_client,
            crd,
            f"w{i}",
            namespace,
            finalizers=[HOLD],
            labels={"app": "x"},
            annotations={"note": f"n{i}" * 500},
        )
    env = {"XDG_STATE_HOME": str(tmp_path)}
    result = cli("crd", crd.name, "--delete", "--backup", env=env)
    assert result.returncode == 0, result.stderr
    assert crd_state(api_client, crd.name) is None
    result = cli("undo", "--last", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    wait_until("the CRD to serve again", lambda: (c := crd_state(api_client, crd.name)) and c.status.conditions)
    objects = CustomObjectsApi(api_client).list_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural)
    back = {o["metadata"]["name"]: o for o in objects["items"]}
    assert sorted(back) == sorted(f"w{i}" for i in range(20))
    for i in range(20):
        meta = back[f"w{i}"]["metadata"]
        assert back[f"w{i}"]["spec"] == {"size": 1}
        assert meta["labels"] == {"app": "x"} and meta["annotations"]["note"] == f"n{i}" * 500
        assert meta["finalizers"] == [HOLD]


def test_a_run_killed_part_way_is_undone_up_to_its_writes_in_flight(
    api_client, make_crd, namespace, unfinalize_cmd, cli_env, cli, tmp_path
):
    crd = make_crd()
    create_many(api_client, crd, 3000, [namespace], finalizers=[HOLD])
    env = dict(cli_env, XDG_STATE_HOME=str(tmp_path))
    folder = tmp_path / "kubectl-unfinalize"
    run = subprocess.Popen(
        [*unfinalize_cmd, "crd", crd.name, "--concurrency", "8"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(
            "the run to record 300 writes",
            lambda: (
                folder.exists()
                and any(f.read_bytes().count(b'"op":"unfinalize"') >= 300 for f in folder.glob("*.jsonl"))
            ),
            timeout=60,
            interval=0.01,
        )
        run.send_signal(signal.SIGKILL)
    finally:
        run.wait(30)
    recorded = {x["name"] for x in record_lines_lenient(the_record(folder)) if x.get("op") == "unfinalize"}
    freed = {name for (_, name), (_, fin, _) in snapshot(api_client, crd).items() if not fin}
    assert recorded <= freed and len(freed) < 3000
    result = cli("undo", "--last", env={"XDG_STATE_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    still_free = {name for (_, name), (_, fin, _) in snapshot(api_client, crd).items() if not fin}
    assert not (still_free & recorded)
    assert len(still_free) <= 8 * 2 + 250  # writes in flight, and what the bulk sender had sent unanswered


def record_lines_lenient(path: Path) -> list[dict]:
    lines = []
    for raw in path.read_text().splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            pass  # the line the kill cut
    return lines


def test_max_objects_refuses_before_the_first_write(api_client, make_crd, namespace, cli, audit, tmp_path):
    crd = make_crd()
    create_many(api_client, crd, 30, [namespace], finalizers=[HOLD])
    audit.mark()
    result = cli("crd", crd.name, "--delete", "--max-objects", "10", "--record", tmp_path)
    assert result.returncode == 2, result.stderr
    assert "would change 31 objects" in result.stderr and "--max-objects 10" in result.stderr  # 30 and the CRD
    assert tool_writes(audit) == []
    assert not list(tmp_path.glob("*.jsonl"))


def test_a_record_that_cannot_be_written_costs_one_warning_never_the_run(
    api_client, make_crd, namespace, cli, tmp_path
):
    crd = make_crd()
    create_many(api_client, crd, 20, [namespace], finalizers=[HOLD])
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = cli("crd", crd.name, "--record", blocker / "record.jsonl")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "cannot write the record" in line]
    assert len(warnings) == 1, result.stderr
    assert all(fin == () for _, fin, _ in snapshot(api_client, crd).values())


def test_bad_records_are_refused_with_nothing_written(api_client, make_crd, namespace, cli, audit, tmp_path):
    crd = make_crd()
    create(api_client, crd, "a", namespace, finalizers=[HOLD])
    good = tmp_path / "good"
    good.mkdir()
    assert cli("crd", crd.name, "--record", good).returncode == 0
    path = the_record(good)
    lines = path.read_text().splitlines()
    cases = {
        "not-a-record.jsonl": '{"kind": "ConfigMap"}\n',
        "damaged.jsonl": "\n".join([lines[0], lines[1][:15], *lines[2:]]) + "\n",
        "other-cluster.jsonl": "\n".join(
            [json.dumps({**json.loads(lines[0]), "server": "https://127.0.0.1:1", "context": "elsewhere"}), *lines[1:]]
        )
        + "\n",
    }
    audit.mark()
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        result = cli("undo", tmp_path / name)
        assert result.returncode == 2, (name, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    assert tool_writes(audit) == []


def test_history_shows_the_runs_of_this_context_newest_first(api_client, make_crd, namespace, cli, tmp_path):
    crd = make_crd()
    env = {"XDG_STATE_HOME": str(tmp_path)}
    for i in range(3):
        create(api_client, crd, f"a{i}", namespace, finalizers=[HOLD])
        assert cli("crd", crd.name, env=env).returncode == 0
    text = cli("history", env=env)
    assert text.returncode == 0, text.stderr
    assert len(text.stdout.splitlines()) == 4  # a heading and three runs
    listed = json.loads(cli("history", "-o", "json", env=env).stdout)["items"]
    assert [item["counts"].get("unfinalized") for item in listed] == [1, 1, 1]  # a0, then a1, then a2
    assert [item["id"] for item in listed] == sorted((item["id"] for item in listed), reverse=True)
    one = cli("history", "--last", env=env)
    assert one.returncode == 0 and f"widget.{crd.group}/a2" in one.stdout
    assert os.stat(tmp_path / "kubectl-unfinalize").st_mode & 0o777 == 0o700
