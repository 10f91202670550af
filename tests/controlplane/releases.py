"""What differs between the Kubernetes releases the control plane starts: read the release
from the binary itself ($KUBEBUILDER_ASSETS may hold any), and pass only flags it knows.

Every other flag controlplane.py passes (service-account signing, audit log, endpoint
reconciler; kube-controller-manager's controller names such as ``garbage-collector-controller``,
named so since 1.28) is taken alike by v1.29.15, v1.32.9 and v1.36.3: they were started with
them. Only feature gates come and go: a release refuses a gate it does not know, so each gate
here says from which minor it may be named, as the releases' feature lists say.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .binaries import ControlPlaneError

OLDEST_MINOR = 29  # build.sh's OLDEST_MINOR: the oldest release the tests start
# ListFromCacheSnapshot: alpha (off) in 1.33, beta (on) from 1.34; 1.32 and older refuse the name.
LIST_FROM_CACHE_SNAPSHOT_SINCE = 33
# AggregatedDiscoveryEndpoint: beta (on) up to 1.29, GA and locked on from 1.30. Off, the
# server answers only the legacy discovery lists, as servers before 1.27 do.
AGGREGATED_DISCOVERY_LOCKED_SINCE = 30
# AllowUnsafeMalformedObjectDeletion (KEP-3926): alpha (off) from 1.32, still alpha in 1.36. On, a list
# of a type holding undecodable objects fails with reason StoreReadError naming each one's key, and a
# DELETE with ignoreStoreReadErrorWithClusterBreakingPotential removes one; older releases refuse the name.
MALFORMED_DELETION_SINCE = 32


def release_of(binary: Path) -> str:
    """``v1.32.13``: what ``BINARY --version`` prints (build.sh sets it at link time)."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ControlPlaneError(f"cannot run {binary} --version: {e}") from e
    found = re.search(r"\bv1\.\d+\.\d+\S*", out)
    if not found:
        raise ControlPlaneError(f"{binary} --version printed no Kubernetes release: {out.strip()!r}")
    return found.group(0)


def minor_of(release: str) -> int:
    """21 for ``v1.21.3``; a release older than the tests support is an error, said once here."""
    minor = int(release.split(".")[1])
    if minor < OLDEST_MINOR:
        raise ControlPlaneError(f"Kubernetes {release} is older than the oldest the tests start (v1.{OLDEST_MINOR})")
    return minor


def apiserver_feature_gates(
    minor: int, *, continue_from_cache: bool, aggregated_discovery: bool = True, malformed_deletion: bool = False
) -> list[str]:
    """``--feature-gates`` for kube-apiserver of `minor` (none, or one flag)."""
    gates: dict[str, bool] = {}
    if malformed_deletion:
        if minor < MALFORMED_DELETION_SINCE:
            raise ControlPlaneError(
                "malformed_deletion needs AllowUnsafeMalformedObjectDeletion,"
                f" from Kubernetes 1.{MALFORMED_DELETION_SINCE}"
            )
        gates["AllowUnsafeMalformedObjectDeletion"] = True
    if minor >= LIST_FROM_CACHE_SNAPSHOT_SINCE:
        gates["ListFromCacheSnapshot"] = continue_from_cache
    elif continue_from_cache:
        raise ControlPlaneError(
            f"continue_from_cache needs ListFromCacheSnapshot, from Kubernetes 1.{LIST_FROM_CACHE_SNAPSHOT_SINCE}"
        )
    if not aggregated_discovery:
        if minor >= AGGREGATED_DISCOVERY_LOCKED_SINCE:
            raise ControlPlaneError(
                f"aggregated discovery can be turned off only before 1.{AGGREGATED_DISCOVERY_LOCKED_SINCE}"
            )
        gates["AggregatedDiscoveryEndpoint"] = False
    if not gates:
        return []
    return ["--feature-gates=" + ",".join(f"{name}={str(on).lower()}" for name, on in gates.items())]
