"""`scan`: every object being deleted and still held by finalizers, in every resource
type the server serves, grouped by finalizer and type, judged from the evidence the
cluster holds. Reads only, and returns a ScanReport; never prints.

Each type is listed metadata-only and paginated, a bounded number at once; a page is
reduced to tally.py's per-group totals before the next is read, so memory follows the
number of groups, not of objects (listing.py). What cannot be read (a group version
discovery marks unavailable, a 403 on a type) is one line in the report and the rest is
still scanned; objects the server cannot read from storage are each named.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .. import finalizers
from ..durations import ago
from ..errors import UnfinalizeError
from ..kube.discovery import Discovery, ServedType
from ..kube.paging import ListQuery
from ..kube.status import ApiServiceState
from ..model import APISERVICE_RESOURCE, CRD_RESOURCE, Resource, crd_ref
from . import blocked, chains, evidence, lost, orphans
from .commands import crd_commands, fixes, group_commands, orphan_commands
from .listing import TypeTally, list_type
from .model import Blocking, Group, Manager, State, TerminatingCrd
from .namespaces import terminating_namespaces
from .options import ScanOptions
from .port import ScanCluster
from .report import ScanReport
from .tally import Tally, rfc3339

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
KOPF_PEERINGS = ("clusterkopfpeerings", "kopfpeerings")
KOPF_GROUPS = ("kopf.dev", "zalando.org")


def discover(cluster: ScanCluster) -> tuple[list[ServedType], list[str]]:
    """Every listable type (namespaced and cluster-scoped) at its group's preferred
    version that serves it, and the group versions discovery marks unavailable."""
    served = Discovery.from_groups(cluster.api_discovery())
    return served.preferred("list"), list(served.unavailable)


def scan(cluster: ScanCluster, options: ScanOptions, clock: Callable[[], float] = time.time) -> ScanReport:
    started = time.monotonic()
    now = clock()
    report = ScanReport(namespace=options.namespace, include_live=options.include_live, older_than=options.older_than)
    types, unavailable = discover(cluster)
    resources = [t.resource for t in types]
    report.not_scanned += [f"{gv}: unavailable in discovery; its objects were not scanned" for gv in unavailable]
    report.failing = list(report.not_scanned)  # a group version that cannot be read fails the gate
    discovered = resources  # kopf's peering types are read whatever -n narrows the lists to
    if options.namespace:
        resources = [r for r in resources if r.namespaced or r.qualified == CRD_RESOURCE.qualified]
    # Before the lists: a namespace made after them may hold objects they listed.
    spaces = orphans.existing(cluster, discovered, options.namespace)
    with ThreadPoolExecutor(max(1, options.concurrency)) as pool:
        apiservice_job = pool.submit(_objects, cluster, APISERVICE_RESOURCE)
        lease_job = pool.submit(_objects, cluster, LEASES)
        peering_job = pool.submit(_peerings, cluster, discovered)
        lists = list(pool.map(lambda r: list_type(cluster, r, options, now, spaces), resources))
        apiservices, apiservice_failure = apiservice_job.result()  # unreadable: none is blamed or named
        leases, lease_failure = lease_job.result()
        peerings = peering_job.result()
    report.types = len(lists)
    report.objects = sum(listed.total for listed in lists)
    report.not_scanned += [listed.failure for listed in lists if listed.failure]
    report.corrupt = [found for listed in lists for found in listed.corrupt]
    report.failing += [listed.failure for listed in lists if listed.failing]
    lingering = [pod for listed in lists for pod in listed.lingering]
    report.lost_pods = lost.find(cluster, lingering, now, report.not_scanned)
    report.not_scanned += [f"evidence: {failure}" for failure in (apiservice_failure, lease_failure) if failure]
    crd_list = next(
        (listed for listed in lists if listed.resource.qualified == CRD_RESOURCE.qualified), TypeTally(CRD_RESOURCE)
    )
    totals = {listed.resource.qualified: (-1 if listed.failure else listed.total) for listed in lists}
    states = [ApiServiceState.read(obj) for obj in apiservices]
    served = {state.name: state.service for state in states if state.service}
    context = _Context(
        now=now,
        options=options,
        crds=crd_list.names,
        terminating=crd_list.terminating,
        crd_groups={n.split(".", 1)[1] for n in crd_list.names if "." in n},
        apiservices=served,
        leases=[evidence.Lease.from_dict(obj) for obj in leases],
        peers=[peer for obj in peerings for peer in evidence.peers(obj)],
        writers={listed.resource.qualified: listed.writers for listed in lists},
    )
    orphans.still_gone(cluster, [listed.tallies for listed in lists])
    candidates = [
        blocked.Candidate(listed.resource, finalizer, list(tally.names))
        for listed in lists
        for (finalizer, terminating, orphaned), tally in listed.tallies.items()
        if terminating
        and not orphaned
        and context.judge(listed.resource, finalizer, terminating, tally).state is State.WORKING
    ]
    blockings = blocked.look(cluster, candidates, options, now, report.not_scanned)
    for listed in lists:
        for (finalizer, terminating, orphaned), tally in listed.tallies.items():
            if orphaned:
                report.groups.append(context.orphaned(listed.resource, finalizer, terminating, tally))
                continue
            blocking = blockings.get((listed.resource.qualified, finalizer)) if terminating else None
            report.groups.append(context.group(listed.resource, finalizer, terminating, tally, blocking))
    owners = {uid: (t.resource.qualified, *where) for t in lists for uid, where in t.foreground.items()}
    chains.link(report.groups, owners, [found for listed in lists for found in listed.links])
    report.groups.sort(key=lambda g: (not g.stuck, g.finalizer, g.resource))
    if not options.namespace:
        report.crds = [context.crd(cluster, name, totals, report.groups) for name in sorted(crd_list.terminating)]
        report.crds = [c for c in report.crds if c.seconds >= options.older_than]
    unavailable_services = [state.name for state in states if state.service and not state.available]
    categories = {t.resource.qualified: tuple(c.lower() for c in t.categories) for t in types}
    every = {name: categories.get(name) for name in crd_list.names}
    report.fixes = fixes(report.groups, report.crds, every, crd_list.terminating, options.namespace)
    report.namespaces = terminating_namespaces(
        cluster, options, now, report.groups, unavailable_services, report.not_scanned, report.lost_pods
    )
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Context:
    now: float
    options: ScanOptions
    crds: set[str]
    terminating: dict[str, float]
    crd_groups: set[str]
    apiservices: dict[str, str]
    leases: list[evidence.Lease]
    peers: list[evidence.Peer]
    writers: dict[str, dict[str, str]]  # per type: each field manager's latest write

    def judge(
        self, resource: Resource, finalizer: str, terminating: bool, tally: Tally, blocking: Blocking | None = None
    ) -> evidence.Judgement:
        crd = resource.qualified if resource.qualified in self.crds else ""
        words = evidence.tokens(finalizer, tally.managers, resource.group if crd else "")
        entry = finalizers.builtin(finalizer)  # kube-controller-manager's Lease speaks for its own only
        leases = evidence.matching_leases(self.leases, words, entry is not None and not entry.sidecar)
        kopf = evidence.domain(finalizer) == evidence.KOPF_DOMAIN or any(m == "kopf" for m in tally.managers)
        peers = [p for p in self.peers if kopf and (not p.namespace or tally.namespaces == {p.namespace})]
        elsewhere = evidence.written_elsewhere(self.writers.get(resource.qualified, {}), tally)
        return evidence.judge(
            finalizer, tally, self.now, terminating, leases, peers, self.options.grace, blocking, elsewhere
        )

    def orphaned(self, resource: Resource, finalizer: str, terminating: bool, tally: Tally) -> Group:
        """Objects in a namespace that is gone (orphans.py): orphaned, whatever their controller did."""
        judged = evidence.Judgement(State.ORPHANED, orphans.verdict(tally), True, [])
        return self.group(
            resource, finalizer, terminating, tally, None, judged, orphan_commands(sorted(tally.namespaces))
        )

    def group(
        self,
        resource: Resource,
        finalizer: str,
        terminating: bool,
        tally: Tally,
        blocking: Blocking | None,
        judged: evidence.Judgement | None = None,
        commands: list[str] | None = None,
    ) -> Group:
        crd = resource.qualified if resource.qualified in self.crds else ""
        judged = judged or self.judge(resource, finalizer, terminating, tally, blocking)
        owner_kind, owner = evidence.owner(finalizer, tally, self.crd_groups, self.apiservices)
        if commands is None:
            commands = self._commands(resource, finalizer, crd, tally, judged, blocking)
        namespaces = sorted(tally.namespaces)
        if tally.more_namespaces:
            namespaces.append(f"... {tally.more_namespaces} more")
        return Group(
            finalizer=finalizer,
            resource=resource.qualified,
            kind=resource.kind,
            api_version=f"{resource.group}/{resource.version}" if resource.group else resource.version,
            namespaced=resource.namespaced,
            count=tally.count,
            terminating=terminating,
            oldest_seconds=self.now - tally.oldest if tally.oldest is not None else 0.0,
            oldest_deletion=rfc3339(tally.oldest),
            namespaces=namespaces,
            sample=[f"{ns}/{name}" if ns else name for ns, name in tally.names[:5]],
            owner=owner,
            owner_kind=owner_kind,
            crd=crd,
            managers=[
                Manager(name, t.objects, rfc3339(t.finalizer_write), rfc3339(t.last_write), t.writes_after_deletion)
                for name, t in sorted(tally.managers.items())
            ],
            evidence=judged.evidence,
            state=judged.state,
            verdict=judged.verdict,
            stuck=judged.stuck,
            commands=commands,
            names=list(tally.names),
            blocking=blocking if judged.state is State.BLOCKED else None,
        )

    def _commands(
        self,
        resource: Resource,
        finalizer: str,
        crd: str,
        tally: Tally,
        judged: evidence.Judgement,
        blocking: Blocking | None,
    ) -> list[str]:
        if blocking is not None and judged.state is State.BLOCKED:  # what frees the objects that say it
            return group_commands(finalizer, resource.qualified, "", False, blocked.names(blocking), None)
        if judged.stuck or judged.state is State.PENDING:
            return group_commands(
                finalizer, resource.qualified, crd, crd in self.terminating, tally.names, self.options.namespace
            )
        return []

    def crd(self, cluster: ScanCluster, name: str, totals: dict[str, int], groups: list[Group]) -> TerminatingCrd:
        """A Terminating CRD is stuck when a group of its objects is, or, with none left
        to blame, once it has been Terminating longer than the grace."""
        seconds = self.now - self.terminating[name]
        conversion, webhook = "None", ""
        try:
            obj = cluster.get(crd_ref(name)) or {}
        except UnfinalizeError:
            obj = {}
        spec = (obj.get("spec") or {}).get("conversion") or {}
        conversion = str(spec.get("strategy") or "None")
        config = (spec.get("webhook") or {}).get("clientConfig") or {}
        if config.get("url"):
            webhook = str(config["url"])
        elif config.get("service"):
            service = config["service"]
            webhook = f"service {service.get('namespace')}/{service.get('name')}"
        own = [g for g in groups if g.crd == name and g.terminating]
        instances = totals.get(name, 0)
        blamed = [g for g in own if g.stuck]
        pending = False
        if blamed:
            verdict = f"stuck: {instances} objects left, held by " + ", ".join(sorted({g.finalizer for g in blamed}))
            stuck = True
        elif own:
            states = sorted({g.state.value for g in own})
            verdict = f"{states[0] if len(states) == 1 else 'waiting'}: {instances} objects left, " + ", ".join(
                f"{g.finalizer} {g.state.value}" for g in own
            )
            stuck, pending = False, states == [State.PENDING.value]
        elif seconds > self.options.grace:
            left = f"{instances} objects left" if instances >= 0 else "its objects cannot be listed"
            verdict = f"stuck: Terminating for {ago(seconds)}; {left}"
            if conversion == "Webhook":
                verdict += f"; conversion webhook {webhook}"
            stuck = True
        else:
            verdict, stuck = f"{State.PENDING.value}: Terminating for {ago(seconds)}", False
            pending = True
        commands = crd_commands(name) if stuck or pending else []
        return TerminatingCrd(name, seconds, instances, conversion, webhook, verdict, stuck, commands, pending)


def _objects(cluster: ScanCluster, resource: Resource) -> tuple[list[dict[str, Any]], str]:
    """Whole objects of a small type (APIServices, Leases); a refusal is a line, not an error."""
    try:
        return [obj for page in cluster.list_objects(resource, ListQuery()) for obj in page], ""
    except UnfinalizeError as exc:
        return [], f"cannot list {resource.qualified}: {exc}"


def _peerings(cluster: ScanCluster, resources: Iterable[Resource]) -> list[dict[str, Any]]:
    """kopf's peering objects, when their CRDs exist (kopf.dev, or zalando.org before 1.0)."""
    found: list[dict[str, Any]] = []
    for resource in resources:
        if resource.plural in KOPF_PEERINGS and resource.group in KOPF_GROUPS:
            found += _objects(cluster, resource)[0]
    return found
