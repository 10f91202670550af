"""What every part of one run works with, handed to each at construction: the cluster
(its writes through the admission guard), the options, the outcome book, the deadline.
The parts then say what they do, not where they found it."""

from __future__ import annotations

from dataclasses import dataclass

from ..deadline import Deadline
from ..journal import NO_JOURNAL, Journal
from ..kube.port import Cluster
from ..options import Options
from .outcomes import OutcomeBook


@dataclass(frozen=True)
class RunContext:
    cluster: Cluster  # writes go through admission.guard: none is sent that a dead webhook refuses
    options: Options
    book: OutcomeBook
    deadline: Deadline
    journal: Journal = NO_JOURNAL  # the run's record: told each write as it is answered
