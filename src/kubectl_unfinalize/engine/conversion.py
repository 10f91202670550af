"""A CRD whose conversion webhook is gone (kubernetes/kubernetes#71925).

The API server calls the webhook for every object stored in a version other than the one
requested, so while its backend is gone every list (metadata-only too), patch and delete
of those objects fails with a 500, and the CRD's cleanup hangs. Waiting cannot help, so
the sweep must neither re-list it until the deadline nor blame the objects: it names the
webhook. The maintainers' remedy for a teardown is to set spec.conversion to
{strategy: None} and delete; the tool applies it only to a CRD it was told to delete
(--delete), with one merge patch of spec.conversion, never of metadata.finalizers: the
CRD's own customresourcecleanup finalizer stays for the API server to remove.

Reads only what the failure and the CRD say; changes nothing but the one patch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ApiError, UnfinalizeError
from ..kube.port import Cluster
from ..model import CRD, crd_ref
from ..options import DryRun
from .writes import Writes

CONVERSION_FAILED = "conversion webhook for"  # the API server's own wording (apiextensions webhook converter)
INTERNAL = ("InternalError", "Internal Server Error", "")  # the Status reason of a 500, or the HTTP phrase
# What the API server's message says when the webhook's backend is not there at all.
DEAD_SIGNS = (
    ("connection refused", "connection refused"),
    ("no endpoints available", "no endpoints"),
    ("no such host", "no such host"),
    (r'service "[^"]*" not found', "service not found"),
)
NONE = {"strategy": "None", "webhook": None}  # a merge patch: the webhook stanza must go with the strategy
LISTS_AFTER_REMEDY = 4  # the API server rebuilds the CRD's handler within moments; then the failure is lasting
FIRST_BACKOFF = 0.2


def is_failure(exc: BaseException) -> bool:
    """A list (or write) the API server refused because the CRD's conversion webhook failed:
    the Status is a 500 internal error whose message is the converter's."""
    return isinstance(exc, ApiError) and exc.status == 500 and exc.reason in INTERNAL and CONVERSION_FAILED in str(exc)


@dataclass(frozen=True)
class Webhook:
    """The failing conversion webhook of one CRD, as its spec and the failure show it."""

    crd: str
    stored_versions: tuple[str, ...]
    target: str  # "service NAMESPACE/NAME:PORT/PATH" or the URL
    previous: dict[str, Any]  # spec.conversion before this run changed it
    backend: str  # "connection refused", "no endpoints", ...; "" when the message does not say it is gone

    def describe(self) -> str:
        versions = ", ".join(self.stored_versions) or "unknown"
        state = f" is unreachable ({self.backend})" if self.backend else " is failing"
        return f"the CRD's conversion webhook {self.target}{state}, stored versions {versions}"

    def shown_previous(self) -> str:
        """spec.conversion as it was, compact, the caBundle shortened to its length: a
        line a person can read (the operator's install sets the bundle again)."""
        previous = json.loads(json.dumps(self.previous))
        config = (previous.get("webhook") or {}).get("clientConfig") or {}
        if config.get("caBundle"):
            config["caBundle"] = f"({len(str(config['caBundle']))} characters)"
        return json.dumps(previous, separators=(",", ":"), sort_keys=True)


def read(cluster: Cluster, crd: CRD, exc: UnfinalizeError) -> Webhook | None:
    """The CRD's conversion webhook, or None when the CRD is gone or converts without one
    (a webhook removed meanwhile: the API server has not caught up yet)."""
    obj = cluster.get(crd_ref(crd.name))
    if obj is None:
        return None
    conversion = dict((obj.get("spec") or {}).get("conversion") or {})
    if conversion.get("strategy") != "Webhook":
        return None
    config = (conversion.get("webhook") or {}).get("clientConfig") or {}
    service = config.get("service")
    if service:
        port = service.get("port", 443)
        target = f"service {service.get('namespace')}/{service.get('name')}:{port}{service.get('path') or ''}"
    else:
        target = str(config.get("url") or "(no clientConfig)")
    stored = tuple(str(v) for v in (obj.get("status") or {}).get("storedVersions") or ())
    return Webhook(crd.name, stored, target, conversion, backend(str(exc)))


def backend(message: str) -> str:
    """Whether the failure says the backend is gone, in a few words; "" when not (a
    timeout, a TLS error or a bad answer may come from a backend that is there)."""
    return next((state for sign, state in DEAD_SIGNS if re.search(sign, message, re.IGNORECASE)), "")


def disable(writes: Writes, crd: CRD, dry_run: DryRun) -> None:
    """Set spec.conversion to {strategy: None}: the API server then serves every stored
    version as is, so the objects can be listed, freed and deleted with the CRD. One
    merge patch of spec.conversion; with a server dry run nothing is stored, and a
    client dry run sends nothing."""
    if dry_run is not DryRun.CLIENT:
        writes.merge_patch(crd_ref(crd.name), {"spec": {"conversion": NONE}}, dry_run)


def remedy_line(hook: Webhook, dry_run: DryRun) -> str:
    would = "would set" if dry_run is not DryRun.NONE else "set"
    line = f"{would} spec.conversion to {{strategy: None}}, was {hook.shown_previous()}: {hook.describe()}"
    if dry_run is not DryRun.NONE:
        line += "; its objects cannot be listed before that, so this dry run does not show them"
    return line


def lasting_line(listing: str, crd: CRD, hook: Webhook | None, why: str = "") -> str:
    """The CRD's one failure: the list that failed, the webhook, and what finishes the job."""
    named = f"; {hook.describe()}" if hook else "; the CRD's conversion webhook is failing"
    if why:
        return f"{listing}{named}; {why}"
    return (
        f"{listing}{named}: until it answers, the CRD's objects can be neither listed nor patched; bring it back,"
        f" or run `kubectl unfinalize crd {crd.name} --delete` to set spec.conversion.strategy to None and delete"
        " the CRD"
    )
