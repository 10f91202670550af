"""What a freeing run imports before it sends anything: the scan's modules stay out, since
creating their dataclasses was a tenth of the run's start-up CPU (the small teardown is
almost all start-up)."""

import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def printed(code: str) -> str:
    """What `code` prints, run by a fresh interpreter with only the package's source on its path."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": SRC}
    )
    return result.stdout.strip()


def test_a_freeing_run_imports_nothing_of_scan_but_its_durations():
    code = (
        "import sys\n"
        "from kubectl_unfinalize.cli import main, run_command, output\n"
        "from kubectl_unfinalize import api\n"
        "from kubectl_unfinalize.cli.commands import parse\n"
        "parse(['crd', 'widgets.example.com', '--delete'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('kubectl_unfinalize.scanning.')))\n"
    )
    assert printed(code) == "['kubectl_unfinalize.scanning.patience']"


def test_a_scan_still_finds_its_options():
    code = (
        "from kubectl_unfinalize.cli.commands import parse\n"
        "command = parse(['scan', '--free', '--finalizer', 'example.com/x'])\n"
        "print(type(command.options).__name__, command.options.free.scope.finalizers)\n"
    )
    assert printed(code) == "ScanOptions ('example.com/x',)"


def test_a_freeing_run_imports_no_standard_module_only_a_rare_path_needs():
    """secrets (hmac, hashlib, random) for a record's four-digit suffix, subprocess for an
    exec credential plugin the kubeconfig may not have: imports every run paid at start-up."""
    code = (
        "import sys\n"
        "from kubectl_unfinalize.cli import main, run_command, output\n"
        "from kubectl_unfinalize import api\n"
        "from kubectl_unfinalize.records import place\n"
        "assert len(place.new_id().rsplit('-', 1)[1]) == 4\n"
        "print(sorted(m for m in ('secrets', 'hmac', 'random', 'subprocess') if m in sys.modules))\n"
    )
    assert printed(code) == "[]"
