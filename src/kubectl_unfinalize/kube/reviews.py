"""Access reviews' answers for one run: each question asked once, some before they are needed.

The RBAC preflight's reviews are one round trip, and on a far server a new connection's
handshake is one more; asked only once the CRDs are resolved, they delay the first write
by both. A run that names its CRDs (by full name, or in manifests) knows their group and
plural before it reads them, so it asks then, each on a thread of its own, while the
CRDs are read; the preflight later finds the answers waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Key = tuple[str, str, str, str | None, str | None]  # verb, group, plural, namespace, name: what a review sends


class _Answer:
    __slots__ = ("done", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: bool | None = None  # None: the early ask failed; the preflight asks again


class Reviews:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[Key, _Answer] = {}

    def asked(self, key: Key) -> bool:
        with self._lock:
            return key in self._answers

    def answer(self, key: Key, ask: Callable[[], bool]) -> bool:
        """The answer asked ahead (waited for), or asked now."""
        with self._lock:
            early = self._answers.get(key)
        if early is not None:
            early.done.wait()
            if early.value is not None:
                return early.value
        return ask()

    def ahead(self, key: Key, ask: Callable[[], bool], then: Callable[[], object]) -> None:
        """Ask on a thread of its own, then call `then` there. A failure is not kept: the
        preflight asks again, on its own path, and reports what fails there."""
        answer = _Answer()
        with self._lock:
            if key in self._answers:
                return
            self._answers[key] = answer

        def run() -> None:
            try:
                answer.value = ask()
            except Exception:  # noqa: BLE001 - asked again by the preflight, which reports it
                answer.value = None
            finally:
                answer.done.set()
                then()

        threading.Thread(target=run, name="unfinalize-review", daemon=True).start()
