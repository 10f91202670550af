import io
import json

from kubectl_unfinalize.model import Outcome, Progress, Report
from kubectl_unfinalize.report import ProgressDisplay, outcome_line, render_document, summary_line

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
    data = json.loads(render_document(report, "json"))
    assert data["ok"] is True and data["summary"]["scanned"] == 3 and data["seconds"] == 1.235
    assert data["items"] == [
        {"resource": "w.x", "name": "a", "action": "unfinalized", "namespace": "ns", "finalizers": ["f"], "message": ""}
    ]
    assert "3 scanned, 1 unfinalized" in summary_line(report)


def test_progress_in_ci_logs_has_no_control_characters():
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=False, interval=0)
    display.update(Progress("unfinalize", 5, 10))
    display.clear()
    assert stream.getvalue().startswith("unfinalize: 5/10 objects (")
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()


def test_progress_on_a_terminal_rewrites_one_line():
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=True, interval=0)
    display.update(Progress("unfinalize", 1, 2))
    display.update(Progress("unfinalize", 2, 2))
    display.clear()
    assert stream.getvalue().count("\r\033[K") == 3 and "\n" not in stream.getvalue()
