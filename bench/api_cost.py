"""What one pod costs the API server: its server CPU time per operation for the three writes a pod makes on its
way to a node (the pod's create, the scheduler's binding, the scheduler's Scheduled event), the two status writes
of the node's kubelet that start it (ContainerCreating, then Running: merge patches of pods/status, as
`pyk8s nodes` sends them) and a GET from the watch cache; and, beside them, a node's Lease renewal (the PUT every
node sends each 10 s: the idle load of a big cluster), each beside `GET /version` measured in the same run — the HTTP, TLS and filter-chain floor every
request pays — as a ratio.

The API server runs in its own process (`pyk8s apiserver`, SQLite in a temporary directory); one pod watcher is
open throughout, as the scheduler's informer would be; 48 concurrent clients send each operation N times. CPU
time is the server process's user+system time from /proc, so the client's own cost is not counted. The two reads
are measured over HTTP/2 too (the 48 clients' requests as streams of one connection, as client-go sends them).

Run: python bench/api_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scheduler_perf import BindCounter, cpu_seconds, node_template, pod_default

from pyk8s.api.meta import rfc3339_micro
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.kubelet.pod_lifecycle import sync_pod
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.h2_client import H2Client

console = Console()
CONCURRENCY = 48


def scheduled_event(i: int) -> dict[str, object]:
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"generateName": f"p{i}."},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-bench", "action": "Binding", "reason": "Scheduled",
        "type": "Normal", "note": f"Successfully assigned default/p{i} to node-0",
        "regarding": {"kind": "Pod", "namespace": "default", "name": f"p{i}", "apiVersion": "v1"},
    }  # fmt: skip


async def measure(pid: int, n: int, op: Callable[[int], Awaitable[object]], progress: Progress, label: str) -> float:
    """Server CPU µs per operation for `n` calls of `op(i)` from CONCURRENCY workers."""
    task = progress.add_task(label, total=n)
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await op(i)
            progress.advance(task)

    before = cpu_seconds(pid)
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    progress.remove_task(task)
    return (cpu_seconds(pid) - before) / n * 1e6


async def run(n: int) -> list[tuple[str, float]]:
    server = APIServerProcess().start()
    try:
        assert server.proc is not None
        pid = server.proc.pid
        config = load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)
        async with RESTClient(config) as client:
            await client.create("nodes", node_template(0))
            watcher = BindCounter(client, "default")
            await watcher.start()

            async def create(i: int) -> object:
                pod = pod_default()
                pod["metadata"] = {"name": f"p{i}"}
                return await client.create("pods", pod, "default")

            async def bind(i: int) -> object:
                binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"p{i}"},
                           "target": {"kind": "Node", "name": "node-0"}}  # fmt: skip
                return await client.create("pods", binding, "default", name=f"p{i}", subresource="binding")

            async def event(i: int) -> object:
                return await client.create("events.events.k8s.io", scheduled_event(i), "default")

            written: dict[int, dict[str, Any]] = {}

            async def status(i: int) -> object:
                # As the simulated kubelet writes it (PodWorkers._write_status): the status sync_pod computes,
                # as a merge patch clearing what the new status no longer has.
                pod = written.get(i) or await client.get("pods", f"p{i}", "default")
                old = pod.get("status") or {}
                new = sync_pod(pod, time.time(), "127.0.0.2", f"10.244.0.{i % 250 + 2}").status
                patch = {"status": {**{k: None for k in old if k not in new}, **new}}
                written[i] = await client.patch(
                    "pods", f"p{i}", patch, "default", patch_type="merge", subresource="status"
                )
                return written[i]

            leases: dict[int, dict[str, Any]] = {}

            async def lease(i: int) -> object:
                # As NodeLease.renew: the last answer with a new renewTime, PUT back; one Lease per 10 ops,
                # created on first use (not counted: the first call per Lease creates it before the window).
                n = i % 100
                current = leases[n]
                current["spec"]["renewTime"] = rfc3339_micro()
                leases[n] = await client.update("leases.coordination.k8s.io", current, "kube-node-lease")
                return leases[n]

            async def get(i: int) -> object:
                return await client.get("pods", f"p{i}", "default")

            async def version(i: int) -> object:
                return await client.request("GET", "/version")

            results = []
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console,
                          transient=True) as progress:  # fmt: skip
                for label, op in (("GET /version (floor)", version), ("pod create", create), ("binding", bind),
                                  ("Scheduled event", event), ("status: ContainerCreating", status),
                                  ("status: Running", status), ("pod GET", get)):  # fmt: skip
                    results.append((label, await measure(pid, n, op, progress, label)))
                for j in range(100):
                    leases[j] = await client.create("leases.coordination.k8s.io", {
                        "metadata": {"name": f"node-{j}"},
                        "spec": {"holderIdentity": f"node-{j}", "leaseDurationSeconds": 40, "renewTime": rfc3339_micro()},
                    }, "kube-node-lease")  # fmt: skip
                results.append(("Lease renewal (PUT)", await measure(pid, n, lease, progress, "Lease renewal")))
                # The same reads over HTTP/2: every worker's requests multiplexed on one connection, as client-go
                # sends them.
                url = urlsplit(server.url)
                pki = server.data_dir / "pki"
                h2 = H2Client(url.hostname or "", url.port or 0, str(server.ca_file),
                              cert=(str(pki / "admin.crt"), str(pki / "admin.key")))  # fmt: skip
                async with h2:

                    async def h2_get(path: str) -> object:
                        s = await h2.request("GET", path, headers={"accept": "application/json"})
                        if s.status != 200:
                            raise RuntimeError(f"GET {path} over HTTP/2: {s.status} {s.body[:200]!r}")
                        return s

                    for label, op in (("GET /version over HTTP/2", lambda i: h2_get("/version")),
                                      ("pod GET over HTTP/2", lambda i: h2_get(f"/api/v1/namespaces/default/pods/p{i}"))):  # fmt: skip
                        results.append((label, await measure(pid, n, op, progress, label)))
                # What HTTP/1.1 costs a client that keeps too few idle connections (client-go keeps 25 per host):
                # a TLS handshake per request.
                tls = ssl.create_default_context(cafile=str(server.ca_file))
                tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

                async def fresh_connection(i: int) -> object:
                    reader, writer = await asyncio.open_connection(url.hostname, url.port, ssl=tls)
                    writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    data = await reader.read()
                    writer.close()
                    if not data.startswith(b"HTTP/1.1 200"):
                        raise RuntimeError(f"GET /version on a new connection: {data[:100]!r}")
                    return data

                label = "GET /version, new TLS connection"
                results.append((label, await measure(pid, n // 4, fresh_connection, progress, label)))
            watcher.check()
            watcher.stop()
            if len(watcher.bound) != n:
                raise RuntimeError(f"the watcher saw {len(watcher.bound)} of {n} pods bound")
        return results
    finally:
        server.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="500 operations of each kind instead of 4000")
    args = ap.parse_args()
    n = 500 if args.quick else 4000
    t0 = time.perf_counter()
    results = asyncio.run(run(n))
    floor = results[0][1]
    table = Table(title=f"API server CPU per operation ({n} each, {CONCURRENCY} clients, one pod watcher)")
    for c in ("operation", "server CPU µs", "vs GET /version"):
        table.add_column(c, justify="right")
    for label, us in results:
        table.add_row(label, f"{us:,.0f}", f"{us / floor:.1f}x")
    per_pod = sum(
        us for label, us in results
        if label not in ("GET /version (floor)", "pod GET", "Lease renewal (PUT)") and "HTTP" not in label
        and "connection" not in label
    )  # fmt: skip
    by = dict(results)
    console.print(table)
    console.print(
        f"HTTP/2 (one connection) vs HTTP/1.1 keep-alive, server CPU per request: GET /version "
        f"{by['GET /version over HTTP/2'] / by['GET /version (floor)']:.2f}x, pod GET "
        f"{by['pod GET over HTTP/2'] / by['pod GET']:.2f}x; a new TLS connection per request instead: "
        f"{by['GET /version, new TLS connection'] / by['GET /version (floor)']:.1f}x"
    )
    console.print(
        f"one started pod: {per_pod:,.0f} µs of API server CPU -> at most {1e6 / per_pod:,.0f} pods/s on one core "
        f"({time.perf_counter() - t0:.0f} s)"
    )


if __name__ == "__main__":
    main()
