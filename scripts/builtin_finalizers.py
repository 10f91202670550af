"""Where a Kubernetes release's Go sources define each finalizer of the built-in table.

The table (src/kubectl_unfinalize/finalizers.py) says who removes each finalizer and what
removing it leaks; this says that the release names it at all, and where, so that an entry
without a source, or a release that dropped or added one, shows up in a diff. It reads
k8s.io/kubernetes@VERSION and its staging modules k8s.io/*@v0.MINOR.PATCH from the Go module
cache (`make controlplane` downloads them), not their tests. A finalizer is defined where a Go
constant named after one finalizer has it as its value (string literals joined with `+`, and
constants of the same package). It prints the release on the first line, then one line per
table entry and defining file, sorted:

    FINALIZER<TAB>k8s.io/MODULE@VERSION/path/to/file.go

    .venv/bin/python scripts/builtin_finalizers.py v1.36.3 >tests/unit/data/builtin-finalizers-v1.36.3.txt

A table entry that no constant defines ends it with exit 1. The finalizer constants the table
lacks are listed on stderr, for whoever moves the table to a new release (some are not the
table's: the CSI sidecars' own, or ones a feature only declares).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kubectl_unfinalize.finalizers import BUILTIN  # noqa: E402

# Folders whose Go files are tests, fixtures or examples: what they name no controller puts on objects.
SKIPPED_DIRS = {"test", "testing", "testdata", "e2e", "e2e_node", "fake", "vendor", "third_party", "hack", "examples"}
CONST_BLOCK = re.compile(r"^const \((.*?)^\)", re.M | re.S)
CONST_LINE = re.compile(r"^const (\w+)(?:\s+[\w.]+)?\s*=\s*(.+)$", re.M)
SPEC = re.compile(r"^\s*(\w+)(?:\s+[\w.]+)?\s*=\s*(.+)$", re.M)
ONE_FINALIZER = re.compile(
    r"(?i)finalizer(?!s)"
)  # FinalizerKubernetes, PVProtectionFinalizer; not NamespaceFinalizersRemaining
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|//|\+|[A-Za-z_][\w.]*|\S+')


def module_cache() -> Path:
    """The Go module cache as `go` finds it (the control plane's build fills it)."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    if shutil.which("go"):
        found = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False).stdout.strip()
        if found:
            return Path(found)
    return Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod"


def modules(cache: Path, version: str) -> list[tuple[str, Path]]:
    """k8s.io/kubernetes@version and those of its staging modules whose sources are in the cache."""
    kubernetes = cache / f"k8s.io/kubernetes@{version}"
    if not (kubernetes / "go.mod").is_file():
        raise SystemExit(f"builtin_finalizers: no k8s.io/kubernetes@{version} in {cache}; `make controlplane` gets it")
    staging_version = "v0." + version.split(".", 1)[1]
    staging = re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/", (kubernetes / "go.mod").read_text(), re.M)
    found = [(f"{name}@{staging_version}", cache / f"{name}@{staging_version}") for name in staging]
    absent = [module for module, root in found if not root.is_dir()]
    if absent:
        print(f"builtin_finalizers: not in the cache, not read: {' '.join(absent)}", file=sys.stderr)
    return [(f"k8s.io/kubernetes@{version}", kubernetes)] + [(m, root) for m, root in found if root.is_dir()]


def constants(text: str) -> dict[str, str]:
    """A Go file's constant declarations: name to the expression after `=`."""
    specs = [m.groups() for m in CONST_LINE.finditer(text)]
    for block in CONST_BLOCK.findall(text):
        specs.extend(m.groups() for m in SPEC.finditer(block))
    return dict(specs)


def evaluate(expression: str, package: dict[str, str], seen: frozenset[str] = frozenset()) -> str | None:
    """The string a constant expression makes, or None when it is not literals and the package's constants."""
    value = ""
    for index, token in enumerate(TOKEN.findall(expression)):
        if token == "//":
            break
        if index % 2 == 1:
            if token != "+":
                return None
        elif token[0] in '"`' and "\\" not in token:
            value += token[1:-1]
        elif token in package and token not in seen:
            part = evaluate(package[token], package, seen | {token})
            if part is None:
                return None
            value += part
        else:
            return None
    return value or None


def definitions(module: str, root: Path) -> dict[str, set[str]]:
    """The finalizer constants of a module's Go sources: each value to the files that define it."""
    packages: dict[Path, dict[str, str]] = defaultdict(dict)
    named: list[tuple[Path, str, str]] = []  # (file, constant, expression) of constants named after finalizers
    for path in root.rglob("*.go"):
        relative = path.relative_to(root)
        if path.name.endswith("_test.go") or SKIPPED_DIRS.intersection(relative.parts[:-1]):
            continue
        text = path.read_text(errors="replace")
        if "const" not in text:
            continue
        declared = constants(text)
        packages[path.parent].update(declared)
        named.extend((path, name, expr) for name, expr in declared.items() if ONE_FINALIZER.search(name))
    defined: dict[str, set[str]] = defaultdict(set)
    for path, _, expression in named:
        value = evaluate(expression, packages[path.parent])
        if value is not None:
            defined[value].add(f"{module}/{path.relative_to(root)}")
    return defined


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", help="a Kubernetes release, v1.MINOR.PATCH")
    args = parser.parse_args(argv)
    defined: dict[str, set[str]] = defaultdict(set)
    for module, root in modules(module_cache(), args.version):
        for value, files in definitions(module, root).items():
            defined[value] |= files
    print(
        f"# release {args.version}: the Go files of k8s.io/kubernetes@{args.version} and its staging modules"
        " that define each finalizer of the built-in table (scripts/builtin_finalizers.py)"
    )
    for finalizer in sorted(BUILTIN):
        for file in sorted(defined.get(finalizer, ())):
            print(f"{finalizer}\t{file}")
    for value in sorted(set(defined) - set(BUILTIN)):
        print(f"builtin_finalizers: not in the table: {value} ({', '.join(sorted(defined[value]))})", file=sys.stderr)
    undefined = sorted(set(BUILTIN) - set(defined))
    if undefined:
        print(f"builtin_finalizers: no constant of {args.version} defines {', '.join(undefined)}", file=sys.stderr)
    return 1 if undefined else 0


if __name__ == "__main__":
    sys.exit(main())
