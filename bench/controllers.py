"""Workload controller benchmark (issue 15's shape): on N simulated nodes, a Deployment of `--pods-per-node` pods
per node created at once, against the same number of pods created straight through the API (the density
benchmark's path) on a fresh cluster, as a ratio; then a rolling update of the Deployment.

One run, in order:
1. Direct: a fresh API server, the nodes process, the scheduler; all pods created at once by this script
   (`--concurrency` creates in flight); time until every pod is Running, startup p50/p99. They name as their
   controller a ReplicaSet that nothing acts on (no controller manager runs), so that the scheduler spreads them
   over the nodes as it spreads the Deployment's pods (upstream's default topology spread constraints apply to a
   pod with a ReplicaSet for controller): the ratio then measures the controllers, not a difference in
   scheduling. `--plain-baseline` leaves that ReplicaSet out.
2. Controllers: a fresh cluster with the controller manager too; one Deployment with all the replicas; time until
   `status.availableReplicas` reaches them, and each pod's startup (its first watch event to its Running one).
3. Rolling update: a new image; time until the rollout completes, and the least availableReplicas seen (the
   Deployment promises replicas - maxUnavailable).
Target (issue 15): the controller path takes at most 1.25x the direct path. The controller manager runs with
`--kube-api-qps 5000` as the scheduler does here (upstream's default of 20 would make this a test of the limit).

With `--profile DIR`, py-spy samples the API server, the scheduler and the controller manager through each phase
(collapsed stacks in DIR/<phase>-<process>.txt, and the functions most often on CPU printed per phase, so that the
two paths can be compared; `pip install py-spy`). With `--plot F.png`
(matplotlib: `pip install -e .[bench]`), the pods over time on both paths, the startup latency CDFs, and the
rolling update's available and updated pods against the promised floor.

Run: python bench/controllers.py [--nodes 1000] [--pods-per-node 30] [--quick] [--profile DIR] [--plot F.png]
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
    CLIENT,
    NS,
    Proc,
    api_server,
    client_cpu,
    client_for,
    console,
    make_namespace,
    percentile,
    pyplot,
    start_component,
    start_nodes,
    start_scheduler,
    wait_leases,
)
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from scheduler_perf import cpu_seconds

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
    # (seconds since the phase began, named counts) every quarter second, for --plot
    samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per process over the phase


class CPUMeter:
    """CPU seconds each process (and this script) spent between `start()` and `stop()`."""

    def __init__(self, server: Any, procs: list[Proc]) -> None:
        assert server.proc is not None
        self.pids = {"apiserver": server.proc.pid, **{p.name: p.pid for p in procs}}
        self.at: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        return {**{name: cpu_seconds(pid) for name, pid in self.pids.items()}, CLIENT: client_cpu()}

    def start(self) -> None:
        self.at = self._now()

    def stop(self) -> dict[str, float]:
        return {name: cpu - self.at[name] for name, cpu in self._now().items()}


async def start_cluster(args: argparse.Namespace, server: Any, with_controllers: bool) -> tuple[RESTClient, list[Proc]]:
    client = client_for(server)
    await client.__aenter__()
    await make_namespace(client)
    if not with_controllers and not args.plain_baseline:
        rs = await client.create("replicasets.apps", {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                      "metadata": {"name": "owns-the-direct-pods"},
                                                      "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "bench"}},
                                                               "template": pod_template(IMAGE)}}, NS)  # fmt: skip
        args.direct_owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                              "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
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


async def until(
    progress: Progress,
    label: str,
    total: int,
    count: Any,
    check_procs: list[Proc],
    samples: list[tuple[float, dict[str, int]]],
    also: Any = None,
) -> float:
    """Wait until `count()` reaches `total`, sampling it (and the counts `also()` names) every quarter second."""
    task = progress.add_task(label, total=total)
    t0 = time.monotonic()
    while True:
        for p in check_procs:
            p.check()
        n = await count()
        samples.append((time.monotonic() - t0, {label: n, **(also() if also else {})}))
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
            owner = getattr(args, "direct_owner", None)

            async def worker() -> None:
                for i in it:
                    md: dict[str, Any] = {"name": f"direct-{i}", "labels": {"app": "bench"}}
                    if owner:
                        md["ownerReferences"] = owner
                    await client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md,
                                                 "spec": pod_template(IMAGE)["spec"]}, NS)  # fmt: skip

            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, transient=True) as progress:  # fmt: skip
                meter = CPUMeter(server, procs)
                profiles = start_profiles(args.profile, "direct", server, procs)
                meter.start()
                t0 = time.monotonic()
                creators = asyncio.gather(*(worker() for _ in range(args.concurrency)))

                async def running() -> int:
                    return len(times.running)

                samples: list[tuple[float, dict[str, int]]] = []
                await until(progress, "direct: pods Running", n, running, procs, samples)
                await creators
                seconds = time.monotonic() - t0
                cpu = meter.stop()
                stop_profiles(profiles)
            watcher.cancel()
            return Phase("direct (pods created by this script)", n, seconds, times.latencies(), samples=samples,
                         cpu=cpu)  # fmt: skip
        finally:
            for p in procs:
                p.stop()
            await client.__aexit__(None, None, None)


async def controllers(args: argparse.Namespace, n: int) -> tuple[Phase, Phase]:
    with api_server(False) as server:
        client, procs = await start_cluster(args, server, True)
        profiles: list[tuple[str, subprocess.Popen[bytes]]] = []
        try:
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
                meter = CPUMeter(server, procs)
                profiles = start_profiles(args.profile, "deployment", server, procs)
                meter.start()
                t0 = time.monotonic()
                await client.create("deployments.apps", body, NS)
                samples: list[tuple[float, dict[str, int]]] = []
                await until(progress, "deployment: pods available", n, available, procs, samples,
                            lambda: {"pods Running": len(times.running)})  # fmt: skip
                created = Phase(
                    "Deployment (controller manager)",
                    n,
                    time.monotonic() - t0,
                    times.latencies(),
                    samples=samples,
                    cpu=meter.stop(),
                )
                stop_profiles(profiles)
                profiles = start_profiles(args.profile, "rolling", server, procs)  # fmt: skip

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

                meter.start()
                t1 = time.monotonic()
                await client.patch("deployments.apps", "bench",
                                   {"spec": {"template": {"spec": {"containers": [{"name": "pause", "image": IMAGE + "-b"}]}}}}, NS)  # fmt: skip
                rolling: list[tuple[float, dict[str, int]]] = []
                await until(progress, "rolling update: pods updated", n, updated, procs, rolling,
                            lambda: {"pods Ready and not deleting": len(times.available)})  # fmt: skip
                rolled = Phase(
                    "rolling update",
                    n,
                    time.monotonic() - t1,
                    [],
                    {"least available": times.least, "least in status": least[0], "promised": n - n // 4},
                    rolling,
                    meter.stop(),
                )
                stop_profiles(profiles)
                profiles = []  # fmt: skip
            watcher.cancel()
            return created, rolled
        finally:
            stop_profiles(profiles)
            for p in procs:
                p.stop()
            await client.__aexit__(None, None, None)


def start_profiles(out: Path | None, phase: str, server: Any, procs: list[Proc]) -> list[tuple[str, subprocess.Popen[bytes]]]:  # fmt: skip
    """py-spy on the API server and each component but the nodes, writing collapsed stacks to
    `out/<phase>-<process>.txt` once stopped; nothing without `out`."""
    if out is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    targets = {"apiserver": server.proc.pid, **{p.name: p.pid for p in procs if not p.name.startswith("nodes")}}
    started = []
    for name, pid in targets.items():
        path = out / f"{phase}-{name}.txt"
        cmd = ["py-spy", "record", "--pid", str(pid), "--rate", "50", "--format", "raw", "--nonblocking",
               "-o", str(path)]  # fmt: skip
        started.append((str(path), subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    return started


def stop_profiles(profiles: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
    """Stop the profilers and print where each process's CPU samples were."""
    for _, p in profiles:
        p.send_signal(signal.SIGINT)
    for _, p in profiles:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
    for name, _ in profiles:
        path = Path(name)
        if not path.exists():
            console.print(f"[yellow]no profile {path} (py-spy could not attach?)[/]")
            continue
        own: collections.Counter[str] = collections.Counter()
        total = 0
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            total += int(count)
            own[stack.split(";")[-1]] += int(count)
        t = Table(title=f"{path.stem}: where its CPU samples were ({total} samples, {path})")
        t.add_column("share", justify="right")
        t.add_column("function (file:line)")
        for frame, n in own.most_common(8):
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
    t = Table(title="CPU seconds per process over each phase (and ms per pod)")
    t.add_column("process")
    for ph in (base, made, rolled):
        t.add_column(ph.label, justify="right")
    for name in sorted({name for ph in (base, made, rolled) for name in ph.cpu}):
        t.add_row(name, *(f"{ph.cpu[name]:.1f} ({ph.cpu[name] / ph.pods * 1e3:.2f})" if name in ph.cpu else "-"
                          for ph in (base, made, rolled)))  # fmt: skip
    t.add_row("all", *(f"{sum(ph.cpu.values()):.1f} ({sum(ph.cpu.values()) / ph.pods * 1e3:.2f})"
                       for ph in (base, made, rolled)))  # fmt: skip
    console.print(t)
    console.print(f"rolling update of {rolled.pods} pods: {rolled.seconds:.1f} s; least available "
                  f"{rolled.extra['least available']} pods Ready and not deleting, "
                  f"{rolled.extra['least in status']} in the Deployment's status "
                  f"(promised >= {rolled.extra['promised']})")  # fmt: skip


def plot(path: Path, base: Phase, made: Phase, rolled: Phase) -> None:
    """Three panels: pods over time on both paths, startup latency CDFs, the rolling update's availability."""
    plt = pyplot()
    if plt is None:
        return
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(19, 5))
    for ph in (base, made):
        for name in ph.samples[-1][1] if ph.samples else ():
            ax1.plot([t for t, _ in ph.samples], [c.get(name, 0) for _, c in ph.samples], label=f"{ph.label}: {name}")
        if ph.latencies:
            s = sorted(ph.latencies)
            ax2.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=ph.label)
    ax1.set(xlabel="seconds since the first create", ylabel="pods", title=f"{made.pods} pods: direct vs Deployment")
    ax2.set(xlabel="seconds from first seen to Running", ylabel="fraction of pods", title="pod startup latency (CDF)")
    for name in rolled.samples[-1][1] if rolled.samples else ():
        ax3.plot([t for t, _ in rolled.samples], [c.get(name, 0) for _, c in rolled.samples], label=name)
    ax3.axhline(rolled.extra["promised"], color="grey", linestyle=":", label="replicas - maxUnavailable")
    ax3.set(xlabel="seconds since the new template", ylabel="pods", title="rolling update")
    for ax in (ax1, ax2, ax3):
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    console.print(f"plot written to {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=100, help="direct creates in flight at most")
    ap.add_argument("--plain-baseline", action="store_true",
                    help="no ReplicaSet selects the direct pods (the scheduler does not spread them)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="smoke run: 50 nodes, 5 pods/node")
    ap.add_argument("--profile", type=Path, help="py-spy the API server and components into this directory, per phase")
    ap.add_argument("--plot", type=Path, metavar="FILE.png", help="pods over time and latency CDFs (needs matplotlib)")
    args = ap.parse_args()
    if args.quick:
        args.nodes, args.pods_per_node = 50, 5
    n = args.nodes * args.pods_per_node
    console.print(f"{args.nodes} nodes, {n} pods")
    t0 = time.perf_counter()
    base = asyncio.run(direct(args, n))
    made, rolled = asyncio.run(controllers(args, n))
    report(base, made, rolled)
    if args.plot:
        plot(args.plot, base, made, rolled)
    console.print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
