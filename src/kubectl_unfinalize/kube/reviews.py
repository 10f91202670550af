"""Access reviews: what they send, and their answers for one run, each question asked once,
some before they are needed.

The RBAC preflight's reviews are one round trip, and on a far server a new connection's
handshake is one more; asked only once the CRDs are resolved, they delay the first write
by both. A run that names its CRDs (by full name, or in manifests) knows their group and
plural before it reads them, so it asks then, each on a thread of its own, while the
CRDs are read; the preflight later finds the answers waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import ApiError
from ..model import Resource

Key = tuple[str, str, str, str | None, str | None]  # verb, group, plural, namespace, name: what a review sends
Request = Callable[..., Any]


def key(verb: str, resource: Resource, namespace: str | None, name: str | None) -> Key:
    """What a review sends: a cluster-scoped resource's namespace is not part of it."""
    return (verb, resource.group, resource.plural, namespace if resource.namespaced else None, name)


def allowed(request: Request, asked: Key) -> bool:
    """A SelfSubjectAccessReview's answer; True when the review itself cannot be made,
    since the real requests will then report what is refused."""
    verb, group, plural, namespace, name = asked
    attributes = {"verb": verb, "group": group, "resource": plural}
    if namespace:
        attributes["namespace"] = namespace
    if name:
        attributes["name"] = name
    status = review(request, "SelfSubjectAccessReview", {"resourceAttributes": attributes})
    return True if status is None else bool(status.get("allowed"))


def review(request: Request, kind: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    """An authorization review's status, or None when the review cannot be made."""
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
    try:
        answer = request("POST", f"/apis/authorization.k8s.io/v1/{kind.lower()}s", body=body)
    except ApiError:
        return None
    return dict((answer or {}).get("status") or {})


def whoami(request: Request) -> str:
    """The user name the API server sees, or "" when it will not say."""
    try:
        answer = request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
    except ApiError:
        return ""
    return str(((answer or {}).get("status") or {}).get("userInfo", {}).get("username") or "")


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
