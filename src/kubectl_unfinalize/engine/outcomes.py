"""The outcome book: one last word per object, every reported outcome counted, and the
listener told outside the lock (a slow terminal must not serialize the workers).

With retain=False (the command line, which streams every outcome as it happens) only
failures are kept, so memory does not grow with the number of objects freed."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from ..model import Action, ObjectKey, ObjectMeta, ObjectRef, Outcome
from ..options import DryRun

OutcomeListener = Callable[[Outcome], None]
Names = tuple[str, ...] | list[str]


class OutcomeBook:
    def __init__(self, dry_run: DryRun, listener: OutcomeListener | None = None, retain: bool = True) -> None:
        self.dry_run = dry_run
        self.retain = retain
        self._listener = listener
        self._lock = threading.Lock()
        self._last: dict[ObjectKey, Outcome] = {}
        self.counts: Counter[Action] = Counter()

    def outcome(
        self, ref: ObjectRef, action: Action, finalizers: Names = (), message: str = "", leaks: str = ""
    ) -> Outcome:
        dry_run = self.dry_run if action in (Action.UNFINALIZED, Action.DELETED, Action.RECONFIGURED) else DryRun.NONE
        return Outcome(ref.resource.display, ref.name, action, ref.namespace, list(finalizers), message, dry_run, leaks)

    def record(self, key: ObjectKey, outcome: Outcome, first_only: bool = False) -> None:
        """Keep the object's newest outcome and report it, unless it says nothing new:
        the same action again, or "already gone" after the run itself freed it."""
        with self._lock:
            previous = self._last.get(key)
            if previous is not None:
                if first_only or (previous.action == outcome.action and previous.finalizers == outcome.finalizers):
                    return
                if previous.action == Action.UNFINALIZED and outcome.action == Action.GONE:
                    return
            if self.retain or outcome.action.is_failure or first_only:
                self._last[key] = outcome
            elif previous is not None:
                del self._last[key]  # a failure that later succeeded is no longer one
            self.counts[outcome.action] += 1
        if self._listener is not None:
            self._listener(outcome)

    def add(
        self,
        ref: ObjectRef,
        action: Action,
        finalizers: Names = (),
        message: str = "",
        aspect: str = "",
        leaks: str = "",
    ) -> None:
        self.record(ObjectKey.of(ref, aspect), self.outcome(ref, action, finalizers, message, leaks))

    def of(self, meta: ObjectMeta, action: Action, finalizers: Names, message: str = "", leaks: str = "") -> None:
        self.add(meta.ref, action, finalizers, message, leaks=leaks)

    def last(self, ref: ObjectRef) -> Outcome | None:
        with self._lock:
            return self._last.get(ObjectKey.of(ref))

    def outcomes(self) -> list[Outcome]:
        with self._lock:
            return list(self._last.values())
