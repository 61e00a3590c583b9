"""Custom resources against ConfigMaps: creates/s (64 concurrent clients) and watch fan-out (events delivered
per second to 50 watchers) for a custom resource whose CRD has a ~2 KB structural schema and one CEL rule,
beside a ConfigMap of the same JSON size, in the same run on the same server. Issue 17's target: the custom
resource reaches at least 0.8 of the ConfigMap figure on both rows (what the CRD's pruning, defaulting,
schema validation and CEL rule cost on top of a plain write).

Every object differs from the others (the widget's replicas, a port and a field; the ConfigMap's data), as
real objects do: no result memoised by content is reused from one create to the next. Creates are measured
in alternating rounds (ConfigMaps, then custom resources, five times) and the median of each kind is shown;
so is the watch fan-out.

The API server runs in its own process (`pyk8s apiserver`, SQLite in a temporary directory); the load comes
from an aiohttp client in this process.

Run: python bench/custom_resources.py [--quick] [--rounds N] [--plot out.png]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apiserver import Client  # bench/apiserver.py: an HTTPS session to the server under test

from pyk8s.testing.cluster import APIServerProcess

console = Console()
NS = "bench"
GROUP = "bench.example.com"


def _props() -> dict[str, Any]:
    """A structural schema of about 2 KB: typed scalars with bounds, an enum, a pattern, a nested object and a
    list-map."""
    scalars = {f"field{i}": {"type": "string", "maxLength": 64} for i in range(8)}
    return {
        "spec": {
            "type": "object",
            "required": ["replicas", "image"],
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"}
            ],
            "properties": {
                "image": {"type": "string", "pattern": "^[a-z0-9./:-]+$"},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 1000},
                "minReplicas": {"type": "integer", "minimum": 0, "default": 1},
                "mode": {"type": "string", "enum": ["Fast", "Slow", "Balanced"]},
                "resources": {
                    "type": "object",
                    "properties": {
                        "cpu": {"x-kubernetes-int-or-string": True},
                        "memory": {"x-kubernetes-int-or-string": True},
                    },
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                            "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
                        },
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                **scalars,
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    }


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": _props()}},
            }
        ],
    },
}


def widget(name: str, n: int = 0) -> dict[str, Any]:
    """The n-th widget: its spec differs from its neighbours' (replicas, a port, a field), as real objects' do,
    so that nothing memoised by content is answered from the previous create."""
    spec: dict[str, Any] = {
        "image": "registry.example.com/widget:1.2.3",
        "replicas": 3 + n % 997,
        "minReplicas": 1 + n % 3,
        "mode": "Balanced",
        "resources": {"cpu": "250m", "memory": "128Mi"},
        "ports": [{"name": "http", "port": 8080 + n % 1000}, {"name": "metrics", "port": 9090, "protocol": "TCP"}],
        "labels": {"app": "widget", "tier": "backend"},
    }
    spec.update({f"field{i}": f"value-{i}-" + "x" * 40 for i in range(8)})
    spec["field0"] = f"value-{n:08d}-" + "x" * 33
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def config_map(name: str, size: int, n: int = 0) -> dict[str, Any]:
    """A ConfigMap whose JSON is about `size` bytes, like the widget's (its data differs per object too)."""
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {}}
    pad = max(0, size - len(orjson.dumps(base)) - 21)
    base["data"] = {"payload": f"{n:08d}-" + "y" * pad}
    return base


def collection(kind: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{NS}/widgets" if kind == "widget" else f"/api/v1/namespaces/{NS}/configmaps"


def body(kind: str, name: str, size: int, n: int) -> bytes:
    return orjson.dumps(widget(name, n) if kind == "widget" else config_map(name, size, n))


async def create_rate(
    client: Client, kind: str, n: int, prefix: str, size: int, progress: Progress, first: int = 0
) -> float:
    """Creates per second with 64 concurrent clients (bodies encoded before the clock starts); the objects are
    the `first`-th to the `first + n - 1`-th."""
    bodies = [body(kind, f"{prefix}{i}", size, first + i) for i in range(n)]
    task = progress.add_task(f"creates: {kind}", total=n)
    url = client.server.url + collection(kind)
    async with client.session() as s:
        it = iter(range(n))

        async def worker() -> None:
            for i in it:
                async with s.post(url, data=bodies[i]) as r:
                    await r.read()
                    assert r.status == 201, (r.status, await r.text())
                progress.advance(task)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(64)))
        return n / (time.perf_counter() - t0)


async def watch_rate(
    client: Client, kind: str, watchers: int, events: int, size: int, progress: Progress, round_: int = 0
) -> float:
    """Events delivered per second to `watchers` watches while `events` objects (named for the round) are
    created."""
    task = progress.add_task(f"watch fan-out: {kind}", total=watchers * events)
    received = 0
    done = asyncio.Event()
    url = client.server.url + collection(kind)
    async with client.session(limit=watchers + 16) as s:
        async with s.get(url + "?limit=1") as r:
            rv = (await r.json())["metadata"]["resourceVersion"]

        async def watcher() -> None:
            nonlocal received
            got = 0
            async with s.get(f"{url}?watch=true&resourceVersion={rv}&timeoutSeconds=120") as r:
                async for _line in r.content:
                    got += 1
                    received += 1
                    progress.advance(task)
                    if got == events:
                        break
            if received == watchers * events:
                done.set()

        tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
        await asyncio.sleep(1.0)
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with sem, s.post(url, data=body(kind, f"w{round_}-{kind}-{i}", size, i)) as r:
                await r.read()

        await asyncio.gather(*(create(i) for i in range(events)))
        await asyncio.wait_for(done.wait(), 120)
        dt = time.perf_counter() - t0
        await asyncio.gather(*tasks, return_exceptions=True)
    return received / dt


def plot(rows: list[tuple[str, float, float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = [r[0] for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r[1] for r in rows], width=0.4, label="ConfigMap")
    ax.bar([i + 0.2 for i in x], [r[2] for r in rows], width=0.4, label="custom resource")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("per second")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    console.print(f"plot written to {path}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer objects (a smoke run)")
    ap.add_argument("--plot", metavar="PNG", help="draw the figures")
    ap.add_argument("--rounds", type=int, default=5, help="create rounds per kind, alternating (the median is shown)")
    args = ap.parse_args()
    n, watchers, events = (500, 10, 50) if args.quick else (4000, 50, 400)
    rounds = 1 if args.quick else max(1, args.rounds)
    size = len(orjson.dumps(widget("w-00000")))
    with APIServerProcess() as server:
        server.create_namespace(NS)
        server.apply_crds(json.dumps(CRD), f"widgets.{GROUP}")
        client = Client(server)
        rows: list[tuple[str, float, float]] = []
        with Progress(console=console, transient=True) as progress:
            # warm both paths (first requests build caches and compile the schema's validators)
            await create_rate(client, "configmap", 200, "warm-", size, progress, first=n * rounds)
            await create_rate(client, "widget", 200, "warm-", size, progress, first=n * rounds)
            cms, crs = [], []
            for r in range(rounds):  # alternating, so that a passing load on the machine hits both kinds
                cms.append(await create_rate(client, "configmap", n, f"c{r}-", size, progress, first=n * r))
                crs.append(await create_rate(client, "widget", n, f"c{r}-", size, progress, first=n * r))
            rows.append(("creates/s", statistics.median(cms), statistics.median(crs)))
            cms, crs = [], []
            for r in range(rounds):
                cms.append(await watch_rate(client, "configmap", watchers, events, size, progress, r))
                crs.append(await watch_rate(client, "widget", watchers, events, size, progress, r))
            rows.append((f"watch events/s ({watchers} watchers)", statistics.median(cms), statistics.median(crs)))
    title = f"custom resource (~{size} B JSON, ~2 KB schema, 1 CEL rule) vs ConfigMap, same run"
    table = Table(title=title + (f", median of {rounds} alternating rounds" if rounds > 1 else ""))
    for col in ("", "ConfigMap", "custom resource", "CR/ConfigMap (target >= 0.8)"):
        table.add_column(col, justify="right")
    for name, cm_rate, cr_rate in rows:
        table.add_row(name, f"{cm_rate:,.0f}", f"{cr_rate:,.0f}", f"{cr_rate / cm_rate:.2f}")
    console.print(table)
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    asyncio.run(main())
