"""TYPE as kubectl spells it -> the one resource it means, from aggregated discovery.

kubectl accepts the plural, the singular, the kind and the short names, each optionally
followed by `.group` or `.version.group`, in any case. The rules here, in order:

- a plural, singular or kind match beats a short-name match (a CRD whose short name is
  another type's plural cannot take that plural over);
- the core group wins over every other group when no group is typed (`events` is the
  core v1 Event, as kubectl's discovery order makes it; `events.events.k8s.io` is the other);
- any other match in more than one group is ambiguous: an input error naming each
  candidate as `plural.group`, never a guess;
- the group's preferred version (discovery lists it first) unless a version is typed.

Discovery is read once (two requests on a 1.30+ server) for every TYPE of a run.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InputError
from ..kube.discovery import Discovery, ServedType
from ..model import Resource


def _readings(word: str) -> list[tuple[str, str | None, str | None]]:
    """(name, version, group) a word may mean: `name`, `name.group`, `name.version.group`."""
    head, dot, rest = word.partition(".")
    if not dot:
        return [(head, None, None)]
    readings: list[tuple[str, str | None, str | None]] = [(head, None, rest)]
    version, dot, group = rest.partition(".")
    readings.append((head, version, group if dot else ""))
    return readings


def match_type(word: str, types: Iterable[ServedType]) -> list[ServedType]:
    """Every type `word` may mean, one per (group, plural), by the rules above; the
    caller decides what 0 or more than 1 mean."""
    types = list(types)
    wanted = word.strip().lower()
    for by_short in (False, True):
        found: dict[tuple[str, str], ServedType] = {}
        for name, version, group in _readings(wanted):
            for t in types:
                r = t.resource
                aliases = {s.lower() for s in t.short_names} if by_short else t.names
                if name not in aliases or (group is not None and r.group.lower() != group):
                    continue
                if version is not None and r.version.lower() != version:
                    continue
                found.setdefault((r.group, r.plural), t)  # the first seen is the preferred version
        if found:
            groups = {g for g, _ in found}
            if len(groups) > 1 and "" in groups:
                return [t for (g, _), t in found.items() if g == ""]
            return list(found.values())
    return []


def resolve_type(word: str, discovery: Discovery) -> Resource:
    """The one resource `word` names; an input error listing candidates otherwise."""
    matches = match_type(word, discovery.types)
    if len(matches) == 1:
        return matches[0].resource
    if matches:
        shown = ", ".join(sorted(t.resource.qualified for t in matches))
        raise InputError(f"resource type {word!r} is ambiguous: it matches {shown}; use one of those names")
    raise InputError(unknown_type(word, discovery))


def unknown_type(word: str, discovery: Discovery) -> str:
    wanted = word.strip().lower()
    if any(wanted in (c.lower() for c in t.categories) for t in discovery.types):
        return (
            f"{word!r} is a category, not a resource type: name one of its types"
            f" (or use 'crd --category {wanted}' to select its CRDs)"
        )
    hint = did_you_mean(wanted, {a for t in discovery.types for a in (*t.names, t.resource.qualified)})
    unavailable = f" (not answering now: {', '.join(discovery.unavailable)})" if discovery.unavailable else ""
    return f"the server has no resource type {word!r}{hint}{unavailable}"


def did_you_mean(word: str, vocabulary: Iterable[str]) -> str:
    """ "; did you mean X or Y?" for the names closest to a word that matched nothing, or ""."""
    import difflib  # only to suggest a name: most runs never need it

    close = difflib.get_close_matches(word.strip().lower(), sorted(vocabulary), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def split_type_name(word: str) -> tuple[str, str]:
    """kubectl's TYPE/NAME; an input error when either side is empty or NAME has a slash."""
    kind, slash, name = word.partition("/")
    if not slash or not kind or not name or "/" in name:
        raise InputError(f"{word!r} is not TYPE/NAME")
    return kind, name
