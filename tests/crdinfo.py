"""What the tests know about a CRD they made (crdfixtures.py's ``make_crd``), typed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPEN_SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


@dataclass(frozen=True, slots=True)
class CrdInfo:
    """A CRD the tests created: ``crd.name`` is ``plural.group``; ``versions[0]`` is stored."""

    name: str
    group: str
    plural: str
    kind: str
    versions: tuple[str, ...] = ("v1",)
    scope: str = "Namespaced"

    @classmethod
    def of(cls, group: str, kind: str, plural: str | None = None, **fields) -> CrdInfo:
        """The CRD of `kind` in `group` (plural: kind in lower case plus "s", as make_crd names it)."""
        plural = plural or kind.lower() + "s"
        return cls(f"{plural}.{group}", group, plural, kind, **fields)

    @property
    def version(self) -> str:
        """The storage version (the first one), which the tests read and write objects at."""
        return self.versions[0]

    @property
    def api_version(self) -> str:
        """An object's ``apiVersion`` at the storage version: ``group/version``."""
        return f"{self.group}/{self.version}"

    def manifest(self, status: bool = False) -> dict[str, Any]:
        """The CRD as the tests apply it: any fields in every version, ``versions[0]``
        stored; a status subresource when `status` (kopf writes its progress there)."""
        extra: dict[str, Any] = {"subresources": {"status": {}}} if status else {}
        versions = [
            {"name": v, "served": True, "storage": i == 0, "schema": OPEN_SCHEMA, **extra}
            for i, v in enumerate(self.versions)
        ]
        names = {"plural": self.plural, "singular": self.kind.lower(), "kind": self.kind}
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name},
            "spec": {"group": self.group, "scope": self.scope, "names": names, "versions": versions},
        }
