"""Admission webhooks left behind by an uninstalled operator.

A Validating/MutatingWebhookConfiguration whose backend is gone, matching UPDATE (or
DELETE) on the operator's resources with failurePolicy Fail, makes the API server refuse
every finalizer patch with a 500 ("failed calling webhook ..."). Sending the patch again
cannot help, so once a refusal is evidently lasting (connection refused, a timeout, the
Service missing or without ready endpoints) writes the webhook would refuse are no longer
sent for the rest of the run, the configuration holding it is named once (the API
server's message names only the webhook entry), and each object's outcome is short.

Webhooks are never called for webhook configurations themselves, so removing one always
works: with --remove-dead-webhooks (opt-in, never implied by --delete) a configuration
whose backend is dead and whose rule matched a selected object's write is deleted, the
removal is an outcome, and the refused write is sent again.

Reads here (the configurations, once per run; a Service and its EndpointSlices) never
write; the only write is that opt-in DELETE.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ApiError, UnfinalizeError
from ..kube.paging import ListQuery
from ..kube.port import Cluster, Deleted
from ..model import Action, ObjectRef, Resource
from ..options import DryRun, Options
from .outcomes import OutcomeBook
from .writes import Writes

ADMISSION_GROUP = "admissionregistration.k8s.io"
VALIDATING = Resource(ADMISSION_GROUP, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False)
MUTATING = Resource(ADMISSION_GROUP, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False)
SERVICES = Resource("", "v1", "services", "Service", True)
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
CONFIGURATIONS = (VALIDATING, MUTATING)
FLAG = "--remove-dead-webhooks"
REMOVAL_RETRIES = 8  # a removed configuration reaches the API server's webhook cache within a second or so
REMOVAL_WAIT = 0.3

_CALL_FAILED = re.compile(r'failed calling webhook "([^"]+)": (?:failed to call webhook: )?(?:\w+ "([^"]+)": )?(.*)')
_DEAD = (
    ("connection refused", "refuses connections"),
    ("no endpoints available", "has no ready endpoints"),
    ("not found", "does not exist"),
    ("i/o timeout", "does not answer (timeout)"),
    ("deadline exceeded", "does not answer (timeout)"),
    ("no such host", "does not resolve"),
)
T = TypeVar("T")


@dataclass
class DeadWebhook:
    """One webhook entry of one configuration, its backend found dead."""

    config: ObjectRef
    name: str
    rule: str  # the rule that matched, e.g. "UPDATE on example.com/widgets"
    policy: str
    backend: str  # its URL, or "Service NS/NAME"
    state: str  # e.g. "refuses connections"
    rules: list[dict[str, Any]]
    everything: bool  # no namespace or object selector: every object of a matched resource is refused
    removed: bool = False  # deleted by this run (not in a dry run): a refused write may be sent again

    def matches(self, resource: Resource, operation: str) -> bool:
        return any(_rule_matches(rule, resource, operation) for rule in self.rules)

    def line(self) -> str:
        """The run's one line about it."""
        return (
            f'webhook "{self.name}" ({self.rule}, failurePolicy {self.policy}) calls {self.backend}, which '
            f"{self.state}; remove it with `kubectl delete {self.config.resource.kind.lower()} {self.config.name}`,"
            f" or run again with {FLAG}"
        )


_GOING = DeadWebhook(ObjectRef(VALIDATING, ""), "", "", "", "", "", [], False, removed=True)


class Blocked(UnfinalizeError):
    """A write not sent, or refused, because a dead webhook refuses it: lasting."""

    def __init__(self, webhook: DeadWebhook) -> None:
        self.webhook = webhook
        super().__init__(f'refused by dead admission webhook "{webhook.name}" (see {webhook.config.display})')


class Admission:
    """Per run, shared by the workers: the configurations (listed once, on the first
    refusal), the dead webhooks found, the writes refused in the pass under way."""

    def __init__(self, cluster: Cluster, writes: Writes, options: Options, book: OutcomeBook) -> None:
        self.cluster = cluster
        self.writes = writes  # the webhooks' own writes: capped and recorded, not guarded
        self.options = options
        self.book = book
        self.lock = threading.Lock()
        self._counting = threading.Lock()  # not the lock held while a refusal is judged (it reads)
        self.dead: dict[tuple[ObjectRef, str], DeadWebhook] = {}
        self.removed: set[ObjectRef] = set()  # configurations this run deleted (-f, or the flag)
        self.refusals: Counter[Resource] = Counter()  # lasting refusals in the pass under way
        self.refused_in: Counter[str] = Counter()  # the same, by namespace
        self.stuck: set[ObjectRef] = set()  # objects a dead webhook refused
        self._configs: list[tuple[ObjectRef, dict[str, Any]]] | None = None
        self._complete = False  # the last listing read both kinds of configuration
        self._relisted: set[str] = set()  # webhook names the configurations were listed again for

    def blocking(self, ref: ObjectRef, operation: str) -> DeadWebhook | None:
        """The dead webhook that refuses this write, if one is known (no request)."""
        if not self.dead:  # the common case, once per object on the listing thread: no lock
            return None
        with self.lock:
            for webhook in self.dead.values():
                if not webhook.removed and webhook.matches(ref.resource, operation):
                    if webhook.everything or ref in self.stuck:
                        return webhook
        return None

    def write(self, ref: ObjectRef, operation: str, send: Callable[[], T]) -> T:
        """Send a write unless a dead webhook is known to refuse it; on a refusal by one,
        say so once, remove it when asked to, and send the write again once it is gone."""
        for _ in range(REMOVAL_RETRIES):
            if (known := self.blocking(ref, operation)) is not None:
                raise Blocked(known)
            try:
                return send()
            except ApiError as exc:
                webhook = self.refused(exc, ref, operation)
                if webhook is None:
                    raise
                if not webhook.removed:
                    with self.lock:
                        self.stuck.add(ref)
                    raise Blocked(webhook) from exc
            time.sleep(REMOVAL_WAIT)  # the API server still calls the webhook it was told of
        return send()

    def refused(self, exc: ApiError, ref: ObjectRef, operation: str) -> DeadWebhook | None:
        """The dead webhook behind this refusal, or None when it is not one (or it is
        alive: the refusal may pass, and is retried as any other)."""
        found = _CALL_FAILED.search(exc.message) if exc.status == 500 else None
        if found is None:
            return None
        name, url, error = found.group(1), found.group(2) or "", found.group(3)
        with self.lock:
            if self._configs is None:
                self._configs = self._list()
            for (_, hook_name), known in self.dead.items():
                if hook_name == name and known.matches(ref.resource, operation):
                    return known
            for config, hook in self._entries(name, ref.resource, operation):
                webhook = self._judge(config, hook, ref.resource, operation, url, error)
                if webhook is None:
                    continue
                webhook.removed = config in self.removed
                self.dead[(config, name)] = webhook
                if not webhook.removed:
                    self._report(webhook)
                return webhook
            if self.removed and not self._holds(name):
                return _GOING  # in a configuration this run deleted, which the API server still calls
        return None

    def listed(self, name: str) -> bool | None:
        """Whether a webhook of that name is in a configuration the API lists (else it is
        configured from files on the API server); None when that cannot be told."""
        with self.lock:
            if name not in self._relisted and (self._configs is None or not self._holds(name)):
                self._configs = self._list()  # again for a name it lacks: a configuration created since
                self._relisted.add(name)
            return self._holds(name) if self._complete and not self.removed else None

    def begin_pass(self) -> None:
        self.refusals.clear()
        self.refused_in.clear()

    def count_refusal(self, ref: ObjectRef) -> None:
        """A write of the pass under way was refused lastingly (Blocked), on a worker."""
        with self._counting:
            self.refusals[ref.resource] += 1
            self.refused_in[ref.namespace or ""] += 1

    def refused_all(self, resource: Resource, failed: int) -> bool:
        """Every one of the `failed` objects of `resource` in the last pass was refused by
        a dead admission webhook: waiting for them cannot help."""
        return failed > 0 and self.refusals[resource] >= failed

    def note_deleted(self, ref: ObjectRef, answer: Deleted | None) -> None:
        """A configuration this run deleted (a -f document): its webhooks are going."""
        configuration = any((ref.resource.group, ref.resource.plural) == (c.group, c.plural) for c in CONFIGURATIONS)
        if configuration and answer is not None and self.options.dry_run is DryRun.NONE:
            with self.lock:
                self.removed.add(ref)
                for webhook in self.dead.values():
                    webhook.removed = webhook.removed or webhook.config == ref

    def _list(self) -> list[tuple[ObjectRef, dict[str, Any]]]:
        configs: list[tuple[ObjectRef, dict[str, Any]]] = []
        self._complete = True
        for resource in CONFIGURATIONS:
            try:
                for page in self.cluster.list_objects(resource, ListQuery()):
                    configs += [(ObjectRef(resource, str(c["metadata"]["name"])), c) for c in page]
            except ApiError:
                self._complete = False
                continue  # not allowed to read them: the refusals are then reported as they come
        return configs

    def _holds(self, name: str) -> bool:
        return any(h.get("name") == name for _, c in self._configs or [] for h in c.get("webhooks") or [])

    def _entries(self, name: str, resource: Resource, operation: str) -> list[tuple[ObjectRef, dict[str, Any]]]:
        """Webhook entries of that name (unique only within a configuration) whose rules
        match this write."""
        return [
            (config, hook)
            for config, body in self._configs or []
            for hook in body.get("webhooks") or []
            if hook.get("name") == name and any(_rule_matches(r, resource, operation) for r in hook.get("rules") or [])
        ]

    def _judge(
        self, config: ObjectRef, hook: dict[str, Any], resource: Resource, operation: str, url: str, error: str
    ) -> DeadWebhook | None:
        client = hook.get("clientConfig") or {}
        service = client.get("service")
        state = next((said for text, said in _DEAD if text in error), "")
        if service:
            backend = f"Service {service.get('namespace')}/{service.get('name')}"
            seen = self._service_state(service)
            state = state if seen is None else seen  # what the Service says wins over the message
        else:
            backend = str(client.get("url") or url)
        if not state:
            return None
        rules = list(hook.get("rules") or [])
        rule = next(r for r in rules if _rule_matches(r, resource, operation))
        groups = "/".join(filter(None, [resource.group, resource.plural]))
        return DeadWebhook(
            config=config,
            name=str(hook.get("name")),
            rule=f"rule {','.join(rule.get('operations') or [operation])} on {groups}",
            policy=str(hook.get("failurePolicy") or "Fail"),
            backend=backend,
            state=state,
            rules=rules,
            everything=not (hook.get("namespaceSelector") or {}) and not (hook.get("objectSelector") or {}),
        )

    def _service_state(self, service: dict[str, Any]) -> str | None:
        """What reading the Service says about it: "" when it has ready endpoints (the
        refusal may pass), None when it cannot be read (the API server's message decides)."""
        namespace, name = str(service.get("namespace")), str(service.get("name"))
        try:
            if self.cluster.get(ObjectRef(SERVICES, name, namespace)) is None:
                return "does not exist"
            query = ListQuery(namespace=namespace, label_selector=f"kubernetes.io/service-name={name}")
            slices = [s for page in self.cluster.list_objects(ENDPOINT_SLICES, query) for s in page]
        except ApiError:
            return None
        ready = [
            e for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready") is not False
        ]
        return "" if ready else "has no ready endpoints"

    def _report(self, webhook: DeadWebhook) -> None:
        """Once per webhook: remove its configuration when asked to, else name it."""
        if not self.options.remove_dead_webhooks:
            self.book.add(webhook.config, Action.BLOCKING, message=webhook.line(), aspect=f"webhook {webhook.name}")
            return
        dry_run = self.options.dry_run
        said = f'its webhook "{webhook.name}" ({webhook.rule}, failurePolicy {webhook.policy}) calls {webhook.backend}'
        said += f", which {webhook.state}"
        try:
            if dry_run is DryRun.CLIENT or self.writes.delete(webhook.config, dry_run) is not None:
                self.book.add(webhook.config, Action.DELETED, message=said)
            else:
                self.book.add(webhook.config, Action.GONE, message="already gone")
        except UnfinalizeError as exc:
            self.book.add(webhook.config, Action.FAILED, message=f"cannot remove it ({exc}): {said}", aspect="remove")
            return
        webhook.removed = dry_run is DryRun.NONE
        if webhook.removed:
            self.removed.add(webhook.config)


def _rule_matches(rule: dict[str, Any], resource: Resource, operation: str) -> bool:
    def has(key: str, value: str) -> bool:
        values = rule.get(key) or []
        return "*" in values or value in values

    resources = rule.get("resources") or []
    scope = rule.get("scope") or "*"
    return (
        has("operations", operation)
        and has("apiGroups", resource.group)
        and has("apiVersions", resource.version)
        and ("*" in resources or "*/*" in resources or resource.plural in resources)
        and scope in ("*", "Namespaced" if resource.namespaced else "Cluster")
    )
