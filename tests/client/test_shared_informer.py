"""SharedIndexInformer and SharedInformerFactory against a real API server: handlers, late handlers, resync,
selectors, listers, and sharing."""

from __future__ import annotations

import asyncio

from pyk8s.client.cache import SharedInformerFactory


def cm(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {}}


async def eventually(check, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_handlers_see_adds_updates_deletes_in_order(client, ns):
    await client.create("configmaps", cm("before"), ns)
    factory = SharedInformerFactory(client, namespace=ns)
    gi = factory.for_resource("configmaps")
    assert factory.for_resource("cm") is gi  # one informer per resource, whatever name it was asked by
    log: list[tuple] = []
    gi.informer.add_event_handler(
        on_add=lambda o, initial: log.append(("add", o["metadata"]["name"], initial)),
        on_update=lambda old, new: log.append(("update", new["metadata"]["name"], old.get("data"), new["data"])),
        on_delete=lambda o: log.append(("delete", o["metadata"]["name"])),
    )

    async def async_handler(obj, _initial):  # coroutine handlers are awaited in order
        await asyncio.sleep(0)
        log.append(("async-add", obj["metadata"]["name"]))

    gi.informer.add_event_handler(on_add=async_handler)
    factory.start()
    assert await factory.wait_for_cache_sync(timeout=20) == {"configmaps": True}
    await client.create("configmaps", cm("after"), ns)
    await client.patch("configmaps", "after", {"data": {"k": "v"}}, ns)
    await client.delete("configmaps", "before", ns)
    await eventually(lambda: ("delete", "before") in log)
    # A list at resourceVersion "0" may come from a cache a moment behind the write, so whether "before"
    # arrives in the initial list or as a watch event is the server's choice; its order is not.
    sync_log = [e[:2] if e[1] == "before" and e[0] == "add" else e for e in log if not e[0].startswith("async")]
    assert sync_log == [
        ("add", "before"),
        ("add", "after", False),
        # an empty map is left out, as Go's omitempty does: the ConfigMap was created without data
        ("update", "after", None, {"k": "v"}),
        ("delete", "before"),
    ]
    await eventually(
        lambda: [e for e in log if e[0] == "async-add"] == [("async-add", "before"), ("async-add", "after")]
    )
    # Items from a list carry their kind, as watch events do.
    assert gi.lister.by_namespace(ns).get("after")["kind"] == "ConfigMap"
    await factory.shutdown()


async def test_late_handler_gets_current_state_and_syncs(client, ns):
    for i in range(5):
        await client.create("configmaps", cm(f"c{i}"), ns)
    factory = SharedInformerFactory(client, namespace=ns)
    informer = factory.informer_for("configmaps")
    factory.start()
    await factory.wait_for_cache_sync(timeout=20)
    seen: list[tuple[str, bool]] = []
    reg = informer.add_event_handler(on_add=lambda o, initial: seen.append((o["metadata"]["name"], initial)))
    await eventually(reg.has_synced)
    assert sorted(seen) == [(f"c{i}", True) for i in range(5)]
    await factory.shutdown()


async def test_resync_redelivers_held_objects_to_handlers_that_ask(client, ns):
    await client.create("configmaps", cm("r"), ns)
    factory = SharedInformerFactory(client, namespace=ns)
    informer = factory.informer_for("configmaps")
    resyncs: list[str] = []
    quiet: list[str] = []
    informer.add_event_handler(on_update=lambda old, new: resyncs.append(new["metadata"]["name"]), resync_period=1.0)
    informer.add_event_handler(on_update=lambda old, new: quiet.append(new["metadata"]["name"]))
    factory.start()
    await eventually(lambda: len(resyncs) >= 2, timeout=30)
    # A resync is an update with an unchanged object, and only for the handler that asked.
    assert set(resyncs) == {"r"} and quiet == []
    await factory.shutdown()


async def test_selector_informer_and_lister(client, ns):
    factory = SharedInformerFactory(client, namespace=ns)
    gi = factory.for_resource("configmaps", label_selector="tier=web")
    all_cms = factory.for_resource("configmaps")
    assert gi is not all_cms  # another selector set is another informer
    log: list[tuple[str, str]] = []
    gi.informer.add_event_handler(
        on_add=lambda o, _: log.append(("add", o["metadata"]["name"])),
        on_delete=lambda o: log.append(("delete", o["metadata"]["name"])),
    )
    factory.start()
    await factory.wait_for_cache_sync(timeout=20)
    await client.create("configmaps", cm("w", tier="web"), ns)
    await client.create("configmaps", cm("d", tier="db"), ns)
    await eventually(lambda: all_cms.lister.by_namespace(ns).get("d") is not None and ("add", "w") in log)
    assert [o["metadata"]["name"] for o in gi.lister.list()] == ["w"]
    assert [o["metadata"]["name"] for o in all_cms.lister.by_namespace(ns).list("tier in (db)")] == ["d"]
    # Leaving the selector looks like a delete to this informer; entering it like an add.
    await client.patch("configmaps", "w", {"metadata": {"labels": {"tier": "db"}}}, ns)
    await client.patch("configmaps", "d", {"metadata": {"labels": {"tier": "web"}}}, ns)
    await eventually(lambda: ("add", "d") in log)
    assert log == [("add", "w"), ("delete", "w"), ("add", "d")]
    assert [o["metadata"]["name"] for o in gi.lister.list()] == ["d"]
    await factory.shutdown()
