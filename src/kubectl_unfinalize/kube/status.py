"""What the API server's own controllers write in status, read in one place for the
engine and scan alike: the namespace controller's account of what it could not do, and
the aggregator's verdict on an APIService."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NAMESPACE_CONDITIONS = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)


def true_conditions(namespace: dict[str, Any]) -> list[str]:
    """The namespace controller's conditions that are True: what it could not do."""
    conditions = (namespace.get("status") or {}).get("conditions") or []
    return [
        f"{c.get('type')}: {c.get('message') or c.get('reason') or 'True'}"
        for c in conditions
        if c.get("type") in NAMESPACE_CONDITIONS and c.get("status") == "True"
    ]


@dataclass(frozen=True)
class ApiServiceState:
    """One APIService as the aggregator last judged it. An Available condition that is
    missing counts as unavailable: nothing vouches for the backend."""

    name: str
    service: str  # "service NS/NAME", or "" when the API server serves the group itself
    available: bool
    condition: str  # "Available=False (Reason): message", or "Available unknown"

    @classmethod
    def read(cls, obj: dict[str, Any]) -> ApiServiceState:
        conditions = (obj.get("status") or {}).get("conditions") or []
        available = next((c for c in conditions if c.get("type") == "Available"), None)
        backend = (obj.get("spec") or {}).get("service") or {}
        service = f"service {backend.get('namespace')}/{backend.get('name')}" if backend else ""
        condition = "Available unknown"
        if available is not None:
            condition = f"Available={available.get('status')} ({available.get('reason', '')})"
            if available.get("message"):
                condition += f": {available['message']}"
        return cls(
            name=str((obj.get("metadata") or {}).get("name") or ""),
            service=service,
            available=available is not None and available.get("status") == "True",
            condition=condition,
        )
