"""API server benchmark: pod creates/s and GETs/s (64 concurrent clients), LIST of 10k pods (JSON and Table),
watch fan-out (100 watchers), and p99 create latency at a fixed 2,000 creates/s, each beside the storage
layer's own figure for the same work measured in the same run (the ratio is what HTTP, TLS, validation,
admission and encoding cost on top of storage). Creates, GETs and the LIST are also measured in protobuf, as
client-go sends and asks for them, beside JSON from the same client in the same run (issue 16: protobuf at least
as fast as JSON on every row).

The API server runs in its own process (`pyk8s apiserver`, SQLite in a temporary directory); load comes
from `wrk` when it is installed (Debian's `wrk`: a C client, so the measurement is not limited by a Python
client), else from an aiohttp client. The storage figures come from `Store` on SQLite in this process.

Run: python bench/apiserver.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyk8s.api.protobuf import codec as protobuf
from pyk8s.storage import Store
from pyk8s.storage.factory import kv_from_url
from pyk8s.testing.cluster import APIServerProcess

console = Console()
NS = "bench"
PROTOBUF = "application/vnd.kubernetes.protobuf"
# Content-Type and Accept per format: protobuf's are client-go's own.
FORMATS = {"json": ("application/json", "application/json"), "protobuf": (PROTOBUF, PROTOBUF + ",application/json")}


def body_of(name: str, fmt: str) -> bytes:
    return orjson.dumps(pod(name)) if fmt == "json" else protobuf.encode_object(pod(name))


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "bench", "tier": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/nginx:1.25",
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                }
            ]
        },
    }


CREATE_LUA = """
counter = 0
local next_id = 0
setup = function(thread) thread:set("id", next_id); next_id = next_id + 1 end
init = function(args) prefix = args[1] end
request = function()
  counter = counter + 1
  local name = prefix .. "-" .. id .. "-" .. counter
  local body = BODY:gsub("NAME", name)
  return wrk.format("POST", nil, nil, body)
end
"""

GET_LUA = """
counter = 0
init = function(args) prefix = args[1]; n = tonumber(args[2]) end
request = function()
  counter = counter + 1
  return wrk.format("GET", wrk.path .. "/" .. prefix .. (counter % n))
end
"""


def wrk_figures(out: str) -> tuple[float, float, float, int, int]:
    """(requests/s, p50 ms, p99 ms, non-2xx count, socket errors) from wrk --latency output (0 for a missing
    percentile)."""

    def ms(pct: str) -> float:
        m = re.search(pct + r"%\s+([\d.]+)(us|ms|s)", out)
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)] if m else 0.0

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    socket_errors = sum(int(x) for x in errors.groups()) if errors else 0
    return rps, ms("50"), ms("99"), int(bad.group(1)) if bad else 0, socket_errors


def parse_wrk(out: str) -> tuple[float, float, int]:
    """(requests/s, p99 ms, non-2xx count) from wrk --latency output."""
    rps, _, p99, bad, _ = wrk_figures(out)
    return rps, p99, bad


class Client:
    """An HTTPS client session to the server under test."""

    def __init__(self, server: APIServerProcess) -> None:
        self.server = server
        self.ctx = ssl.create_default_context(cafile=str(server.ca_file))
        self.headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}

    def session(self, limit: int = 64) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ssl=self.ctx),
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=None),
        )


async def fill(client: Client, names: list[str]) -> None:
    async with client.session() as s:
        it = iter(names)

        async def worker() -> None:
            for n in it:
                async with s.post(f"{client.server.url}/api/v1/namespaces/{NS}/pods", data=orjson.dumps(pod(n))) as r:
                    await r.read()
                    assert r.status == 201, await r.text()

        await asyncio.gather(*(worker() for _ in range(32)))


def wrk(
    server: APIServerProcess, script: str, path: str, args: list[str], seconds: int, conc: int = 64
) -> tuple[float, float, int]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        cmd = ["wrk", "-t2", f"-c{conc}", f"-d{seconds}s", "--latency", "-s", f.name,
               "-H", f"Authorization: Bearer {server.token}", "-H", "Content-Type: application/json",
               f"{server.url}{path}", "--", *args]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return parse_wrk(out)
    finally:
        os.unlink(f.name)


async def python_rate(client: Client, n: int, op: str, prefix: str, fmt: str = "json") -> tuple[float, float]:
    """Creates or GETs with 64 concurrent aiohttp clients, in JSON or protobuf: (per second, p99 ms)."""
    lat: list[float] = []
    ctype, accept = FORMATS[fmt]
    headers = {"Content-Type": ctype, "Accept": accept}
    # Bodies are encoded before the clock starts: the client shares the machine's cores with the server.
    bodies = [body_of(f"{prefix}{i}", fmt) for i in range(n)] if op == "create" else []
    async with client.session() as s:
        it = iter(range(n))

        async def worker() -> None:
            for i in it:
                t = time.perf_counter()
                if op == "create":
                    url = f"{client.server.url}/api/v1/namespaces/{NS}/pods"
                    async with s.post(url, data=bodies[i], headers=headers) as r:
                        await r.read()
                        assert r.status == 201, r.status
                else:
                    url = f"{client.server.url}/api/v1/namespaces/{NS}/pods/{prefix}{i % 1000}"
                    async with s.get(url, headers=headers) as r:
                        await r.read()
                        assert r.status == 200 and r.content_type == ctype, (r.status, r.content_type)
                lat.append(time.perf_counter() - t)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(64)))
        dt = time.perf_counter() - t0
    lat.sort()
    return n / dt, lat[int(len(lat) * 0.99)] * 1000


async def paced_creates(client: Client, rate: int, seconds: float, prefix: str) -> tuple[float, float]:
    """Open-loop creates at `rate`/s for `seconds`: (achieved rate, p99 latency ms)."""
    lat: list[float] = []
    total = int(rate * seconds)
    async with client.session(limit=256) as s:
        url = f"{client.server.url}/api/v1/namespaces/{NS}/pods"

        async def one(i: int) -> None:
            t = time.perf_counter()
            async with s.post(url, data=orjson.dumps(pod(f"{prefix}{i}"))) as r:
                await r.read()
            lat.append(time.perf_counter() - t)

        tasks = []
        t0 = time.perf_counter()
        for i in range(total):
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
        dt = time.perf_counter() - t0
    lat.sort()
    return total / dt, lat[int(len(lat) * 0.99)] * 1000


async def list_ms(client: Client, table: bool, fmt: str = "json") -> float:
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"} if table else {"Accept": FORMATS[fmt][1]}
    times = []
    async with client.session() as s:
        for _ in range(3):
            t = time.perf_counter()
            async with s.get(f"{client.server.url}/api/v1/namespaces/{NS}/pods", headers=headers) as r:
                await r.read()
            times.append(time.perf_counter() - t)
    return min(times) * 1000


async def watch_fanout(client: Client, watchers: int, events: int) -> tuple[float, float]:
    """`watchers` HTTP watches on the namespace's pods while `events` pods are created: (events delivered/s,
    p99 ms from the create's response to each watcher's receipt)."""
    sent: dict[str, float] = {}
    delays: list[float] = []
    done = asyncio.Event()
    received = 0
    async with client.session(limit=watchers + 16) as s:
        rv_resp = await s.get(f"{client.server.url}/api/v1/namespaces/{NS}/pods?limit=1")
        rv = (await rv_resp.json())["metadata"]["resourceVersion"]

        async def watcher() -> None:
            nonlocal received
            url = f"{client.server.url}/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={rv}&timeoutSeconds=120"
            got = 0
            async with s.get(url) as r:
                async for line in r.content:
                    ev = orjson.loads(line)
                    name = ev["object"]["metadata"]["name"]
                    now = time.perf_counter()
                    if name in sent:
                        delays.append(now - sent[name])
                    got += 1
                    received += 1
                    if got == events:
                        break
            if received == watchers * events:
                done.set()

        tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
        await asyncio.sleep(1.0)
        t0 = time.perf_counter()
        url = f"{client.server.url}/api/v1/namespaces/{NS}/pods"
        for i in range(events):
            async with s.post(url, data=orjson.dumps(pod(f"watch-{i}"))) as r:
                await r.read()
            sent[f"watch-{i}"] = time.perf_counter()
        await asyncio.wait_for(done.wait(), 120)
        dt = time.perf_counter() - t0
        await asyncio.gather(*tasks, return_exceptions=True)
    delays.sort()
    return received / dt, delays[int(len(delays) * 0.99)] * 1000 if delays else 0.0


async def storage_figures(n: int, list_n: int, watchers: int, events: int) -> dict[str, float]:
    """The same work on the storage layer alone (Store on SQLite, in process)."""
    out: dict[str, float] = {}
    d = tempfile.mkdtemp(prefix="pyk8s-bench-store-")
    store = Store(kv_from_url(f"sqlite://{d}"), compaction_interval=0)
    await store.start()
    try:
        it = iter(range(n))

        async def creator() -> None:
            for i in it:
                await store.create(f"/registry/pods/{NS}/s{i}", pod(f"s{i}"))

        t = time.perf_counter()
        await asyncio.gather(*(creator() for _ in range(64)))
        out["create"] = n / (time.perf_counter() - t)
        it = iter(range(n))

        async def getter() -> None:
            for i in it:
                await store.get(f"/registry/pods/{NS}/s{i}")

        t = time.perf_counter()
        await asyncio.gather(*(getter() for _ in range(64)))
        out["get"] = n / (time.perf_counter() - t)
        for i in range(n, list_n):
            await store.create(f"/registry/pods/{NS}/s{i}", pod(f"s{i}"))
        times = []
        for _ in range(3):
            t = time.perf_counter()
            await store.list(f"/registry/pods/{NS}/")
            times.append(time.perf_counter() - t)
        out["list"] = min(times) * 1000
        ws = [await store.watch(f"/registry/pods/{NS}/", await store.current_revision()) for _ in range(watchers)]
        delays: list[float] = []
        t0 = time.perf_counter()
        for i in range(events):
            t = time.perf_counter()
            await store.create(f"/registry/pods/{NS}/w{i}", pod(f"w{i}"))
            for w in ws:
                await w.__anext__()
                delays.append(time.perf_counter() - t)
        out["watch_rate"] = watchers * events / (time.perf_counter() - t0)
        delays.sort()
        out["watch_p99"] = delays[int(len(delays) * 0.99)] * 1000
        for w in ws:
            await w.stop()
    finally:
        await store.close()
        shutil.rmtree(d, ignore_errors=True)
    return out


async def format_rows(client: Client, n: int, list_n: int) -> list[tuple[str, str, str, str]]:
    """Creates/s, GETs/s and the LIST in JSON and in protobuf. GETs and the LIST: the better of two rounds, the
    order flipped between them."""
    best: dict[tuple[str, str], float] = {}
    # Creates in short alternating batches (each format's rate over all of its batches): the store grows as
    # they run, and neither format should meet a bigger one.
    spent = {"json": 0.0, "protobuf": 0.0}
    batch = max(100, n // 3)
    for fmt in spent:  # steady state: each format's first requests (caches, lazily built tables) not counted
        await python_rate(client, batch, "create", f"warm{fmt[0]}", fmt)
        await python_rate(client, batch, "get", "g", fmt)
    for i, fmt in enumerate(["json", "protobuf", "protobuf", "json"] * 2):
        rate, _ = await python_rate(client, batch, "create", f"f{i}{fmt[0]}", fmt)
        spent[fmt] += batch / rate
    for fmt in spent:
        best[("create", fmt)] = 4 * batch / spent[fmt]
    for round_ in range(2):
        for fmt in ("json", "protobuf") if round_ == 0 else ("protobuf", "json"):
            rate, _ = await python_rate(client, n, "get", "g", fmt)
            best[("get", fmt)] = max(best.get(("get", fmt), 0.0), rate)
            ms = await list_ms(client, False, fmt)
            best[("list", fmt)] = min(best.get(("list", fmt), float("inf")), ms)
    return [
        ("pod creates/s", f"{best['create', 'json']:,.0f}", f"{best['create', 'protobuf']:,.0f}",
         f"{best['create', 'protobuf'] / best['create', 'json']:.2f}"),
        ("pod GETs/s", f"{best['get', 'json']:,.0f}", f"{best['get', 'protobuf']:,.0f}",
         f"{best['get', 'protobuf'] / best['get', 'json']:.2f}"),
        (f"LIST {list_n:,}+ pods (ms)", f"{best['list', 'json']:,.0f}", f"{best['list', 'protobuf']:,.0f}",
         f"{best['list', 'json'] / best['list', 'protobuf']:.2f}"),
    ]  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller numbers (a smoke run)")
    args = parser.parse_args()
    seconds = 5 if args.quick else 10
    list_n = 2000 if args.quick else 10_000
    n = 2000 if args.quick else 5000
    watchers, events = (20, 50) if args.quick else (100, 200)
    have_wrk = shutil.which("wrk") is not None
    rows: list[tuple[str, str, str, str]] = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("storage baseline", total=7)
        gc.collect()
        base = await storage_figures(n, list_n, watchers, events)
        progress.update(task, advance=1, description="starting pyk8s apiserver")
        server = APIServerProcess(
            extra_args=("--max-mutating-requests-inflight", "0", "--max-requests-inflight", "0")
        ).start()
        try:
            server.create_namespace(NS)
            client = Client(server)
            progress.update(task, advance=1, description="creates (64 clients)")
            if have_wrk:
                body = orjson.dumps(pod("NAME")).decode().replace('"', '\\"')
                rps, p99, bad = wrk(
                    server, f'BODY = "{body}"\n' + CREATE_LUA, f"/api/v1/namespaces/{NS}/pods", ["c"], seconds
                )
                assert bad == 0, f"{bad} creates failed"
            else:
                rps, p99 = await python_rate(client, n, "create", "c")
            rows.append(("pod creates/s, 64 clients", f"{rps:,.0f}", f"{base['create']:,.0f}", f"p99 {p99:.0f} ms"))
            progress.update(task, advance=1, description="GETs (64 clients)")
            await fill(client, [f"g{i}" for i in range(1000)])
            if have_wrk:
                rps, p99, bad = wrk(server, GET_LUA, f"/api/v1/namespaces/{NS}/pods", ["g", "1000"], seconds)
                assert bad == 0, f"{bad} GETs failed"
            else:
                rps, p99 = await python_rate(client, n, "get", "g")
            rows.append(("pod GETs/s, 64 clients", f"{rps:,.0f}", f"{base['get']:,.0f}", f"p99 {p99:.0f} ms"))
            progress.update(task, advance=1, description=f"LIST of {list_n:,} pods")
            _, body_ = server.request("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")
            have = (
                int((body_ or {}).get("metadata", {}).get("remainingItemCount", 0)) + 1
                if isinstance(body_, dict)
                else 0
            )
            await fill(client, [f"l{i}" for i in range(max(0, list_n - have))])
            rows.append(
                (f"LIST {list_n:,} pods, JSON (ms)", f"{await list_ms(client, False):,.0f}", f"{base['list']:,.0f}", "")
            )
            rows.append(
                (f"LIST {list_n:,} pods, Table (ms)", f"{await list_ms(client, True):,.0f}", f"{base['list']:,.0f}", "")
            )
            progress.update(task, advance=1, description="JSON and protobuf, one client")
            formats = await format_rows(client, n, list_n)
            progress.update(task, advance=1, description=f"watch fan-out ({watchers} watchers)")
            rate, p99 = await watch_fanout(client, watchers, events)
            rows.append(
                (
                    f"watch events/s delivered, {watchers} watchers",
                    f"{rate:,.0f}",
                    f"{base['watch_rate']:,.0f}",
                    f"p99 {p99:.0f} ms (storage {base['watch_p99']:.1f} ms)",
                )
            )
            progress.update(task, advance=1, description="creates at a fixed 2,000/s")
            achieved, p99 = await paced_creates(client, 2000, 3 if args.quick else 5, "paced")
            rows.append(("creates at 2,000/s offered", f"{achieved:,.0f}/s", "", f"p99 {p99:.0f} ms"))
        finally:
            server.cleanup()
    table = Table(
        title=f"pyk8s apiserver (SQLite) vs its storage layer, same run; load: {'wrk' if have_wrk else 'aiohttp'}"
    )
    for col in ("measure", "apiserver", "storage alone", "notes"):
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    console.print(table)
    ftable = Table(title="JSON and protobuf through the same aiohttp client, same run (protobuf/JSON: > 1 is better)")
    for col in ("measure", "JSON", "protobuf", "protobuf/JSON"):
        ftable.add_column(col)
    for r in formats:
        ftable.add_row(*r)
    console.print(ftable)
    speed = time.perf_counter()
    sum(range(10**7))
    console.print(
        f"machine speed: sum(range(10**7)) took {(time.perf_counter() - speed) * 1000:.0f} ms (a typical 2024 core: ~100 ms)"
    )


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
