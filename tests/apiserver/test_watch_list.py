"""Streaming lists (WatchList): a watch with `sendInitialEvents=true` sends the current state as ADDED events, a
bookmark annotated `k8s.io/initial-events-end`, then the changes, as client-go 1.32 programs ask for it; the
option rules are upstream's ValidateListOptions; and our own Reflector syncs through it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from pyk8s.client.cache.reflector import Reflector
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import until


def stream(server: APIServerProcess, path: str) -> tuple[int, list[dict[str, Any]]]:
    """A watch's status and its events (the whole stream, read until the watch times out)."""
    status, _, body = server.raw_request("GET", path)
    return status, [json.loads(line) for line in body.splitlines() if line.strip()]


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {"wl": "1"}}}


WATCH_LIST = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"


def test_a_watch_list_sends_the_state_then_the_end_bookmark_then_changes(cluster, ns):
    created = [cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm(n))[1] for n in ("c", "a", "b")]
    newest = max(int(o["metadata"]["resourceVersion"]) for o in created)
    got: dict[str, Any] = {}

    def watch() -> None:
        got["status"], got["events"] = stream(
            cluster, f"/api/v1/namespaces/{ns}/configmaps?{WATCH_LIST}&labelSelector=wl%3D1&timeoutSeconds=3"
        )

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(1.0)
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm("d"))
    t.join(30)
    events = got["events"]
    assert got["status"] == 200
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
        ("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"), ("BOOKMARK", None), ("ADDED", "d"),
    ]  # fmt: skip
    bookmark = events[3]["object"]
    assert bookmark["kind"] == "ConfigMap" and bookmark["apiVersion"] == "v1"
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= newest  # a consistent state: nothing older than ours
    assert int(events[4]["object"]["metadata"]["resourceVersion"]) > int(bookmark["metadata"]["resourceVersion"])


def test_without_initial_events_only_changes_arrive(cluster, ns):
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm("old"))
    got: dict[str, Any] = {}

    def watch() -> None:
        got["status"], got["events"] = stream(
            cluster, f"/api/v1/namespaces/{ns}/configmaps?watch=1&sendInitialEvents=false"
            "&resourceVersionMatch=NotOlderThan&timeoutSeconds=2",
        )  # fmt: skip

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(1.0)
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm("new"))
    t.join(30)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got["events"]] == [("ADDED", "new")]


@pytest.mark.parametrize(
    "query, messages",
    [
        ("watch=1&sendInitialEvents=true",
         ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]),
        ("watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1",
         ["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
          "provided"]),
        ("watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1",
         ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
          'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"']),
        ("sendInitialEvents=true", ["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"]),
        ("sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=1",
         ["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"]),
    ],
)  # fmt: skip
def test_option_rules_are_upstreams(cluster, ns, query, messages):
    status, body = cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps?{query}")
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]] == messages


class _Store:
    def __init__(self) -> None:
        self.items: dict[str, Any] = {}
        self.synced_rv = ""

    def add(self, obj: Any) -> None:
        self.items[obj["metadata"]["name"]] = obj

    update = add

    def delete(self, obj: Any) -> None:
        self.items.pop(obj["metadata"]["name"], None)

    def replace(self, objs: list[Any], resource_version: str) -> None:
        self.items = {o["metadata"]["name"]: o for o in objs}
        self.synced_rv = resource_version

    def resync(self) -> None:
        pass

    async def synced(self) -> bool:
        return bool(self.synced_rv)

    async def has(self, name: str) -> bool:
        return name in self.items


async def test_our_reflector_syncs_through_a_watch_list(cluster, ns):
    for n in ("x", "y"):
        cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm(n))
    async with RESTClient(load_kubeconfig(str(cluster.kubeconfig)).with_options(qps=-1)) as client:
        store = _Store()
        r = Reflector(client, "configmaps", store, namespace=ns)
        task = asyncio.create_task(r.run())
        try:
            await until("the store synced", store.synced)
            assert set(store.items) == {"x", "y"} and (r.watch_lists, r.lists) == (1, 0)
            assert all(o["kind"] == "ConfigMap" for o in store.items.values())
            # The same stream goes on as a watch.
            await client.create("configmaps", cm("z"), ns)
            await until("the new object in the store", lambda: store.has("z"))
            assert set(store.items) == {"x", "y", "z"} and r.watch_lists == 1
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_reflector_lists_when_the_server_refuses_watch_lists(cluster, ns):
    # A server that answers a WatchList with a 4xx (as one without the feature does) gets list-and-watch.
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm("only"))
    async with RESTClient(load_kubeconfig(str(cluster.kubeconfig)).with_options(qps=-1)) as client:
        store = _Store()
        r = Reflector(client, "configmaps", store, namespace=ns)
        original = client.watch

        def refusing_watch(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("send_initial_events"):
                # A request this server really refuses (422), as a server without WatchList refuses any.
                kwargs["resource_version_match"] = "Exact"
            return original(*args, **kwargs)

        client.watch = refusing_watch  # type: ignore[method-assign]
        task = asyncio.create_task(r.run())
        try:
            await until("the store synced", store.synced)
            assert set(store.items) == {"only"} and (r.watch_lists, r.lists, r.watch_list) == (0, 1, False)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
