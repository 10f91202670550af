"""Who owns a finalizer and whether that controller is alive: from what the cluster holds
(the built-in table, CRD groups, APIServices, the field manager that wrote the finalizer,
Leases, kopf peering), never from names of Deployments. Pure functions over what
survey.py read, so the verdicts are unit-tested on plain data.

Thresholds (seconds, below), chosen for controllers that watch what they own:
- GRACE: a live controller's watch delivers a deletion at once and it writes (removes
  the finalizer, or records a retry) within seconds; an object deleted less than this ago
  with no evidence either way is `pending`, not stuck.
- WORKING: a write by the finalizer's manager after the deletion, this recent, is a
  controller at work (kopf records each retry; controller-runtime updates status).
- ALIVE_PATIENCE: a controller with a sign of life (a fresh Lease or kopf peering entry,
  or its field manager writing another object of the type after the deletion, within this
  long) is `alive`; silent on the held objects for longer than this, it is still `alive`
  and counted as stuck by the gate, but never freed unattended: client-go's and
  controller-runtime's rate limiters back a failing item off to 1000 s, so a live
  controller retrying through an outage may write nothing for that long. Time alone
  never proves a controller dead; a person decides (scan prints the command).
- BUILTIN_PATIENCE: a built-in controller's finalizer still there after this long
  waits for something that will not happen by itself (a pod using a claim, a load balancer).
- A Lease is fresh when renewed within twice its leaseDurationSeconds (at least 30 s); a
  kopf peer when seen within its own lifetime.

Limits, said rather than hidden: a kopf peering entry says that a kopf operator is alive,
not which one, so with several kopf operators sharing a ClusterKopfPeering a stopped
one's objects read `alive` until ALIVE_PATIENCE; a Lease is matched by name only. Ages
are this machine's clock against the API server's timestamps: a skewed clock shifts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import finalizers
from ..durations import ago
from . import refusals
from .model import Blocking, State
from .patience import ALIVE_PATIENCE, BUILTIN_PATIENCE, GRACE, WORKING
from .tally import Tally, timestamp

KOPF_DOMAIN = "kopf.zalando.org"
# Field managers that are clients, not controllers: their names match nothing.
CLIENTS = ("kubectl", "openapi-generator", "go-http-client", "python-requests", "kubectl-unfinalize", "helm")


@dataclass(frozen=True)
class Lease:
    namespace: str
    name: str
    holder: str
    renewed: float | None
    duration: float

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Lease:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return cls(
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(spec.get("holderIdentity") or ""),
            timestamp(spec.get("renewTime")),
            float(spec.get("leaseDurationSeconds") or 15),
        )

    def fresh(self, now: float) -> bool:
        return self.renewed is not None and now - self.renewed <= max(2 * self.duration, 30.0)


@dataclass(frozen=True)
class Peer:
    """One kopf operator in a ClusterKopfPeering (namespace "") or KopfPeering."""

    peering: str
    namespace: str
    peer: str
    seen: float | None
    lifetime: float

    def fresh(self, now: float) -> bool:
        return self.seen is not None and now - self.seen <= max(self.lifetime, 30.0)


def peers(obj: dict[str, Any]) -> list[Peer]:
    """kopf keeps its peers in the peering object's status: id -> {lastseen, lifetime, ...}."""
    meta = obj.get("metadata") or {}
    found = []
    for peer, entry in (obj.get("status") or {}).items():
        if isinstance(entry, dict) and "lastseen" in entry:
            lifetime = float(entry.get("lifetime") or 60)
            seen = timestamp(entry.get("lastseen"))
            found.append(Peer(str(meta.get("name") or ""), str(meta.get("namespace") or ""), peer, seen, lifetime))
    return found


def domain(finalizer: str) -> str:
    """The DNS-like prefix of a finalizer (`example.com` of `example.com/cleanup`)."""
    return finalizer.split("/", 1)[0].lower() if "/" in finalizer else ""


def _related(a: str, b: str) -> bool:
    return bool(a and b) and (a == b or a.endswith("." + b) or b.endswith("." + a))


def matching_groups(finalizer: str, groups: Iterable[str]) -> list[str]:
    """API groups the finalizer's domain names (equal, or one a subdomain of the other)."""
    return sorted(g for g in groups if _related(domain(finalizer), g.lower()))


def controller(manager: str) -> bool:
    return bool(manager) and not manager.lower().startswith(CLIENTS)


def tokens(finalizer: str, managers: Iterable[str], crd_group: str) -> set[str]:
    """Words that a controller's Lease is named after, as far as names allow: its field
    manager, the finalizer's domain and the CRD group (and their first labels)."""
    found = {m.lower() for m in managers if controller(m)}
    for name in (domain(finalizer), crd_group.lower()):
        if name:
            found.add(name)
            found.add(name.split(".", 1)[0])
    return {t for t in found if len(t) >= 4 and t not in ("kubernetes", "k8s")}


def matching_leases(leases: Iterable[Lease], words: set[str], builtin: bool) -> list[Lease]:
    found = []
    for lease in leases:
        text = f"{lease.name} {lease.holder}".lower()
        if any(w in text for w in words) or (builtin and lease.name == finalizers.KCM):
            found.append(lease)
    return found


@dataclass
class Judgement:
    state: State
    verdict: str
    stuck: bool
    evidence: list[str]


def judge(
    finalizer: str,
    tally: Tally,
    now: float,
    terminating: bool,
    leases: list[Lease],
    kopf_peers: list[Peer],
    grace: float = GRACE,
    blocking: Blocking | None = None,
    elsewhere: tuple[str, float] | None = None,
) -> Judgement:
    """The verdict for one group, with the evidence it rests on, strongest first.
    `blocking`: what its controller says stops it (blocked.look, read for a group that
    would be working): the verdict is then blocked, given here once. `elsewhere`: the
    finalizer's manager that wrote last to any object of the type after the deletion, and
    when (written_elsewhere)."""
    evidence = _evidence(tally, now, leases, kopf_peers)
    written, seen = tally.last_after_deletion, tally.last_seen
    waited = now - tally.oldest if tally.oldest is not None else 0.0
    entry = finalizers.builtin(finalizer)
    if not terminating:
        return Judgement(State.HELD, "held: not being deleted", False, evidence)
    if entry is not None:
        stuck = waited > BUILTIN_PATIENCE
        kind = "storage sidecar" if entry.sidecar else "built-in"
        verdict = f"{kind}: waits for {entry.waits_for} ({entry.controller})"
        if stuck:
            verdict += f"; for {ago(waited)}"
        return Judgement(State.BUILTIN, verdict, stuck, evidence)
    if written and now - written[1] <= WORKING:
        if blocking is not None:
            verdict, said = refusals.blocked_verdict(blocking)
            return Judgement(State.BLOCKED, verdict, False, [said, *evidence])
        return Judgement(State.WORKING, f"working: last write {ago(now - written[1])} ago", False, evidence)
    if elsewhere and not (written and written[1] >= elsewhere[1]):
        evidence.append(f"{elsewhere[0]} wrote an object of this type {ago(now - elsewhere[1])} ago")
    life = _sign_of_life(now, leases, kopf_peers, elsewhere)
    signs = [t for t in (written[1] if written else None, seen[1] if seen else None) if t is not None]
    if life and waited <= ALIVE_PATIENCE:
        return Judgement(State.ALIVE, f"alive: {life}; nothing written here since the deletion", False, evidence)
    if life:  # held too long, but never freed unattended: a person decides
        here = min(now - max(signs), waited) if signs else waited
        verdict = f"alive: {life}, but silent here for {ago(here)}; time alone does not prove it dead"
        return Judgement(State.ALIVE, verdict, True, evidence)
    if waited < grace:
        return Judgement(State.PENDING, f"pending: deleted {ago(waited)} ago, no controller seen yet", False, evidence)
    signs += [lease.renewed for lease in leases if lease.renewed] + [p.seen for p in kopf_peers if p.seen]
    quiet = now - max(signs) if signs else waited
    return Judgement(State.STUCK, f"stuck: no controller seen for {ago(min(quiet, waited))}", True, evidence)


def _evidence(tally: Tally, now: float, leases: list[Lease], kopf_peers: list[Peer]) -> list[str]:
    """What a verdict rests on, in words: the writes, then each Lease and kopf peer."""
    evidence: list[str] = []
    written, seen = tally.last_after_deletion, tally.last_seen
    if written:
        evidence.append(f"last write by {written[0]} {ago(now - written[1])} ago, after the deletion")
    if seen and not written:
        evidence.append(f"last write by {seen[0]} {ago(now - seen[1])} ago (before the deletion)")
    for lease in leases:
        renewed = f"renewed {ago(now - lease.renewed)} ago" if lease.renewed else "never renewed"
        evidence.append(f"Lease {lease.namespace}/{lease.name} held by {lease.holder or 'nobody'}, {renewed}")
    for peer in kopf_peers:
        where = (
            f"KopfPeering {peer.namespace}/{peer.peering}" if peer.namespace else f"ClusterKopfPeering {peer.peering}"
        )
        seen_ago = f"seen {ago(now - peer.seen)} ago" if peer.seen else "never seen"
        evidence.append(f"kopf peer {peer.peer} in {where}, {seen_ago}")
    return evidence


def _sign_of_life(now: float, leases: list[Lease], peers: list[Peer], elsewhere: tuple[str, float] | None) -> str:
    """The freshest sign that the finalizer's controller runs, in words; "" when none."""
    found = [(lease.renewed, "Lease renewed") for lease in leases if lease.fresh(now) and lease.renewed]
    found += [(peer.seen, "kopf peer seen") for peer in peers if peer.fresh(now) and peer.seen]
    if elsewhere and now - elsewhere[1] <= ALIVE_PATIENCE:
        found.append((elsewhere[1], f"{elsewhere[0]} wrote an object of this type"))
    if not found:
        return ""
    when, what = max(found)
    return f"{what} {ago(now - when)} ago"


def written_elsewhere(writers: dict[str, str], tally: Tally) -> tuple[str, float] | None:
    """The group's finalizer manager (a controller, not a client) that wrote last to any
    object of the type after the group's first deletion, and when. `writers`: each field
    manager's latest write to an object of the type (RFC 3339, as listing.py keeps it)."""
    if tally.oldest is None:
        return None
    found = [
        (when, name)
        for name in tally.managers
        if controller(name) and (when := timestamp(writers.get(name))) is not None and when > tally.oldest
    ]
    if not found:
        return None
    when, name = max(found)
    return name, when


def owner(finalizer: str, tally: Tally, crd_groups: Iterable[str], apiservices: dict[str, str]) -> tuple[str, str]:
    """(kind, words) of who should remove the finalizer, strongest evidence first:
    the built-in table, the CRD group or APIService its domain names, its field manager."""
    parts: list[str] = []
    kind = "unknown"
    entry = finalizers.builtin(finalizer)
    if entry is not None:
        parts.append(entry.controller)
        kind = "builtin"
    if domain(finalizer) == KOPF_DOMAIN:
        parts.append("a kopf operator")
    groups = matching_groups(finalizer, crd_groups)
    if groups:
        parts.append("the controller of CRD group " + ", ".join(groups))
        kind = "crd" if kind == "unknown" else kind
    services = [
        f"APIService {name} ({where})"
        for group, (name, where) in _by_group(apiservices)
        if _related(domain(finalizer), group)
    ]
    if services:
        parts.extend(services)
        kind = "apiservice" if kind == "unknown" else kind
    managers = [name for name in tally.managers if name]
    if managers:
        parts.append("field manager " + ", ".join(sorted(managers)))
        kind = "manager" if kind == "unknown" else kind
    return kind, "; ".join(parts) or "unknown: no CRD group, APIService or field manager names it"


def _by_group(apiservices: dict[str, str]) -> list[tuple[str, tuple[str, str]]]:
    """apiservices maps an APIService name (v1.group) to where it is served."""
    return [
        (name.split(".", 1)[1].lower() if "." in name else name, (name, where)) for name, where in apiservices.items()
    ]
