"""The audit webhook backend: a real `pyk8s apiserver` POSTs its audit events as audit.k8s.io/v1 EventLists to
an HTTPS webhook on loopback, in batches; events a failing webhook refused are sent again; and the last batch is
delivered when the server stops. Bad flags are refused at start with upstream's messages."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for
from pyk8s.testing.webhook_server import WebhookServer

POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  omitStages: ["RequestReceived"]
- level: None
"""


class Collector:
    """Plays the audit webhook: keeps every EventList it is sent; fails the first `failures` calls with 500."""

    def __init__(self, failures: int = 0) -> None:
        self.lists: list[dict[str, Any]] = []
        self.failures = failures
        self.calls = 0
        self.lock = threading.Lock()

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self.lock:
            self.calls += 1
            if self.calls <= self.failures:
                return web.Response(status=500, text="not now")
            self.lists.append(body)
        return web.json_response({})

    def events(self) -> list[dict[str, Any]]:
        with self.lock:
            return [ev for lst in self.lists for ev in lst["items"]]


def start(collector: Collector, *flags: str) -> tuple[APIServerProcess, WebhookServer]:
    hook = WebhookServer(collector.handle).start()
    d = Path(tempfile.mkdtemp(prefix="pyk8s-audit-webhook-"))
    (d / "policy.yaml").write_text(POLICY)
    config = hook.write_kubeconfig(d / "webhook.kubeconfig", "/audit")
    server = APIServerProcess(extra_args=(
        "--audit-policy-file", str(d / "policy.yaml"), "--audit-webhook-config-file", str(config), *flags,
    )).start()  # fmt: skip
    return server, hook


def test_events_arrive_as_event_lists_in_batches():
    collector = Collector()
    server, hook = start(collector, "--audit-webhook-batch-max-size=3", "--audit-webhook-batch-max-wait=1s")
    try:
        for i in range(7):
            server.kubectl("create", "configmap", f"cm-{i}", "--from-literal", f"k={i}", check=True)
        created = wait_for(
            "7 create events",
            lambda: len(evs := [e for e in collector.events() if e["verb"] == "create"]) >= 7 and evs,
            timeout=15,
        )
        lst = collector.lists[0]
        assert lst["kind"] == "EventList" and lst["apiVersion"] == "audit.k8s.io/v1"
        assert all(len(x["items"]) <= 3 for x in collector.lists)
        names = sorted(e["objectRef"]["name"] for e in created)
        assert names == [f"cm-{i}" for i in range(7)]
        ev = created[0]
        assert ev["stage"] == "ResponseComplete" and ev["level"] == "RequestResponse"
        assert ev["responseObject"]["kind"] == "ConfigMap" and ev["responseStatus"]["code"] == 201
        # Nothing the policy leaves out (level None) is sent.
        assert not [e for e in collector.events() if e.get("objectRef", {}).get("resource") == "namespaces"]
    finally:
        server.cleanup()
        hook.stop()


def test_a_failed_send_is_retried_and_the_last_batch_delivered_at_stop():
    collector = Collector(failures=1)
    # A batch waits up to a minute: only the stop delivers the second one.
    server, hook = start(collector, "--audit-webhook-batch-max-size=2", "--audit-webhook-batch-max-wait=60s",
                         "--audit-webhook-initial-backoff=100ms")  # fmt: skip
    try:
        for i in range(3):
            server.kubectl("create", "configmap", f"r-{i}", check=True)
        wait_for("the first batch, after a retry", lambda: len(collector.events()) >= 2, timeout=15)
        assert collector.calls >= 2
        time.sleep(0.5)
        assert len(collector.events()) == 2  # the third waits for its batch
        server.stop()
        names = sorted(e["objectRef"]["name"] for e in collector.events())
        assert names == ["r-0", "r-1", "r-2"]
    finally:
        server.cleanup()
        hook.stop()


def test_bad_webhook_flags_are_refused(tmp_path):
    (tmp_path / "policy.yaml").write_text(POLICY)
    cases = [
        (["--audit-webhook-config-file", str(tmp_path / "missing.kubeconfig")], "initializing audit webhook"),
        (["--audit-webhook-config-file", str(tmp_path / "policy.yaml"), "--audit-webhook-mode", "sometimes"],
         "invalid audit webhook mode sometimes, allowed modes are batch,blocking,blocking-strict"),
    ]  # fmt: skip
    for flags, message in cases:
        res = subprocess.run(
            [sys.executable, "-m", "pyk8s", "apiserver", "--data-dir", str(tmp_path / "data"), "--secure-port", "0",
             "--audit-policy-file", str(tmp_path / "policy.yaml"), *flags],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert res.returncode != 0
        assert message in res.stderr, res.stderr
