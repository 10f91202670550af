"""What every part of one run works with, handed to each at construction: the cluster to
read, the writes (engine/writes.py: capped, guarded, recorded), the options, the outcome
book, the deadline.
The parts then say what they do, not where they found it."""

from __future__ import annotations

from dataclasses import dataclass

from ..deadline import Deadline
from ..kube.port import Cluster
from ..options import Options
from .outcomes import OutcomeBook
from .writes import Writes


@dataclass(frozen=True)
class RunContext:
    cluster: Cluster  # reads; every write goes through `writes`
    writes: Writes
    options: Options
    book: OutcomeBook
    deadline: Deadline
