"""The watch cache's trigger index (pods: `spec.nodeName`) changes nothing a client can see.

Property: for random pod writes (creates, binds, moves between nodes, label and phase changes, deletions) and
random watchers started and stopped among them — some pinning `spec.nodeName`, some with other field or label
selectors, some with none; from now, from an earlier revision, or with the initial list — each watcher of a
cache with the trigger field gets exactly what a naive scan gives it: the same events, in the same order, as a
cache without the trigger and as the model (every change tested against the watcher's selector). Lists that pin
`spec.nodeName` return what filtering every object returns. Bookmarks reach indexed and unindexed watchers alike.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.api import meta
from pyk8s.api.resources import TABLE
from pyk8s.api.selectors import parse_field_selector, parse_label_selector
from pyk8s.apiserver.registry import strategy_for
from pyk8s.storage import ADDED, BOOKMARK, DELETED, MODIFIED, Store
from pyk8s.storage.cacher import Cacher, CacheWatcher, Predicate

from .backends import open_store

PODS = "/registry/pods/"
NAMESPACES = ["ns1", "ns2"]
NODES = ["", "n0", "n1", "n2"]
PINNED = ["spec.nodeName=n0", "spec.nodeName=n1", "spec.nodeName="]  # drawn more often than the rest
PHASES = ["Pending", "Running", "Failed"]
_pods = TABLE.get("", "v1", "pods")
assert _pods is not None
POD_STRATEGY = strategy_for(_pods)
TRIGGER = POD_STRATEGY.trigger_field
assert TRIGGER == "spec.nodeName"

FIELD_SELECTORS = [
    "",
    "spec.nodeName=n0",
    "spec.nodeName=n1",
    "spec.nodeName==n2",
    "spec.nodeName=",  # unscheduled pods
    "spec.nodeName!=n0",
    "spec.nodeName=n0,status.phase=Running",
    "status.phase=Running,spec.nodeName=n1",
    "spec.nodeName=n0,spec.nodeName=n1",  # matches nothing
    "spec.nodeName=n9",  # a node with no pods
    "status.phase!=Succeeded,status.phase!=Failed",  # the scheduler's
    "metadata.name=p1",
]
LABEL_SELECTORS = ["", "app=a", "app!=a"]


def attrs(obj: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    return meta.labels_of(obj), POD_STRATEGY.fields(obj)


def predicate(fields: str, labels: str) -> Predicate:
    """As the registry builds it (RESTStore.predicate)."""
    f, lab = parse_field_selector(fields), parse_label_selector(labels)
    return Predicate(None if lab.empty else lab.matches, None if f.empty else f.matches, None if f.empty else f.exact)


def pod(ns: str, name: str, node: str, app: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


@dataclass
class Change:
    revision: int
    type: str
    key: str
    obj: dict[str, Any]  # after (the last state for a deletion)
    prev: dict[str, Any] | None


@dataclass
class Started:
    prefix: str
    pred: Predicate
    revision: int  # changes after this one
    initial: list[str] | None  # keys of the initial ADDED events, for a watch without a revision
    indexed: CacheWatcher
    scan: CacheWatcher
    stopped_at: int | None = None


def model(w: Started, history: list[Change]) -> list[tuple[str, str, int]]:
    """What a watcher must receive: every change tested against its selector (cacher._as_seen's rules)."""

    def ok(obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        labels, fields = attrs(obj)
        return w.pred.matches(labels, fields)

    out: list[tuple[str, str, int]] = []
    for h in history:
        if h.revision <= w.revision or (w.stopped_at is not None and h.revision > w.stopped_at):
            continue
        if not h.key.startswith(w.prefix):
            continue
        if h.type == DELETED:
            seen = DELETED if ok(h.prev) else None
        else:
            now, before = ok(h.obj), ok(h.prev)
            seen = (MODIFIED if before else ADDED) if now else (DELETED if before else None)
        if seen is not None:
            out.append((seen, h.key, h.revision))
    return out


def drain(w: CacheWatcher) -> list[tuple[str, str, int, Any]]:
    out = []
    while (ev := w.next_nowait()) is not None:
        assert ev.event is not None, "no bookmarks were asked for"
        obj = ev.object
        out.append((ev.type, ev.event.key, ev.revision, obj))
    return out


_write = st.tuples(
    st.just("write"), st.integers(0, 7), st.sampled_from(NODES), st.sampled_from(["a", "b"]), st.sampled_from(PHASES)
)  # pods p0..p3 in two namespaces
_delete = st.tuples(st.just("delete"), st.integers(0, 7), st.just(""), st.just(""), st.just(""))
_watch = st.tuples(
    st.just("watch"),
    st.sampled_from(["", *NAMESPACES]),
    st.one_of(st.sampled_from(PINNED), st.sampled_from(FIELD_SELECTORS)),
    st.sampled_from(LABEL_SELECTORS),
    st.sampled_from(["now", "initial", "earlier"]),
)
_stop = st.tuples(st.just("stop"), st.integers(0, 20), st.just(""), st.just(""), st.just(""))
op_strategy = st.one_of(_write, _write, _write, _delete, _delete, _watch, _watch, _stop)


async def scenario(store: Store, ops: list[tuple[Any, ...]]) -> None:
    indexed = Cacher(store, PODS, attrs, trigger=TRIGGER, bookmark_interval=3600)
    scan = Cacher(store, PODS, attrs, bookmark_interval=3600)
    for c in (indexed, scan):
        await c.start()
        await c.wait_ready(10)
    base = await store.current_revision()
    history: list[Change] = []
    current: dict[str, dict[str, Any]] = {}
    watchers: list[Started] = []

    async def sync() -> int:
        rev = await store.current_revision()
        for c in (indexed, scan):
            await c.wait_until_fresh(rev)
        return rev

    try:
        for op in ops:
            kind = op[0]
            if kind == "write":
                _, i, node, app, phase = op
                ns, name = NAMESPACES[i % 2], f"p{i // 2}"
                key = f"{PODS}{ns}/{name}"
                new = pod(ns, name, node, app, phase)
                before = current.get(key)
                if before is None:
                    obj = await store.create(key, new)
                    history.append(Change(int(obj["metadata"]["resourceVersion"]), ADDED, key, new, None))
                else:
                    rev0 = await store.current_revision()
                    obj = await store.guaranteed_update(key, lambda _cur, new=new: new)
                    rev = int(obj["metadata"]["resourceVersion"])
                    if rev > rev0:  # an unchanged object is not written
                        history.append(Change(rev, MODIFIED, key, new, before))
                current[key] = new
            elif kind == "delete":
                _, i, *_ = op
                key = f"{PODS}{NAMESPACES[i % 2]}/p{i // 2}"
                if key in current:
                    await store.delete(key)
                    last = current.pop(key)
                    history.append(Change(await store.current_revision(), DELETED, key, last, last))
            elif kind == "watch":
                _, ns, fields, labels, start = op
                rev = await sync()
                prefix = f"{PODS}{ns}/" if ns else PODS
                pred = predicate(fields, labels)
                initial = None
                if start == "initial":
                    from_rev = 0
                    initial = sorted(k for k, o in current.items() if k.startswith(prefix) and pred.matches(*attrs(o)))
                elif start == "earlier":
                    from_rev = max(1, base + (rev - base) // 2)  # 0 would ask for the initial list
                else:
                    from_rev = rev
                got = [await c.watch(prefix, from_rev, pred) for c in (indexed, scan)]
                watchers.append(Started(prefix, pred, rev if start == "initial" else from_rev, initial, *got))
            elif kind == "stop" and watchers:
                w = watchers[op[1] % len(watchers)]
                if w.stopped_at is None:
                    w.stopped_at = await sync()
                    w.indexed.stop()
                    w.scan.stop()
        await sync()
        for w in watchers:
            a, b = drain(w.indexed), drain(w.scan)
            assert a == b, f"indexed and scanning caches differ for {w.prefix} {w.pred}"
            if w.initial is not None:
                assert [(t, k) for t, k, *_ in a[: len(w.initial)]] == [(ADDED, k) for k in w.initial]
                a = a[len(w.initial) :]
            assert [(t, k, r) for t, k, r, _ in a] == model(w, history)
        # Lists pinning the trigger field, whole and per namespace, from the index and by filtering.
        for fields in FIELD_SELECTORS:
            for prefix in (PODS, f"{PODS}ns1/"):
                pred = predicate(fields, "")
                want = sorted(k for k, o in current.items() if k.startswith(prefix) and pred.matches(*attrs(o)))
                for c in (indexed, scan):
                    entries, _ = c.list(prefix, pred)
                    assert [e.key for e in entries] == want, (fields, prefix)
        live = [w for w in watchers if w.stopped_at is None]
        assert indexed.watcher_count == scan.watcher_count == len(live)
    finally:
        await indexed.stop()
        await scan.stop()


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=150, **SETTINGS)
@given(ops=st.lists(op_strategy, min_size=20, max_size=60))
def test_each_watcher_gets_what_a_scan_gives(ops):
    async def main():
        async with open_store("sqlite", None) as store:
            await scenario(store, ops)

    asyncio.run(main())


async def test_index_follows_writes_between_lists(store):
    """A list by node after writes that bind, move and delete pods sees the index brought up to date."""
    cacher = Cacher(store, PODS, attrs, trigger=TRIGGER)
    await cacher.start()
    await cacher.wait_ready(10)
    try:

        async def node_list(node: str) -> list[str]:
            await cacher.wait_until_fresh(await store.current_revision())
            return [e.key.rsplit("/", 1)[1] for e in cacher.list(PODS, predicate(f"spec.nodeName={node}", ""))[0]]

        for i in range(3):
            await store.create(f"{PODS}ns1/p{i}", pod("ns1", f"p{i}", "", "a", "Pending"))
        assert await node_list("n1") == []  # builds the index
        assert await node_list("") == ["p0", "p1", "p2"]
        for i in range(3):
            await store.guaranteed_update(f"{PODS}ns1/p{i}", lambda _c, i=i: pod("ns1", f"p{i}", "n1", "a", "Running"))
        assert await node_list("n1") == ["p0", "p1", "p2"]
        assert await node_list("") == []
        await store.guaranteed_update(f"{PODS}ns1/p1", lambda _c: pod("ns1", "p1", "n2", "a", "Running"))
        await store.delete(f"{PODS}ns1/p2")
        assert await node_list("n1") == ["p0"]
        assert await node_list("n2") == ["p1"]
    finally:
        await cacher.stop()


async def test_bookmarks_reach_indexed_and_unindexed_watchers(store):
    cacher = Cacher(store, PODS, attrs, trigger=TRIGGER, bookmark_interval=0.05)
    await cacher.start()
    await cacher.wait_ready(10)
    try:
        selectors = ["spec.nodeName=n0", "spec.nodeName=n1", "", "status.phase=Running"]
        watchers = [await cacher.watch(PODS, cacher.revision, predicate(s, ""), bookmarks=True) for s in selectors]
        # A pod on another node, which only the unfiltered watcher gets, then a write elsewhere: the cache's
        # revision moves past every watcher's last event, so each is owed a bookmark.
        await store.create(f"{PODS}ns1/x", pod("ns1", "x", "n2", "a", "Pending"))
        obj = await store.create("/registry/configmaps/ns1/y", {"metadata": {"name": "y", "namespace": "ns1"}})
        rev = int(obj["metadata"]["resourceVersion"])
        await cacher.wait_until_fresh(rev)
        for sel, w in zip(selectors, watchers, strict=True):
            while True:
                ev = await asyncio.wait_for(w.__anext__(), 5)
                if ev.type == BOOKMARK and ev.revision >= rev:
                    break
                assert ev.type == BOOKMARK or sel == "", f"{sel!r} saw {ev.type} {ev.event and ev.event.key}"
    finally:
        await cacher.stop()
