"""packaging/dataclass_code_rthook.py: the binary's precompiled dataclass methods are the
ones dataclasses would have compiled, every one of them is in the table, and a table from
another interpreter is never used."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys

from pkgtest import ROOT

HOOK = ROOT / "packaging" / "dataclass_code_rthook.py"

# Prints, for every dataclass of the package, a digest of each method dataclasses generated,
# and how many texts the hook had to compile (after installing the table in argv[1], if any).
FINGERPRINTS = """
import builtins, dataclasses, hashlib, json, sys
sys.path.insert(0, {packaging!r})
import dataclass_code_rthook as hook
compiled = []
if len(sys.argv) > 1:
    hook.install(sys.argv[1])
    real_compile = builtins.compile
    def counting(text, *a, **k):
        if str(text).startswith("def __create_fn__"):
            compiled.append(text)
        return real_compile(text, *a, **k)
    builtins.compile = counting
modules = hook.modules()
builtins.compile = compile
prints = {{}}
for module in modules:
    for cls in vars(module).values():
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__:
            for name, fn in sorted(vars(cls).items()):
                code = getattr(fn, "__code__", None)
                if code is not None and code.co_filename == "<string>":
                    parts = (code.co_code, code.co_names, code.co_varnames, code.co_freevars, repr(code.co_consts))
                    prints[f"{{cls.__qualname__}}.{{name}}"] = hashlib.sha256(repr(parts).encode()).hexdigest()
replaced = dataclasses._create_fn.__module__ != "dataclasses"
print(json.dumps({{"replaced": replaced, "compiled": len(compiled), "prints": prints}}))
"""


def fingerprints(*table: str) -> dict:
    code = FINGERPRINTS.format(packaging=str(HOOK.parent))
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code, *table], capture_output=True, text=True, env=env, check=True, timeout=120
    )
    return json.loads(result.stdout)


def build(tmp_path) -> str:
    out = tmp_path / "dataclass-code.marshal"
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, str(HOOK), str(out)], check=True, env=env, capture_output=True, timeout=120)
    return str(out)


def test_the_table_gives_every_dataclass_the_methods_dataclasses_compiles(tmp_path):
    table = build(tmp_path)
    plain, cached = fingerprints(), fingerprints(table)
    assert (plain["replaced"], cached["replaced"]) == (False, True)
    assert len(plain["prints"]) > 200  # the package's dataclasses were found
    assert cached["prints"] == plain["prints"]
    assert cached["compiled"] == 0  # nothing was left to compile at start-up


def test_a_table_from_another_interpreter_is_not_used(tmp_path):
    table = build(tmp_path)
    version, entries = marshal.loads((tmp_path / "dataclass-code.marshal").read_bytes())
    assert version == sys.version and entries
    (tmp_path / "dataclass-code.marshal").write_bytes(marshal.dumps(("3.0.0 (elsewhere)", entries)))
    assert fingerprints(table)["replaced"] is False
    (tmp_path / "dataclass-code.marshal").write_bytes(b"not a table")
    assert fingerprints(table)["replaced"] is False


def test_the_table_builds_where_pytest_is_not_installed(tmp_path):
    """The release's build environment is the runtime set and PyInstaller: the pytest
    plugin, which the binary leaves out, is not imported to build the table."""
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(HOOK.parent)!r})\n"
        "sys.modules['pytest'] = sys.modules['_pytest'] = None  # as if not installed\n"
        "import dataclass_code_rthook as hook\n"
        f"print(len(hook.build({str(tmp_path / 'table')!r})))\n"
    )
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 200
