"""What the bulk sender (net.bulk) is given, one object's write, and what it tells the
workers that gave it: apart from the sender so that the port names them without its
machinery."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(slots=True)
class BulkPatch:
    """One object's write (its finalizer patch, or the DELETE before it). Called, it is
    the whole job on a worker thread. `done` is told a 2xx answer's body; what it returns
    when that is a BulkPatch is the job's next write, sent in the same place (the DELETE's
    answer names what is left to patch), and the job ends with that one; another callable
    is the rest of the job, run by the workers in that place."""

    path: str
    body: bytes
    done: Callable[[bytes], object]  # the answer was 2xx (its body): record the outcome
    fallback: Callable[[bool], object]  # the whole job, with retries and diagnosis; True: this write may have applied
    method: str  # no defaults: a patch body sent under the wrong media type is refused (415)
    accept: str
    content_type: str

    def __call__(self) -> object:
        return self.fallback(False)

    def resend(self) -> object:
        """The job after its patch went out and no answer came."""
        return self.fallback(True)


class Sink(Protocol):
    """What the workers are told about the patches put here. A patch is put ahead of its
    place within their limit, and sent once places() gave it one; requeue() hands back one
    that had its place, returned() one that never had."""

    def places(self, wanted: int) -> int: ...

    def finished(self, started: float) -> None: ...

    def requeue(self, job: Callable[[], object], wait: float = 0.0) -> None: ...

    def returned(self, job: Callable[[], object]) -> None: ...

    def failed(self, exc: BaseException) -> None: ...
