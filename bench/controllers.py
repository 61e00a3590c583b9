"""Workload controller benchmark (issue 15's shape): on N simulated nodes, a Deployment of `--pods-per-node` pods
per node created at once, against the same number of pods created straight through the API (the density
benchmark's path) on a fresh cluster, as a ratio; then a rolling update of the Deployment.

One run, in order:
1. Direct: a fresh API server, the nodes process, the scheduler; all pods created at once by this script
   (`--concurrency` creates in flight); time until every pod is Running, startup p50/p99.
2. Controllers: a fresh cluster with the controller manager too; one Deployment with all the replicas; time until
   `status.availableReplicas` reaches them, and each pod's startup (its first watch event to its Running one).
3. Rolling update: a new image; time until the rollout completes, and the least availableReplicas seen (the
   Deployment promises replicas - maxUnavailable).
Target (issue 15): the controller path takes at most 1.25x the direct path. The controller manager runs with
`--kube-api-qps 5000` as the scheduler does here (upstream's default of 20 would make this a test of the limit).

With `--profile DIR`, py-spy samples the controller manager and the API server through phases 2 and 3 (collapsed
stacks in DIR, and the functions most often on CPU printed at the end).

Run: python bench/controllers.py [--nodes 1000] [--pods-per-node 30] [--quick] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from density import (
    NS,
    Proc,
    api_server,
    client_for,
    console,
    make_namespace,
    percentile,
    start_component,
    start_nodes,
    start_scheduler,
    wait_leases,
)
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pyk8s.client.rest import RESTClient

IMAGE = "registry.k8s.io/pause:3.10"
REQ = {"cpu": "10m", "memory": "50Mi"}


def pod_template(image: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "pause", "image": image, "resources": {"requests": REQ, "limits": REQ}}]}}  # fmt: skip


@dataclass
class Startup:
    """Per pod name: its first watch event, and its first Running one."""

    seen: dict[str, float] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)
    available: set[str] = field(default_factory=set)  # pods Ready and not being deleted, now
    least: int | None = None  # the fewest available seen since `track()`

    def track(self) -> None:
        self.least = len(self.available)

    def latencies(self) -> list[float]:
        return [self.running[n] - t for n, t in self.seen.items() if n in self.running]


async def watch_startup(client: RESTClient, times: Startup) -> None:
    rv = (await client.list("pods", NS, limit=1))["metadata"]["resourceVersion"]
    while True:
        try:
            async with client.watch("pods", NS, resource_version=rv) as w:
                async for ev in w:
                    at = time.monotonic()
                    md = ev.object.get("metadata") or {}
                    rv = md.get("resourceVersion", rv)
                    name = md.get("name", "")
                    times.seen.setdefault(name, at)
                    if name not in times.running and (ev.object.get("status") or {}).get("phase") == "Running":
                        times.running[name] = at
                    ready = ev.type != "DELETED" and not md.get("deletionTimestamp") and any(
                        c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (ev.object.get("status") or {}).get("conditions") or ())  # fmt: skip
                    if ready:
                        times.available.add(name)
                    else:
                        times.available.discard(name)
                        if times.least is not None:
                            times.least = min(times.least, len(times.available))
        except ConnectionError:
            await asyncio.sleep(0.2)


@dataclass
class Phase:
    label: str
    pods: int
    seconds: float
    latencies: list[float]
    extra: dict[str, Any] = field(default_factory=dict)


async def start_cluster(args: argparse.Namespace, server: Any, with_controllers: bool) -> tuple[RESTClient, list[Proc]]:
    client = client_for(server)
    await client.__aenter__()
    await make_namespace(client)
    nodes = start_nodes(server.kubeconfig, server.dir, 0, args.nodes, "")
    procs = [nodes.proc, start_scheduler(server.kubeconfig, server.dir)]
    if with_controllers:
        procs.append(start_component("controller-manager", server.kubeconfig, server.dir, "controller-manager",
                                     "--no-leader-elect", "--secure-port", "-1", "--kube-api-qps", "5000",
                                     "--kube-api-burst", "5000"))  # fmt: skip
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console,
                  transient=True) as progress:  # fmt: skip
        await wait_leases(client, args.nodes, [nodes], progress)
    return client, procs


async def until(progress: Progress, label: str, total: int, count: Any, check_procs: list[Proc]) -> float:
    task = progress.add_task(label, total=total)
    t0 = time.monotonic()
    while True:
        for p in check_procs:
            p.check()
        n = await count()
        progress.update(task, completed=n)
        if n >= total:
            progress.remove_task(task)
            return time.monotonic() - t0
        await asyncio.sleep(0.25)


async def direct(args: argparse.Namespace, n: int) -> Phase:
    with api_server(False) as server:
        client, procs = await start_cluster(args, server, False)
        try:
            times = Startup()
            watcher = asyncio.create_task(watch_startup(client, times))
            await asyncio.sleep(0.5)
            it = iter(range(n))

            async def worker() -> None:
                for i in it:
                    await client.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                                 "metadata": {"name": f"direct-{i}", "labels": {"app": "bench"}},
                                                 "spec": pod_template(IMAGE)["spec"]}, NS)  # fmt: skip

            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, transient=True) as progress:  # fmt: skip
                t0 = time.monotonic()
                creators = asyncio.gather(*(worker() for _ in range(args.concurrency)))

                async def running() -> int:
                    return len(times.running)

                await until(progress, "direct: pods Running", n, running, procs)
                await creators
                seconds = time.monotonic() - t0
            watcher.cancel()
            return Phase("direct (pods created by this script)", n, seconds, times.latencies())
        finally:
            for p in procs:
                p.stop()
            await client.__aexit__(None, None, None)


async def controllers(args: argparse.Namespace, n: int) -> tuple[Phase, Phase]:
    with api_server(False) as server:
        client, procs = await start_cluster(args, server, True)
        profiles = []
        try:
            if args.profile:
                assert server.proc is not None
                profiles = start_profiles(
                    args.profile, {"controller-manager": procs[-1].pid, "apiserver": server.proc.pid}
                )
            times = Startup()
            watcher = asyncio.create_task(watch_startup(client, times))
            await asyncio.sleep(0.5)
            body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench"},
                    "spec": {"replicas": n, "selector": {"matchLabels": {"app": "bench"}},
                             "template": pod_template(IMAGE)}}  # fmt: skip

            async def available() -> int:
                st = (await client.get("deployments.apps", "bench", NS)).get("status") or {}
                return int(st.get("availableReplicas") or 0)

            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, transient=True) as progress:  # fmt: skip
                t0 = time.monotonic()
                await client.create("deployments.apps", body, NS)
                await until(progress, "deployment: pods available", n, available, procs)
                created = Phase("Deployment (controller manager)", n, time.monotonic() - t0, times.latencies())

                least = [n]  # as the Deployment's status says (its ReplicaSets' statuses, which lag the pods)
                times.track()  # as the pods say

                async def updated() -> int:
                    d = await client.get("deployments.apps", "bench", NS)
                    st = d.get("status") or {}
                    least[0] = min(least[0], int(st.get("availableReplicas") or 0))
                    done = (st.get("observedGeneration", 0) >= d["metadata"]["generation"]
                            and st.get("updatedReplicas") == n and st.get("replicas") == n)  # fmt: skip
                    return (
                        int(st.get("availableReplicas") or 0)
                        if done
                        else min(int(st.get("updatedReplicas") or 0), n - 1)
                    )

                t1 = time.monotonic()
                await client.patch("deployments.apps", "bench",
                                   {"spec": {"template": {"spec": {"containers": [{"name": "pause", "image": IMAGE + "-b"}]}}}}, NS)  # fmt: skip
                await until(progress, "rolling update: pods updated", n, updated, procs)
                rolled = Phase("rolling update", n, time.monotonic() - t1, [],
                               {"least available": times.least, "least in status": least[0],
                                "promised": n - n // 4})  # fmt: skip
            watcher.cancel()
            return created, rolled
        finally:
            if profiles:
                stop_profiles(profiles, args.profile)
            for p in procs:
                p.stop()
            await client.__aexit__(None, None, None)


def start_profiles(out: Path, targets: dict[str, int]) -> list[tuple[str, subprocess.Popen[bytes]]]:
    """py-spy on each process (name: pid), writing collapsed stacks to `out/<name>.txt` once stopped."""
    out.mkdir(parents=True, exist_ok=True)
    started = []
    for name, pid in targets.items():
        cmd = ["py-spy", "record", "--pid", str(pid), "--rate", "50", "--format", "raw", "--nonblocking",
               "-o", str(out / f"{name}.txt")]  # fmt: skip
        started.append((name, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    return started


def stop_profiles(profiles: list[tuple[str, subprocess.Popen[bytes]]], out: Path) -> None:
    for _, p in profiles:
        p.send_signal(signal.SIGINT)
    for _, p in profiles:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
    for name, _ in profiles:
        path = out / f"{name}.txt"
        if not path.exists():
            console.print(f"[yellow]no profile of {name} (py-spy could not attach?)[/]")
            continue
        own: collections.Counter[str] = collections.Counter()
        total = 0
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            total += int(count)
            own[stack.split(";")[-1]] += int(count)
        t = Table(title=f"{name}: where its CPU samples were ({total} samples, {path})")
        t.add_column("share", justify="right")
        t.add_column("function (file:line)")
        for frame, n in own.most_common(12):
            t.add_row(f"{100 * n / max(total, 1):.1f}%", frame)
        console.print(t)


def report(base: Phase, made: Phase, rolled: Phase) -> None:
    t = Table(title=f"{made.pods} pods on the nodes: controller path vs direct path")
    for c in ("path", "pods", "seconds to all Running/available", "startup p50 s", "startup p99 s"):
        t.add_column(c, justify="right")
    for ph in (base, made):
        t.add_row(ph.label, str(ph.pods), f"{ph.seconds:.1f}", f"{percentile(ph.latencies, 50):.2f}",
                  f"{percentile(ph.latencies, 99):.2f}")  # fmt: skip
    t.add_row("ratio (Deployment / direct)", "", f"{made.seconds / max(base.seconds, 1e-9):.2f}x (target <= 1.25x)",
              "", "")  # fmt: skip
    console.print(t)
    console.print(f"rolling update of {rolled.pods} pods: {rolled.seconds:.1f} s; least available "
                  f"{rolled.extra['least available']} pods Ready and not deleting, "
                  f"{rolled.extra['least in status']} in the Deployment's status "
                  f"(promised >= {rolled.extra['promised']})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=100, help="direct creates in flight at most")
    ap.add_argument("--quick", action="store_true", help="smoke run: 50 nodes, 5 pods/node")
    ap.add_argument("--profile", type=Path, help="py-spy the controller manager and API server into this directory")
    args = ap.parse_args()
    if args.quick:
        args.nodes, args.pods_per_node = 50, 5
    n = args.nodes * args.pods_per_node
    console.print(f"{args.nodes} nodes, {n} pods")
    t0 = time.perf_counter()
    base = asyncio.run(direct(args, n))
    made, rolled = asyncio.run(controllers(args, n))
    report(base, made, rolled)
    console.print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
