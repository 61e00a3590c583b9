"""Storage benchmark: pyk8s's Store on each backend beside a raw baseline measured in the same run.

For every figure the baseline does the same job with no pyk8s in between, so the ratio is what our
semantics (revisions, history, CAS, watch fan-out, the object codec) cost:

- SQLite baseline: stdlib `sqlite3` on a schema-less `t(key PRIMARY KEY, value)` table in the same
  directory, on the same loop. A create is `orjson.dumps` + INSERT + COMMIT. An update is a raw
  read-modify-write: SELECT + `orjson.loads` + change + `orjson.dumps` + UPDATE + COMMIT (a CAS update has
  to read the current value; a blind write would not be the same job). "64 in flight" commits 64 rows per
  transaction, the best group commit can do. A read is SELECT + `orjson.loads`. Watch latency has no raw
  counterpart in SQLite; its baseline is the latency of one raw write + commit.
  With a cached object (the caller already holds the current value, as an API server's watch cache does)
  the baseline is a blind write: dumps + UPDATE + COMMIT.
- etcd baseline: aetcd's client on the same etcd: put (creates and updates alike: raw puts), get,
  get_prefix, watch_prefix, with the same encode/decode. A CAS update without a cached object costs two
  round trips (read, then the transaction) against the put's one.

Watch latency is from the call that writes a new key to the watcher receiving its event.

Run: python bench/storage.py [--backend sqlite|etcd|all] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aetcd
import orjson
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyk8s.storage import Store
from pyk8s.storage.factory import kv_from_url
from pyk8s.testing.etcd import EtcdServer

console = Console()


def make_pod(i: int) -> dict:
    """A ~2 KB pod, the size of a typical small workload's pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-7d9f8b6c5d-{i:06}",
            "namespace": "default",
            "uid": f"6f1c2a4e-0000-4000-8000-{i:012}",
            "labels": {"app": "web", "pod-template-hash": "7d9f8b6c5d", "tier": "frontend"},
            "annotations": {"kubernetes.io/psp": "restricted", "note": "x" * 200},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9f8b6c5d",
                    "uid": "rs-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "creationTimestamp": "2026-11-21T00:00:00Z",
        },
        "spec": {
            "containers": [
                {
                    "name": f"c{c}",
                    "image": "registry.k8s.io/nginx:1.25",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"memory": "256Mi"},
                    },
                    "env": [{"name": f"VAR_{e}", "value": "value-" * 3} for e in range(4)],
                    "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets/kubernetes.io"}],
                }
                for c in range(2)
            ],
            "volumes": [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}],
            "nodeName": "node-0001",
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "podIP": "10.0.0.1",
        },
    }


@dataclass
class Row:
    backend: str
    metric: str
    ours: float
    raw: float
    unit: str
    higher_is_better: bool
    target: float

    @property
    def ratio(self) -> float:
        if self.higher_is_better:
            return self.ours / self.raw if self.raw else 0.0
        return self.raw / self.ours if self.ours else 0.0


METRICS = [
    # key, label, unit, higher is better, target ratio
    ("create1", "creates/s, 1 in flight", "/s", True, 0.6),
    ("create64", "creates/s, 64 in flight", "/s", True, 0.6),
    ("update1", "CAS updates/s, 1 in flight", "/s", True, 0.6),
    ("update64", "CAS updates/s, 64 in flight", "/s", True, 0.6),
    ("cupdate1", "CAS updates/s, cached object, 1 in flight", "/s", True, 0.6),
    ("cupdate64", "CAS updates/s, cached object, 64 in flight", "/s", True, 0.6),
    ("get", "point gets/s", "/s", True, 0.8),
    ("list", "list of {list_n} keys", "ms", False, 0.8),
    ("watch_p50", "watch latency p50", "ms", False, 0.0),
    ("watch_p99", "watch latency p99", "ms", False, 0.0),
]


def set_ip(obj: dict, i: int) -> dict:
    obj["status"]["podIP"] = f"10.1.{i // 250}.{i % 250}"
    return obj


async def rate(n: int, concurrency: int, op: Callable[[int], Awaitable[object]]) -> float:
    """Operations per second for ops 0..n-1 run by `concurrency` workers."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await op(i)

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - t)


def percentiles(samples: list[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s) * 1000, s[min(len(s) - 1, int(len(s) * 0.99))] * 1000


class Side:
    """One thing under test: pyk8s's Store, or a raw baseline. Keys are `<prefix>/p<i>`."""

    pods: list[dict]

    async def create(self, prefix: str, n: int, concurrency: int) -> float: ...
    async def update(self, prefix: str, n: int, concurrency: int, cached: bool = False) -> float: ...
    async def get(self, prefix: str, n: int) -> float: ...
    async def list(self, prefix: str, expect: int) -> float: ...
    async def watch_latency(self, prefix: str, n: int) -> list[float]: ...


def key(prefix: str, i: int) -> str:
    return f"{prefix}/p{i:06}"


class Pyk8s(Side):
    def __init__(self, store: Store, pods: list[dict]) -> None:
        self.store, self.pods = store, pods
        self.latest: dict[str, dict] = {}  # what an API server's watch cache would hold

    async def create(self, prefix: str, n: int, concurrency: int) -> float:
        async def one(i: int) -> None:
            k = key(prefix, i)
            self.latest[k] = await self.store.create(k, self.pods[i])

        return await rate(n, concurrency, one)

    async def update(self, prefix: str, n: int, concurrency: int, cached: bool = False) -> float:
        async def one(i: int) -> None:
            k = key(prefix, i)
            self.latest[k] = await self.store.guaranteed_update(
                k, lambda o: set_ip(o, i), cached_existing=self.latest[k] if cached else None
            )

        return await rate(n, concurrency, one)

    async def get(self, prefix: str, n: int) -> float:
        return await rate(n, 1, lambda i: self.store.get(key(prefix, i)))

    async def list(self, prefix: str, expect: int) -> float:
        t0 = time.perf_counter()
        res = await self.store.list(prefix + "/")
        elapsed = time.perf_counter() - t0
        assert len(res.items) == expect
        return elapsed * 1000

    async def watch_latency(self, prefix: str, n: int) -> list[float]:
        samples = []
        async with await self.store.watch(prefix + "/", await self.store.current_revision()) as w:
            for i in range(n):
                t0 = time.perf_counter()
                await self.store.create(key(prefix, i), self.pods[i])
                await w.__anext__()
                samples.append(time.perf_counter() - t0)
        return samples


class RawSqlite(Side):
    """stdlib sqlite3 on a schema-less table, synchronous on the loop thread."""

    def __init__(self, path: Path, pods: list[dict]) -> None:
        self.pods = pods
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE t (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID")

    def _rmw(self, prefix: str, i: int) -> tuple[bytes, str]:
        k = key(prefix, i)
        obj = orjson.loads(self.db.execute("SELECT value FROM t WHERE key = ?", (k,)).fetchone()[0])
        return orjson.dumps(set_ip(obj, i)), k

    def _batches(self, n: int, concurrency: int, one: Callable[[int], None]) -> float:
        db = self.db
        t0 = time.perf_counter()
        for s in range(0, n, concurrency):
            db.execute("BEGIN")
            for i in range(s, min(s + concurrency, n)):
                one(i)
            db.execute("COMMIT")
        return n / (time.perf_counter() - t0)

    async def create(self, prefix: str, n: int, concurrency: int) -> float:
        sql = "INSERT INTO t (key, value) VALUES (?, ?)"
        return self._batches(
            n, concurrency, lambda i: self.db.execute(sql, (key(prefix, i), orjson.dumps(self.pods[i])))
        )

    async def update(self, prefix: str, n: int, concurrency: int, cached: bool = False) -> float:
        sql = "UPDATE t SET value = ? WHERE key = ?"
        if cached:  # the caller knows the value: a blind write
            return self._batches(
                n, concurrency, lambda i: self.db.execute(sql, (orjson.dumps(self.pods[i]), key(prefix, i)))
            )
        return self._batches(n, concurrency, lambda i: self.db.execute(sql, self._rmw(prefix, i)))

    async def get(self, prefix: str, n: int) -> float:
        db = self.db
        t0 = time.perf_counter()
        for i in range(n):
            orjson.loads(db.execute("SELECT value FROM t WHERE key = ?", (key(prefix, i),)).fetchone()[0])
        return n / (time.perf_counter() - t0)

    async def list(self, prefix: str, expect: int) -> float:
        t0 = time.perf_counter()
        rows = self.db.execute(
            "SELECT key, value FROM t WHERE key >= ? AND key < ? ORDER BY key", (prefix + "/", prefix + "0")
        ).fetchall()
        items = [orjson.loads(v) for _, v in rows]
        elapsed = time.perf_counter() - t0
        assert len(items) == expect
        return elapsed * 1000

    async def watch_latency(self, prefix: str, n: int) -> list[float]:
        # No watch in SQLite: the floor is one raw insert and its commit.
        samples = []
        for i in range(n):
            t0 = time.perf_counter()
            self.db.execute("BEGIN")
            self.db.execute("INSERT INTO t VALUES (?, ?)", (key(prefix, i), orjson.dumps(self.pods[i])))
            self.db.execute("COMMIT")
            samples.append(time.perf_counter() - t0)
        return samples


class RawEtcd(Side):
    """aetcd's client: puts for creates and updates alike, as the issue's baseline asks."""

    def __init__(self, client: aetcd.Client, pods: list[dict]) -> None:
        self.client, self.pods = client, pods

    async def _put(self, prefix: str, i: int) -> None:
        await self.client.put(key(prefix, i).encode(), orjson.dumps(self.pods[i]))

    async def create(self, prefix: str, n: int, concurrency: int) -> float:
        return await rate(n, concurrency, lambda i: self._put(prefix, i))

    async def update(self, prefix: str, n: int, concurrency: int, cached: bool = False) -> float:
        return await rate(n, concurrency, lambda i: self._put(prefix, i))

    async def get(self, prefix: str, n: int) -> float:
        async def one(i: int) -> None:
            orjson.loads((await self.client.get(key(prefix, i).encode())).value)

        return await rate(n, 1, one)

    async def list(self, prefix: str, expect: int) -> float:
        t0 = time.perf_counter()
        res = await self.client.get_prefix((prefix + "/").encode())
        items = [orjson.loads(kv.value) for kv in res]
        elapsed = time.perf_counter() - t0
        assert len(items) == expect
        return elapsed * 1000

    async def watch_latency(self, prefix: str, n: int) -> list[float]:
        samples = []
        it = (await self.client.watch_prefix((prefix + "/").encode())).__aiter__()
        for i in range(n):
            t0 = time.perf_counter()
            await self._put(prefix, i)
            await it.__anext__()
            samples.append(time.perf_counter() - t0)
        return samples


async def compare(
    backend: str, ours: Side, raw: Side, prefixes: tuple[str, str], n: int, list_n: int, trials: int, progress
) -> list[Row]:
    """Each metric measured on both sides in alternation, `trials` times; medians and their ratio."""
    metrics = ("create1", "create64", "update1", "update64", "cupdate1", "cupdate64", "get", "list", "watch")
    task = progress.add_task(f"{backend}", total=trials * len(metrics) * 2 + 2)
    results: dict[str, dict[str, list[float]]] = {"ours": {}, "raw": {}}
    sides = {"ours": (ours, prefixes[0]), "raw": (raw, prefixes[1])}

    def record(side: str, metric: str, value: float) -> None:
        results[side].setdefault(metric, []).append(value)
        progress.advance(task)

    for impl, pre in sides.values():  # the keys that list reads
        await impl.create(f"{pre}/list", list_n, 64)
        progress.advance(task)
    for t in range(trials):
        order = ["raw", "ours"] if t % 2 == 0 else ["ours", "raw"]
        for metric in metrics:
            for side in order:
                impl, pre = sides[side]
                p1, p64 = f"{pre}/t{t}-1", f"{pre}/t{t}-64"
                # The harness holds tens of thousands of objects; cyclic GC passes over them would land on
                # whichever side happens to be running. Objects here are acyclic, so refcounting frees them.
                gc.collect()
                gc.disable()
                if metric == "create1":
                    record(side, metric, await impl.create(p1, n, 1))
                elif metric == "create64":
                    record(side, metric, await impl.create(p64, n, 64))
                elif metric == "update1":
                    record(side, metric, await impl.update(p1, n, 1))
                elif metric == "update64":
                    record(side, metric, await impl.update(p64, n, 64))
                elif metric == "cupdate1":
                    record(side, metric, await impl.update(p1, n, 1, cached=True))
                elif metric == "cupdate64":
                    record(side, metric, await impl.update(p64, n, 64, cached=True))
                elif metric == "get":
                    record(side, metric, await impl.get(p1, n))
                elif metric == "list":
                    record(side, metric, await impl.list(f"{pre}/list", list_n))
                else:
                    p50, p99 = percentiles(await impl.watch_latency(f"{pre}/t{t}-w", min(n, 1000)))
                    progress.advance(task)
                    results[side].setdefault("watch_p50", []).append(p50)
                    results[side].setdefault("watch_p99", []).append(p99)
                gc.enable()
    return [
        Row(
            backend,
            label.format(list_n=f"{list_n:,}"),
            statistics.median(results["ours"][m]),
            statistics.median(results["raw"][m]),
            u,
            h,
            tg,
        )
        for m, label, u, h, tg in METRICS
    ]


def report(rows: list[Row], trials: int) -> None:
    table = Table(title=f"pyk8s storage vs raw baseline (same run, median of {trials}, alternating)")
    for col in ("backend", "metric", "pyk8s", "raw", "ratio", "target"):
        table.add_column(col, justify="right" if col not in ("backend", "metric") else "left")
    for r in rows:
        fmt = "{:,.0f}" if r.unit == "/s" else "{:,.2f}"
        ok = r.target == 0 or r.ratio >= r.target
        table.add_row(
            r.backend,
            r.metric,
            fmt.format(r.ours) + " " + r.unit,
            fmt.format(r.raw) + " " + r.unit,
            f"[{'green' if ok else 'red'}]{r.ratio:.0%}[/]",
            f">={r.target:.0%}" if r.target else "-",
        )
    console.print(table)
    console.print("ratio: pyk8s / raw for rates, raw / pyk8s for times (higher is better in both).")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "etcd", "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="fewer operations and one trial (a smoke run)")
    parser.add_argument("-n", type=int, default=0, help="operations per measurement")
    parser.add_argument("--trials", type=int, default=0, help="measurements per metric and side (median)")
    args = parser.parse_args()
    list_n = 2000 if args.quick else 10_000
    trials = args.trials or (1 if args.quick else 3)
    rows: list[Row] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        if args.backend in ("sqlite", "all"):
            n = args.n or (1000 if args.quick else 3000)
            pods = [make_pod(i) for i in range(max(n, list_n))]
            with tempfile.TemporaryDirectory(prefix="pyk8s-bench-") as d:
                store = Store(kv_from_url(f"sqlite://{d}/state.db"), compaction_interval=0)
                await store.start()
                raw = RawSqlite(Path(d) / "raw.db", pods)
                rows += await compare(
                    "sqlite",
                    Pyk8s(store, pods),
                    raw,
                    ("/registry/pods", "/raw/pods"),
                    n,
                    list_n,
                    trials,
                    progress,
                )
                raw.db.close()
                await store.close()
        if args.backend in ("etcd", "all"):
            n = args.n or (500 if args.quick else 2000)
            pods = [make_pod(i) for i in range(max(n, list_n))]
            with EtcdServer() as etcd:
                store = Store(kv_from_url(etcd.url), compaction_interval=0)
                await store.start()
                host, port = etcd.endpoint.rsplit(":", 1)
                # Lists of 10k pods are ~20 MB: lift gRPC's 4 MB default, as EtcdKV does.
                client = aetcd.Client(host=host, port=int(port), options={"grpc.max_receive_message_length": 2**31 - 1})
                await client.connect()
                rows += await compare(
                    "etcd",
                    Pyk8s(store, pods),
                    RawEtcd(client, pods),
                    ("/registry/pods", "/raw/pods"),
                    n,
                    list_n,
                    trials,
                    progress,
                )
                await client.close()
                await store.close()
    report(rows, trials)


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
