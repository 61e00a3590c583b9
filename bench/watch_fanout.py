"""Watch fan-out benchmark: what the watch cache spends delivering pod events when every node watches its own
pods (`fieldSelector=spec.nodeName=<node>`, as a kubelet does), and listing one node's pods from the cache;
in-process on the storage + cacher level.

Fan-out: for W node watchers (W = 100, 1000, 5000) one run writes N pod events into a fresh SQLite store (a third
creates, a third binds — nodeName goes from "" to a node —, a third status updates, on random nodes) and
measures:
- µs of the pods watch cache per event (its bookkeeping and the dispatch to watchers: the time in its `_apply`),
- wall µs per event from the first write until the cache has applied the last one (writes included).
Every case also has the scheduler's pods watcher (`status.phase!=Succeeded,status.phase!=Failed`), so the cache
decodes each pod once in all of them. Cases, in the same run:
- baseline: the W node watchers watch another resource (ConfigMaps): pod events reach no filtered watcher;
- scan: the W watchers watch pods through a cache without a trigger field: each event is tested against each;
- indexed: the same through a cache with `spec.nodeName` as its trigger field (as the API server's pods cache).
The ratio is baseline / case (1.0: fan-out to node watchers costs nothing); "same events" says that the node
watchers received exactly the events (type, key, revision, in order) they received in the scan case.

List: P pods over 1000 nodes in one store, read by two caches (with and without the trigger field); the time of
a `spec.nodeName=<node>` list of one node's pods from each, and of the first indexed list (which builds the
index).

Run: python bench/watch_fanout.py [--quick] [--watchers 100,1000,5000] [--events N] [--pods P] [--plot F.png]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from density import pyplot
from storage import make_pod

from pyk8s.api import meta
from pyk8s.api.resources import TABLE
from pyk8s.api.selectors import parse_field_selector
from pyk8s.apiserver.registry import strategy_for
from pyk8s.storage import Store
from pyk8s.storage.cacher import Cacher, CacheWatcher, Predicate
from pyk8s.storage.factory import kv_from_url

console = Console()
if not console.is_terminal:
    console = Console(width=150)

PODS, CONFIGMAPS = "/registry/pods/", "/registry/configmaps/"
CASES = ("baseline", "scan", "indexed")
SCHEDULER_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"  # what upstream's scheduler watches
TRIGGER = "spec.nodeName"  # the pods registry's trigger field (PodStrategy.trigger_field)


def attrs_of(plural: str) -> Callable[[dict[str, Any]], tuple[Mapping[str, str], Mapping[str, str]]]:
    """The labels and fields the API server's caches filter on (RESTStore.attrs) for a core resource."""
    resource = TABLE.get("", "v1", plural)
    assert resource is not None
    strategy = strategy_for(resource)
    return lambda obj: (meta.labels_of(obj), strategy.fields(obj))


def field_predicate(selector: str) -> Predicate:
    """The predicate the registry builds for a watch with this field selector (RESTStore.predicate)."""
    sel = parse_field_selector(selector)
    return Predicate(None, sel.matches, sel.exact)


@dataclass
class Result:
    case: str
    watchers: int
    events: int
    cache_us: float  # per event, in the pods cacher's _apply
    wall_us: float  # per event, first write to last event applied
    delivered: int  # events queued for the W node watchers in all
    seen: tuple[tuple[int, str, str, int], ...]  # (watcher, type, key, revision) of each


def pod(i: int, node: str) -> dict[str, Any]:
    p = make_pod(i)
    p["spec"]["nodeName"] = node
    del p["status"]
    return p


@contextlib.asynccontextmanager
async def sqlite_store() -> AsyncIterator[Store]:
    with tempfile.TemporaryDirectory(prefix="pyk8s-fanout-") as d:
        # progress notifications rarely: the measurement is of events, not of storage's bookmarks
        store = Store(kv_from_url(f"sqlite://{d}?progress_notify_interval=30"), compaction_interval=0)
        await store.start()
        try:
            yield store
        finally:
            await store.close()


async def started(*cachers: Cacher) -> None:
    for c in cachers:
        await c.start()
        await c.wait_ready(10)


def drain(watchers: list[CacheWatcher]) -> tuple[tuple[int, str, str, int], ...]:
    out = []
    for i, w in enumerate(watchers):
        while (ev := w.next_nowait()) is not None:
            out.append((i, ev.type, ev.event.key if ev.event else "", ev.revision))
    return tuple(out)


async def run_case(case: str, w: int, n: int, seed: int) -> Result:
    """One fresh store and cache, W node watchers, N pod events; see the module docstring."""
    async with sqlite_store() as store:
        pods = Cacher(
            store, PODS, attrs_of("pods"), bookmark_interval=3600, trigger=TRIGGER if case == "indexed" else None
        )
        others = Cacher(store, CONFIGMAPS, attrs_of("configmaps"), bookmark_interval=3600)
        try:
            await started(pods, others)
            spent = [0.0]
            apply = pods._apply

            def timed_apply(ev: Any) -> None:
                t = time.perf_counter()
                apply(ev)
                spent[0] += time.perf_counter() - t

            pods._apply = timed_apply  # type: ignore[method-assign]
            scheduler = await pods.watch(PODS, pods.revision, field_predicate(SCHEDULER_SELECTOR))
            target = others if case == "baseline" else pods
            prefix = CONFIGMAPS if case == "baseline" else PODS
            watchers: list[CacheWatcher] = []
            for i in range(w):
                watchers.append(await target.watch(prefix, target.revision, field_predicate(f"{TRIGGER}=node-{i}")))
            rng = random.Random(seed)
            per_kind = n // 3
            # No cyclic collections while measuring (bench/storage.py does the same): one full collection over the
            # watchers' queues would land on whichever event happens to trigger it.
            gc.collect()
            gc.disable()
            t0 = time.perf_counter()
            created = [await store.create(f"{PODS}default/p{i}", pod(i, "")) for i in range(per_kind)]
            bound = []
            for i, obj in enumerate(created):
                node = f"node-{rng.randrange(w)}"

                def bind(cur: Any, node: str = node) -> Any:
                    cur["spec"]["nodeName"] = node
                    return cur

                bound.append(await store.guaranteed_update(f"{PODS}default/p{i}", bind, cached_existing=obj))
            last = 0
            for i, obj in enumerate(bound):

                def run(cur: Any, i: int = i) -> Any:
                    cur["status"] = {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250}"}
                    return cur

                res = await store.guaranteed_update(f"{PODS}default/p{i}", run, cached_existing=obj)
                last = int(res["metadata"]["resourceVersion"])
            await pods.wait_until_fresh(last, timeout=600)
            wall = time.perf_counter() - t0
            gc.enable()
            events = per_kind * 3
            assert scheduler.queue.qsize() == events, (scheduler.queue.qsize(), events)
            seen = drain(watchers)
            return Result(case, w, events, spent[0] / events * 1e6, wall / events * 1e6, len(seen), seen)
        finally:
            gc.enable()
            await pods.stop()
            await others.stop()


async def list_case(p: int, nodes: int, lists: int) -> list[tuple[str, float, float]]:
    """(measure, scan µs, indexed µs) of node lists from two caches over the same P pods."""
    async with sqlite_store() as store:
        scan = Cacher(store, PODS, attrs_of("pods"), bookmark_interval=3600)
        indexed = Cacher(store, PODS, attrs_of("pods"), bookmark_interval=3600, trigger=TRIGGER)
        try:
            await started(scan, indexed)
            last = 0
            for i in range(p):
                res = await store.create(f"{PODS}default/p{i}", pod(i, f"node-{i % nodes}"))
                last = int(res["metadata"]["resourceVersion"])
            await scan.wait_until_fresh(last, timeout=600)
            await indexed.wait_until_fresh(last, timeout=600)
            scan.list(PODS)  # both caches decode every pod once (as their watchers would have) before timing
            indexed.list(PODS)
            for c in (scan, indexed):
                for en in c.list(PODS)[0]:
                    _ = en.fields
            t = time.perf_counter()
            indexed.list(PODS, field_predicate(f"{TRIGGER}=node-0"))
            build = time.perf_counter() - t
            rng = random.Random(p)
            preds = [field_predicate(f"{TRIGGER}=node-{rng.randrange(nodes)}") for _ in range(lists)]
            times: dict[str, float] = {}
            for name, c in (("scan", scan), ("indexed", indexed)):
                t = time.perf_counter()
                for pred in preds:
                    c.list(PODS, pred)
                times[name] = (time.perf_counter() - t) / lists * 1e6
            for pred in preds[:20]:
                a, b = scan.list(PODS, pred)[0], indexed.list(PODS, pred)[0]
                assert [e.key for e in a] == [e.key for e in b]
            return [
                (f"list one node's pods ({p // nodes} of {p:,})", times["scan"], times["indexed"]),
                ("first indexed list (builds the index)", times["scan"], build * 1e6),
            ]
        finally:
            await scan.stop()
            await indexed.stop()


def plot(results: list[Result], path: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for case in CASES:
        rs = [r for r in results if r.case == case]
        if rs:
            ax.plot([r.watchers for r in rs], [r.cache_us for r in rs], marker="o", label=case)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("node watchers (spec.nodeName=X)")
    ax.set_ylabel("watch cache µs per pod event")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    console.print(f"plot written to {path}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer events, watchers and pods (a smoke run)")
    ap.add_argument("--watchers", help="comma-separated watcher counts (default 100,1000,5000)")
    ap.add_argument("--events", type=int, help="pod events per case (default 1500; --quick 300)")
    ap.add_argument("--pods", type=int, help="pods for the list measure (default 30000; --quick 3000)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"which of {','.join(CASES)} to run")
    ap.add_argument("--plot", metavar="PNG", help="µs per event against watchers, per case (needs matplotlib)")
    args = ap.parse_args()
    ws = [int(x) for x in (args.watchers or ("100,1000" if args.quick else "100,1000,5000")).split(",")]
    n = args.events or (300 if args.quick else 1500)
    p = args.pods if args.pods is not None else (3000 if args.quick else 30_000)
    cases = [c for c in args.cases.split(",") if c]
    results: list[Result] = []
    for w in ws:
        for case in cases:
            console.print(f"[dim]{case}: {w:,} watchers, {n:,} pod events")
            results.append(await run_case(case, w, n, seed=w))
    table = Table(title=f"watch cache fan-out of pod events to spec.nodeName watchers, same run ({n:,} events)")
    for col in ("watchers", "case", "cache µs/event", "wall µs/event", "delivered", "same events", "baseline/case"):
        table.add_column(col, justify="right")
    for r in results:
        base = next((b for b in results if b.case == "baseline" and b.watchers == r.watchers), None)
        ref = next((b for b in results if b.case == "scan" and b.watchers == r.watchers), None)
        ratio = f"{base.cache_us / r.cache_us:.2f}" if base and r.case != "baseline" else ""
        same = "" if ref is None or r.case != "indexed" else ("yes" if r.seen == ref.seen else "NO")
        table.add_row(
            f"{r.watchers:,}", r.case, f"{r.cache_us:,.1f}", f"{r.wall_us:,.0f}", f"{r.delivered:,}", same, ratio
        )
    console.print(table)
    if "scan" in cases and "indexed" in cases and p:
        console.print(f"[dim]lists: {p:,} pods over 1,000 nodes")
        rows = await list_case(p, 1000, 200)
        lt = Table(title="spec.nodeName list from the watch cache, same run")
        for col in ("measure", "scan µs", "indexed µs", "scan/indexed"):
            lt.add_column(col, justify="right")
        for name, a, b in rows:
            lt.add_row(name, f"{a:,.0f}", f"{b:,.0f}", f"{a / b:,.1f}")
        console.print(lt)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    asyncio.run(main())
