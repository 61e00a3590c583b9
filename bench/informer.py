"""Informer benchmark: what the client-go pipeline (Reflector → DeltaFIFO → Indexer → handlers) costs on top
of the bare REST client, against a real `pyk8s apiserver`.

- sync: wall time until an informer on N pods has synced (every object through the FIFO, the indexer and a
  handler), beside a bare paginated LIST of the same pods through the same client;
- events: CPU time this process spends per watch event while a separate writer process patches pods, for a
  bare watch stream (decode only) and for an informer with a handler; alternated, median of three.

Run: python bench/informer.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyk8s.client.cache import SharedIndexInformer
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess

console = Console()
NS = "bench"

WRITER = """
import asyncio, sys
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
async def main(path, n, k, tag):
    async with RESTClient(load_kubeconfig(path).with_options(qps=-1)) as c:
        it = iter(range(k))
        async def w():
            for i in it:
                await c.patch("pods", f"p{i % n}", {"metadata": {"labels": {"tag": f"{tag}-{i}"}}}, "bench")
        await asyncio.gather(*(w() for _ in range(32)))
asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
"""


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
    }


async def fill(client: RESTClient, n: int) -> None:
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with sem:
            await client.create("pods", pod(f"p{i}"), NS)

    await asyncio.gather(*(one(i) for i in range(n)))


async def bare_list(client: RESTClient) -> float:
    t = time.perf_counter()
    lst = await client.list("pods", NS, limit=500, resource_version="0")
    assert lst["items"]
    return time.perf_counter() - t


async def informer_sync(client: RESTClient, n: int) -> float:
    seen = 0

    def on_add(_obj: dict, _initial: bool) -> None:
        nonlocal seen
        seen += 1

    t = time.perf_counter()
    informer = SharedIndexInformer(client, "pods", namespace=NS)
    informer.add_event_handler(on_add=on_add)
    informer.start()
    await informer.wait_for_sync()
    elapsed = time.perf_counter() - t
    await informer.stop()
    assert seen >= n
    return elapsed


def start_writer(server: APIServerProcess, n: int, k: int, tag: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(server.kubeconfig), str(n), str(k), tag])


async def bare_watch_cpu(client: RESTClient, server: APIServerProcess, n: int, k: int, tag: str) -> float:
    """CPU seconds this process spends per event on a bare watch of k patches."""
    rv = (await client.list("pods", NS, limit=1))["metadata"]["resourceVersion"]
    got = 0
    writer = start_writer(server, n, k, tag)
    cpu0 = None
    async with client.watch("pods", NS, resource_version=rv, timeout_seconds=600) as w:
        async for _event in w:
            if cpu0 is None:
                cpu0 = time.process_time()
            got += 1
            if got == k:
                break
    cpu = time.process_time() - (cpu0 or 0.0)
    await asyncio.to_thread(writer.wait)
    return cpu / k


async def informer_cpu(client: RESTClient, server: APIServerProcess, n: int, k: int, tag: str) -> float:
    """CPU seconds this process spends per event through an informer with one handler."""
    updates = 0
    done = asyncio.Event()
    cpu0: list[float] = []

    def on_update(_old: dict, _new: dict) -> None:
        nonlocal updates
        if not cpu0:
            cpu0.append(time.process_time())
        updates += 1
        if updates == k:
            done.set()

    informer = SharedIndexInformer(client, "pods", namespace=NS)
    informer.add_event_handler(on_update=on_update)
    informer.start()
    await informer.wait_for_sync()
    writer = start_writer(server, n, k, tag)
    await done.wait()
    cpu = time.process_time() - cpu0[0]
    await informer.stop()
    await asyncio.to_thread(writer.wait)
    return cpu / k


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller numbers (a smoke run)")
    args = parser.parse_args()
    n = 2000 if args.quick else 10_000
    k = 1000 if args.quick else 3000
    rows = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("starting pyk8s apiserver", total=4)
        server = APIServerProcess().start()
        try:
            server.create_namespace(NS)
            config = load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)
            async with RESTClient(config) as client:
                progress.update(task, advance=1, description=f"creating {n:,} pods")
                await fill(client, n)
                progress.update(task, advance=1, description="sync vs bare list")
                lists, syncs = [], []
                for _ in range(3):
                    lists.append(await bare_list(client))
                    syncs.append(await informer_sync(client, n))
                bl, sy = statistics.median(lists), statistics.median(syncs)
                rows.append((f"sync {n:,} pods (ms)", f"{sy * 1000:,.0f}", f"{bl * 1000:,.0f}", f"{bl / sy:.0%}"))
                progress.update(task, advance=1, description="events: bare watch vs informer")
                bare, inf = [], []
                for r in range(3):
                    bare.append(await bare_watch_cpu(client, server, n, k, f"b{r}"))
                    inf.append(await informer_cpu(client, server, n, k, f"i{r}"))
                bw, iw = statistics.median(bare), statistics.median(inf)
                rows.append(("CPU per watch event (µs)", f"{iw * 1e6:,.0f}", f"{bw * 1e6:,.0f}", f"{bw / iw:.0%}"))
                rows.append(("events/s one core could absorb", f"{1 / iw:,.0f}", f"{1 / bw:,.0f}", ""))
                progress.update(task, advance=1)
        finally:
            server.cleanup()
    table = Table(title="pyk8s informer vs the bare REST client, same run")
    for col in ("measure", "informer", "bare client", "bare / informer"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
