"""Engine logic against a scripted transport: pagination, expired continue tokens,
--finalizer preconditions and conflicts. The integration tests cover the real server."""

from kubectl_unfinalize.engine import Engine, Options
from kubectl_unfinalize.errors import ApiError
from kubectl_unfinalize.model import CRD, Resource, Targets

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
CRDS = [CRD("widgets.example.com", WIDGETS)]


def obj(name, finalizers, rv="1"):
    return {"metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": rv, "finalizers": finalizers}}


class ScriptedTransport:
    def __init__(self, pages, patch_errors=None, gets=None):
        self.pages = list(pages)
        self.patch_errors = dict(patch_errors or {})
        self.gets = dict(gets or {})
        self.calls = []

    def request(self, method, path, query=None, body=None, **_):
        self.calls.append((method, path, dict(query or {}), body))
        if method == "POST":
            return {"status": {"allowed": True}}
        if method == "GET" and path.endswith("/widgets"):
            page = self.pages.pop(0)
            if isinstance(page, Exception):
                raise page
            return page
        if method == "GET":
            return self.gets[path.rsplit("/", 1)[1]]
        if method == "PATCH":
            name = path.rsplit("/", 1)[1]
            errors = self.patch_errors.get(name) or []
            if errors:
                raise errors.pop(0)
            return {}
        raise AssertionError((method, path))


def run(transport, **options):
    options.setdefault("settle", 0)
    return Engine(transport, Options(**options)).run(Targets(crds=list(CRDS)))


def test_pages_are_followed_and_each_object_patched_once():
    t = ScriptedTransport(
        [
            {"items": [obj("a", ["x"]), obj("b", [])], "metadata": {"continue": "c1"}},
            {"items": [obj("c", ["x", "y"])], "metadata": {}},
            {"items": [obj("a", []), obj("b", []), obj("c", [])], "metadata": {}},  # final check
        ]
    )
    report = run(t, chunk_size=2)
    patches = [c for c in t.calls if c[0] == "PATCH"]
    assert sorted(c[1].rsplit("/", 1)[1] for c in patches) == ["a", "c"]
    assert all(c[3] == {"metadata": {"finalizers": None}} for c in patches)
    lists = [c for c in t.calls if c[0] == "GET"]
    assert lists[0][2]["limit"] == 2 and lists[1][2]["continue"] == "c1"
    assert report.scanned == 3 and report.count("unfinalized") == 2 and report.ok


def test_expired_continue_token_restarts_the_list():
    t = ScriptedTransport(
        [
            {"items": [obj("a", ["x"])], "metadata": {"continue": "old"}},
            ApiError(410, "Gone", "continue token expired"),
            {"items": [obj("a", []), obj("b", ["x"])], "metadata": {}},
            {"items": [], "metadata": {}},
        ]
    )
    report = run(t)
    lists = [c for c in t.calls if c[0] == "GET"]
    assert "continue" not in {k for k, v in lists[2][2].items() if v}
    assert report.count("unfinalized") == 2 and report.ok


def test_named_finalizer_uses_a_precondition_and_rereads_on_conflict():
    t = ScriptedTransport(
        [{"items": [obj("a", ["keep", "drop"], rv="5")], "metadata": {}}, {"items": [], "metadata": {}}],
        patch_errors={"a": [ApiError(409, "Conflict", "the object has been modified")]},
        gets={"a": obj("a", ["keep", "new", "drop"], rv="7")},
    )
    report = run(t, finalizers=("drop",))
    patches = [c[3] for c in t.calls if c[0] == "PATCH"]
    assert patches == [
        {"metadata": {"resourceVersion": "5", "finalizers": ["keep"]}},
        {"metadata": {"resourceVersion": "7", "finalizers": ["keep", "new"]}},
    ]
    assert report.outcomes[0].finalizers == ["drop"]


def test_failed_patch_is_reported_not_raised():
    t = ScriptedTransport(
        [{"items": [obj("a", ["x"])], "metadata": {}}],
        patch_errors={"a": [ApiError(400, "Bad Request", 'admission webhook "deny.example.com" denied the request')]},
    )
    report = run(t)
    assert not report.ok
    assert report.failed[0].message.startswith("rejected by an admission webhook")


def test_timeout_bounds_a_single_pass_too():
    t = ScriptedTransport([{"items": [obj(f"o{i}", ["x"]) for i in range(50)], "metadata": {}}])
    report = run(t, timeout=1e-9)
    assert report.timed_out and not report.ok
    assert not [c for c in t.calls if c[0] == "PATCH"]
