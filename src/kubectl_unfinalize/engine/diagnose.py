"""What still blocks, finalizers that came back, and why a request was refused.

Reads only; records its findings in the outcome book. Streams lists and keeps only the
first few examples, so a diagnosis of a huge CRD costs no more memory than a page.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from .. import finalizers
from ..errors import ApiError, DeadlineExceeded, Forbidden, Invalid, UnfinalizeError
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import CRD, STILL_BLOCKING, Action, ObjectMeta, ObjectRef, Resource, crd_ref
from ..options import Options
from .outcomes import OutcomeBook
from .sightings import Sightings
from .workers import Mapper

EXAMPLES = 5
LISTS_AT_ONCE = 16  # each holds a page: memory stays a few pages, whatever the number of namespaces
CONDITIONS = ("Terminating", "NamesAccepted", "Established")
WATCH_OVER = 32 << 20  # a list that read more bytes than this is watched, not read again, by the final check,
WATCH_OBJECT = 4 << 10  # when its objects are this big: a small one's metadata costs about what its watch event does
WATCH_EVENTS_PER_SECOND = 20000  # the watch of a place lasts a second more per this many objects freed there
VERSIONS_SECONDS = 30  # the most a read of a place's versions may take (it ends as soon as they all came)


def explain(exc: UnfinalizeError, verb: str, resource: Resource) -> str:
    """One line on why `verb` failed, from the server's Status rather than its wording."""
    if isinstance(exc, Forbidden):
        return f"forbidden: cannot {verb} {resource.qualified} (RBAC or admission): {exc}"
    if isinstance(exc, Invalid) and (exc.reason == "Invalid" or exc.causes or "denied" in str(exc)):
        by = "an admission webhook" if "webhook" in str(exc) else "admission"
        return f"rejected by {by}: {exc}"
    if isinstance(exc, ApiError):
        return f"{exc.status} {exc.reason}: {exc}"
    return str(exc)


def list_failure(exc: UnfinalizeError, resource: Resource) -> str:
    hint = ""
    if isinstance(exc, ApiError) and exc.status == 500 and "conversion webhook" in str(exc):
        hint = (
            "; the CRD's conversion webhook is failing, so its objects can be neither listed nor"
            " patched: bring the webhook back, or set spec.conversion.strategy to None, and run again"
        )
    return f"cannot list {resource.qualified}: {exc}{hint}"


def final_check(
    cluster: Cluster,
    options: Options,
    book: OutcomeBook,
    lists: Sequence[tuple[Resource, str | None]],
    objects: list[ObjectRef],
    sightings: Sightings,
    pool: Mapper,
) -> None:
    """Without --delete a live controller may put finalizers back on objects that are not
    being deleted. `sightings.live` holds the freed objects that had no deletionTimestamp (uid ->
    the object and the resourceVersion this run's patch left it at, "" when its answer
    did not say): the others are gone, so when it is empty there is nothing to wait for.
    `lists` are the (type, namespace) pairs where they were (None: every namespace), and
    `sightings.live_places` how many of them each holds; they are read again sixteen at a time (or
    watched, all at once) on the engine's threads, whose connections are open: on a far cluster each list
    page is a round trip, and the pages of one list can only be read one after the other.

    The wait counts from `sightings.first_live`, when the first of them was freed: a controller
    that is running puts finalizers back on every object it sees freed, so once the
    earliest one had `settle` seconds, reading them all again shows it; a long run
    therefore re-reads at once, and only a short one waits for the rest of `settle`.

    Where the version each patch left is known for every object freed in a place, the
    place's objects are read as names and versions only (changes.versions: a watch that
    sends the current objects, as a Table without them): an object whose version is
    still this run's was not written since, and only the others are read again (a GET
    each). That needs no watch history, which a long run or a busy server outlasts.
    Otherwise, or where the server cannot (no WatchList):

    Reading them all again would download every object's metadata a second time (each
    annotation of 100 KiB again), so where the run's list read more than WATCH_OVER bytes
    of objects of WATCH_OBJECT bytes or more, a place is watched instead (changes.py):
    from the resourceVersion of that list's first page, before any write of this run to
    those objects, a Table watch without objects names each object written since, once
    per write. A controller putting a finalizer back is a write after this run's own:
    only the objects written twice or more are read again (a GET each), and the rest
    cannot have taken finalizers back. The watch lasts until `settle` has passed (at
    least a second: timeoutSeconds); the history before it comes at once from the API
    server's watch cache. A place is listed as before when the server no longer holds
    that history (410 Expired: a long run, or a restarted API server), when the watch
    names fewer objects than the run freed there (its history was cut short), and for a
    namespaced type listed across many namespaces (Table rows carry no namespace)."""
    live, first_freed, live_in = sightings.live, sightings.first_live, sightings.live_places
    if not live:
        return
    waited = 0.0 if first_freed is None else time.monotonic() - first_freed
    query = replace(_query(options), finalized_only=True)  # what has none cannot have them back
    rest = max(0.0, options.settle - waited)
    ours = _versions(live, lists)
    again: list[ObjectRef] = []
    unread = [place for place in lists if place not in ours]
    if ours:
        time.sleep(rest)
        rest = 0.0

        def read_versions(place: tuple[Resource, str | None]) -> list[ObjectRef] | None:
            """The objects freed in the place that were written since (or are gone)."""
            expected = ours[place]
            resource, namespace = place
            seconds = VERSIONS_SECONDS + len(expected) // WATCH_EVENTS_PER_SECOND

            def seen(name: str, version: str) -> None:
                expected.pop((name, version), None)

            if cluster.versions(resource, replace(query, namespace=namespace), seconds, seen) is None:
                return None
            return list(expected.values())

        for where, changed in zip(list(ours), pool.map(read_versions, list(ours)), strict=True):
            if changed is None:
                unread.append(where)
            else:
                again += changed
    watched, listed = _watchable(cluster, options, unread)
    if not watched:
        time.sleep(rest)

    def check(page: Iterable[ObjectMeta | None]) -> None:
        for meta in page:
            if meta is None or meta.uid not in live:
                continue
            back = options.removable(list(meta.finalizers))
            if back:
                culprit = f"; likely re-added by {', '.join(meta.managers)}" if meta.managers else ""
                book.of(
                    meta, Action.REFINALIZED, back, f"finalizers came back{culprit}: is a controller still running?"
                )

    def watch(place: tuple[Resource, str | None, str]) -> list[ObjectRef] | None:
        """The objects of a place written more than once since its list, or None: list it."""
        resource, namespace, since = place
        freed = live_in.get((resource, namespace if resource.namespaced else None), 0)
        seconds = max(1, math.ceil(rest)) + freed // WATCH_EVENTS_PER_SECOND
        written = cluster.written_since(resource, replace(query, namespace=namespace), since, seconds)
        if written is None or len(written) < freed:
            return None
        return [ObjectRef(resource, name, namespace) for name, writes in written.items() if writes > 1]

    def list_again(place: tuple[Resource, str | None]) -> None:
        resource, namespace = place
        for page in cluster.list_meta(resource, replace(query, namespace=namespace)):  # a page at a time
            check(page)

    for place, found in zip(watched, pool.map(watch, watched), strict=True):
        if found is None:
            listed.append(place[:2])
        else:
            again += found
    at_once = len(listed) if _small(cluster, options, listed) else LISTS_AT_ONCE
    for start in range(0, len(listed), max(1, at_once)):
        list(pool.map(list_again, listed[start : start + at_once]))
    check(pool.map(cluster.get_meta, [*again, *objects]))


def _versions(
    live: Mapping[str, tuple[ObjectRef, str]], places: Sequence[tuple[Resource, str | None]]
) -> dict[tuple[Resource, str | None], dict[tuple[str, str], ObjectRef]]:
    """Per place whose every freed object's version is known: (name, version) -> object.
    A place of every namespace matches a name with any of its namespaces' objects: a
    version names one write, so one object."""
    by_place: dict[tuple[Resource, str | None], dict[tuple[str, str], ObjectRef]] = {}
    unknown: set[tuple[Resource, str | None]] = set()
    for ref, version in live.values():
        key = (ref.resource, ref.namespace)
        if not version:
            unknown.add(key)
        by_place.setdefault(key, {})[(ref.name, version)] = ref
    found: dict[tuple[Resource, str | None], dict[tuple[str, str], ObjectRef]] = {}
    for resource, namespace in places:
        keys = [
            key
            for key in by_place
            if key[0] == resource and (key[1] == namespace or namespace is None or not resource.namespaced)
        ]
        if keys and not any(key in unknown for key in keys):
            found[(resource, namespace)] = {k: v for key in keys for k, v in by_place[key].items()}
    return found


def _small(cluster: Cluster, options: Options, places: Sequence[tuple[Resource, str | None]]) -> bool:
    """Whether the run's lists of these places' types read WATCH_OVER bytes or less in
    all: then they are all read again at once (a far cluster charges a round trip per
    round of lists), still holding no more than that."""
    total = 0
    for resource in {resource for resource, _ in places}:
        seen = cluster.listed_at(resource, options.namespace)
        if seen is None:
            return False
        total += seen.nbytes
    return total <= WATCH_OVER


def _watchable(
    cluster: Cluster, options: Options, lists: Sequence[tuple[Resource, str | None]]
) -> tuple[list[tuple[Resource, str | None, str]], list[tuple[Resource, str | None]]]:
    """The places to watch (with the resourceVersion to watch from), and those to list."""
    watched: list[tuple[Resource, str | None, str]] = []
    listed: list[tuple[Resource, str | None]] = []
    for resource, namespace in lists:
        seen = cluster.listed_at(resource, options.namespace)
        if (
            seen is not None
            and seen.resource_version
            and seen.nbytes >= WATCH_OVER
            and seen.nbytes >= WATCH_OBJECT * seen.objects
            and (namespace is not None or not resource.namespaced)
        ):
            watched.append((resource, namespace, seen.resource_version))
        else:
            listed.append((resource, namespace))
    return watched, listed


def blocking(
    cluster: Cluster, options: Options, book: OutcomeBook, crds: list[CRD], objects: list[ObjectRef], why: str
) -> None:
    """Say exactly what still blocks: objects (first few, with finalizers), CRD
    conditions and finalizers, and why the run stopped."""
    for crd in crds:
        try:
            _crd_blocking(cluster, options, book, crd, why)
        except DeadlineExceeded:  # the grace is spent: the CRD is named, what blocks it is not read
            book.add(crd_ref(crd.name), Action.BLOCKING, message=f"{why}: not read again", aspect=STILL_BLOCKING)
        except UnfinalizeError as exc:
            book.add(
                crd_ref(crd.name),
                Action.BLOCKING,
                message=f"{why}; cannot tell what blocks: {exc}",
                aspect=STILL_BLOCKING,
            )
    for ref in objects:
        try:
            meta = cluster.get_meta(ref)
        except UnfinalizeError as exc:
            book.add(ref, Action.BLOCKING, message=f"{why}; cannot read it: {exc}", aspect=STILL_BLOCKING)
            continue
        if meta is not None:
            message = (
                f"finalizers {list(meta.finalizers)}"
                if meta.finalizers
                else "still terminating (no finalizers; waiting for the garbage collector?)"
            )
            if left := finalizers.blocker(meta.finalizers):
                message += f"; {left}"
            book.add(ref, Action.BLOCKING, meta.finalizers, f"{why}: {message}", aspect=STILL_BLOCKING)


def _crd_blocking(cluster: Cluster, options: Options, book: OutcomeBook, crd: CRD, why: str) -> None:
    remaining = 0
    examples: list[ObjectMeta] = []
    for page in cluster.list_meta(crd.resource, _query(options, namespaced=False)):
        remaining += len(page)
        examples += page[: EXAMPLES - len(examples)]
    obj = cluster.get(crd_ref(crd.name)) or {}
    shown = [f"{m.ref.namespace + '/' if m.ref.namespace else ''}{m.ref.name} {list(m.finalizers)}" for m in examples]
    more = f" and {remaining - len(examples)} more" if remaining > len(examples) else ""
    parts = [f"{remaining} {crd.resource.qualified} remain" + (": " + ", ".join(shown) + more if shown else "")]
    parts += [
        f"{c.get('type')}={c.get('status')}: {c.get('message', '')}".strip()
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("type") in CONDITIONS and c.get("message")
    ]
    finalizers = (obj.get("metadata") or {}).get("finalizers") or []
    if finalizers and not remaining:
        parts.append(f"CRD finalizers {finalizers}")
    book.add(crd_ref(crd.name), Action.BLOCKING, message=f"{why}: " + "; ".join(parts), aspect=STILL_BLOCKING)


def _query(options: Options, namespaced: bool = True) -> ListQuery:
    return ListQuery(
        namespace=options.namespace if namespaced else None,
        label_selector=options.label_selector if namespaced else None,
        field_selector=options.field_selector if namespaced else None,
        limit=options.chunk_size,
    )
