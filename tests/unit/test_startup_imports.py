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


def test_an_answer_never_retried_computes_no_backoff():
    """Every teardown ends on a 404 (its CRD read gone): deciding not to retry it drew a
    random backoff first, and random's import (hashlib, bisect) came with it."""
    code = (
        "import sys\n"
        "from kubectl_unfinalize.deadline import NO_DEADLINE\n"
        "from kubectl_unfinalize.errors import ApiError\n"
        "from kubectl_unfinalize.kube.retries import Attempts\n"
        "attempts = Attempts(None, 'GET /x', NO_DEADLINE, True, None)\n"
        "try:\n"
        "    attempts.after_status(ApiError(404, 'NotFound', 'not found'))\n"
        "except ApiError as error:\n"
        "    print(error.status, 'random' in sys.modules)\n"
    )
    assert printed(code) == "404 False"
