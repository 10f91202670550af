"""The import contracts (pyproject.toml) grow with the house: a forbidden list that names
modules one by one names every module there is, so a new module is placed on purpose,
never allowed by being left out."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import tomllib

import kubectl_unfinalize
import kubectl_unfinalize.scanning

ROOT = Path(__file__).parents[2]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
TOP = {info.name for info in pkgutil.iter_modules(kubectl_unfinalize.__path__)}
SCANNING = {info.name for info in pkgutil.iter_modules(kubectl_unfinalize.scanning.__path__)}
SHARED = {"deadline", "durations", "errors", "finalizers", "journal", "lost_nodes", "model", "options", "yamlload"}


def contract(starts: str) -> dict:
    return next(c for c in CONTRACTS if c["name"].startswith(starts))


def names(modules: list[str], package: str = "kubectl_unfinalize") -> set[str]:
    return {m.removeprefix(package + ".") for m in modules if m.startswith(package + ".")}


def test_the_plugin_is_forbidden_every_module_but_its_own_package():
    forbidden = names(contract("the pytest plugin uses the public API alone")["forbidden_modules"])
    assert forbidden == TOP - {"pytest_plugin"}, sorted(TOP ^ forbidden)


def test_the_shared_modules_are_forbidden_every_module_that_is_not_shared():
    shared = contract("the shared modules at the top")
    assert names(shared["source_modules"]) == SHARED
    assert names(shared["forbidden_modules"]) == TOP - SHARED - {"_version"}, sorted(TOP - SHARED)


def test_the_command_line_reads_only_scans_options_model_and_evidence():
    forbidden = contract("the command line goes through the Python API")["forbidden_modules"]
    scanning = names(forbidden, "kubectl_unfinalize.scanning")
    assert scanning == SCANNING - {"options", "model", "evidence", "patience"}, sorted(SCANNING ^ scanning)


def test_every_package_is_in_the_no_circle_contract():
    ancestors = next(c for c in CONTRACTS if c["type"] == "acyclic_siblings")["ancestors"]
    packages = {info.name for info in pkgutil.iter_modules(kubectl_unfinalize.__path__) if info.ispkg}
    assert names(ancestors) == packages and "kubectl_unfinalize" in ancestors
