# Runtime hook of the one-file binary: the methods dataclasses generates come precompiled.
#
# @dataclass writes each class's __init__, __repr__, __eq__, __hash__ and (frozen)
# __setattr__/__delattr__ as source text and compiles it with exec() at import time: 247
# functions for the 49 classes a freeing run imports, 25-30 ms of a 0.3 s teardown. The text
# depends only on the class, so the spec runs this file at build time (`python
# dataclass_code_rthook.py OUT`): it imports the whole package with a recording _create_fn
# and marshals {text: code object}. At start-up the hook gives dataclasses a _create_fn that
# executes the code object compiled from the same text, and compiles any text it does not
# hold, as dataclasses would. The table is used only by the interpreter that wrote it
# (marshal's format and dataclasses' text are the interpreter's), and only where
# _create_fn has the signature read here; otherwise nothing is replaced.
# ruff: noqa: ANN001, ANN202, A002 - a PyInstaller runtime hook, run before the app
import sys

TABLE = "dataclass-code.marshal"
SIGNATURE = ("name", "args", "body", "globals", "locals", "return_type")


def _create_fn_from(table, record=False):
    """dataclasses._create_fn of Python 3.11 and 3.12, with the compile looked up in table."""
    import dataclasses

    missing = dataclasses.MISSING

    def _create_fn(name, args, body, *, globals=None, locals=None, return_type=missing):
        if locals is None:
            locals = {}
        return_annotation = ""
        if return_type is not missing:
            locals["_return_type"] = return_type
            return_annotation = "->_return_type"
        args = ",".join(args)
        body = "\n".join(f"  {b}" for b in body)
        txt = f" def {name}({args}){return_annotation}:\n{body}"
        local_vars = ", ".join(locals.keys())
        txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
        code = table.get(txt)
        if code is None:
            code = compile(txt, "<string>", "exec", dont_inherit=True)
            if record:
                table[txt] = code
        ns = {}
        exec(code, globals, ns)
        return ns["__create_fn__"](**locals)

    return _create_fn


def replaceable():
    """Whether dataclasses' _create_fn is the one _create_fn_from rewrites (3.13 has none)."""
    import dataclasses

    create_fn = getattr(dataclasses, "_create_fn", None)
    code = getattr(create_fn, "__code__", None)
    return code is not None and code.co_varnames[: len(SIGNATURE)] == SIGNATURE


def install(path):
    """Replaces dataclasses._create_fn with one reading the table at path, when it fits."""
    import marshal

    try:
        with open(path, "rb") as f:
            version, table = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return
    if version == sys.version and replaceable():
        import dataclasses

        dataclasses._create_fn = _create_fn_from(table)


def modules(package="kubectl_unfinalize"):
    """The package's modules the binary can import, imported: not __main__ (it runs the
    command line) nor the pytest plugin (the binary leaves pytest out, and a build
    environment need not have it)."""
    import importlib
    import pkgutil

    root = importlib.import_module(package)
    names = [info.name for info in pkgutil.walk_packages(root.__path__, f"{package}.")]
    skipped = (f"{package}.__main__", f"{package}.pytest_plugin")
    return [importlib.import_module(n) for n in names if not n.startswith(skipped)]


def build(out):
    """Imports the package's modules with a recording _create_fn; writes the table."""
    import dataclasses
    import marshal

    if not replaceable():
        raise SystemExit(f"dataclass_code_rthook: dataclasses._create_fn of {sys.version} is not the one it rewrites")
    table = {}
    dataclasses._create_fn = _create_fn_from(table, record=True)
    modules()
    with open(out, "wb") as f:
        marshal.dump((sys.version, dict(sorted(table.items()))), f)
    return table


if getattr(sys, "frozen", False) and hasattr(sys, "_MEIPASS"):
    import os

    install(os.path.join(sys._MEIPASS, TABLE))
    del os
elif __name__ == "__main__":
    print(f"{len(build(sys.argv[1]))} dataclass functions", file=sys.stderr)
