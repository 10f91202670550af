"""Calls on threads of their own, started now and waited for later: the RBAC preflight
runs so while the first list page is read, and every write waits at its gate."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Gate:
    """What every write and outcome waits for (the RBAC preflight, asked while the first
    list page is read): open until start(); then wait() blocks until the call has ended
    and raises its refusal, each time it is asked."""

    def __init__(self) -> None:
        self._call: Background | None = None

    def start(self, fn: Callable[..., object], *args: object) -> None:
        self._call = Background(fn, *args)

    def wait(self) -> None:
        if self._call is not None:
            self._call.result()


class Background:
    """One call on a thread of its own, started now; result() waits for it and returns
    its value or raises its exception (each time it is asked). The RBAC preflight runs so
    while the first list page is read."""

    def __init__(self, fn: Callable[..., T], *args: object) -> None:
        self._done = threading.Event()
        self._value: object = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(fn, args), name="unfinalize-background", daemon=True).start()

    def _run(self, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), in the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> object:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value
