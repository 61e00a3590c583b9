"""The shared storage suite: every semantic of the storage protocol, run against SQLite and a real etcd."""

from __future__ import annotations

import asyncio
import base64
import copy

import orjson
import pytest

from pyk8s.storage import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    ConflictError,
    GoneError,
    InvalidContinueError,
    InvalidKeyError,
    InvalidObjectError,
    InvalidRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    Preconditions,
    Store,
    TooLargeResourceVersionError,
)
from pyk8s.storage.compactor import Compactor

from .backends import BACKENDS, open_store


def pod(name: str, ns: str = "default", **spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "spec": dict(spec),
    }


def key(name: str, ns: str = "default") -> str:
    return f"/registry/pods/{ns}/{name}"


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def snapshot(store: Store) -> tuple[int, list[dict]]:
    """The store's revision and whole content, to show that a failed call changed nothing."""
    res = await store.list("/registry/")
    return await store.current_revision(), res.items


async def next_event(watch, timeout: float = 5.0):
    return await asyncio.wait_for(watch.__anext__(), timeout)


# -- create / get -------------------------------------------------------------------------------------


async def test_create_returns_object_with_revision_and_get_reads_it(store):
    before = await store.current_revision()
    created = await store.create(key("a"), pod("a", image="nginx"))
    assert rv(created) == before + 1 == await store.current_revision()
    assert created["spec"] == {"image": "nginx"}
    got = await store.get(key("a"))
    assert got == created


async def test_create_does_not_change_the_callers_object(store):
    obj = pod("a")
    await store.create(key("a"), obj)
    assert "resourceVersion" not in obj["metadata"]


async def test_revisions_are_global_and_strictly_increasing(store):
    revs = []
    for i in range(5):
        revs.append(rv(await store.create(key(f"p{i}", ns=f"ns{i % 2}"), pod(f"p{i}"))))
        revs.append(rv(await store.guaranteed_update(key(f"p{i}", ns=f"ns{i % 2}"), lambda o: {**o, "x": 1})))
    assert revs == sorted(revs) and len(set(revs)) == len(revs)


async def test_create_existing_key_is_already_exists_and_changes_nothing(store):
    await store.create(key("a"), pod("a", v=1))
    before = await snapshot(store)
    with pytest.raises(KeyExistsError):
        await store.create(key("a"), pod("a", v=2))
    assert await snapshot(store) == before


async def test_create_with_resource_version_is_rejected(store):
    obj = pod("a")
    obj["metadata"]["resourceVersion"] = "7"
    with pytest.raises(InvalidObjectError, match="resourceVersion should not be set"):
        await store.create(key("a"), obj)
    with pytest.raises(KeyNotFoundError):
        await store.get(key("a"))


async def test_get_missing_is_not_found(store):
    with pytest.raises(KeyNotFoundError):
        await store.get(key("nope"))


async def test_stored_resource_version_is_ignored_on_update(store):
    created = await store.create(key("a"), pod("a"))

    def bump(o):
        o["metadata"]["resourceVersion"] = "999999"
        o["spec"]["n"] = 1
        return o

    updated = await store.guaranteed_update(key("a"), bump)
    assert rv(updated) == rv(created) + 1 == await store.current_revision()
    assert rv(await store.get(key("a"))) == rv(updated)


# -- list ---------------------------------------------------------------------------------------------


async def test_list_is_sorted_by_key_and_bounded_by_the_directory(store):
    for ns, name in [("b", "z"), ("a", "y"), ("a", "x"), ("ab", "w"), ("a2", "v")]:
        await store.create(key(name, ns), pod(name, ns))
    await store.create("/registry/services/a/x", {"metadata": {"name": "x"}})
    res = await store.list("/registry/pods/a")
    assert [o["metadata"]["name"] for o in res.items] == ["x", "y"]
    res = await store.list("/registry/pods/")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in res.items] == [
        ("a", "x"),
        ("a", "y"),
        ("a2", "v"),
        ("ab", "w"),
        ("b", "z"),
    ]
    assert res.revision == await store.current_revision()
    assert res.continue_token is None


async def test_list_items_carry_their_own_mod_revision(store):
    a = await store.create(key("a"), pod("a"))
    b = await store.create(key("b"), pod("b"))
    a2 = await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
    res = await store.list("/registry/pods/default/")
    assert [rv(o) for o in res.items] == [rv(a2), rv(b)]
    assert rv(a) < rv(b) < rv(a2) == res.revision


async def test_pagination_reads_one_snapshot_across_concurrent_writes(store):
    for i in range(10):
        await store.create(key(f"p{i:02}"), pod(f"p{i:02}", gen=0))
    page = await store.list("/registry/pods/", limit=3)
    snapshot_rev = page.revision
    names = [o["metadata"]["name"] for o in page.items]
    assert names == ["p00", "p01", "p02"] and page.remaining_item_count == 7
    # Writes between pages: new keys, changes and deletes, in both the read and the unread parts.
    await store.create(key("p015"), pod("p015"))
    await store.create(key("p99"), pod("p99"))
    await store.guaranteed_update(key("p05"), lambda o: {**o, "spec": {"gen": 1}})
    await store.delete(key("p07"))
    await store.delete(key("p01"))
    pages = 1
    while page.continue_token:
        page = await store.list("/registry/pods/", limit=3, continue_token=page.continue_token)
        pages += 1
        assert page.revision == snapshot_rev
        names += [o["metadata"]["name"] for o in page.items]
        assert all(o["spec"] == {"gen": 0} for o in page.items)
        assert all(rv(o) <= snapshot_rev for o in page.items)
    assert names == [f"p{i:02}" for i in range(10)]
    assert pages == 4 and page.remaining_item_count is None


async def test_limit_equal_to_size_has_no_continue(store):
    for i in range(3):
        await store.create(key(f"p{i}"), pod(f"p{i}"))
    res = await store.list("/registry/pods/", limit=3)
    assert len(res.items) == 3 and res.continue_token is None


async def test_list_at_an_older_revision_shows_the_state_then(store):
    await store.create(key("a"), pod("a", v=1))
    r1 = await store.current_revision()
    await store.guaranteed_update(key("a"), lambda o: {**o, "spec": {"v": 2}})
    await store.create(key("b"), pod("b"))
    await store.delete(key("a"))
    await store.create(key("a"), pod("a", v=3))
    res = await store.list("/registry/pods/", revision=r1)
    assert res.revision == r1
    assert [(o["metadata"]["name"], o["spec"]) for o in res.items] == [("a", {"v": 1})]
    now = await store.list("/registry/pods/")
    assert [(o["metadata"]["name"], o["spec"]) for o in now.items] == [("a", {"v": 3}), ("b", {})]


async def test_list_at_a_compacted_revision_is_gone(store):
    await store.create(key("a"), pod("a"))
    old = await store.current_revision()
    await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
    await store.create(key("b"), pod("b"))
    await store.compact(await store.current_revision())
    with pytest.raises(GoneError):
        await store.list("/registry/pods/", revision=old)
    res = await store.list("/registry/pods/")
    assert len(res.items) == 2 and res.items[0]["x"] == 1


async def test_continue_token_is_gone_after_compaction(store):
    for i in range(4):
        await store.create(key(f"p{i}"), pod(f"p{i}"))
    page = await store.list("/registry/pods/", limit=2)
    await store.guaranteed_update(key("p3"), lambda o: {**o, "x": 1})
    await store.compact(await store.current_revision())
    with pytest.raises(GoneError, match="continue"):
        await store.list("/registry/pods/", limit=2, continue_token=page.continue_token)


async def test_list_in_the_future_is_too_large(store):
    await store.create(key("a"), pod("a"))
    with pytest.raises(TooLargeResourceVersionError):
        await store.list("/registry/pods/", revision=await store.current_revision() + 100)


async def test_count_counts_live_keys_under_a_directory(store):
    for i in range(5):
        await store.create(key(f"p{i}"), pod(f"p{i}"))
    await store.create(key("q", ns="other"), pod("q"))
    await store.delete(key("p0"))
    assert await store.count("/registry/pods/default") == 4
    assert await store.count("/registry/pods/") == 5
    assert await store.count("/registry/services/") == 0


# -- guaranteed_update ----------------------------------------------------------------------------------


async def test_noop_update_consumes_no_revision(store):
    created = await store.create(key("a"), pod("a", v=1))
    rev = await store.current_revision()
    out = await store.guaranteed_update(key("a"), lambda o: o)
    assert rv(out) == rv(created)
    assert await store.current_revision() == rev
    # Setting a field to the value it already has is a no-op too.
    out = await store.guaranteed_update(key("a"), lambda o: {**o, "spec": {"v": 1}})
    assert await store.current_revision() == rev and rv(out) == rev


async def test_update_missing_key_is_not_found_unless_ignore_not_found(store):
    with pytest.raises(KeyNotFoundError):
        await store.guaranteed_update(key("a"), lambda o: o)
    seen = []

    def create_if_absent(o):
        seen.append(o)
        return pod("a", made=True)

    out = await store.guaranteed_update(key("a"), create_if_absent, ignore_not_found=True)
    assert seen == [None] and out["spec"] == {"made": True}
    assert await store.get(key("a")) == out


async def test_update_preconditions(store):
    stale = (await store.create(key("a"), pod("a")))["metadata"]["resourceVersion"]
    await store.guaranteed_update(key("a"), lambda o: {**o, "y": 1})
    before = await snapshot(store)
    with pytest.raises(ConflictError, match="UID in precondition: other"):
        await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1}, preconditions=Preconditions(uid="other"))
    with pytest.raises(ConflictError, match=f"ResourceVersion in precondition: {stale},"):
        await store.guaranteed_update(
            key("a"), lambda o: {**o, "x": 1}, preconditions=Preconditions(resource_version=stale)
        )
    assert await snapshot(store) == before
    cur = await store.get(key("a"))
    out = await store.guaranteed_update(
        key("a"),
        lambda o: {**o, "x": 1},
        preconditions=Preconditions(uid="uid-a", resource_version=cur["metadata"]["resourceVersion"]),
    )
    assert out["x"] == 1


async def test_try_update_error_propagates_and_writes_nothing(store):
    await store.create(key("a"), pod("a"))
    before = await snapshot(store)

    def refuse(o):
        raise RuntimeError("admission says no")

    with pytest.raises(RuntimeError, match="admission says no"):
        await store.guaranteed_update(key("a"), refuse)
    assert await snapshot(store) == before


async def test_async_try_update_is_awaited(store):
    await store.create(key("a"), pod("a"))

    async def slow(o):
        await asyncio.sleep(0.01)
        return {**o, "late": True}

    assert (await store.guaranteed_update(key("a"), slow))["late"] is True


async def test_concurrent_updaters_lose_no_update(store):
    """32 workers increment one counter; conflicts are retried, and the count comes out exact."""
    await store.create(key("counter"), {"metadata": {"name": "counter"}, "n": 0})
    calls = 0
    successes = 0

    async def increment(o):
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)  # let the others read the same version: force conflicts
        return {**o, "n": o["n"] + 1}

    async def worker():
        nonlocal successes
        for _ in range(8):
            await store.guaranteed_update(key("counter"), increment)
            successes += 1

    await asyncio.gather(*(worker() for _ in range(32)))
    final = await store.get(key("counter"))
    assert successes == 256
    assert final["n"] == successes
    assert calls > successes, "the test must exercise conflicting writes"


async def test_update_retries_after_the_object_is_deleted_under_it(store):
    await store.create(key("a"), pod("a"))
    attempts = 0

    async def racing(o):
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await store.delete(key("a"))
        return {**o, "x": 1}

    with pytest.raises(KeyNotFoundError):
        await store.guaranteed_update(key("a"), racing)
    with pytest.raises(KeyNotFoundError):
        await store.get(key("a"))


async def test_update_with_a_current_cached_object_skips_the_read(store, monkeypatch):
    created = await store.create(key("a"), pod("a", v=1))
    reads = 0
    real_get = store.kv.get

    async def counting_get(k):
        nonlocal reads
        reads += 1
        return await real_get(k)

    monkeypatch.setattr(store.kv, "get", counting_get)
    out = await store.guaranteed_update(
        key("a"), lambda o: {**o, "spec": {"v": 2}}, cached_existing=copy.deepcopy(created)
    )
    assert reads == 0
    assert out["spec"] == {"v": 2} and rv(out) == rv(created) + 1
    assert await store.get(key("a")) == out


async def test_update_with_a_stale_cached_object_retries_on_the_current_state(store):
    stale = await store.create(key("a"), pod("a", n=0))
    await store.guaranteed_update(key("a"), lambda o: {**o, "spec": {"n": 5}})
    seen = []

    def inc(o):
        seen.append(o["spec"]["n"])
        return {**o, "spec": {"n": o["spec"]["n"] + 1}}

    out = await store.guaranteed_update(key("a"), inc, cached_existing=copy.deepcopy(stale))
    assert seen == [0, 5] and out["spec"] == {"n": 6}
    assert (await store.get(key("a")))["spec"] == {"n": 6}


async def test_stale_cached_object_failing_a_precondition_or_the_update_is_retried(store):
    stale = await store.create(key("a"), pod("a", n=0))
    cur = await store.guaranteed_update(key("a"), lambda o: {**o, "spec": {"n": 1}})
    out = await store.guaranteed_update(
        key("a"),
        lambda o: {**o, "spec": {"n": 2}},
        preconditions=Preconditions(resource_version=cur["metadata"]["resourceVersion"]),
        cached_existing=copy.deepcopy(stale),
    )
    assert out["spec"] == {"n": 2}

    def only_on_current(o):
        if o["metadata"]["resourceVersion"] != out["metadata"]["resourceVersion"]:
            raise ValueError("the object has been modified")
        return {**o, "spec": {"n": 3}}

    final = await store.guaranteed_update(key("a"), only_on_current, cached_existing=copy.deepcopy(stale))
    assert final["spec"] == {"n": 3}


async def test_unchanged_against_a_stale_cached_object_still_writes(store):
    stale = await store.create(key("a"), pod("a", v=1))
    await store.guaranteed_update(key("a"), lambda o: {**o, "spec": {"v": 2}})
    out = await store.guaranteed_update(
        key("a"), lambda o: {**o, "spec": {"v": 1}}, cached_existing=copy.deepcopy(stale)
    )
    assert out["spec"] == {"v": 1} and (await store.get(key("a")))["spec"] == {"v": 1}


async def test_cached_object_of_a_deleted_key_is_not_found(store):
    stale = await store.create(key("a"), pod("a"))
    await store.delete(key("a"))
    with pytest.raises(KeyNotFoundError):
        await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1}, cached_existing=stale)
    no_rv = pod("a")
    with pytest.raises(InvalidObjectError):
        await store.guaranteed_update(key("a"), lambda o: o, cached_existing=no_rv)


# -- delete ---------------------------------------------------------------------------------------------


async def test_delete_returns_last_state_and_removes(store):
    await store.create(key("a"), pod("a"))
    last = await store.guaranteed_update(key("a"), lambda o: {**o, "final": True})
    deleted = await store.delete(key("a"))
    assert deleted == last
    with pytest.raises(KeyNotFoundError):
        await store.get(key("a"))
    assert await store.current_revision() == rv(last) + 1
    with pytest.raises(KeyNotFoundError):
        await store.delete(key("a"))


async def test_delete_preconditions_and_validation(store):
    stale = (await store.create(key("a"), pod("a")))["metadata"]["resourceVersion"]
    await store.guaranteed_update(key("a"), lambda o: {**o, "y": 1})
    before = await snapshot(store)
    with pytest.raises(ConflictError):
        await store.delete(key("a"), preconditions=Preconditions(uid="someone-else"))
    with pytest.raises(ConflictError):
        await store.delete(key("a"), preconditions=Preconditions(resource_version=stale))

    def forbid(o):
        raise PermissionError("protected")

    with pytest.raises(PermissionError):
        await store.delete(key("a"), validate_deletion=forbid)
    assert await snapshot(store) == before
    await store.delete(key("a"), preconditions=Preconditions(uid="uid-a"))
    assert await store.count("/registry/pods/") == 0


async def test_recreate_after_delete(store):
    await store.create(key("a"), pod("a", v=1))
    await store.delete(key("a"))
    again = await store.create(key("a"), pod("a", v=2))
    assert (await store.get(key("a"))) == again


# -- watch ----------------------------------------------------------------------------------------------


async def test_watch_reports_changes_with_previous_values(store):
    start = await store.current_revision()
    async with await store.watch("/registry/pods/", start) as w:
        c = await store.create(key("a"), pod("a", v=1))
        u = await store.guaranteed_update(key("a"), lambda o: {**o, "spec": {"v": 2}})
        await store.create("/registry/services/default/a", {"metadata": {"name": "a"}})
        await store.delete(key("a"))
        e1, e2, e3 = [await next_event(w) for _ in range(3)]
    assert (e1.type, e1.revision, e1.object) == (ADDED, rv(c), c)
    assert e1.prev_object is None
    assert (e2.type, e2.object, e2.prev_object) == (MODIFIED, u, c)
    assert e3.type == DELETED and e3.revision == rv(u) + 2
    # A deleted object is reported in its last state, at the deletion's revision.
    assert e3.object["spec"] == {"v": 2} and rv(e3.object) == e3.revision
    assert e3.prev_object == u


async def test_watch_replays_history_from_an_older_revision(store):
    start = await store.current_revision()
    await store.create(key("a"), pod("a"))
    mid = await store.current_revision()
    await store.create(key("b"), pod("b"))
    await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
    async with await store.watch("/registry/pods/", start) as w:
        got = [(e.type, e.key) for e in [await next_event(w) for _ in range(3)]]
        await store.delete(key("b"))
        got.append(((e := await next_event(w)).type, e.key))
    assert got == [(ADDED, key("a")), (ADDED, key("b")), (MODIFIED, key("a")), (DELETED, key("b"))]
    async with await store.watch("/registry/pods/", mid) as w:
        assert (await next_event(w)).key == key("b")


async def test_watch_of_one_key_ignores_others(store):
    await store.create(key("a"), pod("a"))
    await store.create(key("ab"), pod("ab"))
    async with await store.watch(key("a"), await store.current_revision(), recursive=False) as w:
        await store.guaranteed_update(key("ab"), lambda o: {**o, "x": 1})
        await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
        e = await next_event(w)
    assert (e.type, e.key) == (MODIFIED, key("a"))


async def test_watch_does_not_see_a_sibling_directory(store):
    async with await store.watch("/registry/pods/default", await store.current_revision()) as w:
        await store.create(key("x", ns="default2"), pod("x"))
        await store.create(key("y", ns="default"), pod("y"))
        e = await next_event(w)
    assert e.key == key("y")


async def test_watch_from_now(store):
    await store.create(key("old"), pod("old"))
    async with await store.watch("/registry/pods/") as w:
        await store.create(key("new"), pod("new"))
        e = await next_event(w)
    assert e.key == key("new")


async def test_watch_from_a_compacted_revision_is_gone(store):
    await store.create(key("a"), pod("a"))
    old = await store.current_revision()
    for i in range(3):
        await store.guaranteed_update(key("a"), lambda o, i=i: {**o, "i": i})
    now = await store.current_revision()
    await store.compact(now)
    with pytest.raises(GoneError):
        await store.watch("/registry/pods/", old - 1)
    # At the compacted revision itself, watching still works.
    async with await store.watch("/registry/pods/", now) as w:
        await store.delete(key("a"))
        e = await next_event(w)
        assert e.type == DELETED and e.prev_object["i"] == 2


async def test_watch_in_the_future_is_refused(store):
    with pytest.raises(TooLargeResourceVersionError):
        await store.watch("/registry/pods/", await store.current_revision() + 10)


async def test_watch_progress_notifications_advance_an_idle_watcher(store):
    async with await store.watch("/registry/pods/", await store.current_revision(), progress_notify=True) as w:
        await store.create("/registry/configmaps/default/c", {"metadata": {"name": "c"}})
        rev = await store.current_revision()
        while True:
            e = await next_event(w, timeout=10)
            if e.type == BOOKMARK and e.revision >= rev:
                break
            assert e.type == BOOKMARK, "no event was expected under /registry/pods/"
    assert e.object["metadata"]["resourceVersion"] == str(e.revision)


async def test_no_progress_notifications_unless_asked(store):
    async with await store.watch("/registry/pods/", await store.current_revision()) as w:
        with pytest.raises(TimeoutError):
            await next_event(w, timeout=1.5)


async def test_stopped_watch_ends_iteration(store):
    w = await store.watch("/registry/pods/", await store.current_revision())
    await store.create(key("a"), pod("a"))
    await w.stop()
    with pytest.raises(StopAsyncIteration):
        await next_event(w)


async def test_many_watchers_see_the_same_stream(store):
    start = await store.current_revision()
    watchers = [await store.watch("/registry/pods/", start) for _ in range(5)]
    for i in range(20):
        await store.create(key(f"p{i}"), pod(f"p{i}"))
    for w in watchers:
        got = [(await next_event(w)).key for _ in range(20)]
        assert got == [key(f"p{i}") for i in range(20)]
        await w.stop()


# -- compaction -----------------------------------------------------------------------------------------


async def test_compaction_keeps_current_state_and_later_history(store):
    await store.create(key("a"), pod("a"))
    await store.create(key("b"), pod("b"))
    await store.delete(key("b"))
    await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
    mark = await store.current_revision()
    await store.guaranteed_update(key("a"), lambda o: {**o, "x": 2})
    await store.create(key("c"), pod("c"))
    await store.compact(mark)
    assert [o["metadata"]["name"] for o in (await store.list("/registry/pods/", revision=mark)).items] == ["a"]
    assert (await store.get(key("a")))["x"] == 2
    async with await store.watch("/registry/pods/", mark) as w:
        e1, e2 = await next_event(w), await next_event(w)
    assert (e1.type, e1.prev_object["x"], e1.object["x"]) == (MODIFIED, 1, 2)
    assert (e2.type, e2.key) == (ADDED, key("c"))
    # Compacting again at or below the compacted revision is harmless.
    await store.compact(mark)
    await store.compact(mark - 1)


async def test_compactor_keeps_one_interval_of_history(store):
    compactor = Compactor(store.kv, interval=3600)
    await store.create(key("a"), pod("a"))
    await store.create(key("b"), pod("b"))
    first = await store.current_revision()
    await compactor.tick()  # records the revision now, compacts nothing yet
    assert compactor.compacted_revision == 0
    await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
    await store.list("/registry/pods/", revision=first - 1)
    await compactor.tick()  # compacts to what the first round recorded
    # etcd's lease write (compact_rev_key) takes a revision of its own, as upstream's does.
    assert first <= compactor.compacted_revision <= first + 1
    with pytest.raises(GoneError):
        await store.list("/registry/pods/", revision=first - 1)
    assert len((await store.list("/registry/pods/", revision=compactor.compacted_revision)).items) == 2


async def test_two_compactors_share_the_lease(request):
    """Two API servers on one etcd: only one of them compacts per interval."""
    async with open_store("etcd", request.getfixturevalue("etcd_server")) as store:
        c1, c2 = Compactor(store.kv, interval=3600), Compactor(store.kv, interval=3600)
        await store.create(key("a"), pod("a"))
        await c1.tick()
        await c2.tick()
        await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
        await c1.tick()
        await c2.tick()
        assert (c1.compacted_revision > 0) != (c2.compacted_revision > 0)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_automatic_compaction_runs_in_the_background(request, backend):
    etcd = request.getfixturevalue("etcd_server") if backend == "etcd" else None
    async with open_store(backend, etcd, compaction_interval=0.3) as store:
        await store.create(key("a"), pod("a"))
        old = await store.current_revision()
        await store.guaranteed_update(key("a"), lambda o: {**o, "x": 1})
        await store.list("/registry/pods/", revision=old)
        # The first round records a revision, the second compacts to it.
        await asyncio.sleep(0.3 * 3.5)
        with pytest.raises(GoneError):
            await store.list("/registry/pods/", revision=old)
        assert (await store.get(key("a")))["x"] == 1


# -- bad input ------------------------------------------------------------------------------------------

BAD_KEYS = [
    "",
    "/",
    "pods/default/a",
    "/other/pods/default/a",
    "/registry",
    "/registry/",
    "/registry/pods/../secrets/x",
    "/registry/pods/./x",
    "/registry/pods//x",
    "/registry/pods/default/a/",
    "/registry/pods/default/a\x00b",
    "/registry/pods/default/" + "x" * 4000,
    None,
    b"/registry/pods/default/a",
]


@pytest.mark.parametrize("bad", BAD_KEYS, ids=repr)
async def test_invalid_keys_are_refused_and_change_nothing(store, bad):
    await store.create(key("a"), pod("a"))
    before = await snapshot(store)
    with pytest.raises(InvalidKeyError):
        await store.create(bad, pod("x"))
    with pytest.raises(InvalidKeyError):
        await store.guaranteed_update(bad, lambda o: pod("x"), ignore_not_found=True)
    with pytest.raises(InvalidKeyError):
        await store.delete(bad)
    with pytest.raises(InvalidKeyError):
        await store.get(bad)
    assert await snapshot(store) == before


@pytest.mark.parametrize("bad", ["", "pods/", "/other/", "/registry/../", "/registry//pods/", None])
async def test_invalid_list_and_watch_prefixes_are_refused(store, bad):
    with pytest.raises(InvalidKeyError):
        await store.list(bad)
    with pytest.raises(InvalidKeyError):
        await store.watch(bad)


BAD_VALUES = [
    b'{"metadata": {}}',
    '{"metadata": {}}',
    ["not", "an", "object"],
    42,
    None,
    {"metadata": "not-an-object"},
    {"metadata": {"name": "a"}, "spec": {1, 2}},
    {"metadata": {"name": "a"}, "spec": {1: "int key"}},
    {"metadata": {"name": "a"}, "spec": {"n": 2**70}},
    {"metadata": {"name": "a"}, "spec": object()},
]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=repr)
async def test_non_json_values_are_refused_and_change_nothing(store, bad):
    await store.create(key("a"), pod("a"))
    before = await snapshot(store)
    with pytest.raises(InvalidObjectError):
        await store.create(key("b"), bad)
    with pytest.raises(InvalidObjectError):
        await store.guaranteed_update(key("a"), lambda o: bad)
    assert await snapshot(store) == before


def _token(body: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(body)).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "token",
    [
        "!!!not-base64!!!",
        _token("a string"),
        base64.urlsafe_b64encode(b"not json").decode(),
        _token({"v": "meta.k8s.io/v2", "rv": 1, "start": "a"}),
        _token({"v": "meta.k8s.io/v1", "rv": -1, "start": "a"}),
        _token({"v": "meta.k8s.io/v1", "rv": "1", "start": "a"}),
        _token({"v": "meta.k8s.io/v1", "rv": 1, "start": ""}),
        _token({"v": "meta.k8s.io/v1", "rv": 1, "start": "../secrets/x"}),
        _token({"v": "meta.k8s.io/v1", "rv": 1, "start": "default/../../secrets/x"}),
    ],
)
async def test_invalid_continue_tokens_are_refused(store, token):
    await store.create(key("a"), pod("a"))
    with pytest.raises(InvalidContinueError):
        await store.list("/registry/pods/", limit=1, continue_token=token)


async def test_continue_token_cannot_be_used_with_a_revision(store):
    for i in range(3):
        await store.create(key(f"p{i}"), pod(f"p{i}"))
    page = await store.list("/registry/pods/", limit=1)
    with pytest.raises(InvalidContinueError):
        await store.list("/registry/pods/", limit=1, continue_token=page.continue_token, revision=page.revision)


@pytest.mark.parametrize("bad", [-1, "5", 1.5, True])
async def test_invalid_revisions_are_refused(store, bad):
    with pytest.raises(InvalidRevisionError):
        await store.list("/registry/pods/", revision=bad)
    with pytest.raises(InvalidRevisionError):
        await store.watch("/registry/pods/", bad)


async def test_request_progress_gets_a_bookmark_at_the_current_revision(store):
    async with await store.watch("/registry/pods/", await store.current_revision()) as w:
        await store.create("/registry/configmaps/default/c", {"metadata": {"name": "c"}})
        rev = await store.current_revision()
        await w.request_progress()
        e = await next_event(w)
    assert e.type == BOOKMARK and e.revision >= rev
