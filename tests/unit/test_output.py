import io
import json

from kubectl_unfinalize.cli.output import ProgressDisplay, outcome_line, summary_line
from kubectl_unfinalize.model import Outcome, Progress, Report

KOPF = "kopf.zalando.org/KopfFinalizerMarker"


def test_kubectl_style_lines():
    o = Outcome("daskcluster.kubernetes.dask.org", "simple", "unfinalized", "default", [KOPF])
    assert outcome_line(o) == f"daskcluster.kubernetes.dask.org/simple unfinalized (namespace default; removed {KOPF})"
    crd = Outcome("customresourcedefinition.apiextensions.k8s.io", "x.example.com", "deleted", dry_run="server")
    assert outcome_line(crd) == "customresourcedefinition.apiextensions.k8s.io/x.example.com deleted (server dry run)"
    assert outcome_line(o, "name") == "daskcluster.kubernetes.dask.org/simple"
    assert outcome_line(Outcome("w.x", "gone", "gone", message="already gone"), "name") is None


def test_json_document_is_stable_for_scripts():
    report = Report([Outcome("w.x", "a", "unfinalized", "ns", ["f"])], scanned=3, seconds=1.23456)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is True and data["summary"]["scanned"] == 3 and data["seconds"] == 1.235
    assert data["items"] == [
        {
            "resource": "w.x",
            "name": "a",
            "action": "unfinalized",
            "namespace": "ns",
            "finalizers": ["f"],
            "message": "",
            "leaks": "",
        }
    ]
    assert "3 scanned, 1 unfinalized" in summary_line(report)


def test_progress_in_ci_logs_has_no_control_characters():
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=False, interval=0)
    display.update(Progress("unfinalize", 5, 10))
    display.clear()
    assert stream.getvalue().startswith("unfinalize: 5/10 objects (")
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()


def test_progress_counts_the_crds_a_run_deletes_and_those_gone():
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=False, interval=0)
    display.update(Progress("unfinalize", 900, 900, crds=300, deleted=300, gone=120))
    assert stream.getvalue().rstrip().endswith("; CRDs 300/300 deleted, 120 gone"), stream.getvalue()


def test_progress_on_a_terminal_rewrites_one_line():
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=True, interval=0)
    display.update(Progress("unfinalize", 1, 2))
    display.update(Progress("unfinalize", 2, 2))
    display.clear()
    assert stream.getvalue().count("\r\033[K") == 3 and "\n" not in stream.getvalue()


def _streamed(output, outcomes):
    from kubectl_unfinalize.cli.output import DocumentStream

    parts = []
    stream = DocumentStream(output, parts.append)
    for outcome in outcomes:
        stream.item(outcome)
    report = Report(list(outcomes), scanned=len(outcomes))
    stream.finish(report)
    return "".join(parts)


def test_streamed_documents_are_whole_json_and_yaml_with_or_without_items():
    import yaml

    items = [Outcome("w.x", f"o{i}", "unfinalized", "ns", ["f"]) for i in range(3)]
    for outcomes in (items, []):
        data = json.loads(_streamed("json", outcomes))
        assert [i["name"] for i in data["items"]] == [o.name for o in outcomes]
        assert data["summary"]["unfinalized"] == len(outcomes) and data["ok"] is True
        assert yaml.safe_load(_streamed("yaml", outcomes)) == data


def test_a_book_that_does_not_retain_keeps_only_what_still_failed():
    from kubectl_unfinalize.engine.outcomes import OutcomeBook
    from kubectl_unfinalize.model import Action, ObjectKey, ObjectRef, Resource
    from kubectl_unfinalize.options import DryRun

    seen = []
    book = OutcomeBook(DryRun.NONE, seen.append, retain=False)
    ref = ObjectRef(Resource("x", "v1", "ws", "W", True), "a", "ns")
    for i in range(100):
        book.add(ObjectRef(ref.resource, f"o{i}", "ns"), Action.UNFINALIZED)
    book.add(ref, Action.FAILED, message="denied")
    assert [o.name for o in book.outcomes()] == ["a"]
    book.add(ref, Action.UNFINALIZED)
    assert book.outcomes() == [] and book.counts[Action.UNFINALIZED] == 101 and len(seen) == 102
    assert ObjectKey.of(ref) not in book._last


def test_crds_left_to_the_api_server_s_cleanup_are_one_line_and_no_failure():
    from collections import Counter

    from kubectl_unfinalize.cli.output import deleting_line
    from kubectl_unfinalize.model import Action

    counts = Counter({Action.UNFINALIZED: 9000, Action.DELETED: 2060, Action.DELETING: 1430})
    report = Report(counts=counts, scanned=9000, seconds=300.0, timed_out=True, cleanup_seconds=1430 * 0.3)
    deleting = Outcome("customresourcedefinition.apiextensions.k8s.io", "a.example.com", Action.DELETING)
    assert outcome_line(deleting) is None  # not 1,430 lines that read as failures
    assert deleting_line(report) == (
        "1430 deleted CRDs are left to the API server's cleanup, which removes them a few at a time"
        " (about 7m for them): they go on their own; every instance was freed"
    )
    line = summary_line(report)
    assert "0 failed" in line and "1430 deleting in " in line, line
    assert json.loads(json.dumps(report.to_dict()))["summary"]["deleting"] == 1430
    assert deleting_line(Report()) == ""
