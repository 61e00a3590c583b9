"""The scheduling queue: order, backoff, moves on cluster events and queueing hints, in-flight events, gates,
timeouts, activation, deletion, updates and the blocking pop (cases re-expressed from upstream's
backend/queue/scheduling_queue_test.go). Events, nominator, metrics and the state machine: test_queue_machine.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pyk8s.scheduler import queue as q
from pyk8s.scheduler.framework.interface import NODE, POD, ActionType, ClusterEvent
from pyk8s.scheduler.framework.types import PodInfo, QueuedPodInfo
from pyk8s.scheduler.plugins.queuesort import PrioritySort

from .queue_helpers import (
    POD_LABEL_EVENT,
    PROFILE,
    FakeClock,
    fail,
    failing_hint,
    gated_queue,
    incoming,
    names,
    new_queue,
    pod,
    queue_hint,
    skip_hint,
    unschedulable,
    where,
    with_,
)

# -- ordering and backoff ----------------------------------------------------------------------------------------


def plain_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    pa, pb = a.pod["spec"].get("priority", 0), b.pod["spec"].get("priority", 0)
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


@pytest.mark.parametrize("less", [PrioritySort().less, plain_less, None], ids=["sort_key", "less", "default"])
def test_pop_order_priority_then_timestamp(less: Any) -> None:
    clock = FakeClock()
    queue = new_queue(clock=clock, less=less)
    for name, prio in [("low", 0), ("mid-old", 100), ("high", 1000), ("mid-new", 100), ("low2", 0)]:
        queue.add(pod(name, priority=prio))
        clock.step(1)
    popped = []
    while (qpi := queue.try_pop()) is not None:
        popped.append(qpi.pod["metadata"]["name"])
        assert qpi.attempts == 1
    assert popped == ["high", "mid-old", "mid-new", "low", "low2"]
    assert queue.scheduling_cycle() == 5


@pytest.mark.parametrize(
    ("attempts", "initial", "maximum", "want"),
    [
        (0, 1.0, 10.0, 0.0),
        (1, 1.0, 10.0, 1.0),
        (2, 1.0, 10.0, 2.0),
        (3, 1.0, 10.0, 4.0),
        (4, 1.0, 10.0, 8.0),
        (5, 1.0, 10.0, 10.0),
        (6, 1.0, 10.0, 10.0),
        (60, 1.0, 10.0, 10.0),
        (3, 2.0, 60.0, 8.0),
        (2, 5.0, 7.0, 7.0),
    ],
)
def test_backoff_duration(attempts: int, initial: float, maximum: float, want: float) -> None:
    queue = new_queue(pod_initial_backoff=initial, pod_max_backoff=maximum)
    qpi = QueuedPodInfo(PodInfo(pod("p")), timestamp=0.0, attempts=attempts)
    assert queue.calculate_backoff_duration(qpi) == want


def test_backoff_flow_doubles_per_attempt() -> None:
    """Each failed attempt waits 1, 2, 4, 8, 10, 10 s in backoffQ before it is active again."""
    clock = FakeClock()
    queue = new_queue(clock=clock)
    queue.add(pod("p"))
    for want in [1, 2, 4, 8, 10, 10]:
        qpi = queue.try_pop()
        assert qpi is not None
        fail(queue, qpi)  # no rejecting plugin: an error, straight to backoffQ
        assert where(queue, "p") == "backoff" and queue.is_pod_backing_off(qpi)
        clock.step(want - 0.01)
        queue.flush_backoff_q_completed()
        assert where(queue, "p") == "backoff"
        clock.step(0.01)
        queue.flush_backoff_q_completed()
        assert where(queue, "p") == "active"


def test_backoff_queue_ordered_by_expiry() -> None:
    clock = FakeClock()
    queue = new_queue(clock=clock)
    for name, attempts in [("slow", 4), ("fast", 1), ("mid", 2)]:
        queue.add(pod(name))
        qpi = queue.try_pop()
        assert qpi is not None
        qpi.attempts = attempts
        fail(queue, qpi)
    order = []
    for _ in range(10):
        clock.step(1)
        queue.flush_backoff_q_completed()
        while (qpi := queue.try_pop()) is not None:
            order.append(qpi.pod["metadata"]["name"])
    assert order == ["fast", "mid", "slow"]


# -- cluster events and queueing hints ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "plugins", "pending", "event", "want"),
    [
        # The plugin that rejected the pod registered the event and its hint says Queue: after backoff.
        ([(q.NODE_ADD, "foo", queue_hint)], ("foo",), (), q.NODE_ADD, "backoff"),
        ([(q.NODE_ADD, "foo", None)], ("foo",), (), q.NODE_ADD, "backoff"),
        ([(q.NODE_ADD, "foo", failing_hint)], ("foo",), (), q.NODE_ADD, "backoff"),
        # Skip keeps it.
        ([(q.NODE_ADD, "foo", skip_hint)], ("foo",), (), q.NODE_ADD, "unschedulable"),
        # Another plugin's interest does not count.
        ([(q.NODE_ADD, "bar", queue_hint)], ("foo",), (), q.NODE_ADD, "unschedulable"),
        # Nobody registered the event.
        ([(q.PV_ADD, "foo", queue_hint)], ("foo",), (), q.NODE_ADD, "unschedulable"),
        # A registered Update covers the specific update kinds; Add does not cover Update.
        ([(ClusterEvent(NODE, ActionType.UPDATE), "foo", None)], ("foo",), (), q.NODE_TAINT_CHANGE, "backoff"),
        ([(q.NODE_ADD, "foo", None)], ("foo",), (), q.NODE_TAINT_CHANGE, "unschedulable"),
        # One of two rejecting plugins saying Queue is enough.
        ([(q.NODE_ADD, "foo", skip_hint), (q.NODE_ADD, "bar", queue_hint)], ("foo", "bar"), (), q.NODE_ADD, "backoff"),
        # A Pending plugin saying Queue skips backoff.
        ([(q.NODE_ADD, "pend", queue_hint)], (), ("pend",), q.NODE_ADD, "active"),
        (
            [(q.NODE_ADD, "foo", queue_hint), (q.NODE_ADD, "pend", queue_hint)],
            ("foo",),
            ("pend",),
            q.NODE_ADD,
            "active",
        ),
        (
            [(q.NODE_ADD, "foo", queue_hint), (q.NODE_ADD, "pend", skip_hint)],
            ("foo",),
            ("pend",),
            q.NODE_ADD,
            "backoff",
        ),
        # Wildcards move every pod; a plugin registering "*" sees every event.
        ([(q.NODE_ADD, "foo", skip_hint)], ("foo",), (), q.WILDCARD_EVENT, "backoff"),
        ([(ClusterEvent("*", ActionType.ALL), "foo", None)], ("foo",), (), q.PV_ADD, "backoff"),
        # Pod events: a plugin registered for Pod sees assigned-pod events.
        ([(ClusterEvent(POD, ActionType.DELETE), "foo", None)], ("foo",), (), q.ASSIGNED_POD_DELETE, "backoff"),
    ],
)
def test_move_on_event_by_registered_plugins_and_hints(
    entries: list[Any], plugins: tuple[str, ...], pending: tuple[str, ...], event: ClusterEvent, want: str
) -> None:
    queue = new_queue(*entries, (q.PVC_ADD, "other", None))
    unschedulable(queue, pod("p"), *plugins, pending=pending)
    assert where(queue, "p") == "unschedulable"
    # A wildcard event carrying an object is meant for that pod only: send the node-wide kind (no object).
    obj = None if q.is_wildcard(event) else {"metadata": {"name": "obj", "uid": "u"}}
    queue.move_all_to_active_or_backoff_queue(event, None, obj)
    assert where(queue, "p") == want


def test_move_goes_to_active_once_backoff_is_over() -> None:
    clock = FakeClock()
    queue = new_queue((q.NODE_ADD, "foo", None), clock=clock)
    unschedulable(queue, pod("p"), "foo")
    clock.step(1.0)  # the first backoff (1 s) ran out while it waited
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})
    assert where(queue, "p") == "active"


def test_precheck_filters_pods() -> None:
    queue = new_queue((q.NODE_ADD, "foo", None))
    unschedulable(queue, pod("a"), "foo")
    unschedulable(queue, pod("b"), "foo")
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {}, precheck=lambda p: p["metadata"]["name"] == "a")
    assert (where(queue, "a"), where(queue, "b")) == ("backoff", "unschedulable")


def test_pod_without_rejecting_plugins_moves_on_any_event_of_interest() -> None:
    queue = new_queue((q.PV_ADD, "foo", skip_hint))
    queue.add(pod("p"))
    qpi = queue.try_pop()
    assert qpi is not None
    # Put it among the unschedulable pods directly, as a pod that failed on an error in a past cycle.
    queue._add_unschedulable("default/p", qpi, "test")
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})
    assert where(queue, "p") == "unschedulable"  # nobody registered NodeAdd: not an event of interest
    queue.move_all_to_active_or_backoff_queue(q.PV_ADD, None, {})
    assert where(queue, "p") == "backoff"


@pytest.mark.parametrize("hint", [queue_hint, skip_hint])
def test_hints_disabled_uses_registered_events_only(hint: Any) -> None:
    """Without queueing hints, any registered event of a rejecting plugin moves the pod; hints are ignored."""
    queue = new_queue((q.NODE_ADD, "foo", hint), (q.PV_ADD, "bar", None), queueing_hints_enabled=False)
    unschedulable(queue, pod("p"), "foo")
    assert where(queue, "p") == "unschedulable"
    queue.move_all_to_active_or_backoff_queue(q.PV_ADD, None, {})
    assert where(queue, "p") == "unschedulable"
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})
    assert where(queue, "p") == "backoff"


@pytest.mark.parametrize(
    ("event_during_attempt", "want"), [(None, "unschedulable"), (q.NODE_ADD, "backoff"), (q.PVC_ADD, "unschedulable")]
)
def test_hints_disabled_move_request_cycle(event_during_attempt: ClusterEvent | None, want: str) -> None:
    """Without hints, a move request during the pod's cycle sends it to backoffQ instead of unschedulablePods."""
    queue = new_queue((q.NODE_ADD, "foo", skip_hint), queueing_hints_enabled=False)
    queue.add(pod("p"))
    qpi = queue.try_pop()
    assert qpi is not None
    cycle = queue.scheduling_cycle()
    if event_during_attempt is not None:
        queue.move_all_to_active_or_backoff_queue(event_during_attempt, None, {})
    qpi.unschedulable_plugins = {"foo"}
    assert queue.add_unschedulable_if_not_present(qpi, cycle) is None
    assert where(queue, "p") == want
    assert queue.in_flight_pods() == [] and queue.in_flight_events() == []


# -- in-flight pods and events -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "plugins", "want"),
    [
        # An event of interest during the attempt, hint Queue: backoffQ.
        (["pop", q.NODE_ADD], ("foo",), "backoff"),
        # The same event before the attempt does not count.
        ([q.NODE_ADD, "pop"], ("foo",), "unschedulable"),
        # The hint of the rejecting plugin says Skip.
        (["pop", q.PV_ADD], ("foo",), "unschedulable"),
        # An event only another plugin cares about.
        (["pop", q.PVC_ADD], ("foo",), "unschedulable"),
        # No rejecting plugin: an error, backoffQ whatever happened.
        (["pop"], (), "backoff"),
        # An update of the pod itself while in flight, relevant to the rejecting plugin.
        (["pop", "relabel"], ("labels",), "backoff"),
        (["pop", "relabel"], ("foo",), "unschedulable"),
        # Activate while in flight brings it back (ForceActivate is meant for this pod only).
        (["pop", "activate"], ("foo",), "backoff"),
        (["pop", "activate-other"], ("foo",), "unschedulable"),
    ],
)
def test_in_flight_events_replayed(steps: list[Any], plugins: tuple[str, ...], want: str) -> None:
    queue = new_queue(
        (q.NODE_ADD, "foo", queue_hint),
        (q.PV_ADD, "foo", skip_hint),
        (q.PVC_ADD, "bar", queue_hint),
        (POD_LABEL_EVENT, "labels", queue_hint),
    )
    p = pod("p", labels={"v": "1"})
    queue.add(p)
    queue.add(pod("other"))
    qpi = None
    for step in steps:
        if step == "pop":
            qpi = queue.try_pop()
        elif step == "relabel":
            queue.update(p, with_(p, lambda x: x["metadata"]["labels"].update(v="2")))
        elif step == "activate":
            queue.activate([p])
        elif step == "activate-other":
            queue.activate({"x": pod("ghost")})
        else:
            queue.move_all_to_active_or_backoff_queue(step, None, {"metadata": {"uid": "x"}})
    assert qpi is not None and qpi.pod["metadata"]["name"] == "p"
    assert names(queue.in_flight_pods()) == ["p"]
    fail(queue, qpi, *plugins)
    assert where(queue, "p") == want
    assert queue.in_flight_pods() == [] and queue.in_flight_events() == []


def test_in_flight_events_kept_only_while_needed() -> None:
    """Events of no interest are not recorded; events older than every in-flight pod are dropped on done."""
    clock = FakeClock()
    queue = new_queue((q.NODE_ADD, "foo", queue_hint), (q.PV_ADD, "foo", queue_hint), clock=clock)
    for name in ("a", "b", "c"):
        queue.add(pod(name))
        clock.step(1)
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD)  # nobody in flight: not recorded
    a = queue.try_pop()
    queue.move_all_to_active_or_backoff_queue(q.PV_ADD)
    queue.move_all_to_active_or_backoff_queue(q.PVC_ADD)  # of no interest
    b = queue.try_pop()
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD)
    assert a is not None and b is not None
    assert queue.in_flight_events() == [q.PV_ADD, q.NODE_ADD]
    queue.done(b.pod["metadata"]["uid"])  # a is older: everything stays
    assert queue.in_flight_events() == [q.PV_ADD, q.NODE_ADD]
    c = queue.try_pop()
    queue.move_all_to_active_or_backoff_queue(q.PV_ADD)
    assert c is not None
    queue.done(a.pod["metadata"]["uid"])  # only c is left: the events before c went
    assert queue.in_flight_events() == [q.PV_ADD]
    # b came back after done (a bug elsewhere): no events are known for it, so it is retried.
    b.unschedulable_plugins = {"foo"}
    assert queue.add_unschedulable_if_not_present(b, 0) is None
    assert where(queue, "b") == "backoff"
    fail(queue, c, "foo")
    assert where(queue, "c") == "backoff"
    assert queue.in_flight_events() == []


def test_update_while_in_flight_is_not_queued() -> None:
    queue = new_queue()
    p = pod("p")
    queue.add(p)
    qpi = queue.try_pop()
    assert qpi is not None
    queue.update(p, with_(p, lambda x: x["metadata"]["labels"].update(v="2")))
    assert len(queue) == 0 and names(queue.in_flight_pods()) == ["p"]


def test_duplicate_pod_in_flight_is_discarded_on_pop() -> None:
    queue = new_queue()
    p = pod("p")
    queue.add(p)
    first = queue.try_pop()
    queue.add(p)  # the informer re-added it while it was being scheduled
    queue.add(pod("q"))
    second = queue.try_pop()
    assert first is not None and second is not None and second.pod["metadata"]["name"] == "q"


def test_add_unschedulable_if_present_elsewhere_is_an_error() -> None:
    queue = new_queue()
    p = pod("p")
    queue.add(p)
    qpi = queue.try_pop()
    assert qpi is not None
    queue.add(p)
    err = queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle())
    assert err == "Pod default/p is already present in the active queue"
    assert queue.in_flight_pods() == []  # done all the same


# -- gates (PreEnqueue) ------------------------------------------------------------------------------------------


def test_gated_pod_waits_until_update_lifts_gate() -> None:
    clock = FakeClock()
    queue = gated_queue(clock)
    g = pod("g", schedulingGates=[{"name": "example.com/wait"}])
    queue.add(g)
    assert where(queue, "g") == "unschedulable"
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    info = queue.get_pod("g", "default")
    assert info is not None and info.gated and info.gating_plugin == "SchedulingGates"
    assert info.unschedulable_plugins == {"SchedulingGates"}
    # No cluster event, not even the timeout flush, lifts a scheduling gate.
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})
    queue.move_all_to_active_or_backoff_queue(q.WILDCARD_EVENT)
    clock.step(301)
    queue.flush_unschedulable_pods_leftover()
    assert where(queue, "g") == "unschedulable"
    # An update that keeps a gate keeps it gated.
    relabelled = with_(g, lambda x: x["metadata"]["labels"].update(v="2"))
    queue.update(g, relabelled)
    assert where(queue, "g") == "unschedulable" and queue.counts()["gated"] == 1
    # Removing the last gate makes it active at once (a gated pod owes no backoff).
    ungated = with_(relabelled, lambda x: x["spec"].pop("schedulingGates"))
    queue.update(relabelled, ungated)
    assert where(queue, "g") == "active"
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    qpi = queue.try_pop()
    assert qpi is not None and qpi.pod is ungated and not qpi.gated and qpi.initial_attempt_timestamp == clock.t


@pytest.mark.parametrize("hints", [True, False])
def test_gate_lifted_without_hints_too(hints: bool) -> None:
    queue = gated_queue(queueing_hints_enabled=hints)
    g = pod("g", schedulingGates=[{"name": "x"}])
    queue.add(g)
    queue.update(g, with_(g, lambda x: x["spec"].pop("schedulingGates")))
    assert where(queue, "g") == "active"


def test_other_pre_enqueue_plugin_reruns_on_its_events() -> None:
    queue = gated_queue()
    d = pod("d", labels={"deny": "yes"})
    queue.add(d)
    assert queue.counts()["gated"] == 1
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})  # Denier still says no
    assert where(queue, "d") == "unschedulable" and queue.counts()["gated"] == 1
    allowed = with_(d, lambda x: x["metadata"]["labels"].update(deny="no"))
    queue.update(d, allowed)  # Denier registered no pod event: the update alone does not move it
    assert where(queue, "d") == "unschedulable"
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})
    assert where(queue, "d") == "active" and queue.counts()["gated"] == 0


def test_activate_gated_pod_keeps_it_gated() -> None:
    queue = gated_queue()
    g = pod("g", schedulingGates=[{"name": "x"}])
    queue.add(g)
    queue.activate([g])
    assert where(queue, "g") == "unschedulable" and queue.counts()["gated"] == 1


# -- timeouts, activation, deletion, updates ---------------------------------------------------------------------


def test_unschedulable_timeout_flush() -> None:
    clock = FakeClock()
    queue = new_queue((q.NODE_ADD, "foo", skip_hint), clock=clock)
    unschedulable(queue, pod("p"), "foo")
    before = incoming("active", "UnschedulableTimeout")
    clock.step(300)
    queue.flush_unschedulable_pods_leftover()
    assert where(queue, "p") == "unschedulable"  # exactly 5 min is not longer than 5 min
    clock.step(0.001)
    queue.flush_unschedulable_pods_leftover()
    assert where(queue, "p") == "active"
    assert incoming("active", "UnschedulableTimeout") == before + 1


def test_unschedulable_timeout_into_backoff_when_still_backing_off() -> None:
    clock = FakeClock()
    queue = new_queue((q.NODE_ADD, "foo", None), clock=clock, pod_max_in_unschedulable_pods_duration=0.5)
    unschedulable(queue, pod("p"), "foo")
    clock.step(0.6)
    queue.flush_unschedulable_pods_leftover()
    assert where(queue, "p") == "backoff"


def test_activate() -> None:
    queue = new_queue((q.NODE_ADD, "foo", None))
    unschedulable(queue, pod("u"), "foo")
    unschedulable(queue, pod("b"))  # an error: backoffQ
    assert (where(queue, "u"), where(queue, "b")) == ("unschedulable", "backoff")
    queue.activate({"u": pod("u"), "b": pod("b"), "ghost": pod("ghost")})
    assert (where(queue, "u"), where(queue, "b"), where(queue, "ghost")) == ("active", "active", None)


@pytest.mark.parametrize("place", ["active", "backoff", "unschedulable", "gated"])
def test_delete_removes_from_every_queue(place: str) -> None:
    queue = gated_queue()
    p = pod("p")
    p["status"]["nominatedNodeName"] = "n1"
    if place == "gated":
        p["spec"]["schedulingGates"] = [{"name": "x"}]
    if place in ("active", "gated"):
        queue.add(p)
    else:
        unschedulable(queue, p, *(("foo",) if place == "unschedulable" else ()))
    assert where(queue, "p") == ("unschedulable" if place == "gated" else place)
    queue.add_nominated_pod(PodInfo(p), "n1")
    queue.delete(p)
    assert where(queue, "p") is None and len(queue) == 0
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert queue.nominated_pods_for_node("n1") == []


def test_update_in_active_and_backoff_stays_put() -> None:
    queue = new_queue()
    a, b = pod("a"), pod("b")
    unschedulable(queue, b)
    queue.add(a)
    new_a = with_(a, lambda x: x["metadata"]["labels"].update(v="2"))
    new_b = with_(b, lambda x: x["metadata"]["labels"].update(v="2"))
    queue.update(a, new_a)
    queue.update(b, new_b)
    assert (where(queue, "a"), where(queue, "b")) == ("active", "backoff")
    info_a, info_b = queue.get_pod("a", "default"), queue.get_pod("b", "default")
    assert info_a is not None and info_a.pod is new_a and info_b is not None and info_b.pod is new_b


def test_update_of_unknown_pod_adds_it() -> None:
    queue = new_queue()
    p = pod("p")
    queue.update(None, p)
    assert where(queue, "p") == "active"


@pytest.mark.parametrize(
    ("hints", "change", "want"),
    [
        (True, "label", "backoff"),  # the rejecting plugin's hint for Pod/UpdatePodLabel says Queue
        (True, "annotation", "unschedulable"),  # a plain update; the plugin registered label changes only
        (True, "status", "unschedulable"),
        (False, "label", "backoff"),  # without hints any real change moves it
        (False, "annotation", "backoff"),
        (False, "status", "unschedulable"),
    ],
)
def test_update_of_unschedulable_pod(hints: bool, change: str, want: str) -> None:
    queue = new_queue((POD_LABEL_EVENT, "foo", queue_hint), queueing_hints_enabled=hints)
    p = pod("p")
    unschedulable(queue, p, "foo")
    assert where(queue, "p") == "unschedulable"
    edit = {
        "label": lambda x: x["metadata"]["labels"].update(v="2"),
        "annotation": lambda x: x["metadata"].update(annotations={"a": "b"}),
        "status": lambda x: x["status"].update(phase="Pending", message="m"),
    }[change]
    new = with_(p, edit)
    queue.update(p, new)
    assert where(queue, "p") == want
    info = queue.get_pod("p", "default")
    assert info is not None and info.pod is new


def test_assigned_pod_added_moves_only_pods_with_matching_terms() -> None:
    queue = new_queue((ClusterEvent(POD, ActionType.ADD), "InterPodAffinity", None), (q.NODE_ADD, "foo", None))
    queue.queueing_hint_map[PROFILE].append((ClusterEvent(POD, ActionType.ALL), "PodTopologySpread", None))
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    unschedulable(queue, pod("affine", affinity=affinity), "InterPodAffinity")
    unschedulable(queue, pod("plain"), "InterPodAffinity")
    unschedulable(queue, pod("spread"), "PodTopologySpread")
    unschedulable(queue, pod("spread-elsewhere", namespace="other"), "PodTopologySpread")
    queue.assigned_pod_added(pod("web", labels={"app": "web"}, node_name="n1"))
    assert {n: where(queue, n) for n in ("affine", "plain", "spread")} == {
        "affine": "backoff", "plain": "unschedulable", "spread": "backoff"
    }  # fmt: skip
    assert "spread-elsewhere" in names(queue.unschedulable_pods())


def test_assigned_pod_updated_scale_down_moves_all_registered() -> None:
    queue = new_queue((ClusterEvent(POD, ActionType.UPDATE_POD_SCALE_DOWN), "NodeResourcesFit", None))
    unschedulable(queue, pod("big", cpu="4"), "NodeResourcesFit")
    old = pod("running", cpu="2", node_name="n1")
    new = with_(old, lambda x: x["spec"]["containers"][0]["resources"]["requests"].update(cpu="1"))
    label_event = ClusterEvent("AssignedPod", ActionType.UPDATE_POD_LABEL)
    queue.assigned_pod_updated(old, new, label_event)
    assert where(queue, "big") == "unschedulable"
    queue.assigned_pod_updated(old, new, ClusterEvent("AssignedPod", ActionType.UPDATE_POD_SCALE_DOWN))
    assert where(queue, "big") == "backoff"


# -- pop, close, run ------------------------------------------------------------------------------------------------


async def test_pop_blocks_until_a_pod_is_added() -> None:
    queue = new_queue()
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0.005)
    assert not waiter.done()
    queue.add(pod("p"))
    qpi = await asyncio.wait_for(waiter, 1)
    assert qpi is not None and qpi.pod["metadata"]["name"] == "p"


async def test_pop_wakes_on_backoff_completion() -> None:
    clock = FakeClock()
    queue = new_queue(clock=clock)
    unschedulable(queue, pod("p"))
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0.002)
    assert not waiter.done()
    clock.step(1)
    queue.flush_backoff_q_completed()
    qpi = await asyncio.wait_for(waiter, 1)
    assert qpi is not None and qpi.attempts == 2


async def test_close_unblocks_pop() -> None:
    queue = new_queue()
    waiters = [asyncio.create_task(queue.pop()) for _ in range(2)]
    await asyncio.sleep(0.002)
    queue.close()
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1) == [None, None]


async def test_pop_after_close_drains_active() -> None:
    queue = new_queue()
    queue.add(pod("p"))
    queue.close()
    first = await queue.pop()
    assert first is not None and await queue.pop() is None


async def test_run_flushes_until_closed() -> None:
    clock = FakeClock()
    queue = new_queue((q.NODE_ADD, "foo", skip_hint), clock=clock)
    queue.backoff_flush_period = 0.001
    queue.unschedulable_flush_period = 0.001
    unschedulable(queue, pod("b"))
    unschedulable(queue, pod("u"), "foo")
    runner = asyncio.create_task(queue.run())
    clock.step(301)
    await asyncio.sleep(0.01)
    assert (where(queue, "b"), where(queue, "u")) == ("active", "active")
    queue.close()
    await asyncio.wait_for(runner, 1)
