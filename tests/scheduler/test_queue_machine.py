"""The scheduling queue's events and labels, the nominator, its metrics, and a state machine checking that a
pod is never in two queues at once and never lost (cases re-expressed from upstream's scheduling_queue_test.go
and framework/events_test.go)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from pyk8s.scheduler import queue as q
from pyk8s.scheduler.framework.features import process_gates_set
from pyk8s.scheduler.framework.interface import NODE, POD, UNSCHEDULED_POD, ActionType, ClusterEvent
from pyk8s.scheduler.framework.types import PodInfo, QueuedPodInfo
from pyk8s.scheduler.queue import PriorityQueue
from pyk8s.scheduler.queue_nominator import MODE_NOOP, MODE_OVERRIDE, NominatingInfo

from .queue_helpers import (
    GATES_EVENT,
    POD_LABEL_EVENT,
    PROFILE,
    FakeClock,
    Gates,
    fail,
    gated_queue,
    incoming,
    new_queue,
    pod,
    queue_hint,
    same_pod_hint,
    sample,
    skip_hint,
    unschedulable,
    with_,
)
from .wrappers import make_pod

# -- events ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (q.NODE_ADD, "NodeAdd"),
        (q.NODE_DELETE, "NodeDelete"),
        (q.NODE_TAINT_CHANGE, "NodeUpdateNodeTaint"),
        (q.NODE_ALLOCATABLE_CHANGE, "NodeUpdateNodeAllocatable"),
        (q.ASSIGNED_POD_ADD, "AssignedPodAdd"),
        (q.ASSIGNED_POD_UPDATE, "AssignedPodUpdate"),
        (q.ASSIGNED_POD_DELETE, "AssignedPodDelete"),
        (q.UNSCHEDULED_POD_ADD, "UnschedulablePodAdd"),
        (q.UNSCHEDULED_POD_UPDATE, "UnschedulablePodUpdate"),
        (q.PV_ADD, "PersistentVolumeAdd"),
        (q.PVC_UPDATE, "PersistentVolumeClaimUpdate"),
        (q.STORAGE_CLASS_ADD, "storage.k8s.io/StorageClassAdd"),
        (q.CSI_NODE_UPDATE, "storage.k8s.io/CSINodeUpdate"),
        (q.FORCE_ACTIVATE, "ForceActivate"),
        (q.UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
        (q.WILDCARD_EVENT, "WildCardEvent"),
        (ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL), "UnschedulablePodUpdatePodLabel"),
        (ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_OTHER), "UnschedulablePodUpdate"),
        (ClusterEvent(NODE, ActionType.ADD, "Custom"), "Custom"),
    ],
)
def test_event_labels(event: ClusterEvent, label: str) -> None:
    assert event.label == label


BASE = make_pod("p", cpu="1", memory="1Gi", labels={"a": "1"}, tolerations=[{"key": "k", "operator": "Exists"}])


@pytest.mark.parametrize(
    ("new", "actions"),
    [
        (with_(BASE, lambda p: p["metadata"]["labels"].update(b="2")), [ActionType.UPDATE_POD_LABEL]),
        (
            with_(BASE, lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="500m")),
            [ActionType.UPDATE_POD_SCALE_DOWN],
        ),
        (
            with_(BASE, lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="2")),
            [ActionType.UPDATE_OTHER],
        ),
        (with_(BASE, lambda p: p["spec"]["tolerations"].append({"key": "x"})), [ActionType.UPDATE_POD_TOLERATIONS]),
        (with_(BASE, lambda p: p["metadata"].update(annotations={"x": "y"})), [ActionType.UPDATE_OTHER]),
        (
            with_(BASE, lambda p: (p["metadata"]["labels"].clear(), p["spec"]["tolerations"].append({}))),
            [ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_TOLERATIONS],
        ),
    ],
)
def test_pod_scheduling_properties_change(new: dict[str, Any], actions: list[ActionType]) -> None:
    assert q.pod_scheduling_properties_change(new, BASE) == [ClusterEvent(UNSCHEDULED_POD, a) for a in actions]


def _with_status_cpu(pod: dict[str, Any], cpu: str) -> dict[str, Any]:
    return with_(pod, lambda p: p.update(status={"containerStatuses": [{"name": "c", "resources": {"requests": {
        "cpu": cpu}}}]}))  # fmt: skip


@pytest.mark.parametrize("in_place", [True, False])
def test_pod_scale_down_reads_resized_status_with_the_process_gate(in_place: bool) -> None:
    # a running resize from 2 cores back to 1: the spec is already 1, the status still reports 2
    resizing, resized = _with_status_cpu(BASE, "2"), _with_status_cpu(BASE, "1")
    with process_gates_set({"InPlacePodVerticalScaling": in_place}):
        got = q.pod_scheduling_properties_change(resized, resizing)
    want = ActionType.UPDATE_POD_SCALE_DOWN if in_place else ActionType.UPDATE_OTHER
    assert got == [ClusterEvent(UNSCHEDULED_POD, want)]


def test_pod_scale_down_counts_pod_level_requests_whatever_the_gate() -> None:
    # upstream's extractPodScaleDown leaves SkipPodLevelResources false
    old = with_(BASE, lambda p: p["spec"].update(resources={"requests": {"cpu": "4"}}))
    new = with_(BASE, lambda p: p["spec"].update(resources={"requests": {"cpu": "3"}}))
    assert q.pod_scheduling_properties_change(new, old) == [
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    ]


def test_pod_scheduling_properties_change_gates_and_assigned() -> None:
    gated = make_pod("g", schedulingGates=[{"name": "x"}])
    ungated = with_(gated, lambda p: p["spec"].pop("schedulingGates"))
    assert q.pod_scheduling_properties_change(ungated, gated) == [
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    ]
    bound = make_pod("b", node_name="n1")
    assert q.pod_scheduling_properties_change(bound, bound) == [q.ClusterEvent("AssignedPod", ActionType.UPDATE_OTHER)]


@pytest.mark.parametrize(
    ("change", "updated"),
    [
        (lambda p: p["metadata"].update(resourceVersion="99"), False),
        (lambda p: p["status"].update(phase="Running", conditions=[]), False),
        (lambda p: p["metadata"].update(finalizers=["x"], managedFields=[{}], generation=3), False),
        (lambda p: p["metadata"]["labels"].update(x="y"), True),
        (lambda p: p["spec"].update(priority=5), True),
        (lambda p: p["status"].update(resourceClaimStatuses=[{"name": "c"}]), True),
    ],
)
def test_is_pod_updated(change: Any, updated: bool) -> None:
    assert q.is_pod_updated(BASE, with_(BASE, change)) is updated


# -- nominator ----------------------------------------------------------------------------------------------------


def nominated(queue: PriorityQueue, node: str) -> list[str]:
    return [pi.pod["metadata"]["name"] for pi in queue.nominated_pods_for_node(node)]


def with_nnn(p: dict[str, Any], node: str | None) -> dict[str, Any]:
    new = copy.deepcopy(p)
    if node:
        new["status"]["nominatedNodeName"] = node
    else:
        new["status"].pop("nominatedNodeName", None)
    return new


def test_add_uses_status_nominated_node_name() -> None:
    queue = new_queue()
    a = with_nnn(pod("a", priority=10), "n1")
    b = with_nnn(pod("b"), "n1")
    queue.add(a)
    queue.add(b)
    queue.add(pod("c"))
    assert nominated(queue, "n1") == ["a", "b"]
    assert queue.try_pop() is not None and nominated(queue, "n1") == ["a", "b"]  # popping keeps nominations


def test_nominator_bookkeeping() -> None:
    queue = new_queue()
    p = pod("p")
    queue.add(p)
    queue.add_nominated_pod(PodInfo(p), "n1")
    queue.add_nominated_pod(PodInfo(p), NominatingInfo("n2", MODE_OVERRIDE))  # moves, never in two places
    assert nominated(queue, "n1") == [] and nominated(queue, "n2") == ["p"]
    assert queue.nominator.nominated_pod_to_node == {p["metadata"]["uid"]: "n2"}
    # An update that says nothing of the nomination keeps the in-memory one and hands out the new pod.
    relabelled = with_(p, lambda x: x["metadata"]["labels"].update(v="2"))
    queue.update(p, relabelled)
    assert nominated(queue, "n2") == ["p"] and queue.nominated_pods_for_node("n2")[0].pod is relabelled
    # An update carrying a nomination follows the pod.
    moved = with_nnn(relabelled, "n3")
    queue.update(relabelled, moved)
    assert nominated(queue, "n2") == [] and nominated(queue, "n3") == ["p"]
    # Removing it from the status removes the nomination.
    queue.update(moved, with_nnn(moved, None))
    assert nominated(queue, "n3") == [] and queue.nominator.nominated_pods == {}
    # Noop keeps what the pod says (nothing here); override with "" clears.
    queue.add_nominated_pod(PodInfo(p), NominatingInfo("", MODE_NOOP))
    assert queue.nominator.nominated_pod_to_node == {}
    queue.add_nominated_pod(PodInfo(p), "n1")
    queue.add_nominated_pod(PodInfo(p), NominatingInfo("", MODE_OVERRIDE))
    assert queue.nominator.nominated_pod_to_node == {}
    queue.add_nominated_pod(PodInfo(p), "n1")
    queue.delete_nominated_pod_if_exists(p)
    assert nominated(queue, "n1") == []


@pytest.mark.parametrize(("lister_has", "want"), [("pending", ["p"]), ("bound", []), ("gone", [])])
def test_nominator_checks_pod_lister(lister_has: str, want: list[str]) -> None:
    p = pod("p")
    stored = {"pending": p, "bound": with_(p, lambda x: x["spec"].update(nodeName="n9")), "gone": None}[lister_has]
    queue = new_queue(pod_getter=lambda ns, name: stored)
    queue.add_nominated_pod(PodInfo(p), "n1")
    assert nominated(queue, "n1") == want


# -- metrics and summaries -----------------------------------------------------------------------------------------


def gauge(queue_label: str) -> float:
    return sample("scheduler_pending_pods", {"queue": queue_label})


def test_pending_pods_gauge_and_incoming_counter() -> None:
    clock = FakeClock()
    queue = gated_queue(clock)
    before = {
        k: incoming(*k)
        for k in [
            ("active", "UnschedulablePodAdd"),
            ("unschedulable", "ScheduleAttemptFailure"),
            ("backoff", "ScheduleAttemptFailure"),
            ("backoff", "NodeAdd"),
            ("active", "BackoffComplete"),
            ("unschedulable", "UnschedulablePodAdd"),
        ]
    }
    for name in ("a", "b", "c"):
        queue.add(pod(name))
    queue.add(pod("g", schedulingGates=[{"name": "x"}]))
    assert [gauge(x) for x in ("active", "backoff", "unschedulable", "gated")] == [3, 0, 0, 1]
    for plugins in (("foo",), ()):
        qpi = queue.try_pop()
        assert qpi is not None
        fail(queue, qpi, *plugins)
    assert [gauge(x) for x in ("active", "backoff", "unschedulable", "gated")] == [1, 1, 1, 1]
    queue.move_all_to_active_or_backoff_queue(q.NODE_ADD, None, {})
    clock.step(1)
    queue.flush_backoff_q_completed()
    assert [gauge(x) for x in ("active", "backoff", "unschedulable", "gated")] == [3, 0, 0, 1]
    after = {k: incoming(*k) - v for k, v in before.items()}
    assert after == {
        ("active", "UnschedulablePodAdd"): 3,
        ("unschedulable", "ScheduleAttemptFailure"): 1,
        ("backoff", "ScheduleAttemptFailure"): 1,
        ("backoff", "NodeAdd"): 1,
        ("active", "BackoffComplete"): 2,
        ("unschedulable", "UnschedulablePodAdd"): 1,
    }
    pods, summary = queue.pending_pods()
    assert summary == "activeQ:3; backoffQ:0; unschedulablePods:1" and len(pods) == 4 and len(queue) == 4


def test_unschedulable_reasons_gauge() -> None:
    queue = new_queue((q.NODE_ADD, "ReasonPlugin", skip_hint))
    labels = {"plugin": "ReasonPlugin", "profile": PROFILE}
    base = sample("scheduler_unschedulable_pods", labels)
    unschedulable(queue, pod("a"), "ReasonPlugin")
    unschedulable(queue, pod("b"), "ReasonPlugin")
    assert sample("scheduler_unschedulable_pods", labels) == base + 2
    queue.delete(pod("a"))
    queue.activate([pod("b")])
    assert queue.try_pop() is not None  # the new attempt no longer counts the old reason
    assert sample("scheduler_unschedulable_pods", labels) == base


# -- the state machine ------------------------------------------------------------------------------------------

NAMES = ["p0", "p1", "p2", "p3", "p4"]
EVENTS = [q.NODE_ADD, q.PV_ADD, q.PVC_ADD, q.ASSIGNED_POD_DELETE, q.WILDCARD_EVENT]


class QueueMachine(RuleBasedStateMachine):
    """Random operations in the order a scheduler may issue them, with queueing hints on or off; every live pod
    is in exactly one queue or in flight, and nothing else is anywhere."""

    @initialize(hints=st.booleans())
    def build(self, hints: bool) -> None:
        self.hints = hints
        self.clock = FakeClock()
        self.queue = new_queue(
            (GATES_EVENT, "SchedulingGates", same_pod_hint),
            (q.NODE_ADD, "foo", queue_hint),
            (q.PV_ADD, "foo", skip_hint),
            (POD_LABEL_EVENT, "bar", queue_hint),
            (q.NODE_ADD, "pend", queue_hint),
            (ClusterEvent(POD, ActionType.DELETE), "bar", None),
            clock=self.clock,
            pre_enqueue_plugins={PROFILE: [Gates()]},
            queueing_hints_enabled=self.hints,
        )
        self.live: dict[str, dict[str, Any]] = {}
        self.in_flight: dict[str, tuple[QueuedPodInfo, int]] = {}  # by uid
        self.serial = 0

    def _uid_of(self, name: str) -> str | None:
        return self.live[name]["metadata"]["uid"] if name in self.live else None

    def _busy(self, name: str) -> bool:
        return any(qpi.pod["metadata"]["name"] == name for qpi, _ in self.in_flight.values())

    @rule(name=st.sampled_from(NAMES), prio=st.integers(0, 3), gated=st.booleans())
    def add(self, name: str, prio: int, gated: bool) -> None:
        if name in self.live or self._busy(name):
            return
        p = pod(name, priority=prio, labels={"v": "0"}, schedulingGates=[{"name": "g"}] if gated else None)
        if not gated:
            p["spec"].pop("schedulingGates")
        self.live[name] = p
        self.queue.add(p)

    @rule()
    def pop(self) -> None:
        qpi = self.queue.try_pop()
        if qpi is not None:
            assert qpi.pod["metadata"]["name"] in self.live
            self.in_flight[qpi.pod["metadata"]["uid"]] = (qpi, self.queue.scheduling_cycle())

    @rule(
        data=st.data(),
        plugins=st.sets(st.sampled_from(["foo", "bar"])),
        pending=st.sets(st.just("pend")),
    )
    def fail(self, data: st.DataObject, plugins: set[str], pending: set[str]) -> None:
        if not self.in_flight:
            return
        uid = data.draw(st.sampled_from(sorted(self.in_flight)))
        qpi, cycle = self.in_flight.pop(uid)
        name = qpi.pod["metadata"]["name"]
        if self._uid_of(name) != uid:  # deleted meanwhile: the scheduler just calls done
            self.queue.done(uid)
            return
        qpi.pod_info = PodInfo(self.live[name])  # the scheduler requeues the informer's latest version
        qpi.unschedulable_plugins, qpi.pending_plugins = set(plugins), set(pending)
        assert self.queue.add_unschedulable_if_not_present(qpi, cycle) is None

    @rule(data=st.data())
    def bind(self, data: st.DataObject) -> None:
        if not self.in_flight:
            return
        uid = data.draw(st.sampled_from(sorted(self.in_flight)))
        qpi, _ = self.in_flight.pop(uid)
        self.queue.done(uid)
        name = qpi.pod["metadata"]["name"]
        if self._uid_of(name) == uid:
            bound = with_(self.live.pop(name), lambda x: x["spec"].update(nodeName="n1"))
            self.queue.delete(bound)
            self.queue.assigned_pod_added(bound)

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        if name in self.live:
            self.queue.delete(self.live.pop(name))

    @rule(name=st.sampled_from(NAMES), what=st.sampled_from(["label", "ungate", "annotate", "label+ungate"]))
    def update(self, name: str, what: str) -> None:
        if name not in self.live or (not self.hints and self._busy(name)):
            return  # without hints upstream queues an in-flight pod again on update; not modelled
        old = self.live[name]
        self.serial += 1
        edit = {
            "label": lambda x: x["metadata"]["labels"].update(v=str(self.serial)),
            "ungate": lambda x: x["spec"].pop("schedulingGates", None),
            "annotate": lambda x: x["metadata"].update(annotations={"n": str(self.serial)}),
            "label+ungate": lambda x: (
                x["metadata"]["labels"].update(v=str(self.serial)),
                x["spec"].pop("schedulingGates", None),
            ),
        }[what]
        self.live[name] = new = with_(old, edit)
        self.queue.update(old, new)

    @rule(event=st.sampled_from(EVENTS))
    def event(self, event: ClusterEvent) -> None:
        self.queue.move_all_to_active_or_backoff_queue(event, None, {"metadata": {"uid": "x"}})

    @rule(name=st.sampled_from(NAMES))
    def activate(self, name: str) -> None:
        self.queue.activate([self.live.get(name) or pod(name)])

    @rule(dt=st.sampled_from([0.5, 1.0, 3.0, 11.0, 301.0]))
    def tick(self, dt: float) -> None:
        self.clock.step(dt)
        self.queue.flush_backoff_q_completed()
        self.queue.flush_unschedulable_pods_leftover()

    @invariant()
    def each_pod_in_one_place(self) -> None:
        queue = self.queue
        active, backoff, unsched = (
            [p["metadata"]["name"] for p in pods]
            for pods in (queue.pods_in_active_q(), queue.pods_in_backoff_q(), queue.unschedulable_pods())
        )
        everything = active + backoff + unsched
        assert len(everything) == len(set(everything)), (active, backoff, unsched)
        busy = {qpi.pod["metadata"]["name"] for qpi, _ in self.in_flight.values()}
        assert set(everything) == {n for n in self.live if n not in busy}
        assert sorted(p["metadata"]["uid"] for p in queue.in_flight_pods()) == (
            sorted(self.in_flight) if self.hints else []
        )
        if not self.in_flight:
            assert queue.in_flight_events() == []
        gated = sum(1 for n in unsched if (info := queue.get_pod(n, "default")) is not None and info.gated)
        assert queue.counts()["gated"] == gated
        for n in active + backoff:
            info = queue.get_pod(n, "default")
            assert info is not None and not info.gated and info.pod is self.live[n]
        assert len(queue) == len(everything)


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(max_examples=150, deadline=None, stateful_step_count=25)
