"""PyYAML, imported through here by what reads YAML on every run (kubeconfig, manifests).

Importing yaml compiles the regular expressions of its pure-Python reader, scanner and
resolver. One of them, the reader's class of characters that are not printable (it
spans all of Unicode), takes longer to compile than the rest of the import together: a
few ms of every start of the tool, measured in a small teardown's profile. The C loader
read with here never uses it, so the pattern is left in `re`'s cache as a stand-in that
compiles it on first use. Should PyYAML change the pattern, or `re` its cache, the
stand-in is simply never asked for (tests/unit/test_yamlload.py notices).
"""

from __future__ import annotations

import re
import sys
from types import ModuleType
from typing import Any

NOT_PRINTABLE = "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"  # yaml.reader's


class _OnFirstUse:
    """A compiled pattern, compiled when first used (and then cached in its place)."""

    def __init__(self, pattern: str, cache: dict[Any, Any], key: tuple[Any, ...]) -> None:
        self._pattern, self._cache, self._key = pattern, cache, key
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            if self._cache.get(self._key) is self:
                del self._cache[self._key]
            self._compiled = re.compile(self._pattern)
        return getattr(self._compiled, name)


def module() -> ModuleType:
    """The yaml module, imported once."""
    if "yaml" not in sys.modules:
        cache = getattr(re, "_cache", None)
        key = (str, NOT_PRINTABLE, 0)
        if isinstance(cache, dict) and key not in cache:
            cache[key] = _OnFirstUse(NOT_PRINTABLE, cache, key)
    import yaml

    return yaml


def safe_loader() -> Any:
    """The C safe loader where PyYAML was built with libyaml, else the Python one."""
    yaml = module()
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)
