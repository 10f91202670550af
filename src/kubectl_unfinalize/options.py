"""What to free and how: the run's settings, validated once, shared by the CLI and the API.

Imports nothing heavy: the parser (flags.py) builds these without the kubernetes client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from .errors import ConfigError, InputError
from .finalizers import CRD_CLEANUP, builtin

DEFAULT_TIMEOUT = 300.0
"""Every run is bounded: a teardown step that may hang is the problem this tool removes."""


class DryRun(str, Enum):
    """Resolved once from --dry-run; everything downstream asks it, never the string."""

    NONE = "none"
    CLIENT = "client"
    SERVER = "server"

    @classmethod
    def parse(cls, value: DryRun | str | None) -> DryRun:
        if isinstance(value, DryRun):
            return value
        if value in (None, "", "none"):
            return cls.NONE
        try:
            return cls(value)
        except ValueError:
            raise InputError(f"invalid dry run {value!r}: use none, client or server") from None

    @property
    def sends_writes(self) -> bool:
        """Client dry run never writes; a server dry run sends every write with dryRun=All."""
        return self is not DryRun.CLIENT


@dataclass(frozen=True)
class Selection:
    """What the user named: CRDs by name, group, label or category, namespaces by name or
    label, manifests, and objects of any type by name or label."""

    crds: tuple[str, ...] = ()
    group: str | None = None
    crd_selector: str | None = None
    files: tuple[str, ...] = ()
    recursive: bool = False
    namespaces: tuple[str, ...] = ()
    namespace_selector: str | None = None
    categories: tuple[str, ...] = ()  # CRDs whose spec.names.categories hold one of these (kubectl get CATEGORY)
    # Any resource type (kubectl's TYPE NAME..., TYPE/NAME..., TYPE -l SELECTOR):
    resource: str | None = None  # TYPE as kubectl spells it
    names: tuple[str, ...] = ()  # NAMEs of `resource`
    objects: tuple[str, ...] = ()  # TYPE/NAME words
    selector: str | None = None  # with `resource` and no names: its objects with these labels
    field_selector: str | None = None  # ... and these fields
    all_namespaces: bool = False  # the selector lists every namespace, not the default one

    def __post_init__(self) -> None:
        for name in ("names", "objects", "categories"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        categories = tuple(c.strip().lower() for item in self.categories for c in item.split(","))
        if any(not c for c in categories):
            raise InputError("empty category name")
        object.__setattr__(self, "categories", categories)
        object.__setattr__(self, "crds", tuple(n.strip() for n in self.crds))
        self._check_types()
        object.__setattr__(self, "files", tuple(self.files))
        if isinstance(self.namespaces, str):  # unfinalize(namespaces="x") means one namespace, not x's letters
            object.__setattr__(self, "namespaces", (self.namespaces,))
        object.__setattr__(self, "namespaces", tuple(n.strip() for n in self.namespaces))
        selected = self.crds or self.group or self.crd_selector or self.files or self.categories
        selected = selected or self.resource or self.objects
        if not (selected or self.namespaces or self.namespace_selector):
            raise InputError(
                "nothing selected: name CRDs (crd NAME..., --group, -l), namespaces (ns NAME..., -l) or pass -f PATH"
            )
        if any(not n for n in self.crds):
            raise InputError("empty CRD name")
        if any(not n for n in self.namespaces):
            raise InputError("empty namespace name")
        if (self.crds and self.crd_selector) or (self.namespaces and self.namespace_selector):
            raise InputError("NAME and -l cannot be combined (kubectl has the same rule)")

    def _check_types(self) -> None:
        """The TYPE forms, with kubectl's rules where kubectl has one."""
        if self.resource is not None and not self.resource.strip():
            raise InputError("empty resource type")
        if self.names and not self.resource:
            raise InputError("NAME needs a resource type: TYPE NAME...")
        if self.resource and self.objects:
            raise InputError("TYPE/NAME needs no separate TYPE: use TYPE NAME... or TYPE/NAME... (kubectl's rule)")
        if any(not n.strip() for n in self.names):
            raise InputError("empty object name")
        named = self.names or self.objects
        listed = self.selector is not None or self.field_selector is not None
        if self.resource and not (named or listed):
            raise InputError(f"{self.resource} needs NAME..., -l SELECTOR or --field-selector")
        if named and listed:
            raise InputError("NAME and -l (or --field-selector) cannot be combined (kubectl has the same rule)")
        if named and self.all_namespaces:
            raise InputError("-A cannot be combined with NAME: a name is looked up in one namespace (use -n)")
        if listed and not self.resource:
            raise InputError("a selector for objects needs a resource type: TYPE -l SELECTOR")


@dataclass(frozen=True)
class Options:
    """How to free the selection. Frozen and validated, so every layer can trust it."""

    delete: bool = False
    wait: bool = True
    timeout: float | None = None
    dry_run: DryRun = DryRun.NONE
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    only_terminating: bool = False
    finalizers: tuple[str, ...] = ()
    concurrency: int = 64
    chunk_size: int = 500
    settle: float = 1.0
    poll: float = 0.2
    remove_dead_webhooks: bool = False  # opt-in: delete admission webhook configurations whose backend is dead
    backup: bool = False  # keep the bodies of what --delete deletes in the record, so undo can create them again
    max_objects: int | None = None  # change at most this many objects: refused before the first write, else stop
    # opt-in, never implied: delete the objects the server names as unreadable from storage
    # with its unsafe delete, which skips their finalizers and admission (KEP-3926)
    unsafe_delete_corrupt: bool = False
    # opt-in, never implied: force-delete (gracePeriodSeconds=0) the selected pods held by a
    # lost node (lost_nodes.py), as kubectl delete --force does
    force_lost_pods: bool = False
    # an owner held by foregroundDeletion: its blocking dependents freed of the finalizers a
    # dead controller holds (judged by scan's evidence), and the owner waited on
    with_dependents: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "dry_run", DryRun.parse(self.dry_run))
        if self.backup and not self.delete:
            raise InputError("--backup keeps what --delete deletes: use it with --delete")
        check_cap(self.max_objects)
        object.__setattr__(self, "finalizers", tuple(self.finalizers))
        check_bounds(self.concurrency, self.chunk_size, self.timeout)
        if not self.wait and not self.delete:
            raise InputError("--wait only applies with --delete")
        if any(not f.strip() for f in self.finalizers):
            raise InputError("--finalizer needs a name")

    @property
    def deadline_seconds(self) -> float:
        return self.timeout if self.timeout is not None else DEFAULT_TIMEOUT

    def removable(self, finalizers: list[str]) -> list[str]:
        """The finalizers this run removes from an object that has `finalizers`: those
        named with --finalizer, else every one but those Kubernetes' own controllers own
        or the CSI storage sidecars (finalizers.builtin). A CRD's own cleanup finalizer never."""
        if self.finalizers:
            return [f for f in finalizers if f in self.finalizers and f != CRD_CLEANUP]
        return [f for f in finalizers if builtin(f) is None]


def check_bounds(concurrency: int, chunk_size: int, timeout: float | None) -> None:
    """The bounds every run and scan shares."""
    if concurrency < 1 or chunk_size < 1:
        raise InputError("--concurrency and --chunk-size must be at least 1")
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout must be greater than 0")


def check_cap(max_objects: int | None) -> None:
    """--max-objects, a run's and scan --free's."""
    if max_objects is not None and max_objects < 0:
        raise InputError(f"--max-objects must be 0 or more, not {max_objects}")


@dataclass(frozen=True)
class ConnectionOptions:
    """kubectl's connection flags; each is honoured or refused, never ignored."""

    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    server: str | None = None
    token: str | None = None
    certificate_authority: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()
    as_uid: str | None = None
    request_timeout: float | None = None
    verbosity: int = 0
    log: Callable[[str], None] | None = field(default=None, compare=False)
    # kubectl's warnings about the configuration (kuberc's); None: Python's warnings (RuntimeWarning)
    warn: Callable[[str], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "as_groups", tuple(self.as_groups))
        if self.as_groups and not self.as_user:
            raise ConfigError("--as-group requires --as (kubectl has the same rule)")
        if self.as_uid and not self.as_user:
            raise ConfigError("--as-uid requires --as (kubectl has the same rule)")
        if self.request_timeout is not None and self.request_timeout < 0:
            raise ConfigError("--request-timeout must not be negative")
        if self.as_user is not None and not self.as_user.strip():
            raise ConfigError("--as needs a user name")
        if any(not group.strip() for group in self.as_groups):
            raise ConfigError("--as-group needs a group name")


def context_flag(context: str | None) -> str:
    """` --context NAME` for a printed command of one of several contexts ("" for none):
    without it, the command would act on the kubeconfig's current context."""
    if context is None:
        return ""
    import shlex  # only for several contexts: not on every run's start-up

    return f" --context {shlex.quote(context)}"


def connection_of(
    connection: ConnectionOptions | None, kubeconfig: str | None, context: str | None
) -> ConnectionOptions:
    """The Python API's connection keywords, one rule for every verb: kubeconfig and
    context, or connection= alone."""
    if connection is not None and (kubeconfig or context):
        raise InputError("pass kubeconfig and context inside connection=, or connection= alone")
    return connection or ConnectionOptions(kubeconfig=kubeconfig, context=context)
