"""Several kubeconfig contexts in one run (`--context` repeated, `--all-contexts`,
`scan_each(contexts=...)`): the same job in each, on a connection of its own (its cluster, its
credentials, its kuberc check), a few contexts at a time. A context that cannot be
reached, or whose credentials fail, is that context's outcome: the others still run."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import ConfigError, UnfinalizeError
from .options import ConnectionOptions

R = TypeVar("R")
AT_ONCE = 4  # contexts worked on together: each holds its own connections and threads


@dataclass
class InContext(Generic[R]):
    """What the job did in one context: its result, or the error that ended it there."""

    context: str
    result: R | None = None
    error: UnfinalizeError | None = None


def chosen(connection: ConnectionOptions, named: Sequence[str], every: bool) -> list[str]:
    """The contexts to run in, in the kubeconfig's order for `every` (--all-contexts), else
    as `named`, each once. A name the kubeconfig does not define is a ConfigError before
    anything is sent to any cluster."""
    from .kube.kubeconfig import context_names

    available = context_names(connection)
    if every:
        if not available:
            raise ConfigError("--all-contexts: the kubeconfig defines no context")
        return available
    missing = [name for name in named if name not in available]
    if missing:
        listed = ", ".join(sorted(available)) or "none"
        raise ConfigError(f"context {missing[0]!r} not found in kubeconfig (available: {listed})")
    return list(dict.fromkeys(named))


def run_each(
    contexts: Sequence[str], connection: ConnectionOptions, job: Callable[[ConnectionOptions], R]
) -> list[InContext[R]]:
    """`job` in each context (`connection` with that context), AT_ONCE at a time; the
    outcomes in the order of `contexts`. A bug's exception is raised, not made an outcome."""

    def one(context: str) -> InContext[R]:
        try:
            return InContext(context, job(dataclasses.replace(connection, context=context)))
        except UnfinalizeError as exc:
            return InContext(context, error=exc)

    with ThreadPoolExecutor(max(1, min(AT_ONCE, len(contexts))), thread_name_prefix="context") as pool:
        return list(pool.map(one, contexts))
