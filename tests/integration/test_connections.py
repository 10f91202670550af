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
