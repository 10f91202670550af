"""The tool's own HTTP over the real API server's TLS: keep-alive connections per
thread, and TLS sessions resumed instead of a full handshake per connection."""

import threading

from kubectl_unfinalize.kube.config import connect
from kubectl_unfinalize.options import ConnectionOptions


def test_connections_after_the_first_resume_its_tls_session(kubeconfig):
    with connect(ConnectionOptions(kubeconfig=kubeconfig)) as transport:
        assert transport.request("GET", "/version")["major"]
        barrier = threading.Barrier(8)

        def one() -> None:
            barrier.wait()  # eight connections open at once, each on its own thread
            for _ in range(3):  # and are kept alive
                transport.request("GET", "/version")

        threads = [threading.Thread(target=one) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wires = list(transport.connections._all)
        assert len(wires) == 9
        resumed = [w.sock.session_reused for w in wires]
        assert resumed.count(True) == 8, resumed  # all but the first


def test_connections_opened_early_for_a_far_server_stay_open_until_patches_use_them(
    control_plane, kubeconfig, kubectl, namespace, tmp_path
):
    """A far server's bulk connections are opened before the first list page comes; the
    API server's TLS 1.3 session tickets then arrive on a connection with no patch on
    it, which once read as an unasked answer and closed it: each warmed connection
    then cost a second one, and its round trip, at the first patch."""
    import time

    import yaml
    from controlplane.proxy import LoopbackProxy

    from kubectl_unfinalize.net.bulk import Bulk
    from kubectl_unfinalize.net.bulk_patch import BulkPatch

    names = [f"warm-{i}" for i in range(4)]
    for name in names:
        kubectl("create", "configmap", name, "-n", namespace)
    host, port = control_plane.server_address
    with LoopbackProxy(host, port, delay=0.02) as proxy:
        config = yaml.safe_load(open(kubeconfig))
        config["clusters"][0]["cluster"]["server"] = proxy.url
        far = tmp_path / "far-kubeconfig"
        far.write_text(yaml.safe_dump(config))
        with connect(ConnectionOptions(kubeconfig=str(far))) as transport:
            done, back = [], []

            class Sink:
                def places(self, wanted):
                    return wanted

                def finished(self, started):
                    pass

                def returned(self, job):
                    back.append(job)

                def requeue(self, job, wait=0.0):
                    back.append(job)

                def failed(self, exc):
                    back.append(exc)

            bulk = Bulk(
                transport.connections, transport.headers, lambda: 10.0, lambda sent, retry_after: 0.0, Sink(), 8
            )
            try:
                bulk.warm(len(names))
                deadline = time.monotonic() + 10
                while proxy.accepted < len(names) and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(0.3)  # the tickets have come by now, on idle connections
                for name in names:
                    bulk.put(
                        BulkPatch(
                            f"/api/v1/namespaces/{namespace}/configmaps/{name}",
                            b'{"metadata":{"finalizers":null}}',
                            lambda answer, name=name: done.append(name),
                            lambda sent: back.append(sent),
                            "PATCH",
                            "application/json",
                            "application/merge-patch+json",
                        )
                    )
                while len(done) + len(back) < len(names) and time.monotonic() < deadline:
                    time.sleep(0.02)
            finally:
                bulk.close()
            accepted = proxy.accepted
    assert back == [] and sorted(done) == names
    assert accepted == len(names), f"{accepted} connections for {len(names)} warmed ones"


def test_a_far_run_asks_its_reviews_while_it_reads_the_crd_and_lists_on_an_open_connection(
    control_plane, kubeconfig, make_crd, namespace, api_client, audit, tmp_path
):
    """A named CRD's group and plural are in its name: the RBAC reviews go out with the
    CRD's GET (3 legs of the delay after the start: TLS, then the request), not after its
    answer on connections of their own (7 legs). The GET's connection is then lent to the
    first list, which needs no handshake: the first patch comes 7 legs in, not 9."""
    import datetime
    import time

    import crs
    import yaml
    from controlplane.proxy import LoopbackProxy

    from kubectl_unfinalize import unfinalize

    leg = 0.25
    crd = make_crd()
    for i in range(3):
        crs.create(api_client, crd, f"far-{i}", namespace, finalizers=["unfinalize.test/held"])
    host, port = control_plane.server_address
    with LoopbackProxy(host, port, delay=leg) as proxy:
        config = yaml.safe_load(open(kubeconfig))
        config["clusters"][0]["cluster"]["server"] = proxy.url
        far = tmp_path / "far-kubeconfig"
        far.write_text(yaml.safe_dump(config))
        audit.mark()
        started = time.time()
        report = unfinalize([crd.name], kubeconfig=str(far), timeout=60)

    def received(event: dict) -> float:
        stamp = event["requestReceivedTimestamp"].replace("Z", "+00:00")
        return datetime.datetime.fromisoformat(stamp).timestamp() - started

    events = audit.writes()
    reviews = [received(e) for e in events if e["objectRef"]["resource"] == "selfsubjectaccessreviews"]
    patches = [received(e) for e in events if e["verb"] == "patch" and e["objectRef"]["resource"] == crd.plural]
    assert report.ok and len(patches) == 3, report
    assert len(reviews) == 2, f"{len(reviews)} reviews: list and patch, each once"
    assert max(reviews) < 5 * leg, f"reviews {reviews} s after the start, a leg being {leg} s"
    assert min(patches) < 8 * leg, f"the first patch {min(patches):.2f} s after the start, a leg being {leg} s"
