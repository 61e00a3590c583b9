"""Consistent-read latency: pod GETs (p50/p99) and LISTs on `pyk8s apiserver --etcd-servers` beside the same
on SQLite, measured in the same run, while another resource is being written (so etcd's revision keeps moving
past the pods' watch cache, the case where a consistent read from the cache has to wait for it).

Two API servers run side by side (one on SQLite in a temporary directory, one on a fresh etcd started for the
run with etcd's default progress-notify interval of 10 minutes); each holds 1,000 pods and gets ConfigMap
creates at a steady rate from a background writer. The figures alternate between the two servers three times
and the table shows the medians and the etcd/SQLite ratio. Requests that fail are counted (a consistent read
that waits too long answers 504). The concurrent GETs come from `wrk` when it is installed (Debian's `wrk`: a C
client, so the latencies are the server's, not a Python client's), else from an aiohttp client. wrk's figures
cover the requests that completed within its run: when reads stall for seconds, its GETs/s shows it, not its p99.

Run: python bench/read_latency.py [--quick] [--etcd /path/to/etcd] [--clients 64] [--writes 100]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apiserver import GET_LUA, wrk_figures  # bench/apiserver.py: its wrk script and output parsing

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.etcd import EtcdServer

console = Console()
NS = "bench"
PODS = 1000


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/nginx:1.25"}]},
    }


class Target:
    """One API server under test and an HTTPS session to it."""

    def __init__(self, name: str, server: APIServerProcess) -> None:
        self.name = name
        self.server = server
        self.ctx = ssl.create_default_context(cafile=str(server.ca_file))
        self.headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}

    def session(self, limit: int) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ssl=self.ctx),
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=60),
        )

    async def fill(self) -> None:
        async with self.session(32) as s:
            it = iter(range(PODS))

            async def worker() -> None:
                for i in it:
                    url = f"{self.server.url}/api/v1/namespaces/{NS}/pods"
                    async with s.post(url, data=orjson.dumps(pod(f"p{i}"))) as r:
                        await r.read()
                        assert r.status == 201, await r.text()

            await asyncio.gather(*(worker() for _ in range(32)))


async def writer(target: Target, rate: float, stop: asyncio.Event) -> int:
    """ConfigMap creates at `rate` per second until `stop`: writes to another resource than the one read."""
    n = 0
    if rate <= 0:
        await stop.wait()
        return n
    async with target.session(4) as s:
        url = f"{target.server.url}/api/v1/namespaces/{NS}/configmaps"
        t0 = time.perf_counter()
        while not stop.is_set():
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "w-"}, "data": {"k": "v"}}
            async with s.post(url, data=orjson.dumps(body)) as r:
                await r.read()
            n += 1
            delay = t0 + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
    return n


async def gets(target: Target, clients: int, total: int, rate: float) -> tuple[float, float, float, int]:
    """`total` pod GETs from `clients` concurrent clients during background writes: (GETs/s, p50 ms, p99 ms,
    failed requests)."""
    lat: list[float] = []
    failed = 0
    stop = asyncio.Event()
    background = asyncio.create_task(writer(target, rate, stop))
    await asyncio.sleep(0.2)
    async with target.session(clients) as s:
        it = iter(range(total))

        async def worker() -> None:
            nonlocal failed
            for i in it:
                t = time.perf_counter()
                async with s.get(f"{target.server.url}/api/v1/namespaces/{NS}/pods/p{i % PODS}") as r:
                    await r.read()
                lat.append(time.perf_counter() - t)
                failed += r.status != 200

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        dt = time.perf_counter() - t0
    stop.set()
    await background
    lat.sort()
    return total / dt, lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000, failed


async def wrk_gets(target: Target, clients: int, seconds: int, rate: float) -> tuple[float, float, float, int]:
    """Like `gets`, with wrk as the client for `seconds`."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(GET_LUA)
    stop = asyncio.Event()
    background = asyncio.create_task(writer(target, rate, stop))
    try:
        proc = await asyncio.create_subprocess_exec(
            "wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "--timeout", "10s", "--latency", "-s", f.name,
            "-H", f"Authorization: Bearer {target.server.token}",
            f"{target.server.url}/api/v1/namespaces/{NS}/pods", "--", "p", str(PODS),
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out = (await proc.communicate())[0].decode()
    finally:
        stop.set()
        await background
        os.unlink(f.name)
    rps, p50, p99, bad, socket_errors = wrk_figures(out)
    assert p50 and p99, out
    # Requests wrk gave up on (10 s) or lost are missing from its latencies: count them as failed.
    return rps, p50, p99, bad + socket_errors


async def lists(target: Target, count: int, rate: float) -> tuple[float, int]:
    """`count` consistent LISTs of the 1,000 pods one after another during background writes: (p50 ms, failed)."""
    lat: list[float] = []
    failed = 0
    stop = asyncio.Event()
    background = asyncio.create_task(writer(target, rate, stop))
    async with target.session(1) as s:
        for _ in range(count):
            t = time.perf_counter()
            async with s.get(f"{target.server.url}/api/v1/namespaces/{NS}/pods") as r:
                await r.read()
            lat.append(time.perf_counter() - t)
            failed += r.status != 200
    stop.set()
    await background
    return statistics.median(lat) * 1000, failed


def etcd_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    return out.split()[2] if out.startswith("etcd Version:") else "?"


async def measure(targets: list[Target], args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    figures: dict[str, dict[str, list[float]]] = {t.name: {} for t in targets}
    total = 2000 if args.quick else 10_000
    have_wrk = shutil.which("wrk") is not None
    for t in targets:
        await t.fill()
    for _ in range(3):
        for t in targets:
            f = figures[t.name]
            gc.collect()
            gc.disable()
            try:
                if have_wrk:
                    rps, p50, p99, bad = await wrk_gets(t, args.clients, 3 if args.quick else 10, args.writes)
                else:
                    rps, p50, p99, bad = await gets(t, args.clients, total, args.writes)
                f.setdefault("rate", []).append(rps)
                f.setdefault("p50", []).append(p50)
                f.setdefault("p99", []).append(p99)
                f.setdefault("failed", []).append(bad)
                _, one_p50, one_p99, bad1 = await gets(t, 1, total // 10, args.writes)
                f.setdefault("p50_1", []).append(one_p50)
                f.setdefault("p99_1", []).append(one_p99)
                f["failed"][-1] += bad1
                list_p50, badl = await lists(t, 10 if args.quick else 30, args.writes)
                f.setdefault("list", []).append(list_p50)
                f["failed"][-1] += badl
            finally:
                gc.enable()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument("--etcd", default="/usr/bin/etcd", help="the etcd binary (default: Debian's)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent GET clients (default 64)")
    parser.add_argument(
        "--writes", type=float, default=100.0, help="background ConfigMap creates/s (default 100; 0: none)"
    )
    args = parser.parse_args()
    version = etcd_version(args.etcd)
    etcd = EtcdServer(binary=args.etcd, progress_notify_interval="10m").start()
    servers: list[APIServerProcess] = []
    try:
        limits = ("--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0")
        for url in ("", etcd.url):
            servers.append(APIServerProcess(etcd_url=url, extra_args=limits).start())
            servers[-1].create_namespace(NS)
        targets = [Target("SQLite", servers[0]), Target(f"etcd {version}", servers[1])]
        with console.status("measuring (three rounds per server)"):
            figures = asyncio.run(measure(targets, args))
    finally:
        for s in servers:
            s.cleanup()
        etcd.stop()

    sqlite, on_etcd = (figures[t.name] for t in targets)
    load = "wrk" if shutil.which("wrk") else "aiohttp"
    table = Table(
        title=f"pod reads on pyk8s apiserver: etcd {version} vs SQLite, same run, {args.writes:g} ConfigMap "
        f"writes/s; {args.clients} clients: {load}"
    )
    for col in ("measure", f"etcd {version}", "SQLite", "etcd / SQLite"):
        table.add_column(col)

    def row(label: str, key: str, fmt: str = "{:,.1f}") -> None:
        a, b = statistics.median(on_etcd[key]), statistics.median(sqlite[key])
        table.add_row(label, fmt.format(a), fmt.format(b), f"{a / b:.2f}" if b else "-")

    row(f"GETs/s, {args.clients} clients", "rate", "{:,.0f}")
    row(f"GET p50 ms, {args.clients} clients", "p50")
    row(f"GET p99 ms, {args.clients} clients", "p99")
    row("GET p50 ms, 1 client", "p50_1", "{:,.2f}")
    row("GET p99 ms, 1 client", "p99_1", "{:,.2f}")
    row(f"LIST {PODS:,} pods p50 ms", "list")
    table.add_row("failed requests (3 rounds)", str(sum(on_etcd["failed"])), str(sum(sqlite["failed"])), "")
    console.print(table)
    console.print("per round, etcd p99 ms:", ", ".join(f"{x:.0f}" for x in on_etcd["p99"]))
    console.print("per round, SQLite p99 ms:", ", ".join(f"{x:.0f}" for x in sqlite["p99"]))


if __name__ == "__main__":
    main()
