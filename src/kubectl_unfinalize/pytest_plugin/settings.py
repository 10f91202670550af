"""The plugin's options, command line and ini file alike, checked once into Settings.

Every name starts with `unfinalize` so that the names other Kubernetes plugins use stay
theirs: pytest-kind (`kind_cluster`, `--keep-cluster`, `--cluster-name`), pytest-kubernetes
(`k8s`, `k8s_manager`, `--k8s-*`), kubetest (`kube`, `--kube-*`). The command line wins
over the ini file; a list given on the command line replaces the ini file's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from .. import Scope

MODES = ("report", "free", "strict")
DEFAULT_GRACE = 5.0  # a test operator that is alive removes its finalizer within a second or two
HELP_MODE = (
    "kubectl-unfinalize after the session: report (what finalizers hold, no writes), free (while the "
    "session tears down, and at its start, remove finalizers that no live controller will remove once "
    "they held a deletion past the grace), strict (free, and fail the session if anything had to be "
    "freed or is still stuck). Off unless given (ini: unfinalize = MODE)"
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("unfinalize", "kubectl-unfinalize: objects finalizers hold after the session")
    group.addoption("--unfinalize", dest="unfinalize", metavar="MODE", choices=MODES, help=HELP_MODE)
    group.addoption(
        "--unfinalize-grace",
        dest="unfinalize_grace",
        metavar="SECONDS",
        help=f"how long a deletion may be held with no controller seen before it counts as stuck "
        f"(default {DEFAULT_GRACE:g}; ini: unfinalize_grace)",
    )
    group.addoption(
        "--unfinalize-namespace",
        dest="unfinalize_namespaces",
        action="append",
        metavar="PATTERN",
        help="only objects in namespaces matching this shell pattern, e.g. 'test-*' (repeatable; "
        "ini: unfinalize_namespaces); cluster-scoped objects are then left out",
    )
    group.addoption(
        "--unfinalize-group",
        dest="unfinalize_groups",
        action="append",
        metavar="GROUP",
        help="only objects of types in this API group (a shell pattern, e.g. '*.example.com'; "
        "repeatable; ini: unfinalize_groups)",
    )
    group.addoption(
        "--unfinalize-finalizer",
        dest="unfinalize_finalizers",
        action="append",
        metavar="NAME",
        help="only this finalizer (repeatable; ini: unfinalize_finalizers); a Kubernetes controller's own "
        "finalizer (kubernetes.io/pvc-protection, ...) is only ever removed when named here",
    )
    group.addoption(
        "--unfinalize-max-objects",
        dest="unfinalize_max_objects",
        metavar="N",
        help="free at most N objects in the whole session; a call that would free more is refused before "
        "it writes and said in the summary (ini: unfinalize_max_objects)",
    )
    parser.addini("unfinalize", "report, free or strict (see --unfinalize)", default="")
    parser.addini("unfinalize_max_objects", "at most N objects freed (see --unfinalize-max-objects)", default="")
    parser.addini("unfinalize_grace", f"seconds (see --unfinalize-grace), default {DEFAULT_GRACE:g}", default="")
    parser.addini("unfinalize_namespaces", "namespace patterns (see --unfinalize-namespace)", type="args", default=[])
    parser.addini("unfinalize_groups", "API group patterns (see --unfinalize-group)", type="args", default=[])
    parser.addini("unfinalize_finalizers", "finalizer names (see --unfinalize-finalizer)", type="args", default=[])


Narrowing = Scope  # what the plugin may look at and touch (patterns of namespaces and API groups, finalizers)


@dataclass(frozen=True)
class Settings:
    mode: str | None  # None: the plugin does nothing at all
    grace: float = DEFAULT_GRACE
    narrowing: Narrowing = Narrowing()
    max_objects: int | None = None  # the session's cap on objects freed, over all its calls

    @property
    def frees(self) -> bool:
        return self.mode in ("free", "strict")


def read(config: pytest.Config) -> Settings:
    """Raises pytest.UsageError (one line, pytest's exit 4) for a value it cannot use."""
    mode = config.getoption("unfinalize") or str(config.getini("unfinalize")).strip() or None
    if mode is not None and mode not in MODES:
        raise pytest.UsageError(f"unfinalize = {mode!r}: use one of {', '.join(MODES)}")
    text = config.getoption("unfinalize_grace") or str(config.getini("unfinalize_grace")).strip()
    cap = config.getoption("unfinalize_max_objects") or str(config.getini("unfinalize_max_objects")).strip()
    return Settings(
        mode=mode,
        grace=_seconds(text) if text else DEFAULT_GRACE,
        max_objects=_count(cap) if cap else None,
        narrowing=Narrowing(
            namespaces=_values(config, "unfinalize_namespaces"),
            groups=_values(config, "unfinalize_groups"),
            finalizers=_values(config, "unfinalize_finalizers"),
        ),
    )


def _seconds(text: str) -> float:
    value = text[:-1] if text.endswith("s") else text
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or seconds < 0:
        raise pytest.UsageError(f"--unfinalize-grace {text!r}: use seconds, e.g. 5 or 5s")
    return seconds


def _count(text: str) -> int:
    if not text.isdigit():
        raise pytest.UsageError(f"--unfinalize-max-objects {text!r}: use a whole number, 0 or more")
    return int(text)


def _values(config: pytest.Config, name: str) -> tuple[str, ...]:
    given: Sequence[str] | None = config.getoption(name)
    values = tuple(given) if given else tuple(config.getini(name))
    for value in values:
        if not value.strip():
            raise pytest.UsageError(f"--{name.replace('_', '-')[:-1]}: an empty value")
    return tuple(v.strip() for v in values)
