"""What the tests know about a CRD they made (conftest.py's ``make_crd``), typed."""

from __future__ import annotations

from dataclasses import dataclass


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
