"""`pyk8s controller-manager` as a process: it serves /healthz, /livez, /readyz and /metrics on its secure
port (HTTPS, self-signed) as kube-controller-manager does, and says which port it bound through --port-file."""

from __future__ import annotations

import time

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess


def test_health_readiness_and_metrics_on_the_secure_port():
    server = APIServerProcess().start()
    cm = ComponentProcess("controller-manager", server.kubeconfig, "--no-leader-elect", log_dir=server.dir)
    try:
        cm.start()
        for path in ("/healthz", "/livez", "/healthz/ping"):
            assert cm.get(path) == (200, "ok"), path
        deadline = time.monotonic() + 30
        while cm.get("/readyz")[0] != 200:
            assert time.monotonic() < deadline, cm.log_tail()
            time.sleep(0.2)
        status, text = cm.get("/readyz?verbose")
        assert status == 200 and "[+]informer-sync ok" in text, text
        assert cm.get("/readyz/nonexistent")[0] == 404
        status, text = cm.get("/metrics")
        assert status == 200 and 'workqueue_adds_total{name="garbage_collector_attempt_to_delete"}' in text, text
    finally:
        cm.stop()
        server.cleanup()


def test_port_zero_is_reported_through_the_port_file(tmp_path):
    server = APIServerProcess().start()
    port_file = tmp_path / "cm.port"
    cm = ComponentProcess(
        "controller-manager", server.kubeconfig, "--no-leader-elect", "--secure-port", "0", "--port-file",
        str(port_file), log_dir=server.dir, secure_port=False,
    )  # fmt: skip
    try:
        cm.start()
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert time.monotonic() < deadline and cm.proc.poll() is None, cm.log_tail()
            time.sleep(0.1)
        cm.port = int(port_file.read_text())
        assert cm.get("/healthz") == (200, "ok")
        cm.stop()
        assert not port_file.exists()  # removed on a clean stop: a supervisor never reads a stale port
    finally:
        cm.stop()
        server.cleanup()
