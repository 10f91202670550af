"""Case 5, a throttled user: API Priority and Fairness puts the benchmark's user on a priority
level of 3 seats (Limited, lendablePercent 0, limitResponse Reject: what does not fit is
answered 429 at once, nothing is queued), and N finalized objects are freed by

- the tool: ``kubectl-unfinalize crd NAME -q --as USER`` (its own pacing finds the seats);
- ideal: the ceiling program (client-go) at exactly 3 patches in flight, as if it knew the seats;
- naive: the ceiling program at its usual 64 in flight, with client-go's own 429 handling.

Throughput is reported against the ideal's, and each run's 429s are counted from the API
server's metrics (apiserver_flowcontrol_rejected_requests_total of the run's level). client-go
gives a request up after 10 answers 429; the naive program then exits 1 with objects left:
that run is recorded as it ended (its objects/s counts what it freed) and the objects are
freed afterwards, unthrottled, before the CRD is deleted.

Fairness. client-go honours Retry-After: a request answered 429 sleeps the header's seconds
and is sent again (10 times at most). The API server does not answer a fixed Retry-After:
each priority level keeps its own (dropped_requests_tracker.go), starting at 1 s, doubling
up to 32 s while the level keeps dropping requests (3 x Retry-After drops within Retry-After
seconds), and coming down only slowly once it stops. Run on one shared level, a peer would
pay for the 429s of the peer before it: the ideal client, whose list page runs next to its 3
patches and so meets one 429 now and then, once lost ~28 s to a single Retry-After that a
naive run had driven up. So every run gets a level of its own (a fresh user, ClusterRole
binding, PriorityLevelConfiguration and FlowSchema, removed after the run), its seats checked
on /metrics before it starts, and every peer starts from Retry-After 1 s. What a peer's own
429s cost it (its sleeps, its raised Retry-After) is its own and is measured.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from .kube import NAMESPACES, Kube
from .measure import Sample, check, log, measure, med
from .peers import Peers
from .report import Report
from .throughput import Throughput

SEATS = 3
PEERS = ("tool", "ideal", "naive")
CONCURRENCY = {"ideal": SEATS, "naive": 64}
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
# --max-requests-inflight + --max-mutating-requests-inflight: the API server's defaults, which
# the benchmark's control plane keeps. The level's seats are checked on /metrics anyway.
TOTAL_SEATS = 400 + 200
Results = dict[int, dict[str, list[tuple[Sample, int]]]]  # N -> peer -> (sample, 429s)


def level_objects(user: str, shares: int) -> list[tuple[str, dict]]:
    """(collection path, body): `user` made cluster-admin and routed to a level of its own."""
    rule = {
        "subjects": [{"kind": "User", "user": {"name": user}}],
        "resourceRules": [
            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}
        ],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    }
    limited = {
        "nominalConcurrencyShares": shares,
        "lendablePercent": 0,
        "borrowingLimitPercent": 0,
        "limitResponse": {"type": "Reject"},
    }
    return [
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": user},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            },
        ),
        (
            f"{FLOWCONTROL}/prioritylevelconfigurations",
            {"metadata": {"name": user}, "spec": {"type": "Limited", "limited": limited}},
        ),
        (
            f"{FLOWCONTROL}/flowschemas",
            {
                "metadata": {"name": user},
                "spec": {"priorityLevelConfiguration": {"name": user}, "matchingPrecedence": 100, "rules": [rule]},
            },
        ),
    ]


class Throttled:
    def __init__(self, kube: Kube, peers: Peers, bench: Throughput, workdir: Path) -> None:
        self.kube, self.peers, self.bench, self.workdir = kube, peers, bench, workdir
        self.serial = 0

    def metrics(self) -> str:
        r = self.kube.http.request("GET", self.kube.server + "/metrics", headers=self.kube.headers)
        if r.status != 200:
            raise SystemExit(f"GET /metrics: HTTP {r.status}")
        return r.data.decode()

    def metric(self, name: str, level: str) -> float | None:
        """The sum of `name` over the series of priority level `level` (None: no series)."""
        values = [
            float(line.rsplit(" ", 1)[1])
            for line in self.metrics().splitlines()
            if line.startswith(name + "{") and f'priority_level="{level}"' in line
        ]
        return sum(values) if values else None

    def shares(self) -> int:
        """nominalConcurrencyShares that give a new level SEATS seats next to the existing levels:
        seats = ceil(TOTAL_SEATS * shares / sum of all levels' shares)."""
        levels = self.kube.must("GET", f"{FLOWCONTROL}/prioritylevelconfigurations")["items"]
        others = sum((pl["spec"].get("limited") or {}).get("nominalConcurrencyShares") or 0 for pl in levels)
        for shares in range(1, 100):
            if math.ceil(TOTAL_SEATS * shares / (others + shares)) == SEATS:
                return shares
        raise SystemExit(f"throttled: no nominalConcurrencyShares gives {SEATS} seats next to {others}")

    @contextlib.contextmanager
    def level(self) -> Iterator[str]:
        """A fresh user on a fresh level of SEATS seats (see the module docstring: Retry-After)."""
        self.serial += 1
        user = f"bench-seats-{time.monotonic_ns() % 10**8}-{self.serial}"
        objects = level_objects(user, self.shares())
        try:
            for path, body in objects:
                self.kube.must("POST", path, body, ok=(201,))
            deadline = time.monotonic() + 30  # the APF configuration controller picks the level up
            while (seats := self.metric("apiserver_flowcontrol_nominal_limit_seats", user)) is None:
                if time.monotonic() > deadline:
                    raise SystemExit(f"throttled: level {user} has no seats on /metrics after 30s")
                time.sleep(0.2)
            if seats != SEATS:
                raise SystemExit(f"throttled: level {user} has {seats:.0f} seats, not {SEATS}")
            yield user
        finally:
            for path, body in reversed(objects):
                self.kube.request("DELETE", f"{path}/{body['metadata']['name']}")

    def kubeconfig_as(self, user: str) -> str:
        """The benchmark's kubeconfig, impersonating `user` (the ceiling has no --as flag)."""
        path = self.workdir / f"{user}.kubeconfig"
        self.kube.write_kubeconfig(path, self.kube.server)
        config = yaml.safe_load(path.read_text())
        context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
        next(u for u in config["users"] if u["name"] == context["user"])["user"]["as"] = user
        path.write_text(yaml.safe_dump(config))
        return str(path)

    def one(self, peer: str, n: int) -> tuple[Sample, int]:
        crd = self.bench.populate(n)
        env = self.peers.env_for(self.kube.kubeconfig)
        with self.level() as user:
            if peer == "tool":
                argv = [str(self.peers.plugin), "crd", crd.name, "-q", "--as", user, "--timeout", "30m"]
            else:
                argv = [self.peers.ceiling, "--kubeconfig", self.kubeconfig_as(user), "--group", crd.group]
                argv += ["--version", "v1", "--resource", crd.plural]
                argv += ["--concurrency", str(CONCURRENCY[peer]), "--chunk-size", "500"]
            sample = measure(argv, env)
            if peer != "naive":
                check(sample, f"throttled: {peer} on {crd.name}")
            refused = int(self.metric("apiserver_flowcontrol_rejected_requests_total", user) or 0)
        total, finalized = self.kube.count(crd)
        if sample.rc:  # naive client-go gives up on an object after 10 answers 429: a result, recorded
            log(f"  throttled: {peer} exited {sample.rc} with {finalized} of {n} objects left: {sample.stderr.strip()}")
            finish = [self.peers.ceiling, "--kubeconfig", self.kube.kubeconfig, "--group", crd.group]
            check(measure([*finish, "--version", "v1", "--resource", crd.plural], env), "throttled: clean-up")
        elif peer != "tool":
            reported = json.loads(sample.stdout.strip().splitlines()[-1])["objects"]
            if reported != n:
                raise SystemExit(f"throttled: {peer} patched {reported} objects, expected {n}")
        if not sample.rc and (total, finalized) != (n, 0):
            raise SystemExit(f"throttled: {peer} left {finalized} of {total} objects with finalizers")
        self.kube.delete_crd(crd.name)
        sample.stdout = json.dumps({"freed": n - finalized})  # what the rate counts: freed objects per second
        return sample, refused

    def compare(self, sizes: list[int], repeat: int) -> Results:
        results: Results = {}
        for n in sizes:
            results[n] = {peer: [] for peer in PEERS}
            for i in range(repeat):
                for peer in PEERS if i % 2 == 0 else PEERS[::-1]:
                    sample, refused = self.one(peer, n)
                    results[n][peer].append((sample, refused))
                    rate = n / sample.seconds
                    log(f"  throttled: N={n} {peer}: {sample.seconds:.1f}s, {rate:.0f} objects/s, {refused} x 429")
        return results


def report(report: Report, results: Results, repeat: int) -> None:
    """Table and figures: throttled.N.PEER.{seconds,objects_per_s,rejected_429},
    throttled.N.ratio.rate_vs_ideal, throttled.N.ratio.rate_vs_naive."""
    report.doc["cases"]["throttled"] = {
        "seats": SEATS,
        "repeat": repeat,
        "concurrency": CONCURRENCY,
        "sizes": {
            str(n): {
                peer: [{**s.to_json(), "rc": s.rc, "rejected_429": r, **json.loads(s.stdout)} for s, r in runs]
                for peer, runs in peers.items()
            }
            for n, peers in results.items()
        },
    }
    rows = []
    for n, peers in results.items():
        rate: dict[str, float] = {}
        for peer, runs in peers.items():
            key = f"throttled.{n}.{peer}"
            seconds = report.figure(f"{key}.seconds", med([s.seconds for s, _ in runs]))
            freed = med([json.loads(s.stdout)["freed"] for s, _ in runs])
            rate[peer] = report.figure(f"{key}.objects_per_s", freed / seconds, higher_is_better=True)
            refused = report.figure(f"{key}.rejected_429", med([float(r) for _, r in runs]))
            failed = sum(1 for s, _ in runs if s.rc)
            note = f" ({failed} of {len(runs)} gave up)" if failed else ""
            rows.append([f"{n:,}", peer + note, f"{seconds:.1f}", f"{rate[peer]:.0f}", f"{refused:.0f}"])
        ideal = report.figure(f"throttled.{n}.ratio.rate_vs_ideal", rate["tool"] / rate["ideal"], True)
        naive = report.figure(f"throttled.{n}.ratio.rate_vs_naive", rate["tool"] / rate["naive"], True)
        rows.append([f"{n:,}", "tool/ideal, tool/naive", "", f"{ideal:.2f}, {naive:.2f}", ""])
    reps = f", median of {repeat}" if repeat > 1 else ""
    report.table(
        f"throttled: a priority level of {SEATS} seats that rejects (429) what does not fit{reps}",
        ["N", "peer", "seconds", "objects/s", "429s"],
        rows,
        [
            f"tool: kubectl-unfinalize crd NAME -q --as USER; ideal: the ceiling at {SEATS} in flight;"
            f" naive: the ceiling at {CONCURRENCY['naive']} (client-go sleeps each Retry-After, gives an object up"
            " after 10; objects/s counts the objects freed).",
            f"each run on a level of its own (Retry-After starts at 1 s); {NAMESPACES} namespaces;"
            " 429s: apiserver_flowcontrol_rejected_requests_total of the run's level.",
        ],
    )
    report.save()
