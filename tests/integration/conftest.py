"""The integration tests' fixtures, named here so that only these tests reach them: the
cluster's (tests/clusterfixtures.py), a CRD's (tests/crdfixtures.py) and the tool's
(clifixtures.py). A conftest's fixtures are the names it holds, so they are imported."""

from __future__ import annotations

from clifixtures import cli, cli_env, unfinalize_cmd  # noqa: F401
from clusterfixtures import (  # noqa: F401
    STARTUP_KEY,
    _control_plane,
    api_client,
    audit,
    bin_dir,
    control_plane,
    kube_env,
    kubeconfig,
    kubectl,
    namespace,
    server_minor,
)
from crdfixtures import make_crd  # noqa: F401


def pytest_terminal_summary(terminalreporter, config):
    seconds = config.stash.get(STARTUP_KEY, None)
    if seconds is not None:
        terminalreporter.write_line(f"test control plane started in {seconds:.1f}s")
