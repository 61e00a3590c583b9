"""Scheduler benchmark after upstream's scheduler_perf: its workload shapes against a real `pyk8s apiserver`, with
`pyk8s scheduler` in its own process, pods counted as bound from a watch, throughput sampled every second.

For each workload: a fresh API server; N nodes and the init pods created through the API (and waited for until
bound); then the measured pods are created while a watch counts bindings per 1 s sample. The table shows the
average of the samples (upstream's SchedulingThroughput Average), upstream's threshold for that workload and the
ratio between them. The scheduler writes a Scheduled event per pod, as the real one does; beside pods/s the table
counts those events (written by the time the last pod was bound, and in all), and a run that lost any has no
ratio: a throughput bought by dropping events is not one. (Counting them takes a watch on Events, which costs the
API server one watch delivery per event, as any `kubectl get events -w` would.) In the same run, the scheduling algorithm alone (no API: snapshot, filters, scores and
assume, in this process) is timed per pod at 5000 nodes — vectorized, and per node as the baseline.

Run: python bench/scheduler_perf.py [--quick] [--only SUBSTRING] [--skip-e2e]
The references are in ../shared/reference/scheduler-perf-workloads.md.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess

console = Console()
if not console.is_terminal:
    console = Console(width=150)  # piped to a file: the default 80 columns would squeeze the table unreadable

# -- upstream's templates (sp/templates, see the reference page) ---------------------------------------------


def node_template(i: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    res = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    name = f"scheduler-perf-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "capacity": res,
            "allocatable": res,
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def pod_default(cpu: str = "100m", priority: int | None = None, limits: bool = True) -> dict[str, Any]:
    req = {"cpu": cpu, "memory": "500Mi"}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": req, **({"limits": req} if limits else {})},
            }
        ]
    }
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"}, "spec": spec}


def with_label_and(pod: dict[str, Any], labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    p = copy.deepcopy(pod)
    p["metadata"]["labels"] = labels
    p["spec"].update(spec)
    return p


NS_TERMS = ["sched-1", "sched-0"]


def pod_anti_affinity() -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname",
            "namespaces": NS_TERMS}  # fmt: skip
    return with_label_and(pod_default(), {"color": "green"},
                          affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})  # fmt: skip


def pod_affinity() -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": "topology.kubernetes.io/zone",
            "namespaces": NS_TERMS}  # fmt: skip
    return with_label_and(pod_default(), {"color": "blue"},
                          affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})  # fmt: skip


def pod_preferred_affinity() -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"color": "red"}}, "topologyKey": "kubernetes.io/hostname",
            "namespaces": NS_TERMS}  # fmt: skip
    pref = [{"weight": 1, "podAffinityTerm": term}]
    return with_label_and(pod_default(), {"color": "red"},
                          affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}})  # fmt: skip


def pod_node_affinity() -> dict[str, Any]:
    term = {
        "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1", "zone2"]}]
    }
    return with_label_and(pod_default(), {},
                          affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                     {"nodeSelectorTerms": [term]}}})  # fmt: skip


def pod_spreading(when: str) -> dict[str, Any]:
    c = {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": when,
         "labelSelector": {"matchLabels": {"color": "blue"}}}  # fmt: skip
    return with_label_and(pod_default(), {"color": "blue"}, topologySpreadConstraints=[c])


def pod_low_priority() -> dict[str, Any]:
    p = pod_default(cpu="900m")
    p["spec"]["terminationGracePeriodSeconds"] = 0
    return p


# -- workloads (the largest performance variant of each; `--quick` divides the sizes by 10) ---------------------


@dataclass
class Workload:
    name: str
    nodes: int
    init: int
    measured: int
    threshold: float | None
    measured_pod: Callable[[], dict[str, Any]] = pod_default
    init_pod: Callable[[], dict[str, Any]] | None = None
    node_labels: Callable[[int], dict[str, str]] = field(default=lambda i: {})
    churn: Callable[[], dict[str, Any]] | None = None  # one such pod created every 200 ms while measuring
    init_ns: str = "sched-0"
    measured_ns: str = "sched-1"


def zone1(_: int) -> dict[str, str]:
    return {"topology.kubernetes.io/zone": "zone1"}


def moons(i: int) -> dict[str, str]:
    return {"topology.kubernetes.io/zone": f"moon-{i % 3 + 1}"}


WORKLOADS = [
    Workload("SchedulingBasic/500Nodes", 500, 500, 1000, None),
    Workload("SchedulingBasic/5000Nodes_10000Pods", 5000, 1000, 10000, 680),
    Workload("SchedulingPodAntiAffinity/5000Nodes_2000Pods", 5000, 1000, 2000, 60, pod_anti_affinity,
             pod_anti_affinity),
    Workload("SchedulingPodAffinity/5000Nodes_5000Pods", 5000, 5000, 5000, 35, pod_affinity, pod_affinity, zone1),
    Workload("SchedulingPreferredPodAffinity/5000Nodes_5000Pods", 5000, 5000, 5000, 90, pod_preferred_affinity,
             pod_preferred_affinity),
    Workload("SchedulingNodeAffinity/5000Nodes_10000Pods", 5000, 5000, 10000, 220, pod_node_affinity,
             pod_node_affinity, zone1),
    Workload("TopologySpreading/5000Nodes_5000Pods", 5000, 5000, 5000, 460, lambda: pod_spreading("DoNotSchedule"),
             pod_default, moons),
    Workload("PreferredTopologySpreading/5000Nodes_5000Pods", 5000, 5000, 5000, 340,
             lambda: pod_spreading("ScheduleAnyway"), pod_default, moons),
    Workload("Unschedulable/5kNodes/100Init/10kPods", 5000, 100, 10000, 590,
             churn=lambda: pod_default(cpu="9", priority=10, limits=False)),
    Workload("PreemptionBasic/1000Nodes", 1000, 4000, 1000, None, lambda: pod_default(cpu="3000m", priority=10),
             pod_low_priority),
]  # fmt: skip


# -- end to end --------------------------------------------------------------------------------------------------


async def create_many(client: RESTClient, resource: str, objs: list[dict[str, Any]], ns: str | None,
                      progress: Progress, label: str, concurrency: int = 48) -> None:  # fmt: skip
    task = progress.add_task(label, total=len(objs))
    it = iter(objs)

    async def worker() -> None:
        for obj in it:
            await client.create(resource, obj, ns)
            progress.advance(task)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    progress.remove_task(task)


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of process `pid` so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class WatchCounter:
    """Names of the objects of one resource in one namespace that `counts(obj)` accepts, kept from a list and
    then a watch (a second informer, as upstream's scheduler_perf has its own)."""

    def __init__(self, client: RESTClient, resource: str, namespace: str, counts: Callable[[dict[str, Any]], Any]):
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.counts = counts
        self.seen: set[str] = set()
        self.task: asyncio.Task[None] | None = None

    def _name(self, obj: dict[str, Any]) -> str:
        return obj["metadata"]["name"]

    async def start(self) -> None:
        lst = await self.client.list(self.resource, self.namespace)
        self.seen.update(self._name(o) for o in lst["items"] if self.counts(o))
        self.task = asyncio.create_task(self._watch(lst["metadata"]["resourceVersion"]))

    async def _watch(self, rv: str) -> None:
        self.rv = rv
        while True:
            try:
                async with self.client.watch(self.resource, self.namespace, resource_version=self.rv) as w:
                    async for ev in w:
                        obj = ev.object
                        self.rv = obj["metadata"].get("resourceVersion", self.rv)
                        if ev.type in ("ADDED", "MODIFIED") and self.counts(obj):
                            self.seen.add(self._name(obj))
            except ConnectionError:
                await asyncio.sleep(0.5)  # the stream broke: watch again from the last version seen

    def check(self) -> None:
        """Raise what ended the watch task, if it died (a benchmark must not wait on a dead counter)."""
        if self.task is not None and self.task.done() and not self.task.cancelled():
            self.task.result()

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()


class BindCounter(WatchCounter):
    """Pods of one namespace as they get bound."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        super().__init__(client, "pods", namespace, lambda p: p["spec"].get("nodeName"))

    @property
    def bound(self) -> set[str]:
        return self.seen


class ScheduledEventCounter(WatchCounter):
    """Pods of one namespace whose Scheduled event (events.k8s.io) has been written."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        super().__init__(client, "events.events.k8s.io", namespace, lambda e: e.get("reason") == "Scheduled")

    def _name(self, obj: dict[str, Any]) -> str:
        return obj["regarding"]["name"]


async def wait_count(counter: WatchCounter, n: int, settle: float = 15.0) -> int:
    """The counter's count once it is `n`, or once it has not grown for `settle` seconds."""
    got, last_change = len(counter.seen), time.monotonic()
    while got < n and time.monotonic() - last_change < settle:
        await asyncio.sleep(0.1)
        counter.check()
        if len(counter.seen) != got:
            got, last_change = len(counter.seen), time.monotonic()
    return got


def start_scheduler(kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pyk8s", "scheduler", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
         "--secure-port", "-1", "--kube-api-qps", "5000", "--kube-api-burst", "5000"],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"),
    )  # fmt: skip


async def wait_bound(counter: BindCounter, n: int, progress: Progress, label: str, timeout: float) -> bool:
    task = progress.add_task(label, total=n)
    deadline = time.monotonic() + timeout
    while len(counter.bound) < n and time.monotonic() < deadline:
        counter.check()
        progress.update(task, completed=len(counter.bound))
        await asyncio.sleep(0.2)
    progress.remove_task(task)
    return len(counter.bound) >= n


async def run_workload(w: Workload, scale: int, progress: Progress) -> dict[str, Any]:
    nodes, init, measured = max(1, w.nodes // scale), w.init // scale, max(1, w.measured // scale)
    server = APIServerProcess().start()
    sched = None
    try:
        config = load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)
        async with RESTClient(config) as client:
            for ns in {w.init_ns, w.measured_ns}:
                await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            await create_many(client, "nodes", [node_template(i, w.node_labels(i)) for i in range(nodes)], None,
                              progress, f"{w.name}: nodes")  # fmt: skip
            sched = start_scheduler(server.kubeconfig, server.dir / "scheduler.log")
            init_counter = BindCounter(client, w.init_ns)
            await init_counter.start()
            if init:
                make = w.init_pod or w.measured_pod
                await create_many(client, "pods", [make() for _ in range(init)], w.init_ns, progress,
                                  f"{w.name}: init pods")  # fmt: skip
                await wait_bound(init_counter, init, progress, f"{w.name}: init pods bound", 600)
            init_counter.stop()
            counter = BindCounter(client, w.measured_ns)
            await counter.start()
            events_counter = ScheduledEventCounter(client, w.measured_ns)
            await events_counter.start()
            base = len(counter.bound)
            samples: list[float] = []
            churn_task = None
            if w.churn is not None:
                churn = w.churn

                async def churner() -> None:
                    while True:
                        await client.create("pods", churn(), "default")
                        await asyncio.sleep(0.2)

                churn_task = asyncio.create_task(churner())
            measured_pods = [w.measured_pod() for _ in range(measured)]
            creating = create_many(client, "pods", measured_pods, w.measured_ns, progress, f"{w.name}: measured pods")
            creator = asyncio.create_task(creating)
            bar = progress.add_task(f"{w.name}: measured pods bound", total=measured)
            last = base
            started = last_at = time.monotonic()
            assert server.proc is not None
            cpu_before = cpu_seconds(server.proc.pid), cpu_seconds(sched.pid)
            stalled = 0
            # Pods/s sampled each second (upstream's throughput collector); polled finely so the run ends when
            # the last pod is bound and the final, partial second counts for its true length.
            while len(counter.bound) - base < measured:
                await asyncio.sleep(0.05)
                counter.check()
                now, at = len(counter.bound), time.monotonic()
                done = now - base >= measured
                if at - last_at < 1.0 and not done:
                    continue
                if at - last_at >= 0.5 or not samples:
                    samples.append((now - last) / (at - last_at))
                else:  # a sliver of a second at the end: part of the last full sample
                    samples[-1] = (samples[-1] * 1.0 + (now - last)) / (1.0 + at - last_at)
                stalled = stalled + 1 if now == last and creator.done() else 0
                last, last_at = now, at
                progress.update(bar, completed=now - base)
                if stalled >= 30:
                    break
            elapsed = time.monotonic() - started
            progress.remove_task(bar)
            await creator
            if churn_task is not None:
                churn_task.cancel()
            counter.stop()
            bound = len(counter.bound) - base
            events_at_end = len(events_counter.seen)
            events = await wait_count(events_counter, bound)
            events_counter.stop()
            # CPU per pod over the measured pods' whole cost: scheduling, binding and their events written.
            cpu_per_pod = [(cpu_seconds(pid) - before) / max(1, bound) * 1e6
                           for pid, before in zip((server.proc.pid, sched.pid), cpu_before, strict=True)]  # fmt: skip
    finally:
        if sched is not None:
            sched.terminate()
            sched.wait(15)
        server.cleanup()
    avg = statistics.fmean(samples) if samples else 0.0
    return {"name": w.name, "nodes": nodes, "measured": measured, "bound": bound, "avg": avg,
            "p50": statistics.median(samples) if samples else 0.0, "elapsed": elapsed, "threshold": w.threshold,
            "events_at_end": events_at_end, "events": events, "server_us": cpu_per_pod[0],
            "scheduler_us": cpu_per_pod[1]}  # fmt: skip


# -- the algorithm alone -----------------------------------------------------------------------------------------


def algorithm_per_pod(num_nodes: int, num_pods: int, vectorized: bool, init_pods: int = 1000) -> float:
    """µs per pod for ScheduleAlgorithm.schedule_pod + assume over `num_nodes` default nodes (SchedulingBasic)."""
    from pyk8s.gc_policy import freeze_long_lived, stop_freezing
    from pyk8s.scheduler.cache import SchedulerCache
    from pyk8s.scheduler.config import default_config
    from pyk8s.scheduler.framework.handle import FrameworkHandle
    from pyk8s.scheduler.framework.interface import CycleState
    from pyk8s.scheduler.framework.snapshot import Snapshot
    from pyk8s.scheduler.plugins.registry import build_framework
    from pyk8s.scheduler.schedule_one import ScheduleAlgorithm

    cache = SchedulerCache()
    for i in range(num_nodes):
        cache.add_node(node_template(i))
    snapshot = Snapshot()
    fw = build_framework(default_config(), "default-scheduler", FrameworkHandle(snapshot), vectorized=vectorized)
    algo = ScheduleAlgorithm(cache, snapshot)
    counter = 0

    def one() -> None:
        nonlocal counter
        counter += 1
        pod = pod_default()
        pod["metadata"] = {"name": f"p{counter}", "namespace": "default", "uid": f"uid-{counter}"}
        pod["spec"]["schedulerName"] = "default-scheduler"
        result = algo.schedule_pod(fw, CycleState(), pod)
        pod["spec"]["nodeName"] = result.suggested_host
        cache.assume_pod(pod)

    for _ in range(init_pods):
        one()
    freeze_long_lived()  # as the scheduler does once its informers have synced
    try:
        t = time.perf_counter()
        for _ in range(num_pods):
            one()
        return (time.perf_counter() - t) / num_pods * 1e6
    finally:
        stop_freezing()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="divide every workload's sizes by 10")
    ap.add_argument("--only", default="", help="run workloads whose name contains this")
    ap.add_argument("--skip-e2e", action="store_true", help="only the algorithm-alone measurement")
    args = ap.parse_args()
    scale = 10 if args.quick else 1

    t0 = time.perf_counter()
    sum(range(10**7))
    console.print(
        f"this machine: sum(range(10**7)) takes {(time.perf_counter() - t0) * 1e3:.0f} ms (a typical core: ~100 ms)"
    )
    with console.status("the scheduling algorithm alone at 5000 nodes..."):
        vec = algorithm_per_pod(5000, 200 if args.quick else 2000, vectorized=True)
        per_node = algorithm_per_pod(5000, 20 if args.quick else 100, vectorized=False, init_pods=100)
    t = Table(title="scheduling algorithm alone (SchedulingBasic pods, 5000 nodes, no API)")
    for c in ("path", "µs per pod", "pods/s", "vs per-node"):
        t.add_column(c, justify="right")
    t.add_row("vectorized", f"{vec:,.0f}", f"{1e6 / vec:,.0f}", f"{per_node / vec:.1f}x")
    t.add_row("per node (baseline)", f"{per_node:,.0f}", f"{1e6 / per_node:,.0f}", "1.0x")
    console.print(t)
    if args.skip_e2e:
        return

    results = []
    chosen = [w for w in WORKLOADS if args.only in w.name]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:  # fmt: skip
        for w in chosen:
            results.append(asyncio.run(run_workload(w, scale, progress)))
            r = results[-1]
            console.print(
                f"{r['name']}: {r['avg']:.0f} pods/s ({r['bound']}/{r['measured']} bound in {r['elapsed']:.0f} s;"
                f" Scheduled events {r['events_at_end']} by then, {r['events']} in all; CPU per pod: API server"
                f" {r['server_us']:,.0f} µs, scheduler {r['scheduler_us']:,.0f} µs)"
            )
    table = Table(title=f"scheduler_perf end to end{' (--quick: sizes / 10)' if args.quick else ''}")
    for c in ("workload", "nodes", "pods", "pods/s (avg of 1 s samples)", "p50", "Scheduled events (by end / all)",
              "CPU µs/pod: server", "scheduler", "upstream threshold", "ratio"):  # fmt: skip
        table.add_column(c, justify="right", no_wrap=c == "workload")
    for r in results:
        thr = r["threshold"]
        every_event = r["events"] >= r["bound"]
        ratio = (f"{r['avg'] / thr:.2f}" if every_event else "events lost") if thr else "-"
        table.add_row(r["name"], str(r["nodes"]), f"{r['bound']}/{r['measured']}", f"{r['avg']:,.0f}",
                      f"{r['p50']:,.0f}", f"{r['events_at_end']} / {r['events']}", f"{r['server_us']:,.0f}",
                      f"{r['scheduler_us']:,.0f}", str(thr or "-"), ratio)  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    main()
