"""The public names and the verbs' shape. kubectl_unfinalize/__init__.py lists the names three
times (`__all__` for `import *` and readers, the `TYPE_CHECKING` imports for type checkers,
`_HOMES` for the lazy import at run time), and nothing but this test keeps the three lists one."""

from __future__ import annotations

import ast
from pathlib import Path

import kubectl_unfinalize

INIT = Path(kubectl_unfinalize.__file__)


def _type_checking_homes() -> dict[str, str]:
    """name -> module (relative to the package) of the `if TYPE_CHECKING:` imports."""
    tree = ast.parse(INIT.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    homes = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        homes.update({alias.asname or alias.name: node.module for alias in node.names})
    return homes


def test_all_homes_and_type_checking_imports_name_the_same_things_from_the_same_modules():
    homes = _type_checking_homes()
    assert set(kubectl_unfinalize.__all__) - {"__version__"} == set(homes)
    assert kubectl_unfinalize._HOMES == homes
    assert sorted(kubectl_unfinalize.__all__) == kubectl_unfinalize.__all__


def test_every_public_name_imports_and_is_the_thing_its_home_defines():
    import importlib

    for name, home in kubectl_unfinalize._HOMES.items():
        module = importlib.import_module(f"kubectl_unfinalize.{home}")
        assert getattr(kubectl_unfinalize, name) is getattr(module, name), name


def test_the_scan_verb_is_exported_as_whole_as_the_run_verb():
    exported = set(kubectl_unfinalize.__all__)
    assert {"unfinalize", "run", "Options", "Selection", "Report", "Outcome", "Progress"} <= exported
    assert {"scan", "run_scan", "ScanOptions", "ScanReport", "Group", "State"} <= exported
    assert {"TerminatingCrd", "TerminatingNamespace", "Manager", "Fix"} <= exported


def test_every_verb_can_be_interrupted_from_another_thread(monkeypatch):
    import inspect
    import threading

    from kubectl_unfinalize import api, record_api, scan_api

    verbs = (
        api.unfinalize,
        api.run,
        scan_api.scan,
        scan_api.run_scan,
        record_api.history,
        record_api.read_record,
        record_api.undo,
    )
    for verb in verbs:
        assert "interrupt" in inspect.signature(verb).parameters, verb.__name__
    given = {}
    monkeypatch.setattr(api, "run", lambda *args, **kwargs: given.update(kwargs))
    event = threading.Event()
    api.unfinalize(crds=["widgets.example.com"], interrupt=event)
    assert given["interrupt"] is event


def test_both_reports_raise_through_one_name_and_the_old_scan_name_warns():
    import pytest

    from kubectl_unfinalize import Group, IncompleteError, Report, ScanReport, State

    assert Report().raise_for_failure() is not None and ScanReport().raise_for_failure() is not None
    fields = dict(kind="Widget", api_version="example.com/v1", namespaced=True, count=1, terminating=True)
    when = dict(oldest_seconds=9.0, oldest_deletion="", namespaces=["a"], sample=["a/w"], owner="", owner_kind="")
    stuck = Group("example.com/f", "widgets.example.com", **fields, **when, state=State.STUCK, stuck=True)
    with pytest.raises(IncompleteError):
        ScanReport(groups=[stuck]).raise_for_failure()
    with pytest.warns(DeprecationWarning, match="raise_for_failure"), pytest.raises(IncompleteError):
        ScanReport(groups=[stuck]).raise_if_stuck()
