"""Property: whatever the writes, every watcher sees exactly the committed history after its start.

Random sequences of create/update/delete on a few keys run while several watchers, started at random
revisions at random moments, consume concurrently. Each watcher's stream must equal the committed history
after its start revision: same events, same order, same values and previous values, no gap, no duplicate.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.storage import ADDED, DELETED, MODIFIED, KeyExistsError, KeyNotFoundError, Store

from .backends import open_store

KEYS = [f"/registry/things/ns/k{i}" for i in range(4)]
OTHER = "/registry/others/ns/x"  # outside the watched directory: must never show up

op_strategy = st.one_of(
    st.tuples(st.just("create"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("update"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.integers(0, 3), st.just(0)),
    st.tuples(st.just("other"), st.just(0), st.integers(0, 3)),
    st.tuples(st.just("watch"), st.integers(0, 100), st.just(0)),
    st.tuples(st.just("yield"), st.just(0), st.just(0)),
)


@dataclass
class Committed:
    revision: int
    type: str
    key: str
    value: int | None
    prev: int | None


async def run_scenario(store: Store, ops: list[tuple[str, int, int]]) -> None:
    base = await store.current_revision()
    history: list[Committed] = []
    values: dict[str, int] = {}
    watchers: list[tuple[int, list, asyncio.Task]] = []

    async def consume(w, out: list) -> None:
        async for ev in w:
            out.append(ev)
            if len(out) > 10 * len(ops):  # more events than writes: a broken stream, stop collecting
                break

    for kind, a, b in ops:
        if kind == "watch":
            cur = await store.current_revision()
            start = base + (a * (cur - base)) // 100
            w = await store.watch("/registry/things/", start)
            out: list = []
            watchers.append((start, out, asyncio.create_task(consume(w, out)), w))
            continue
        if kind == "yield":
            await asyncio.sleep(0)
            continue
        if kind == "other":
            await store.guaranteed_update(OTHER, lambda o, b=b: {"metadata": {}, "v": b}, ignore_not_found=True)
            continue
        k = KEYS[a]
        try:
            if kind == "create":
                obj = await store.create(k, {"metadata": {"name": k}, "v": b})
                history.append(Committed(int(obj["metadata"]["resourceVersion"]), ADDED, k, b, None))
                values[k] = b
            elif kind == "update":
                before = await store.current_revision()
                obj = await store.guaranteed_update(k, lambda o, b=b: {**o, "v": b})
                rev = int(obj["metadata"]["resourceVersion"])
                if rev > before:
                    history.append(Committed(rev, MODIFIED, k, b, values[k]))
                    values[k] = b
                else:
                    assert values[k] == b, "only an unchanged value may skip the write"
            else:
                await store.delete(k)
                history.append(Committed(await store.current_revision(), DELETED, k, values[k], values[k]))
                del values[k]
        except (KeyExistsError, KeyNotFoundError):
            pass

    for start, out, task, w in watchers:
        expected = [h for h in history if h.revision > start]
        deadline = asyncio.get_running_loop().time() + 3
        while len(out) < len(expected) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        await w.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        got = [(e.revision, e.type, e.key, e.object["v"], e.prev_object["v"] if e.prev_object else None) for e in out]
        want = [(h.revision, h.type, h.key, h.value, h.prev) for h in expected]
        assert got == want, f"watcher from {start}"
        for e in out:
            assert e.object["metadata"]["resourceVersion"] == str(e.revision)


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=60, **SETTINGS)
@given(ops=st.lists(op_strategy, min_size=1, max_size=40))
def test_watchers_see_the_committed_history_sqlite(ops):
    async def main():
        async with open_store("sqlite", None) as store:
            await run_scenario(store, ops)

    asyncio.run(main())


@settings(max_examples=25, **SETTINGS)
@given(ops=st.lists(op_strategy, min_size=1, max_size=40))
def test_watchers_see_the_committed_history_etcd(etcd_server, ops):
    async def main():
        async with open_store("etcd", etcd_server) as store:
            await run_scenario(store, ops)

    asyncio.run(main())
