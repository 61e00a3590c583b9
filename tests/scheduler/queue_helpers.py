"""Shared pieces of the scheduling-queue tests: a fake clock, hint functions, PreEnqueue stand-ins and
helpers that put a pod where a test needs it."""

from __future__ import annotations

import copy
from typing import Any

from pyk8s.scheduler.framework.interface import (
    POD,
    ActionType,
    ClusterEvent,
    Code,
    PreEnqueuePlugin,
    QueueingHint,
    Status,
)
from pyk8s.scheduler.framework.types import QueuedPodInfo
from pyk8s.scheduler.metrics import SCHEDULER_REGISTRY
from pyk8s.scheduler.plugins.queuesort import PrioritySort
from pyk8s.scheduler.queue import NODE_ADD, PriorityQueue

from .wrappers import make_pod

PROFILE = "default-scheduler"
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def step(self, dt: float) -> None:
        self.t += dt


def queue_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QUEUE


def skip_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return SKIP


def failing_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("boom")


def same_pod_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QUEUE if new["metadata"]["uid"] == pod["metadata"]["uid"] else SKIP


class Gates(PreEnqueuePlugin):
    """A stand-in for the SchedulingGates plugin: rejects pods that still carry spec.schedulingGates."""

    name = "SchedulingGates"

    def pre_enqueue(self, pod: Any) -> Status | None:
        if (pod.get("spec") or {}).get("schedulingGates"):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates")
        return None


class Denier(PreEnqueuePlugin):
    """A PreEnqueue plugin rejecting pods labelled deny=yes (stands for any non-gate PreEnqueue plugin)."""

    name = "Denier"

    def pre_enqueue(self, pod: Any) -> Status | None:
        if pod["metadata"].get("labels", {}).get("deny") == "yes":
            return Status(Code.UNSCHEDULABLE, "denied")
        return None


GATES_EVENT = ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
POD_LABEL_EVENT = ClusterEvent(POD, ActionType.UPDATE_POD_LABEL)


def new_queue(*entries: tuple[ClusterEvent, str, Any], clock: FakeClock | None = None, **kw: Any) -> PriorityQueue:
    kw.setdefault("less", PrioritySort().less)
    less = kw.pop("less")
    return PriorityQueue(less, queueing_hint_map={PROFILE: list(entries)}, clock=clock or FakeClock(), **kw)


def pod(name: str, **kw: Any) -> dict[str, Any]:
    return make_pod(name, **kw)


def names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def where(queue: PriorityQueue, name: str) -> str | None:
    for label, pods in (
        ("active", queue.pods_in_active_q()),
        ("backoff", queue.pods_in_backoff_q()),
        ("unschedulable", queue.unschedulable_pods()),
    ):
        if name in names(pods):
            return label
    return None


def fail(queue: PriorityQueue, qpi: QueuedPodInfo, *plugins: str, pending: tuple[str, ...] = ()) -> None:
    """What the scheduler does after a failed attempt."""
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    assert queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle()) is None


def unschedulable(queue: PriorityQueue, p: dict[str, Any], *plugins: str, pending: tuple[str, ...] = ()) -> None:
    """Add, pop and fail a pod so it sits in unschedulablePods (or wherever the queue puts it)."""
    queue.add(p)
    qpi = queue.try_pop()
    assert qpi is not None and qpi.pod is p
    fail(queue, qpi, *plugins, pending=pending)


def sample(name: str, labels: dict[str, str]) -> float:
    return SCHEDULER_REGISTRY.get_sample_value(name, labels) or 0.0


def incoming(queue: str, event: str) -> float:
    return sample("scheduler_queue_incoming_pods_total", {"queue": queue, "event": event})


def with_(p: dict[str, Any], fn: Any) -> dict[str, Any]:
    new = copy.deepcopy(p)
    fn(new)
    return new


def gated_queue(clock: FakeClock | None = None, **kw: Any) -> PriorityQueue:
    return new_queue(
        (GATES_EVENT, "SchedulingGates", same_pod_hint),
        (NODE_ADD, "Denier", None),
        (NODE_ADD, "foo", None),
        clock=clock,
        pre_enqueue_plugins={PROFILE: [Gates(), Denier()]},
        **kw,
    )
