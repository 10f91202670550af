"""The project's own Kubernetes control plane for tests, demos and benchmarks (``python -m controlplane``)."""

from .binaries import BINARIES, K8S_VERSION, ControlPlaneError, cache_bin_dir, find_binaries, missing_binaries
from .controlplane import ADMIN_USER, CONTROLLERS, WRITE_VERBS, ControlPlane

__all__ = [
    "ADMIN_USER",
    "BINARIES",
    "CONTROLLERS",
    "K8S_VERSION",
    "WRITE_VERBS",
    "ControlPlane",
    "ControlPlaneError",
    "cache_bin_dir",
    "find_binaries",
    "missing_binaries",
]
