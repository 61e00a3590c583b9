"""The scheduling queue (upstream: pkg/scheduler/backend/queue/scheduling_queue.go, v1.32).

Pending pods live in exactly one of three places: activeQ (a heap in QueueSort order, popped by the scheduling
loop), backoffQ (pods serving their exponential backoff, ordered by when it ends) and unschedulablePods (pods
that failed and wait for a cluster event that may help them; pods a PreEnqueue plugin rejects wait there too,
marked gated). A popped pod is "in flight" until `done`; cluster events seen meanwhile are remembered and
replayed against it when it comes back unschedulable, so no event that could have helped it is lost.

Everything runs on one asyncio event loop: methods are plain calls, only `pop` and `run` await.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import metrics
from . import queue_events as qe
from .framework.interface import (
    ClusterEvent,
    Code,
    Pod,
    PreEnqueuePlugin,
    QueueingHint,
    QueueingHintFn,
    Status,
)
from .framework.types import PodInfo, QueuedPodInfo, pod_key, pod_priority
from .queue_active import ActiveQueue, Heap
from .queue_events import *  # noqa: F403  (the events belong to the queue's API, as upstream's)
from .queue_nominator import Nominator

log = logging.getLogger(__name__)


# -- the queue ---------------------------------------------------------------------------------------------------

# Where a pod goes after an event (upstream: queueingStrategy).
QUEUE_SKIP, QUEUE_AFTER_BACKOFF, QUEUE_IMMEDIATELY = 0, 1, 2
ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q = "active", "backoff", "unschedulable"

HintEntry = tuple[ClusterEvent, str, QueueingHintFn | None]


def _uid(pod: Pod) -> str:
    return pod["metadata"].get("uid", "")


def _profile(pod: Pod) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"


def _priority_sort_key(qpi: QueuedPodInfo) -> tuple[int, float]:
    """PrioritySort's order, for a queue built without a QueueSort plugin: higher priority, then older."""
    return (-pod_priority(qpi.pod), qpi.timestamp)


class PriorityQueue:
    """Upstream's PriorityQueue. `less` is the QueueSort plugin's; `pre_enqueue_plugins` and
    `queueing_hint_map` are keyed by profile (the pod's spec.schedulerName). `pod_getter(ns, name)` lets the
    nominator skip pods that are gone or bound; `namespace_labels(ns)` serves affinity namespace selectors."""

    # How often `run` flushes the backoff queue and the unschedulable leftovers (upstream: 1 s and 30 s).
    backoff_flush_period = 1.0
    unschedulable_flush_period = 30.0

    def __init__(
        self,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None,
        *,
        pre_enqueue_plugins: Mapping[str, list[PreEnqueuePlugin]] | None = None,
        queueing_hint_map: Mapping[str, list[HintEntry]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        pod_max_in_unschedulable_pods_duration: float = 300.0,
        queueing_hints_enabled: bool = True,
        pod_getter: Callable[[str, str], Pod | None] | None = None,
        namespace_labels: Callable[[str], dict[str, str] | None] | None = None,
    ) -> None:
        self.clock = clock
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable_pods_duration = pod_max_in_unschedulable_pods_duration
        self.queueing_hints_enabled = queueing_hints_enabled
        self.pre_enqueue_plugins = {k: list(v) for k, v in (pre_enqueue_plugins or {}).items()}
        self.queueing_hint_map = {k: list(v) for k, v in (queueing_hint_map or {}).items()}
        self.namespace_labels = namespace_labels
        self.nominator = Nominator(pod_getter)
        # The default QueueSort plugin offers a sort key equivalent to its less: compare keys, not calls.
        sort_key = getattr(getattr(less, "__self__", None), "sort_key", None)
        if less is None:
            sort_key = _priority_sort_key
        self._sort_key: Callable[[QueuedPodInfo], Any] | None = sort_key
        self._active = ActiveQueue(None if sort_key is not None else less, queueing_hints_enabled)
        self._backoff = Heap()  # ranked by backoff expiry
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: set[str] = set()  # keys in _unschedulable whose pod a PreEnqueue plugin rejected
        self._move_request_cycle = -1  # last cycle a move request came in (the rule without queueing hints)
        self._interest: dict[tuple[str, int], bool] = {}
        self._closed = False
        self._wakeup = asyncio.Event()
        self._stop = asyncio.Event()
        self._gauges = [metrics.pending_pods.labels(q) for q in ("active", "backoff", "unschedulable", "gated")]
        self._gauge_values = (-1, -1, -1, -1)
        self._incoming_children: dict[tuple[str, str], Any] = {}
        self._reason_children: dict[tuple[str, str], Any] = {}

    # -- sizes and listings ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    def counts(self) -> dict[str, int]:
        """Pods per queue; "unschedulable" excludes the gated ones, as the scheduler_pending_pods gauge does."""
        gated = len(self._gated)
        return {
            "active": len(self._active), "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable) - gated, "gated": gated,
        }  # fmt: skip

    def scheduling_cycle(self) -> int:
        return self._active.cycle

    def pods_in_active_q(self) -> list[Pod]:
        return [q.pod for q in self._active.infos()]

    def pods_in_backoff_q(self) -> list[Pod]:
        return [q.pod for q in self._backoff.infos()]

    def unschedulable_pods(self) -> list[Pod]:
        return [q.pod for q in self._unschedulable.values()]

    def in_flight_pods(self) -> list[Pod]:
        return self._active.in_flight_pods()

    def in_flight_events(self) -> list[ClusterEvent]:
        return self._active.in_flight_events()

    def get_pod(self, name: str, namespace: str) -> QueuedPodInfo | None:
        key = f"{namespace}/{name}"
        return self._backoff.get(key) or self._unschedulable.get(key) or self._active.get(key)

    def pending_pods(self) -> tuple[list[Pod], str]:
        active, backoff = self.pods_in_active_q(), self.pods_in_backoff_q()
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(self._unschedulable)}"
        return active + backoff + self.unschedulable_pods(), summary

    # -- backoff ----------------------------------------------------------------------------------------------

    def calculate_backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """Initial backoff doubled per attempt after the first, capped; no penalty before any attempt."""
        if qpi.attempts == 0:
            return 0.0
        duration = self.pod_initial_backoff
        for _ in range(1, qpi.attempts):
            if duration > self.pod_max_backoff - duration:
                return self.pod_max_backoff
            duration += duration
        return duration

    def backoff_time(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.calculate_backoff_duration(qpi)

    def is_pod_backing_off(self, qpi: QueuedPodInfo) -> bool:
        # A gated pod never got a scheduling attempt from this state: it owes no backoff.
        return not qpi.gated and self.backoff_time(qpi) > self.clock()

    # -- adding, updating, deleting pods ------------------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new pending pod (upstream: Add)."""
        if self._move_to_active(self._new_queued_pod_info(pod), qe.UNSCHEDULED_POD_ADD.label):
            self._broadcast()
        self._sync_gauges()

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed: update it where it is; an unschedulable pod may move (upstream: Update)."""
        try:
            self._update(old, new)
        finally:
            self._sync_gauges()

    def _update(self, old: Pod | None, new: Pod) -> None:
        events: list[ClusterEvent] = []
        if self.queueing_hints_enabled:
            events = qe.pod_scheduling_properties_change(new, old if old is not None else new)
            # Being scheduled right now: keep the update as an event that may requeue it when it comes back.
            if self._active.add_events_if_pod_in_flight(old, new, events):
                return
        if old is not None:
            key = pod_key(old)
            qpi = self._active.get(key)
            if qpi is not None:
                qpi.pod_info = PodInfo(new)
                self._active.add_or_update(key, qpi, self._active_rank(qpi))
                self.nominator.update_nominated_pod(old, qpi.pod_info)
                return
            qpi = self._backoff.get(key)
            if qpi is not None:
                qpi.pod_info = PodInfo(new)  # its timestamp and attempts, hence its backoff, stay
                self._backoff.add_or_update(key, qpi, self.backoff_time(qpi))
                self.nominator.update_nominated_pod(old, qpi.pod_info)
                return
        key = pod_key(new)
        qpi = self._unschedulable.get(key)
        if qpi is None:
            if self._move_to_active(self._new_queued_pod_info(new), qe.UNSCHEDULED_POD_UPDATE.label):
                self._broadcast()
            return
        qpi.pod_info = PodInfo(new)
        self.nominator.update_nominated_pod(old if old is not None else new, qpi.pod_info)
        if self.queueing_hints_enabled:
            for event in events:
                strategy = self._is_pod_worth_requeuing(qpi, event, old, new)
                if strategy == QUEUE_SKIP:
                    continue
                self._remove_unschedulable(key)
                queue = self._requeue(qpi, strategy, event.label)
                if queue == ACTIVE_Q:
                    self._broadcast()
                # Upstream keeps looping here; stopping at the first move keeps the pod in one queue only.
                if queue != UNSCHEDULABLE_Q:
                    break
            return
        if old is not None and qe.is_pod_updated(old, new):
            if self.is_pod_backing_off(qpi):
                self._move_to_backoff(qpi, qe.UNSCHEDULED_POD_UPDATE.label)
            elif self._move_to_active(qpi, qe.UNSCHEDULED_POD_UPDATE.label):
                self._broadcast()

    def delete(self, pod: Pod) -> None:
        """The pod is gone or bound: forget it wherever it waits (upstream: Delete)."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod_key(pod)
        qpi = self._active.delete(key) or self._backoff.delete(key) or self._remove_unschedulable(key)
        if qpi is not None:
            self._count_reasons(qpi, -1)
        self._sync_gauges()

    def activate(self, pods: Mapping[str, Pod] | Iterable[Pod]) -> None:
        """Move these pods to activeQ now, skipping backoff (upstream: Activate). A pod being scheduled is
        requeued when it comes back; a pod the queue does not know is ignored."""
        activated = False
        for pod in pods.values() if isinstance(pods, Mapping) else pods:
            key = pod_key(pod)
            qpi = self._unschedulable.get(key) or self._backoff.get(key)
            if qpi is not None and self._move_to_active(qpi, qe.FORCE_ACTIVATE_LABEL):
                activated = True
                continue
            # Not queued (or still gated): if it is being scheduled, make it come back to activeQ.
            if self.queueing_hints_enabled:
                self._active.add_events_if_pod_in_flight(None, pod, [qe.FORCE_ACTIVATE])
            self._move_request_cycle = self._active.cycle
        if activated:
            self._broadcast()
        self._sync_gauges()

    # -- the scheduling loop's side -------------------------------------------------------------------------------

    async def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ, waiting for one; None once the queue is closed and activeQ is empty."""
        while True:
            qpi = self.try_pop()
            if qpi is not None:
                return qpi
            if self._closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()

    def try_pop(self) -> QueuedPodInfo | None:
        """`pop` without waiting: None when activeQ is empty."""
        qpi = self._active.pop_for_scheduling()
        if qpi is not None:
            # This attempt starts afresh: the plugins that rejected the last one are no longer the reason.
            self._count_reasons(qpi, -1)
            qpi.unschedulable_plugins = set()
            qpi.pending_plugins = set()
            self._sync_gauges()
        return qpi

    def done(self, uid: str) -> None:
        """The scheduling (and binding) attempt of this pod is over (upstream: Done)."""
        if self.queueing_hints_enabled:
            self._active.done(uid)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, pod_scheduling_cycle: int) -> str | None:
        """Give back a pod whose attempt failed (upstream: AddUnschedulableIfNotPresent). It goes to backoffQ
        when an event seen during its attempt may help (by the queueing hints of the plugins that rejected it,
        or, without hints, any move request since its cycle began) or when no plugin rejected it (an error);
        to activeQ when a Pending plugin's hint says Queue; otherwise to unschedulablePods. Returns upstream's
        error text instead of raising when the pod is already queued."""
        pod = qpi.pod
        try:
            key = pod_key(pod)
            for where, present in (
                ("unschedulable queue", key in self._unschedulable),
                ("active queue", key in self._active),
                ("backoff queue", key in self._backoff),
            ):
                if present:
                    return f"Pod {key} is already present in the {where}"
            qpi.timestamp = self.clock()
            self._count_reasons(qpi, 1)
            if not self.queueing_hints_enabled:
                if self._move_request_cycle >= pod_scheduling_cycle or not (
                    qpi.unschedulable_plugins or qpi.pending_plugins
                ):
                    self._move_to_backoff(qpi, qe.SCHEDULE_ATTEMPT_FAILURE)
                else:
                    self._add_unschedulable(key, qpi, qe.SCHEDULE_ATTEMPT_FAILURE)
                return None
            strategy = self._determine_hint_for_in_flight_pod(qpi)
            if self._requeue(qpi, strategy, qe.SCHEDULE_ATTEMPT_FAILURE) == ACTIVE_Q:
                self._broadcast()
            return None
        finally:
            self.done(_uid(pod))
            self._sync_gauges()

    # -- cluster events ------------------------------------------------------------------------------------------

    def move_all_to_active_or_backoff_queue(
        self, event: ClusterEvent, old: Any = None, new: Any = None, precheck: Callable[[Pod], bool] | None = None
    ) -> None:
        """A cluster event: move the unschedulable pods it may help (upstream: MoveAllToActiveOrBackoffQueue)."""
        if self._is_event_of_interest(event):
            pods = [q for q in self._unschedulable.values() if precheck is None or precheck(q.pod)]
            self._move_pods(pods, event, old, new)
        self._sync_gauges()

    def assigned_pod_added(self, pod: Pod) -> None:
        """A pod was bound: only pods whose affinity terms select it (or PodTopologySpread rejections in its
        namespace) may be helped (upstream: AssignedPodAdded)."""
        self._move_pods(self._pods_with_cross_topology_term(pod), qe.ASSIGNED_POD_ADD, None, pod)
        self._sync_gauges()

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent = qe.ASSIGNED_POD_UPDATE) -> None:
        """A bound pod changed (upstream: AssignedPodUpdated). Only a scale-down frees room for any pod;
        other changes (labels) matter to pods with affinity terms or spread constraints only."""
        if qe.POD_SCALE_DOWN.matches(event):
            self.move_all_to_active_or_backoff_queue(event, old, new)
            return
        self._move_pods(self._pods_with_cross_topology_term(new), event, old, new)
        self._sync_gauges()

    def flush_backoff_q_completed(self) -> None:
        """Move the pods whose backoff is over to activeQ."""
        activated = False
        while (head := self._backoff.peek()) is not None and not self.is_pod_backing_off(head):
            self._backoff.pop()
            activated |= self._move_to_active(head, qe.BACKOFF_COMPLETE)
        if activated:
            self._broadcast()
        self._sync_gauges()

    def flush_unschedulable_pods_leftover(self) -> None:
        """Pods unschedulable for longer than the maximum get another try whatever happened meanwhile."""
        now = self.clock()
        limit = self.pod_max_in_unschedulable_pods_duration
        pods = [q for q in self._unschedulable.values() if now - q.timestamp > limit]
        if pods:
            self._move_pods(pods, qe.UNSCHEDULABLE_TIMEOUT, None, None)
        self._sync_gauges()

    async def run(self) -> None:
        """Flush backoffQ every second and the unschedulable leftovers every 30 s until closed."""

        async def every(period: float, flush: Callable[[], None]) -> None:
            while not self._closed:
                flush()
                try:
                    await asyncio.wait_for(self._stop.wait(), period)
                except TimeoutError:
                    pass

        await asyncio.gather(
            every(self.backoff_flush_period, self.flush_backoff_q_completed),
            every(self.unschedulable_flush_period, self.flush_unschedulable_pods_leftover),
        )

    def close(self) -> None:
        """Wake every `pop` waiter (they return None once activeQ is empty) and stop `run`."""
        self._closed = True
        self._stop.set()
        self._wakeup.set()

    # -- nominated pods -------------------------------------------------------------------------------------------

    def add_nominated_pod(self, pod_info: PodInfo, nominating_info: Any = None) -> None:
        """Nominate the pod (a NominatingInfo, a node name, or None to keep status.nominatedNodeName)."""
        self.nominator.add_nominated_pod(pod_info, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self.nominator.delete_nominated_pod_if_exists(pod)

    def update_nominated_pod(self, old: Pod, new_pod_info: PodInfo) -> None:
        self.nominator.update_nominated_pod(old, new_pod_info)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to the node, each in the freshest version the queue holds."""
        out = []
        for pi in self.nominator.nominated_pod_infos_for_node(node_name):
            key = pi.key
            qpi = self._active.get(key) or self._unschedulable.get(key) or self._backoff.get(key)
            out.append(qpi.pod_info if qpi is not None and qpi.pod_info.uid == pi.uid else pi)
        return out

    def has_nominated_pods(self, node_name: str) -> bool:
        return bool(self.nominator.nominated_pods.get(node_name))

    @property
    def nominations_version(self) -> int:
        """Changes whenever a nomination changes (the framework keeps per-cycle answers until then)."""
        return self.nominator.version

    def nominated_node_names(self) -> set[str]:
        """Nodes with at least one nominated pod (the framework judges those nodes per node)."""
        return {name for name, pods in self.nominator.nominated_pods.items() if pods}

    # -- internals -----------------------------------------------------------------------------------------------

    def _new_queued_pod_info(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(PodInfo(pod), timestamp=self.clock())

    def _active_rank(self, qpi: QueuedPodInfo) -> Any:
        return self._sort_key(qpi) if self._sort_key is not None else None

    def _broadcast(self) -> None:
        self._wakeup.set()

    def _incoming(self, queue: str, event: str) -> None:
        child = self._incoming_children.get((queue, event))
        if child is None:
            child = self._incoming_children[(queue, event)] = metrics.queue_incoming_pods.labels(queue, event)
        child.inc()

    def _sync_gauges(self) -> None:
        # Setting a gauge takes a lock: only touch the ones whose value changed.
        values = (
            len(self._active), len(self._backoff), len(self._unschedulable) - len(self._gated), len(self._gated)
        )  # fmt: skip
        if values != self._gauge_values:
            for gauge, value, last in zip(self._gauges, values, self._gauge_values, strict=True):
                if value != last:
                    gauge.set(value)
            self._gauge_values = values

    def _count_reasons(self, qpi: QueuedPodInfo, delta: int) -> None:
        """scheduler_unschedulable_pods: one per queued pod and plugin that rejected it."""
        plugins = qpi.unschedulable_plugins | qpi.pending_plugins
        if plugins:
            profile = _profile(qpi.pod)
            for plugin in plugins:
                self._reason_gauge(plugin, profile).inc(delta)

    def _reason_gauge(self, plugin: str, profile: str) -> Any:
        child = self._reason_children.get((plugin, profile))
        if child is None:
            child = self._reason_children[(plugin, profile)] = metrics.unschedulable_pods.labels(plugin, profile)
        return child

    def _add_unschedulable(self, key: str, qpi: QueuedPodInfo, event: str) -> None:
        if key not in self._unschedulable:
            self._incoming(UNSCHEDULABLE_Q, event)
        self._unschedulable[key] = qpi
        if qpi.gated:
            self._gated.add(key)
        else:
            self._gated.discard(key)

    def _remove_unschedulable(self, key: str) -> QueuedPodInfo | None:
        self._gated.discard(key)
        return self._unschedulable.pop(key, None)

    def _run_pre_enqueue_plugins(self, qpi: QueuedPodInfo) -> bool:
        """Whether every PreEnqueue plugin of the pod's profile admits it; the one that does not is recorded
        as the pod's gating plugin and among its unschedulable plugins (so events for it can move the pod)."""
        plugins = self.pre_enqueue_plugins.get(_profile(qpi.pod))
        if not plugins:
            qpi.gating_plugin = ""
            return True
        start = time.perf_counter()
        status: Status | None = None
        try:
            for pl in plugins:
                try:
                    status = pl.pre_enqueue(qpi.pod)
                except Exception as e:  # a plugin bug gates the pod instead of breaking the queue
                    status = Status.as_error(e, pl.name)
                if status is None or status.code == Code.SUCCESS:
                    continue
                if pl.name not in qpi.unschedulable_plugins:
                    qpi.unschedulable_plugins.add(pl.name)
                    self._reason_gauge(pl.name, _profile(qpi.pod)).inc()
                qpi.gating_plugin = pl.name
                log.debug("pod %s gated by PreEnqueue plugin %s: %s", pod_key(qpi.pod), pl.name, status.message())
                return False
            status = None
            qpi.gating_plugin = ""
            return True
        finally:
            code = "Success" if status is None else str(status.code)
            metrics.child(metrics.framework_extension_point_duration, "PreEnqueue", code, _profile(qpi.pod)).observe(
                time.perf_counter() - start
            )

    def _move_to_active(self, qpi: QueuedPodInfo, event: str) -> bool:
        """Into activeQ if the PreEnqueue plugins admit it, else (gated) into unschedulablePods."""
        qpi.gated = not self._run_pre_enqueue_plugins(qpi)
        key = pod_key(qpi.pod)
        if qpi.gated:
            if key not in self._active and key not in self._backoff:
                self._add_unschedulable(key, qpi, event)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self.clock()
        self._active.add_or_update(key, qpi, self._active_rank(qpi))
        self._remove_unschedulable(key)
        self._backoff.delete(key)
        self._incoming(ACTIVE_Q, event)
        if event in (qe.UNSCHEDULED_POD_ADD.label, qe.UNSCHEDULED_POD_UPDATE.label):
            self.nominator.add_nominated_pod(qpi.pod_info, None)
        return True

    def _move_to_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        key = pod_key(qpi.pod)
        self._remove_unschedulable(key)
        self._backoff.add_or_update(key, qpi, self.backoff_time(qpi))
        self._incoming(BACKOFF_Q, event)

    def _requeue(self, qpi: QueuedPodInfo, strategy: int, event: str) -> str:
        """Put a pod (in no queue now) where the strategy says; returns the queue it landed in."""
        if strategy == QUEUE_SKIP:
            self._add_unschedulable(pod_key(qpi.pod), qpi, event)
            return UNSCHEDULABLE_Q
        # Its backoff may have run out while it waited, so check before parking it in backoffQ.
        if strategy == QUEUE_AFTER_BACKOFF and self.is_pod_backing_off(qpi):
            self._move_to_backoff(qpi, event)
            return BACKOFF_Q
        return ACTIVE_Q if self._move_to_active(qpi, event) else UNSCHEDULABLE_Q

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        if qe.is_wildcard(event):
            return True
        k = (event.resource, int(event.action))
        hit = self._interest.get(k)
        if hit is None:
            hit = self._interest[k] = any(
                registered.matches(event) for entries in self.queueing_hint_map.values() for registered, _, _ in entries
            )
        return hit

    def _is_pod_worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> int:
        """Ask the hints of the plugins that rejected the pod (upstream: isPodWorthRequeuing). A Pending
        plugin saying Queue skips backoff; an unschedulable plugin saying Queue means after backoff."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return QUEUE_AFTER_BACKOFF  # no plugin to ask: it failed on an error, retry it
        if qe.is_wildcard(event):
            # A wildcard carrying a pod (ForceActivate of an in-flight pod) is meant for that pod only.
            if new is not None and not (isinstance(new, dict) and _uid(new) == _uid(qpi.pod)):
                return QUEUE_SKIP
            return QUEUE_AFTER_BACKOFF
        entries = self.queueing_hint_map.get(_profile(qpi.pod))
        if entries is None:
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP
        for registered, plugin, fn in entries:
            if plugin not in rejectors or not registered.matches(event):
                continue
            if self._hint(fn, plugin, qpi.pod, event, old, new) == QueueingHint.SKIP:
                continue
            if plugin in qpi.pending_plugins:
                return QUEUE_IMMEDIATELY
            if not qpi.pending_plugins:
                return QUEUE_AFTER_BACKOFF
            strategy = QUEUE_AFTER_BACKOFF  # a Pending plugin may still say Queue: keep looking
        return strategy

    def _hint(self, fn: QueueingHintFn | None, plugin: str, pod: Pod, event: ClusterEvent, old: Any, new: Any) -> int:
        # Without the feature every registered event counts as Queue (upstream swaps in a Queue-always hint).
        if fn is None or not self.queueing_hints_enabled:
            return QueueingHint.QUEUE
        try:
            return fn(pod, old, new)
        except Exception:  # an erring hint must not strand the pod: treat it as Queue
            log.exception("queueing hint of %s for event %s failed on pod %s", plugin, event.label, pod_key(pod))
            return QueueingHint.QUEUE

    def _move_pods(self, pods: list[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        """Requeue the given unschedulable pods the event may help (upstream: movePodsToActiveOrBackoffQueue),
        then remember the event for the pods in flight."""
        if not self._is_event_of_interest(event):
            return
        activated = False
        for qpi in pods:
            # Only an update of the pod itself can lift its scheduling gates: no cluster event can.
            if qpi.gated and qe.SCHEDULING_GATES in qpi.unschedulable_plugins:
                continue
            strategy = self._is_pod_worth_requeuing(qpi, event, old, new)
            if strategy == QUEUE_SKIP:
                continue
            self._remove_unschedulable(pod_key(qpi.pod))
            activated |= self._requeue(qpi, strategy, event.label) == ACTIVE_Q
        self._move_request_cycle = self._active.cycle
        if self.queueing_hints_enabled:
            self._active.add_event_if_any_in_flight(old, new, event)
        if activated:
            self._broadcast()

    def _pods_with_cross_topology_term(self, pod: Pod) -> list[QueuedPodInfo]:
        md = pod.get("metadata") or {}
        ns = md.get("namespace", "")
        ns_labels: dict[str, str] | None = None
        looked_up = False
        out = []
        for qpi in self._unschedulable.values():
            if qe.POD_TOPOLOGY_SPREAD in qpi.unschedulable_plugins and qpi.pod["metadata"].get("namespace", "") == ns:
                out.append(qpi)
                continue
            terms = qpi.pod_info.required_affinity_terms
            if terms and not looked_up:
                ns_labels = self.namespace_labels(ns) if self.namespace_labels is not None else None
                looked_up = True
            if any(t.matches(pod, ns_labels) for t in terms):
                out.append(qpi)
        return out

    def _determine_hint_for_in_flight_pod(self, qpi: QueuedPodInfo) -> int:
        """Replay the events seen while the pod was being scheduled (upstream:
        determineSchedulingHintForInFlightPod); none that helps leaves it unschedulable."""
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            return QUEUE_AFTER_BACKOFF
        events = self._active.cluster_events_for_pod(_uid(qpi.pod))
        if events is None:
            log.error("in-flight pod %s is not tracked by the scheduling queue", pod_key(qpi.pod))
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP
        for e in events:
            s = self._is_pod_worth_requeuing(qpi, e.event, e.old, e.new)
            if s == QUEUE_IMMEDIATELY:
                return s
            if s == QUEUE_AFTER_BACKOFF:
                strategy = s
                if not qpi.pending_plugins:
                    return s
        return strategy
