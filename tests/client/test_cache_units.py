"""The informer's parts without a server: Indexer, DeltaFIFO, and a property test that the informer's store
and its handlers' view end equal to the truth whatever mix of watch events and relists delivers it."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.client.cache import DeletedFinalStateUnknown, DeltaFIFO, DeltaType, Indexer, SharedIndexInformer
from pyk8s.client.kubeconfig import ClientConfig
from pyk8s.client.rest import RESTClient


def pod(name: str, rv: int, ns: str = "default", **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv), "labels": labels}}


def by_app(obj: dict) -> list[str]:
    app = obj["metadata"]["labels"].get("app")
    return [app] if app else []


def test_indexer_indexes_follow_updates_and_deletes():
    idx = Indexer({"app": by_app})
    idx.add(pod("a", 1, app="web"))
    idx.add(pod("b", 2, app="web"))
    idx.add(pod("c", 3, ns="other", app="db"))
    assert sorted(o["metadata"]["name"] for o in idx.by_index("app", "web")) == ["a", "b"]
    assert [o["metadata"]["name"] for o in idx.by_index("namespace", "other")] == ["c"]
    idx.update(pod("b", 4, app="db"))
    assert [o["metadata"]["name"] for o in idx.by_index("app", "web")] == ["a"]
    assert sorted(idx.index_keys("app", "db")) == ["default/b", "other/c"]
    idx.delete(pod("a", 5))
    assert idx.by_index("app", "web") == []
    assert "web" not in idx.list_index_func_values("app")
    idx.replace([pod("z", 9, app="web")])
    assert idx.list_keys() == ["default/z"] and idx.index_keys("app", "web") == ["default/z"]
    # An index added later files what is already there.
    idx.add_indexers({"rv": lambda o: [o["metadata"]["resourceVersion"]]})
    assert idx.index_keys("rv", "9") == ["default/z"]
    with pytest.raises(KeyError):
        idx.by_index("nope", "x")


def test_derived_answers_are_worked_out_once_per_object_held_and_forgotten_with_it():
    idx = Indexer()
    calls: list[str] = []

    def rv_of(obj: dict) -> str:
        calls.append(obj["metadata"]["resourceVersion"])
        return obj["metadata"]["resourceVersion"]

    get = idx.derived("rv", rv_of)
    a1 = pod("a", 1)
    idx.add(a1)
    assert get(a1) == "1" and get(a1) == "1" and calls == ["1"]
    a2 = pod("a", 2)
    idx.update(a2)  # the old version's answer goes with it
    assert get(a2) == "2" and calls == ["1", "2"] and len(idx._derived["rv"][1]) == 1
    # An object the indexer does not hold (an old version, a tombstone's) is answered afresh every time.
    assert get(a1) == "1" and get(a1) == "1" and calls == ["1", "2", "1", "1"]
    idx.delete(a2)
    assert not idx._derived["rv"][1]
    b = pod("b", 3)
    idx.replace([b])
    assert get(b) == "3" and get(b) == "3" and calls[-1:] == ["3"] and calls.count("3") == 1
    idx.replace([])
    assert not idx._derived["rv"][1]
    # One name, one function: a second caller shares the answers.
    assert idx.derived("rv", rv_of) is not None
    with pytest.raises(ValueError):
        idx.derived("rv", lambda o: "other")


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["add", "update", "delete", "replace"]),
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from(["web", "db", ""]),
            st.booleans(),
        ),
        max_size=40,
    )
)
def test_a_tally_always_counts_what_the_indexer_holds(ops):
    idx = Indexer()
    group = lambda o: o["metadata"]["labels"].get("app") or None  # noqa: E731
    kind = lambda o: o["metadata"]["labels"].get("ready") == "yes"  # noqa: E731
    idx.add_tally("t", group, kind)
    rv = 0
    for op, name, app, ready in ops:
        rv += 1
        obj = pod(name, rv, **({"app": app} if app else {}), ready="yes" if ready else "no")
        if op == "delete":
            idx.delete(obj)
        elif op == "replace":
            idx.replace([obj, pod("z", rv, app="web", ready="yes")])
        else:
            idx.update(obj)
        want: dict = {}
        for held in idx.list():
            g = group(held)
            if g is not None:
                want.setdefault(g, {}).setdefault(kind(held), 0)
                want[g][kind(held)] += 1
        assert {g: dict(idx.tally("t", g)) for g in ("web", "db")} == {g: want.get(g, {}) for g in ("web", "db")}
    # A tally added later counts what is already held.
    idx.add_tally("late", group, kind)
    assert all(dict(idx.tally("late", g)) == dict(idx.tally("t", g)) for g in ("web", "db"))


async def drain(fifo: DeltaFIFO) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []

    def record(deltas, _initial):
        out.append(
            (
                fifo.key_of(deltas[0]),
                [
                    (
                        d.type.value,
                        "tombstone"
                        if isinstance(d.object, DeletedFinalStateUnknown)
                        else d.object["metadata"]["resourceVersion"],
                    )
                    for d in deltas
                ],
            )
        )

    while len(fifo):
        await fifo.pop(record)
    return out


async def test_delta_fifo_queues_each_key_once_in_first_change_order():
    fifo = DeltaFIFO()
    fifo.add(pod("a", 1))
    fifo.add(pod("b", 2))
    fifo.update(pod("a", 3))
    assert await drain(fifo) == [("default/a", [("Added", "1"), ("Updated", "3")]), ("default/b", [("Added", "2")])]


async def test_delta_fifo_collapses_double_delete_keeping_known_state():
    known = Indexer()
    known.add(pod("a", 1))
    fifo = DeltaFIFO(known_objects=known)
    fifo.delete(pod("a", 2))
    fifo.replace([], "3")  # the relist also finds it gone: the tombstone merges into the real delete
    assert await drain(fifo) == [("default/a", [("Deleted", "2")])]
    # A delete of something never known and not queued is not news.
    fifo.delete(pod("ghost", 4))
    assert len(fifo) == 0


async def test_delta_fifo_replace_tombstones_known_and_queued_objects():
    known = Indexer()
    known.add(pod("kept", 1))
    known.add(pod("gone", 2))
    fifo = DeltaFIFO(known_objects=known)
    fifo.add(pod("queued", 3))  # queued, never reached the indexer, absent from the relist
    fifo.replace([pod("kept", 5), pod("new", 6)], "6")
    got = dict(await drain(fifo))
    assert got["default/kept"] == [("Replaced", "5")]
    assert got["default/new"] == [("Replaced", "6")]
    assert got["default/gone"] == [("Deleted", "tombstone")]
    assert got["default/queued"] == [("Added", "3"), ("Deleted", "tombstone")]


async def test_delta_fifo_has_synced_after_first_list_is_popped():
    fifo = DeltaFIFO(known_objects=Indexer())
    assert not fifo.has_synced()
    fifo.replace([pod("a", 1), pod("b", 2)], "2")
    flags = []
    await fifo.pop(lambda d, initial: flags.append((initial, fifo.has_synced())))
    assert not fifo.has_synced()
    await fifo.pop(lambda d, initial: flags.append((initial, fifo.has_synced())))
    assert fifo.has_synced()
    assert flags == [(True, False), (True, False)]
    fifo.add(pod("c", 3))
    await fifo.pop(lambda d, initial: flags.append((initial, fifo.has_synced())))
    assert flags[-1] == (False, True)


async def test_delta_fifo_resync_and_transform():
    known = Indexer()
    known.add(pod("a", 1))
    known.add(pod("b", 2))

    def strip(obj):
        obj = dict(obj)
        obj["stripped"] = True
        return obj

    fifo = DeltaFIFO(known_objects=known, transformer=strip)
    fifo.update(pod("a", 3))
    fifo.resync()  # b gets a Sync; a already has something queued
    seen = {}

    def record(deltas, _):
        seen[fifo.key_of(deltas[0])] = [(d.type, d.object.get("stripped")) for d in deltas]

    while len(fifo):
        await fifo.pop(record)
    assert seen == {"default/a": [(DeltaType.UPDATED, True)], "default/b": [(DeltaType.SYNC, True)]}


async def test_pop_waits_and_close_ends_it():
    fifo = DeltaFIFO()
    got = []
    popper = asyncio.create_task(fifo.pop(lambda d, _: got.append(d)))
    await asyncio.sleep(0.01)
    assert not popper.done()
    fifo.add(pod("a", 1))
    await popper
    assert len(got) == 1
    fifo.close()
    with pytest.raises(Exception, match="closed"):
        await fifo.pop(lambda d, _: None)


# -- the property: any interleaving of watch events and relists leaves store and handlers equal to the truth


ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 5)),  # create or update object k
        st.tuples(st.just("delete"), st.integers(0, 5)),
        st.tuples(st.just("lose"), st.integers(1, 4)),  # the watch misses the next n changes
        st.tuples(st.just("relist"), st.just(0)),
        st.tuples(st.just("pop"), st.integers(1, 4)),  # the informer drains some keys meanwhile
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_informer_converges_to_truth(script):
    asyncio.run(_converges(script))


async def _converges(script):
    client = RESTClient(ClientConfig(server="http://127.0.0.1:1"))
    informer = SharedIndexInformer(client, "pods")
    informer.fifo = fifo = DeltaFIFO(known_objects=informer.indexer)
    view: dict[str, str] = {}
    problems: list[str] = []

    def on_add(obj, _initial):
        key = f"default/{obj['metadata']['name']}"
        if key in view:
            problems.append(f"add of present {key}")
        view[key] = obj["metadata"]["resourceVersion"]

    def on_update(old, new):
        key = f"default/{new['metadata']['name']}"
        if view.get(key) != old["metadata"]["resourceVersion"]:
            problems.append(
                f"update of {key} from {old['metadata']['resourceVersion']} but handler had {view.get(key)}"
            )
        if int(new["metadata"]["resourceVersion"]) < int(old["metadata"]["resourceVersion"]):
            problems.append(f"{key} went back in time")
        view[key] = new["metadata"]["resourceVersion"]

    def on_delete(obj):
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else f"default/{obj['metadata']['name']}"
        if view.pop(key, None) is None:
            problems.append(f"delete of absent {key}")

    informer.add_event_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)
    listener = informer._listeners[0]
    truth: dict[str, dict] = {}
    rv = 0
    lost = 0

    async def pump():
        # Deliver what the listener has buffered, in order, as its task would.
        while listener._buffer:
            note = listener._buffer.popleft()
            {
                "add": lambda n: on_add(n[1], n[2]),
                "update": lambda n: on_update(n[1], n[2]),
                "delete": lambda n: on_delete(n[1]),
            }[note[0]](note)

    fifo.replace([], "0")
    for op, arg in script:
        if op in ("write", "delete"):
            name = f"p{arg}"
            rv += 1
            if op == "write":
                existed = name in truth
                truth[name] = pod(name, rv)
                if lost:
                    lost -= 1
                else:
                    (fifo.update if existed else fifo.add)(truth[name])
            elif name in truth:
                gone = truth.pop(name)
                gone = pod(name, rv)
                if lost:
                    lost -= 1
                else:
                    fifo.delete(gone)
        elif op == "lose":
            lost = arg
        elif op == "relist":
            fifo.replace(list(truth.values()), str(rv))
            lost = 0
        else:
            for _ in range(min(arg, len(fifo))):
                await fifo.pop(informer._handle_deltas)
            await pump()
    # Whatever the watch missed, a final relist (what a 410 leads to) restores the truth.
    fifo.replace(list(truth.values()), str(rv))
    while len(fifo):
        await fifo.pop(informer._handle_deltas)
    await pump()
    expected = {f"default/{n}": o["metadata"]["resourceVersion"] for n, o in truth.items()}
    assert {
        k: o["metadata"]["resourceVersion"]
        for k, o in ((informer.indexer.key_func(o), o) for o in informer.indexer.list())
    } == expected
    assert view == expected
    assert problems == []
