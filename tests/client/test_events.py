"""pyk8s.client.events against a real API server: events.k8s.io series, the core/v1 correlator (dedup, spam
filter, aggregation), a recorder that never blocks or raises, and the events showing up where
`kubectl describe` looks for them."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid

import pytest

from pyk8s.api.errors import BadRequest
from pyk8s.client.event_correlator import AGGREGATE_MESSAGE_PREFIX, EventCorrelator
from pyk8s.client.event_recorder import truncate_note
from pyk8s.client.events import EventBroadcaster
from pyk8s.client.rest import RESTClient
from pyk8s.testing.etcd import free_port

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
CONTROLLER = "pyk8s.io/test-controller"


def pod(ns: str, name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()), "resourceVersion": "7"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


async def events_about(client: RESTClient, ns: str, name: str, resource: str = "events") -> list[dict]:
    """The Events about object `name`, found as `kubectl describe` finds them (core API, field selector)."""
    got = await client.list(resource, ns, field_selector=f"involvedObject.name={name}")
    return got["items"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- events.k8s.io ----------------------------------------------------------------------------------------


async def test_identical_events_become_one_series(client, ns):
    b = EventBroadcaster(client)
    b.start()
    rec = b.new_recorder(CONTROLLER, "test-1")
    obj = pod(ns, "web-1")
    for _ in range(100):
        rec.eventf(obj, None, "Normal", "Pulled", "Pulling", "image %s pulled", "nginx")
    await b.drain()
    # As upstream: the first is created, the first repeat patches series.count 2 onto it, and later repeats
    # are only counted in the broadcaster until a heartbeat (30 min), the finishing pass or shutdown.
    (ev,) = await events_about(client, ns, "web-1", "events.events.k8s.io")
    assert ev["series"]["count"] == 2
    await b.shutdown()

    (ev,) = await events_about(client, ns, "web-1", "events.events.k8s.io")
    assert ev["series"]["count"] == 100
    assert MICRO_TIME.match(ev["series"]["lastObservedTime"]) and MICRO_TIME.match(ev["eventTime"])
    assert re.fullmatch(r"web-1\.[0-9a-f]+", ev["metadata"]["name"])
    assert ev["metadata"]["namespace"] == ns
    assert (ev["type"], ev["reason"], ev["action"], ev["note"]) == ("Normal", "Pulled", "Pulling", "image nginx pulled")
    assert (ev["reportingController"], ev["reportingInstance"]) == (CONTROLLER, "test-1")
    meta = obj["metadata"]
    assert ev["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": ns,
        "name": "web-1",
        "uid": meta["uid"],
        "resourceVersion": "7",
    }
    assert "related" not in ev


async def test_series_heartbeat_and_finish(client, ns):
    b = EventBroadcaster(client, refresh_time=0.3, finish_time=1.0)
    b.start()
    rec = b.new_recorder(CONTROLLER, "test-1")
    obj, node = pod(ns, "web-2"), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-n1"}}
    for _ in range(5):
        rec.eventf(obj, node, "Warning", "FailedMount", "Mounting", "volume missing")
    # The heartbeat writes the locally counted repeats.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        items = await events_about(client, ns, "web-2", "events.events.k8s.io")
        if items and (items[0].get("series") or {}).get("count") == 5:
            break
        await asyncio.sleep(0.1)
    (ev,) = items
    assert ev["series"]["count"] == 5
    assert ev["related"] == {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u-n1"}
    # With no repeat for finish_time the series is finished and forgotten: the next one starts a new Event.
    await asyncio.sleep(2.0)
    rec.eventf(obj, node, "Warning", "FailedMount", "Mounting", "volume missing")
    await b.shutdown()
    items = sorted(await events_about(client, ns, "web-2", "events.events.k8s.io"), key=lambda e: e["eventTime"])
    assert [(e.get("series") or {}).get("count") for e in items] == [5, None]


async def test_events_k8s_io_keep_up_with_bursts(client, ns):
    # The scheduler records one Scheduled event per pod, thousands a second. As upstream (a goroutine per
    # write), the broadcaster empties its queue as fast as events come and writes them concurrently, so bursts
    # of a full queue each, one per turn of the event loop, lose nothing while the API server keeps up.
    b = EventBroadcaster(client, max_concurrent_writes=8)
    b.start()
    rec = b.new_recorder(CONTROLLER, "test-1")
    in_flight = peak = 0
    create = client.create

    async def counting_create(*args, **kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await create(*args, **kwargs)
        finally:
            in_flight -= 1

    client.create = counting_create  # type: ignore[method-assign]
    n, burst = 2000, 1000
    for start in range(0, n, burst):
        for i in range(start, start + burst):
            rec.eventf(pod(ns, f"burst-{i}"), None, "Normal", "Scheduled", "Binding", "assigned to node-%d", i % 7)
        await asyncio.sleep(0)
    await b.drain()
    assert b.dropped == 0
    assert peak == 8  # concurrent, and no more than the bound
    got = await client.list("events.events.k8s.io", ns)
    assert len(got["items"]) == n
    assert {e["regarding"]["name"] for e in got["items"]} == {f"burst-{i}" for i in range(n)}
    await b.shutdown()


async def test_events_k8s_io_different_reasons_and_long_notes(client, ns):
    async with EventBroadcaster(client) as b:
        rec = b.new_recorder(CONTROLLER)
        obj = pod(ns, "web-3")
        for reason in ("Scheduled", "Pulled", "Scheduled", "Pulled", "Started"):
            rec.eventf(obj, None, "Normal", reason, "Binding", "note for %s", reason)
        # Same reason, another action: not isomorphic either.
        rec.eventf(obj, None, "Normal", "Started", "Starting", "x" * 3000)
    items = await events_about(client, ns, "web-3", "events.events.k8s.io")
    by = {(e["reason"], e["action"]): e for e in items}
    assert len(items) == 4 and set(by) == {
        ("Scheduled", "Binding"),
        ("Pulled", "Binding"),
        ("Started", "Binding"),
        ("Started", "Starting"),
    }
    assert by["Scheduled", "Binding"]["series"]["count"] == 2
    assert by["Pulled", "Binding"]["series"]["count"] == 2
    assert "series" not in by["Started", "Binding"]
    long_note = by["Started", "Starting"]["note"]
    assert len(long_note.encode()) == 1024 and long_note.endswith(" ...")
    assert by["Started", "Binding"]["reportingInstance"].startswith(CONTROLLER + "-")
    assert truncate_note("é" * 600).endswith(" ...") and len(truncate_note("é" * 600).encode()) <= 1024


# -- core/v1 ----------------------------------------------------------------------------------------------


async def test_core_identical_events_dedup_and_spam_filter(client, ns):
    clock = FakeClock()
    b = EventBroadcaster(client, correlator=EventCorrelator(clock=clock))
    b.start()
    rec = b.new_core_recorder("test-controller", "host-1")
    obj = pod(ns, "web-4")
    for _ in range(100):
        rec.event(obj, "Warning", "BackOff", "Back-off restarting failed container")
    await b.drain()
    # Expected count 25, from upstream's correlator: every event passes the aggregator (one message, so
    # the group never reaches 10 distinct messages), the logger turns event k into "count k" (a create
    # for k = 1, a patch after), and then the spam filter — a token bucket per source+object, burst 25,
    # one token back every 300 s, and no time passes on this clock — lets events 1..25 through and skips
    # 26..100. One Event, count 25.
    (ev,) = await events_about(client, ns, "web-4")
    assert ev["count"] == 25
    assert ev["message"] == "Back-off restarting failed container"
    assert ev["source"] == {"component": "test-controller", "host": "host-1"}
    assert ev["involvedObject"]["uid"] == obj["metadata"]["uid"]
    assert ev["firstTimestamp"] <= ev["lastTimestamp"]
    # Five minutes later the bucket has a token again. The logger counted the skipped events too, so the
    # next accepted repeat carries the full count: 101.
    clock.now += 300
    rec.event(obj, "Warning", "BackOff", "Back-off restarting failed container")
    await b.shutdown()
    (ev,) = await events_about(client, ns, "web-4")
    assert ev["count"] == 101


async def test_core_similar_events_are_aggregated(client, ns):
    async with EventBroadcaster(client) as b:
        rec = b.new_core_recorder("test-controller")
        obj = pod(ns, "web-5")
        for i in range(12):
            rec.eventf(obj, "Warning", "FailedScheduling", "0/%d nodes are available", i)
    items = await events_about(client, ns, "web-5")
    # The first nine differ only in their message and are written as they are; the tenth different
    # message in ten minutes turns into a combined event, which the eleventh and twelfth count up.
    plain = sorted(e["message"] for e in items if not e["message"].startswith(AGGREGATE_MESSAGE_PREFIX))
    combined = [e for e in items if e["message"].startswith(AGGREGATE_MESSAGE_PREFIX)]
    assert plain == sorted(f"0/{i} nodes are available" for i in range(9))
    assert len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == AGGREGATE_MESSAGE_PREFIX + "0/11 nodes are available"
    assert combined[0]["reason"] == "FailedScheduling"


async def test_core_different_reasons_are_different_events(client, ns):
    async with EventBroadcaster(client) as b:
        rec = b.new_core_recorder("test-controller")
        obj = pod(ns, "web-6")
        for reason in ("Scheduled", "Pulled", "Scheduled", "Created"):
            rec.event(obj, "Normal", reason, "it happened")
    items = await events_about(client, ns, "web-6")
    assert sorted((e["reason"], e["count"]) for e in items) == [("Created", 1), ("Pulled", 1), ("Scheduled", 2)]


# -- never blocking ---------------------------------------------------------------------------------------


async def test_recording_never_blocks_or_raises(client_config):
    # Nothing listens on this port: every write fails, after the client's own connection retries (seconds).
    dead = RESTClient(client_config.with_options(server=f"https://127.0.0.1:{free_port()}"))
    b = EventBroadcaster(dead, sleep_duration=0.05)
    b.start()
    rec, core = b.new_recorder(CONTROLLER, "test-1"), b.new_core_recorder("test-controller")
    obj = pod("default", "web-7")
    n = 5000
    t0 = time.perf_counter()
    for i in range(n):
        rec.eventf(obj, None, "Normal", "Tick", "Ticking", "tick %d", i)
    per_call = (time.perf_counter() - t0) / n
    assert per_call < 0.0005, f"{per_call * 1e6:.0f} µs per call"
    # The worker has not run yet (nothing awaited): the queue holds its bound, the rest was dropped.
    assert b.dropped == n - 1000
    t0 = time.perf_counter()
    for i in range(n):
        core.eventf(obj, "Normal", "Tick", "tick %d", i)
    assert (time.perf_counter() - t0) / n < 0.0005
    assert b.dropped == 2 * n - 1000
    # Bad input is logged, not raised.
    rec.eventf(None, None, "Normal", "R", "A", "no object")
    rec.eventf(obj, None, "Bogus", "R", "A", "bad type")
    rec.eventf(obj, None, "Normal", "R", "A", "%d not a number", "x")
    core.event({"metadata": {}}, "Normal", "R", "no kind")
    core.eventf(obj, "Normal", "R", "%s %s", "too few")
    # Shutdown gives up on what it cannot write within its timeout.
    t0 = time.monotonic()
    await b.shutdown(timeout=1.0)
    assert time.monotonic() - t0 < 3
    rec.eventf(obj, None, "Normal", "Late", "A", "after shutdown")  # dropped, quietly
    await dead.close()


# -- where kubectl looks ----------------------------------------------------------------------------------


async def test_events_listed_by_involved_object(client, ns, apiserver):
    obj = pod(ns, "web-8")
    async with EventBroadcaster(client) as b:
        b.new_recorder(CONTROLLER, "test-1").eventf(obj, None, "Normal", "Scheduled", "Binding", "assigned")
        b.new_core_recorder("test-controller").event(obj, "Normal", "Pulled", "image pulled")
        other = pod(ns, "web-9")
        b.new_core_recorder("test-controller").event(other, "Normal", "Pulled", "elsewhere")
    # kubectl describe's search: the core API with involvedObject name, namespace and uid.
    uid = obj["metadata"]["uid"]
    selector = f"involvedObject.name=web-8,involvedObject.namespace={ns},involvedObject.uid={uid}"
    items = (await client.list("events", ns, field_selector=selector))["items"]
    assert sorted(e["reason"] for e in items) == ["Pulled", "Scheduled"]
    res = apiserver.kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=web-8", "-o", "json")
    assert res.returncode == 0, res.stderr
    assert sorted(e["reason"] for e in json.loads(res.stdout)["items"]) == ["Pulled", "Scheduled"]


async def test_events_k8s_io_field_selector_regarding(client, ns):
    obj = pod(ns, "web-10")
    async with EventBroadcaster(client) as b:
        b.new_recorder(CONTROLLER, "test-1").eventf(obj, None, "Normal", "Scheduled", "Binding", "assigned")
    items = (await client.list("events.events.k8s.io", ns, field_selector="regarding.name=web-10"))["items"]
    assert [e["reason"] for e in items] == ["Scheduled"]
    by_controller = f"reportingController={CONTROLLER},regarding.kind=Pod"
    items = (await client.list("events.events.k8s.io", ns, field_selector=by_controller))["items"]
    assert [e["regarding"]["name"] for e in items] == ["web-10"]
    # The core API keeps its own names only, as upstream's.
    with pytest.raises(BadRequest):
        await client.list("events", ns, field_selector="regarding.name=web-10")
