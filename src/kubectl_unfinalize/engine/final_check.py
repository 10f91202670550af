"""Whether finalizers came back after a run without --delete: a live controller may put
them back on the objects it freed that are not being deleted. Reads only; what it finds
is a REFINALIZED outcome in the book.

Three ways to read a place (a type, in a namespace or all of them) again, cheapest
first: its objects' versions, a watch of its writes, its list. Each is a method of
FinalCheck, its docstring says when it is used."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import Action, ObjectMeta, ObjectRef, Resource
from ..options import Options
from .outcomes import OutcomeBook
from .sightings import Sightings
from .workers import Mapper

SPLIT_LISTS = 64  # a CRD is listed per namespace when its freed objects were in this many or fewer
LISTS_AT_ONCE = 16  # each holds a page: memory stays a few pages, whatever the number of namespaces
WATCH_OVER = 32 << 20  # a list that read more bytes than this is watched, not read again, by the final check,
WATCH_OBJECT = 4 << 10  # when its objects are this big: a small one's metadata costs about what its watch event does
WATCH_EVENTS_PER_SECOND = 20000  # the watch of a place lasts a second more per this many objects freed there
MERGE_SHARE = 2  # one versions read of every namespace when 1/MERGE_SHARE of what a type listed was freed
VERSIONS_SECONDS = 30  # the most a read of a place's versions may take (it ends as soon as they all came)

Place = tuple[Resource, str | None]  # a type, in a namespace (None: every namespace)
Watched = tuple[Resource, str | None, str]  # a place, and the resourceVersion to watch it from
Expected = dict[tuple[str, str], ObjectRef]  # (name, the version this run's patch left) -> the object


class FinalCheck:
    """The freed objects that had no deletionTimestamp are `sightings.live` (uid -> the
    object and the resourceVersion this run's patch left it at, "" when its answer did
    not say): the others are gone, so when there are none there is nothing to wait for.
    The places are read again on the engine's threads (`pool`), whose connections are
    open: on a far cluster each list page is a round trip, and the pages of one list can
    only be read one after the other."""

    def __init__(
        self, cluster: Cluster, options: Options, book: OutcomeBook, sightings: Sightings, pool: Mapper
    ) -> None:
        self.cluster = cluster
        self.options = options
        self.book = book
        self.sightings = sightings
        self.pool = pool
        self.query = ListQuery(  # finalized_only: what has none cannot have them back
            options.namespace, options.label_selector, options.field_selector, options.chunk_size, finalized_only=True
        )

    def run(
        self, crds: list[Resource], in_namespaces: Iterable[tuple[Resource, str]], objects: list[ObjectRef]
    ) -> None:
        """`crds`: the types of the CRDs whose instances were freed; `in_namespaces`: the
        types in namespaces where live objects were freed; `objects`: single objects.

        The wait counts from `sightings.first_live`, when the first of them was freed: a
        controller that is running puts finalizers back on every object it sees freed, so
        once the earliest one had `settle` seconds, reading them all again shows it; a long
        run therefore re-reads at once, and only a short one waits for the rest of `settle`."""
        live = self.sightings.live
        if not live:
            return
        places = self._places(crds, in_namespaces)
        first = self.sightings.first_live
        rest = max(0.0, self.options.settle - (0.0 if first is None else time.monotonic() - first))
        ours = _versions(live, places)
        unread = [place for place in places if place not in ours]
        again: list[ObjectRef] = []
        if ours:
            time.sleep(rest)
            rest = 0.0
            again, more = self.by_versions(ours)
            unread += more
        watched, listed = self._watchable(unread)
        if not watched:
            time.sleep(rest)
        found, more = self.by_watch(watched, rest)
        self.by_list(listed + more)
        self._check(self.pool.map(self.cluster.get_meta, [*again, *found, *objects]))

    def _places(self, crds: list[Resource], in_namespaces: Iterable[tuple[Resource, str]]) -> list[Place]:
        """Where the freed objects that may take finalizers back are: each CRD's namespaces
        that had one (its whole list when there are many), and a namespace's types."""
        namespace = self.options.namespace
        places: list[Place] = []
        for resource in crds:
            spaces = sorted({ns or "" for r, ns in self.sightings.live_places if r == resource})
            if resource.namespaced and namespace is None and len(spaces) <= SPLIT_LISTS:
                places += [(resource, ns) for ns in spaces]
            elif spaces:
                places.append((resource, namespace))
        return places + sorted(in_namespaces, key=lambda item: (item[1], item[0].qualified))

    def by_versions(self, ours: Mapping[Place, Expected]) -> tuple[list[ObjectRef], list[Place]]:
        """Where the version each patch left is known for every object freed in a place,
        the place's objects are read as names and versions only (changes.versions: a watch
        that sends the current objects, as a Table without them): an object whose version
        is still this run's was not written since, and only the others are read again (a
        GET each). That needs no watch history, which a long run or a busy server outlasts.
        Returns those objects, and the places the server could not read so (no WatchList)."""
        again: list[ObjectRef] = []
        unread: list[Place] = []
        reads, parts = self._merged(ours)
        for place, changed in zip(list(reads), self.pool.map(self._versions_of, list(reads.items())), strict=True):
            if changed is None:
                unread += parts.get(place, [place])
            else:
                again += changed
        return again, unread

    def _merged(self, ours: Mapping[Place, Expected]) -> tuple[dict[Place, Expected], dict[Place, list[Place]]]:
        """One read of every namespace for a type whose freed objects were in several and
        were at least half of what the run's list of it saw: the server then sends at most
        twice the rows, once, where a read per namespace costs a request and a place in
        the pool each (a version names one write, so a row of any namespace matches by
        name and version). Returns the reads, and the places each merged read stands for."""
        reads = dict(ours)
        parts: dict[Place, list[Place]] = {}
        if self.options.namespace is not None:
            return reads, parts
        spaces: dict[Resource, list[Place]] = {}
        for place in ours:
            if place[0].namespaced and place[1] is not None:
                spaces.setdefault(place[0], []).append(place)
        for resource, places in spaces.items():
            seen = self.cluster.listed_at(resource, None)
            freed = sum(len(ours[place]) for place in places)
            if len(places) > 1 and seen is not None and freed * MERGE_SHARE >= seen.objects:
                reads[(resource, None)] = {key: ref for place in places for key, ref in reads.pop(place).items()}
                parts[(resource, None)] = places
        return reads, parts

    def _versions_of(self, item: tuple[Place, Expected]) -> list[ObjectRef] | None:
        """The objects freed in the place that were written since (or are gone)."""
        (resource, namespace), expected = item
        seconds = VERSIONS_SECONDS + len(expected) // WATCH_EVENTS_PER_SECOND

        def seen(name: str, version: str) -> None:
            expected.pop((name, version), None)

        if self.cluster.versions(resource, self._in(namespace), seconds, seen) is None:
            return None
        return list(expected.values())

    def by_watch(self, places: list[Watched], rest: float) -> tuple[list[ObjectRef], list[Place]]:
        """Otherwise, reading them all again would download every object's metadata a
        second time (each annotation of 100 KiB again), so where the run's list read more
        than WATCH_OVER bytes of objects of WATCH_OBJECT bytes or more, a place is watched
        instead (changes.py): from the resourceVersion of that list's first page, before
        any write of this run to those objects, a Table watch without objects names each
        object written since, once per write. A controller putting a finalizer back is a
        write after this run's own: only the objects written twice or more are read again
        (a GET each), and the rest cannot have taken finalizers back. The watch lasts
        until `settle` has passed (`rest` more seconds, at least a second: timeoutSeconds);
        the history before it comes at once from the API server's watch cache. Returns
        those objects, and the places to list instead: where the server no longer holds
        that history (410 Expired: a long run, or a restarted API server), and where the
        watch names fewer objects than the run freed there (its history was cut short)."""
        again: list[ObjectRef] = []
        listed: list[Place] = []
        watch = lambda place: self._written_twice(place, rest)  # noqa: E731
        for place, found in zip(places, self.pool.map(watch, places), strict=True):
            if found is None:
                listed.append(place[:2])
            else:
                again += found
        return again, listed

    def _written_twice(self, place: Watched, rest: float) -> list[ObjectRef] | None:
        """The objects of a place written more than once since its list, or None: list it."""
        resource, namespace, since = place
        freed = self.sightings.live_places.get((resource, namespace if resource.namespaced else None), 0)
        seconds = max(1, math.ceil(rest)) + freed // WATCH_EVENTS_PER_SECOND
        written = self.cluster.written_since(resource, self._in(namespace), since, seconds)
        if written is None or len(written) < freed:
            return None
        return [ObjectRef(resource, name, namespace) for name, writes in written.items() if writes > 1]

    def by_list(self, places: list[Place]) -> None:
        """The places neither read can tell about are listed again, a page at a time:
        LISTS_AT_ONCE at a time, or all at once when the run's lists of them were small."""
        at_once = len(places) if self._small(places) else LISTS_AT_ONCE
        for start in range(0, len(places), max(1, at_once)):
            list(self.pool.map(self._list_again, places[start : start + at_once]))

    def _list_again(self, place: Place) -> None:
        resource, namespace = place
        for page in self.cluster.list_meta(resource, self._in(namespace)):
            self._check(page)

    def _check(self, page: Iterable[ObjectMeta | None]) -> None:
        live = self.sightings.live
        for meta in page:
            if meta is None or meta.uid not in live:
                continue
            back = self.options.removable(list(meta.finalizers))
            if back:
                culprit = f"; likely re-added by {', '.join(meta.managers)}" if meta.managers else ""
                message = f"finalizers came back{culprit}: is a controller still running?"
                self.book.of(meta, Action.REFINALIZED, back, message)

    def _in(self, namespace: str | None) -> ListQuery:
        return replace(self.query, namespace=namespace)

    def _small(self, places: Sequence[Place]) -> bool:
        """Whether the run's lists of these places' types read WATCH_OVER bytes or less in
        all: then they are all read again at once (a far cluster charges a round trip per
        round of lists), still holding no more than that."""
        total = 0
        for resource in {resource for resource, _ in places}:
            seen = self.cluster.listed_at(resource, self.options.namespace)
            if seen is None:
                return False
            total += seen.nbytes
        return total <= WATCH_OVER

    def _watchable(self, places: Sequence[Place]) -> tuple[list[Watched], list[Place]]:
        """The places to watch (with the resourceVersion to watch from), and those to list:
        a namespaced type listed across many namespaces is listed (Table rows carry no
        namespace)."""
        watched: list[Watched] = []
        listed: list[Place] = []
        for resource, namespace in places:
            seen = self.cluster.listed_at(resource, self.options.namespace)
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


def _versions(live: Mapping[str, tuple[ObjectRef, str]], places: Sequence[Place]) -> dict[Place, Expected]:
    """Per place whose every freed object's version is known: (name, version) -> object.
    A place of every namespace matches a name with any of its namespaces' objects: a
    version names one write, so one object."""
    by_place: dict[Place, Expected] = {}
    unknown: set[Place] = set()
    for ref, version in live.values():
        key = (ref.resource, ref.namespace)
        if not version:
            unknown.add(key)
        by_place.setdefault(key, {})[(ref.name, version)] = ref
    found: dict[Place, Expected] = {}
    for resource, namespace in places:
        keys = [
            key
            for key in by_place
            if key[0] == resource and (key[1] == namespace or namespace is None or not resource.namespaced)
        ]
        if keys and not any(key in unknown for key in keys):
            found[(resource, namespace)] = {k: v for key in keys for k, v in by_place[key].items()}
    return found
