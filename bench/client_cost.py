"""What a request costs the client: its CPU time per request through RESTClient's lean HTTP/1.1 transport
(`pyk8s.client.transport`, every non-watch request) beside the same requests over the aiohttp session (what every
request used before, and watches still use), measured in the same run, as a ratio.

The API server runs in its own process (`pyk8s apiserver`, SQLite in a temporary directory), so its work is not
counted: CPU time is this process's user+system time (getrusage), under uvloop as our components run, with the
cyclic GC on (its collections are part of what a client pays). Requests: `GET /version` (the smallest answer) and
the scheduler's Scheduled events.k8s.io Event create (a ~1 KB POST and its answer), both by path through
`RESTClient.request`; and that create as the scheduler makes it, `client.create("events.events.k8s.io", ...)`,
whose baseline is also what the verb did before (the resource found by name, uncached, then aiohttp). 32
concurrent workers send each one N times; the two paths alternate for three rounds and the table shows each one's
median.

Run: python bench/client_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from api_cost import scheduled_event

from pyk8s.api.resources import TABLE
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess

console = Console()
if not console.is_terminal:
    console = Console(width=150)  # piped to a file: the default 80 columns would squeeze the table unreadable
CONCURRENCY = 32
ROUNDS = 3
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def via_aiohttp(client: RESTClient, method: str, path: str, body: Any = None) -> Any:
    """A request as RESTClient.request sent it before the transport: over the aiohttp session."""
    data = None if body is None else orjson.dumps(body)
    ctype = "application/json" if data is not None else None
    resp = await client._send(method, path, None, data, ctype)
    try:
        raw = await resp.read()
    finally:
        resp.release()
    return orjson.loads(raw)


async def create_before(client: RESTClient, name: str, obj: dict[str, Any], namespace: str) -> Any:
    """RESTClient.create as it was: the resource looked up by name on every call, then aiohttp."""
    r = TABLE.find(name)
    assert r is not None
    return await via_aiohttp(client, "POST", client.path(r, namespace), obj)


async def measure(n: int, op: Callable[[int], Awaitable[object]]) -> tuple[float, float]:
    """Client CPU µs per request and requests/s for `n` calls of `op(i)` from CONCURRENCY workers."""
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await op(i)

    gc.collect()
    c0, t0 = cpu(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return (cpu() - c0) / n * 1e6, n / (time.perf_counter() - t0)


async def run(n: int) -> list[tuple[str, list[tuple[float, float]], list[tuple[float, float]]]]:
    server = APIServerProcess().start()
    try:
        config = load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)
        async with RESTClient(config) as client:
            ops: list[tuple[str, Callable[[int], Awaitable[object]], Callable[[int], Awaitable[object]]]] = [
                (
                    "GET /version",
                    lambda i: via_aiohttp(client, "GET", "/version"),
                    lambda i: client.request("GET", "/version"),
                ),
                (
                    "events.k8s.io Event create",
                    lambda i: via_aiohttp(client, "POST", EVENTS, scheduled_event(i)),
                    lambda i: client.request("POST", EVENTS, body=scheduled_event(i)),
                ),
                (
                    'client.create("events.events.k8s.io")',
                    lambda i: create_before(client, "events.events.k8s.io", scheduled_event(i), "default"),
                    lambda i: client.create("events.events.k8s.io", scheduled_event(i), "default"),
                ),
            ]
            # Warm both pools (connections, TLS sessions) and the server's caches before measuring.
            for _, old, new in ops:
                await measure(CONCURRENCY * 4, old)
                await measure(CONCURRENCY * 4, new)
            results = []
            for label, old, new in ops:
                base, lean = [], []
                for r in range(ROUNDS):
                    console.print(f"  {label}: round {r + 1}/{ROUNDS}", style="dim")
                    base.append(await measure(n, old))
                    lean.append(await measure(n, new))
                results.append((label, base, lean))
        return results
    finally:
        server.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1000 requests of each kind per round instead of 5000")
    args = ap.parse_args()
    n = 1000 if args.quick else 5000
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner: Callable[[Awaitable[Any]], Any] = asyncio.run  # type: ignore[assignment]
    else:
        runner = uvloop.run
    t0 = time.perf_counter()
    results = runner(run(n))
    table = Table(title=f"Client CPU per request ({n} each, {CONCURRENCY} workers, median of {ROUNDS} rounds)")
    for c in ("request", "before: aiohttp µs", "transport µs", "transport / before", "before req/s", "transport req/s"):
        table.add_column(c, justify="right")
    for label, base, lean in results:
        b_us, l_us = statistics.median(u for u, _ in base), statistics.median(u for u, _ in lean)
        b_rate, l_rate = statistics.median(r for _, r in base), statistics.median(r for _, r in lean)
        table.add_row(label, f"{b_us:,.0f}", f"{l_us:,.0f}", f"{l_us / b_us:.2f}x", f"{b_rate:,.0f}", f"{l_rate:,.0f}")
    console.print(table)
    console.print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
