"""The one thing sweeps, the preflight and the final check ask of the engine's threads."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Mapper(Protocol):
    """fn over items concurrently, results in order: the engine's workers, or an Executor."""

    def map(self, fn: Callable[[T], R], items: Iterable[T], /) -> Iterable[R]: ...
