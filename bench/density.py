"""Density benchmark after upstream's density test: N simulated nodes (`pyk8s nodes --no-events`, in their own
process or processes), the real scheduler, and pods created straight through the API at a chosen rate until
there are `--pods-per-node` per node; then pod startup latency and throughput, and what each process cost.

One run, in order:
1. Baseline: a fresh API server with N plain Node objects and the scheduler, no nodes process; the same pods at
   the same rate, latency = creation -> bound (nothing runs them).
2. The cluster: a fresh API server, the nodes process(es) and the scheduler. Once every node holds its Lease,
   the idle heartbeat cost: CPU% of the API server, the nodes process(es) and the scheduler over
   `--idle-seconds` with N idle nodes (and how many writes/s the API server took meanwhile: the heartbeats,
   ~N/10 lease renewals a second).
3. The pods: created by `--concurrency` workers of our REST client, the i-th at i/rate seconds; latency =
   creation -> Running as seen by a watch. As upstream's pod startup SLI, the end is the watch event's arrival;
   the start is taken here, at the create call, not from creationTimestamp (which has 1 s resolution), so it also
   counts the create request itself. p50/p90/p99, pods/s reaching Running, and per process its CPU seconds during
   the pods phase and its peak RSS (VmHWM), all read from /proc.

Run: python bench/density.py [--nodes 1000] [--pods-per-node 30] [--rate 300] [--idle-seconds 60] [--quick]
     [--etcd] [--plot FILE.png] [--idle-only] [--skip-baseline] [--node-processes K]
`--plot` needs matplotlib (`pip install -e .[bench]`). `--nodes-pythonpath DIR` runs the nodes process(es) from
another pyk8s tree (DIR holds its `pyk8s` package), to compare two builds in one run of this script.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scheduler_perf import cpu_seconds, create_many, node_template

from pyk8s.api.meta import parse_time
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.supervisor import component_command, component_env
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import get_unverified
from pyk8s.testing.etcd import EtcdServer, free_port

console = Console()
if not console.is_terminal:
    console = Console(width=150)

NS = "density"
LEASE_NS = "kube-node-lease"
# This script's own process: it creates the pods and watches them all, on the same 2 cores as the cluster (upstream
# runs its test client elsewhere), so its cost is reported beside the components'.
CLIENT = "bench client"


# -- processes --------------------------------------------------------------------------------------------------


def client_cpu() -> float:
    t = os.times()
    return t.user + t.system


def rss_bytes(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS) of `pid` from /proc/<pid>/status (VmRSS, VmHWM)."""
    got = {"VmRSS": 0, "VmHWM": 0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in got:
            got[key] = int(rest.split()[0]) * 1024
    return got["VmRSS"], got["VmHWM"]


@dataclass
class Proc:
    """A component process we started: its name, for the tables, and the Popen."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def check(self) -> None:
        if self.popen.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{self.name} exited with {self.popen.returncode}: {tail}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.popen.wait()


def start_component(name: str, kubeconfig: Path, log_dir: Path, *args: str, pythonpath: str = "") -> Proc:
    env = component_env()
    if pythonpath:  # another build of pyk8s first on the path
        env["PYTHONPATH"] = os.pathsep.join([pythonpath, env.get("PYTHONPATH", "")])
    log = log_dir / f"{name}.log"
    cmd = component_command(args[0], "--kubeconfig", str(kubeconfig), *args[1:])
    popen = subprocess.Popen(cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True, env=env)
    return Proc(name, popen, log)


def start_scheduler(kubeconfig: Path, log_dir: Path) -> Proc:
    return start_component("scheduler", kubeconfig, log_dir, "scheduler", "--no-leader-elect", "--secure-port",
                           "-1", "--kube-api-qps", "5000", "--kube-api-burst", "5000")  # fmt: skip


@dataclass
class NodesProc:
    proc: Proc
    port: int
    count: int

    def ready(self) -> bool:
        try:
            return get_unverified(f"https://127.0.0.1:{self.port}/readyz")[0] == 200
        except OSError:
            return False


def start_nodes(kubeconfig: Path, log_dir: Path, k: int, count: int, pythonpath: str) -> NodesProc:
    port = free_port()
    proc = start_component(f"nodes-{k}", kubeconfig, log_dir, "nodes", "--count", str(count), "--name-prefix",
                           f"hollow-{k}-", "--no-events", "--kube-api-qps", "-1", "--secure-port", str(port),
                           pythonpath=pythonpath)  # fmt: skip
    return NodesProc(proc, port, count)


@contextlib.contextmanager
def api_server(etcd: bool) -> Iterator[APIServerProcess]:
    store = EtcdServer().start() if etcd else None
    server = APIServerProcess(etcd_url=store.url if store else "").start()
    try:
        yield server
    finally:
        server.cleanup()
        if store is not None:
            store.stop()


# -- the pods ---------------------------------------------------------------------------------------------------


def density_pod(name: str) -> dict[str, Any]:
    # A pause pod with small requests, so that 30 (or up to the 110-pod cap) fit on a 4-cpu, 32Gi node.
    req = {"cpu": "10m", "memory": "50Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "density"}},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": req, "limits": req}}]},
    }  # fmt: skip


@dataclass
class PodTimes:
    """Per pod name: when its create was sent, and when a watch event first showed it bound / Running."""

    sent: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)
    create_errors: int = 0


async def watch_pods(client: RESTClient, times: PodTimes) -> None:
    """Record, from a watch of the namespace, the arrival of each pod's first bound and first Running state."""
    rv = (await client.list("pods", NS, limit=1))["metadata"]["resourceVersion"]
    while True:
        try:
            async with client.watch("pods", NS, resource_version=rv) as w:
                async for ev in w:
                    at = time.monotonic()
                    obj = ev.object
                    md = obj.get("metadata") or {}
                    rv = md.get("resourceVersion", rv)
                    if ev.type == "DELETED":
                        continue
                    name = md.get("name", "")
                    if name not in times.bound and (obj.get("spec") or {}).get("nodeName"):
                        times.bound[name] = at
                    if name not in times.running and (obj.get("status") or {}).get("phase") == "Running":
                        times.running[name] = at
        except ConnectionError:
            await asyncio.sleep(0.2)  # the stream broke: watch again from the last version seen


async def create_pods(client: RESTClient, prefix: str, n: int, rate: float, concurrency: int,
                      times: PodTimes) -> None:  # fmt: skip
    """Create `n` pods, the i-th due at i/rate seconds from now; late ones go at once (the offered rate is held
    as long as `concurrency` requests in flight keep up)."""
    start = time.monotonic()
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            name = f"{prefix}-{i}"
            times.sent[name] = time.monotonic()
            try:
                await client.create("pods", density_pod(name), NS)
            except Exception:  # counted, not fatal: the table says how many failed
                times.create_errors += 1
                times.sent.pop(name, None)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


@dataclass
class PodsResult:
    label: str
    what: str  # "bound" or "Running"
    total: int
    done: int
    latencies: list[float]  # seconds, creation -> what
    bound_latencies: list[float]
    span: float  # first create to last pod done
    samples: list[tuple[float, int]]  # (seconds since start, pods done) once a second
    cpu_samples: dict[str, list[float]]  # process name -> its CPU seconds so far, at each of `samples`
    create_errors: int
    cpu: dict[str, float]  # process name -> CPU seconds during the phase
    rss: dict[str, int]  # process name -> peak RSS bytes
    stalest_lease: float | None  # the oldest node Lease renewal seen during the phase, seconds (None: not seen)

    @property
    def throughput(self) -> float:
        return self.done / self.span if self.span > 0 else 0.0


async def run_pods(client: RESTClient, label: str, prefix: str, n: int, args: argparse.Namespace,
                   procs: list[Proc], running: bool) -> PodsResult:  # fmt: skip
    times = PodTimes()
    watcher = asyncio.create_task(watch_pods(client, times))
    await asyncio.sleep(0.5)  # the watch is open before the first create
    done_map = times.running if running else times.bound
    what = "Running" if running else "bound"
    cpu_before = {p.name: p.cpu() for p in procs}
    cpu_before[CLIENT] = client_cpu()
    cpu_samples: dict[str, list[float]] = {name: [] for name in cpu_before}
    start = time.monotonic()
    creator = asyncio.create_task(create_pods(client, prefix, n, args.rate, args.concurrency, times))
    samples: list[tuple[float, int]] = []
    last_count, last_change = -1, time.monotonic()
    # Whether the heartbeats keep up while the API server is busy with pods: a Lease older than its 40 s
    # duration would make the node-lifecycle controller call the node unreachable.
    stalest = [-1.0]  # not sampled yet
    leases = asyncio.create_task(watch_lease_ages(client, stalest)) if running else None
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[info]}"), console=console, transient=True) as progress:  # fmt: skip
        created = progress.add_task(f"{label}: created", total=n, info="")
        finished = progress.add_task(f"{label}: {what}", total=n, info="")
        next_sample = start
        while True:
            await asyncio.sleep(0.2)
            if watcher.done():
                watcher.result()
            for p in procs:
                p.check()
            now = time.monotonic()
            count = len(done_map)
            if now >= next_sample:
                samples.append((now - start, count))
                for p in procs:
                    cpu_samples[p.name].append(p.cpu())
                cpu_samples[CLIENT].append(client_cpu())
                next_sample += 1.0
            progress.update(created, completed=len(times.sent) - 0, info=f"errors {times.create_errors}")
            progress.update(finished, completed=count, info=f"bound {len(times.bound)}")
            if count != last_count:
                last_count, last_change = count, now
            if creator.done() and count >= len(times.sent):
                break
            if creator.done() and now - last_change > args.stall:
                console.print(f"[yellow]{label}: no pod became {what} for {args.stall:.0f} s: giving up")
                break
    await creator
    samples.append((time.monotonic() - start, len(done_map)))
    for p in procs:
        cpu_samples[p.name].append(p.cpu())
    cpu_samples[CLIENT].append(client_cpu())
    watcher.cancel()
    if leases is not None:
        leases.cancel()
    cpu = {name: got[-1] - cpu_before[name] for name, got in cpu_samples.items()}
    rss = {p.name: rss_bytes(p.pid)[1] for p in procs}
    rss[CLIENT] = rss_bytes(os.getpid())[1]
    lat = [done_map[k] - t for k, t in times.sent.items() if k in done_map]
    bound_lat = [times.bound[k] - t for k, t in times.sent.items() if k in times.bound]
    end = max(done_map.values(), default=start)
    return PodsResult(label, what, n, len(lat), lat, bound_lat, end - start, samples, cpu_samples, times.create_errors,
                      cpu, rss, stalest[0] if running and stalest[0] >= 0 else None)  # fmt: skip


async def watch_lease_ages(client: RESTClient, stalest: list[float]) -> None:
    """Every 15 s, the age of the least recently renewed node Lease; the largest one seen goes in `stalest[0]`."""
    while True:
        await asyncio.sleep(15.0)
        try:
            items = (await client.list("leases", LEASE_NS))["items"]
        except ConnectionError:
            continue
        now = time.time()
        for lease in items:
            renewed = (lease.get("spec") or {}).get("renewTime")
            if renewed:
                stalest[0] = max(stalest[0], now - parse_time(renewed).timestamp())


# -- phases -----------------------------------------------------------------------------------------------------


def client_for(server: APIServerProcess) -> RESTClient:
    return RESTClient(load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1))


async def make_namespace(client: RESTClient) -> None:
    await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})


async def baseline(args: argparse.Namespace, n_pods: int) -> PodsResult:
    with api_server(args.etcd) as server:
        assert server.proc is not None
        async with client_for(server) as client:
            await make_namespace(client)
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console,
                          transient=True) as progress:  # fmt: skip
                await create_many(client, "nodes", [node_template(i) for i in range(args.nodes)], None, progress,
                                  "baseline: plain Node objects")  # fmt: skip
            sched = start_scheduler(server.kubeconfig, server.dir)
            try:
                procs = [Proc("API server", server.proc, server.dir / "apiserver.log"), sched]
                return await run_pods(client, "baseline (no nodes process)", "base", n_pods, args, procs, False)
            finally:
                sched.stop()


@dataclass
class IdleResult:
    nodes: int
    seconds: float
    cpu_pct: dict[str, float]
    rss: dict[str, int]
    writes_per_s: float
    register_seconds: float


async def current_rv(client: RESTClient) -> int:
    return int((await client.list("namespaces", limit=1))["metadata"]["resourceVersion"])


async def wait_leases(client: RESTClient, n: int, nodes: list[NodesProc], progress: Progress) -> None:
    """Until `n` node Leases exist; progress from the nodes' readiness and a count of the Leases."""
    task = progress.add_task("nodes: registered and holding Leases", total=n)
    while True:
        for p in nodes:
            p.proc.check()
        got = len((await client.list("leases", LEASE_NS))["items"])
        progress.update(task, completed=got)
        if got >= n and all(p.ready() for p in nodes):
            break
        await asyncio.sleep(2.0)
    progress.remove_task(task)


async def idle_phase(client: RESTClient, args: argparse.Namespace, procs: list[Proc],
                     nodes: list[NodesProc]) -> IdleResult:  # fmt: skip
    t0 = time.monotonic()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:  # fmt: skip
        await wait_leases(client, args.nodes, nodes, progress)
        registered = time.monotonic() - t0
        # One full renewal period and a little: every node has renewed at least once before the window opens.
        settle = progress.add_task("settling", total=round(args.settle))
        for _ in range(round(args.settle)):
            await asyncio.sleep(1.0)
            progress.advance(settle)
        progress.remove_task(settle)
        rv0 = await current_rv(client)
        before = {p.name: p.cpu() for p in procs}
        t = time.monotonic()
        window = progress.add_task(f"idle heartbeat cost, {args.nodes} nodes", total=round(args.idle_seconds))
        for _ in range(round(args.idle_seconds)):
            await asyncio.sleep(1.0)
            for p in procs:
                p.check()
            progress.advance(window)
        elapsed = time.monotonic() - t
        cpu = {p.name: (p.cpu() - before[p.name]) / elapsed * 100 for p in procs}
        rv1 = await current_rv(client)
    rss = {p.name: rss_bytes(p.pid)[0] for p in procs}
    # Two namespace LISTs are reads: the revision moved by the writes alone.
    return IdleResult(args.nodes, elapsed, cpu, rss, (rv1 - rv0) / elapsed, registered)


async def cluster(args: argparse.Namespace, n_pods: int) -> tuple[IdleResult, PodsResult | None]:
    with api_server(args.etcd) as server:
        assert server.proc is not None
        nodes: list[NodesProc] = []
        sched: Proc | None = None
        try:
            async with client_for(server) as client:
                await make_namespace(client)
                k = args.node_processes
                for i in range(k):
                    count = args.nodes // k + (1 if i < args.nodes % k else 0)
                    nodes.append(start_nodes(server.kubeconfig, server.dir, i, count, args.nodes_pythonpath))
                sched = start_scheduler(server.kubeconfig, server.dir)
                procs = [Proc("API server", server.proc, server.dir / "apiserver.log"), sched,
                         *(p.proc for p in nodes)]  # fmt: skip
                idle = await idle_phase(client, args, procs, nodes)
                print_idle(idle)
                if args.idle_only:
                    return idle, None
                pods = await run_pods(client, "cluster", "pod", n_pods, args, procs, True)
                print_slow_collections(procs)
                return idle, pods
        finally:
            for p in nodes:
                p.proc.stop()
            if sched is not None:
                sched.stop()
            if args.keep_logs:
                copy_logs(server.dir, Path(args.keep_logs))


# -- output -----------------------------------------------------------------------------------------------------


def gb(n: int) -> str:
    return f"{n / 1024**3:.2f} GB" if n >= 1024**3 else f"{n / 1024**2:,.0f} MB"


def print_idle(r: IdleResult) -> None:
    console.print(f"{r.nodes} nodes registered and holding Leases after {r.register_seconds:.0f} s")
    t = Table(title=f"idle heartbeat cost: {r.nodes} idle nodes, {r.seconds:.0f} s")
    for c in ("process", "CPU % of one core", "RSS"):
        t.add_column(c, justify="right")
    for name, pct in r.cpu_pct.items():
        t.add_row(name, f"{pct:.1f}", gb(r.rss[name]))
    console.print(t)
    console.print(f"API server writes meanwhile: {r.writes_per_s:,.0f}/s (the heartbeats: ~{r.nodes / 10:,.0f} lease "
                  f"renewals/s, plus status reports)")  # fmt: skip


def copy_logs(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for log in src.glob("*.log"):
        shutil.copy(log, dest / log.name)


def print_slow_collections(procs: list[Proc]) -> None:
    """The full garbage collections each component logged as slow (pyk8s.gc_policy): they stop the process."""
    for p in procs:
        took = [float(m) for m in re.findall(r"garbage collection took ([0-9.]+) s", p.log.read_text(errors="replace"))]
        if took:
            console.print(f"{p.name}: {len(took)} slow garbage collection(s), {sum(took):.1f} s in all, "
                          f"longest {max(took):.1f} s")  # fmt: skip


def print_pods(main: PodsResult | None, base: PodsResult | None) -> None:
    t = Table(title="pod startup (creation at the create call -> first watch event showing it)")
    for c in ("run", "pods", "latency to", "p50 s", "p90 s", "p99 s", "pods/s", "create errors"):
        t.add_column(c, justify="right", no_wrap=c == "run")
    rows = [r for r in (base, main) if r is not None]
    for r in rows:
        lat = r.latencies
        t.add_row(r.label, f"{r.done}/{r.total}", r.what, *(f"{percentile(lat, p):.2f}" for p in (50, 90, 99)),
                  f"{r.throughput:,.0f}", str(r.create_errors))  # fmt: skip
        if r.what == "Running":
            lat = r.bound_latencies
            t.add_row("", "", "bound", *(f"{percentile(lat, p):.2f}" for p in (50, 90, 99)), "", "")
    if main is not None and base is not None:
        ratio = [percentile(main.latencies, p) / max(percentile(base.latencies, p), 1e-9) for p in (50, 90, 99)]
        t.add_row("ratio (Running / baseline bound)", "", "", *(f"{x:.1f}x" for x in ratio),
                  f"{main.throughput / max(base.throughput, 1e-9):.2f}x", "")  # fmt: skip
    console.print(t)
    if main is not None and main.stalest_lease is not None:
        console.print(f"while the pods started, the stalest node Lease was {main.stalest_lease:.1f} s old "
                      f"(renewed every ~10 s; a node is unreachable after 40 s)")  # fmt: skip
    t = Table(title="process cost during the pods phase")
    for c in ("run", "process", "CPU s", "CPU µs per pod", "peak RSS"):
        t.add_column(c, justify="right")
    for r in rows:
        for name, cpu in r.cpu.items():
            t.add_row(r.label, name, f"{cpu:,.1f}", f"{cpu / max(1, r.done) * 1e6:,.0f}", gb(r.rss[name]))
    console.print(t)


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or None (saying how to install it) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        console.print("[yellow]--plot needs matplotlib: pip install -e .[bench]")
        return None
    return plt


def plot(path: str, main: PodsResult | None, base: PodsResult | None) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(19, 5))
    for r in (main, base):
        if r is None or not r.latencies:
            continue
        s = sorted(r.latencies)
        ax1.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=f"{r.label}: creation -> {r.what}")
        ts = [t for t, _ in r.samples]
        rate = [(b - a) / max(t1 - t0, 1e-9) for (t0, a), (t1, b) in zip(r.samples, r.samples[1:], strict=False)]
        ax2.plot(ts[1:], rate, label=f"{r.label}: pods {r.what}/s")
    ax1.axvline(5.0, color="grey", linestyle=":", label="upstream SLO p99 5 s")
    ax1.set(xlabel="seconds", ylabel="fraction of pods", title="pod startup latency (CDF)")
    ax2.set(xlabel="seconds since the first create", ylabel="pods/s", title="throughput (1 s samples)")
    if main is not None and len(main.samples) > 1:  # where the CPU went while the pods started
        ts = [t for t, _ in main.samples]
        for name, got in main.cpu_samples.items():
            pct = [(b - a) / max(t1 - t0, 1e-9) * 100 for (t0, t1, a, b) in zip(ts, ts[1:], got, got[1:], strict=False)]
            ax3.plot(ts[1:], pct, label=name, linewidth=0.8)
        ax3.set(xlabel="seconds since the first create", ylabel="CPU % of one core",
                title=f"{main.label}: CPU per process (1 s samples)")  # fmt: skip
        ax3.legend()
    ax1.legend()
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    console.print(f"plot written to {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000, help="simulated nodes (full run: 5000)")
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--rate", type=float, default=300.0, help="pods/s offered")
    ap.add_argument("--concurrency", type=int, default=100, help="creates in flight at most")
    ap.add_argument("--idle-seconds", type=float, default=60.0, help="the idle heartbeat window")
    ap.add_argument("--settle", type=float, default=15.0, help="seconds between all Leases held and the window")
    ap.add_argument("--stall", type=float, default=60.0, help="give up when no pod progresses for this long")
    ap.add_argument("--node-processes", type=int, default=1, help="`pyk8s nodes` processes sharing the nodes")
    ap.add_argument("--etcd", action="store_true", help="the API server on etcd (pyk8s.testing.etcd) not SQLite")
    ap.add_argument("--quick", action="store_true", help="smoke run: 50 nodes, 5 pods/node, 10 s idle")
    ap.add_argument("--idle-only", action="store_true", help="only the idle heartbeat cost")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--plot", metavar="FILE.png", help="latency CDF and throughput over time (needs matplotlib)")
    ap.add_argument("--keep-logs", metavar="DIR", help="copy the components' logs of the cluster run here")
    ap.add_argument("--nodes-pythonpath", default="", help="run the nodes process(es) from this pyk8s tree")
    args = ap.parse_args()
    if args.quick:
        args.nodes, args.pods_per_node, args.idle_seconds, args.settle = 50, 5, 10.0, 5.0
    n_pods = args.nodes * args.pods_per_node
    t0 = time.perf_counter()
    sum(range(10**7))
    console.print(f"this machine: sum(range(10**7)) takes {(time.perf_counter() - t0) * 1e3:.0f} ms "
                  f"(a typical core: ~100 ms); load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    console.print(f"{args.nodes} nodes in {args.node_processes} process(es), {n_pods} pods at {args.rate:.0f}/s "
                  f"offered, storage {'etcd' if args.etcd else 'SQLite'}")  # fmt: skip
    base = None
    if not (args.skip_baseline or args.idle_only):
        base = asyncio.run(baseline(args, n_pods))
    _, pods = asyncio.run(cluster(args, n_pods))
    if pods is not None or base is not None:
        print_pods(pods, base)
    if args.plot:
        plot(args.plot, pods, base)
    console.print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
