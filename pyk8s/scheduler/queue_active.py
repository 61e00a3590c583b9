"""activeQ and the in-flight bookkeeping of the scheduling queue (upstream: pkg/scheduler/backend/queue/
active_queue.go and backend/heap/heap.go, v1.32), used by `queue.PriorityQueue`.

`Heap` is a binary heap of QueuedPodInfos by pod key that can update and delete (activeQ and backoffQ use it).
`ActiveQueue` is activeQ proper: popping counts the attempt and the scheduling cycle and, with queueing hints,
records the pod as in flight; cluster events that arrive while pods are in flight are kept in one sequence so
that each pod, when it comes back unschedulable, sees exactly the events that happened during its attempt.
"""

from __future__ import annotations

import bisect
import heapq
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from .framework.interface import ClusterEvent, Pod
from .framework.types import QueuedPodInfo, pod_key

log = logging.getLogger(__name__)


class _LessItem(list[Any]):
    """A heap item compared with the QueueSort plugin's less function instead of by rank."""

    __slots__ = ("less",)
    less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]

    def __lt__(self, other: list[Any]) -> bool:  # type: ignore[override]
        return bool(self.less(self[3], other[3]))


class Heap:
    """QueuedPodInfos by pod key in a binary heap (heapq) that can also update and delete any item.

    Items are [rank, sequence, key, info] lists compared in C when the heap has no `less` (rank is then a
    precomputed sort key, ties going to the earlier insertion); with `less(a, b)` they compare through it as
    upstream's heap does. Updated or deleted items are left in place and skipped when they surface (only the
    item in `_entries` under its key is alive); the heap is rebuilt when such leftovers outnumber the living.
    """

    __slots__ = ("_entries", "_heap", "_less", "_seq")

    def __init__(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None) -> None:
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._less = less
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[3]

    def infos(self) -> list[QueuedPodInfo]:
        return [e[3] for e in self._entries.values()]

    def add_or_update(self, key: str, info: QueuedPodInfo, rank: Any = None) -> None:
        self._seq += 1
        if self._less is None:
            entry: list[Any] = [rank, self._seq, key, info]
        else:
            entry = _LessItem((rank, self._seq, key, info))
            entry.less = self._less
        self._entries[key] = entry
        heapq.heappush(self._heap, entry)
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)

    def peek(self) -> QueuedPodInfo | None:
        heap, entries = self._heap, self._entries
        while heap and entries.get(heap[0][2]) is not heap[0]:
            heapq.heappop(heap)  # a leftover of an update or delete
        return heap[0][3] if heap else None

    def pop(self) -> QueuedPodInfo | None:
        info = self.peek()
        if info is not None:
            del self._entries[heapq.heappop(self._heap)[2]]
        return info

    def delete(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(key, None)
        return None if entry is None else entry[3]


class InFlightEvent(NamedTuple):
    seq: int
    event: ClusterEvent
    old: Any
    new: Any


def _uid(pod: Pod) -> str:
    return pod["metadata"].get("uid", "")


def _seq(e: InFlightEvent) -> int:
    return e.seq


class ActiveQueue(Heap):
    """activeQ with the scheduling cycle counter and, when queueing hints are on, the in-flight pods and the
    events received while they are in flight (upstream: activeQueue)."""

    __slots__ = ("_events", "_in_flight", "_next_seq", "cycle", "track_in_flight")

    def __init__(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None, track_in_flight: bool) -> None:
        super().__init__(less)
        self.track_in_flight = track_in_flight
        self.cycle = 0
        # UID -> (sequence number, pod as popped); dicts keep insertion order, so the first is the oldest.
        self._in_flight: dict[str, tuple[int, Pod]] = {}
        # Events after the oldest in-flight pod started, in arrival order; a pod's events are those with a
        # larger sequence number than its own (upstream keeps pods and events in one linked list instead).
        self._events: list[InFlightEvent] = []
        self._next_seq = 0

    def pop_for_scheduling(self) -> QueuedPodInfo | None:
        """The head, counted as an attempt and a scheduling cycle and marked in flight; None when empty."""
        while (qpi := self.pop()) is not None:
            qpi.attempts += 1
            if self.track_in_flight:
                uid = _uid(qpi.pod)
                if uid in self._in_flight:
                    # The same pod twice (a bug elsewhere): drop this copy, the one in flight comes back anyway.
                    log.error("pod %s is tracked in multiple places in the scheduler; discarding it", pod_key(qpi.pod))
                    continue
                self._next_seq += 1
                self._in_flight[uid] = (self._next_seq, qpi.pod)
            self.cycle += 1
            return qpi
        return None

    def in_flight_pods(self) -> list[Pod]:
        return [pod for _, pod in self._in_flight.values()]

    def in_flight_events(self) -> list[ClusterEvent]:
        return [e.event for e in self._events]

    def has_in_flight(self) -> bool:
        return bool(self._in_flight)

    def add_events_if_pod_in_flight(self, old: Any, new: Pod, events: list[ClusterEvent]) -> bool:
        """Record events about this pod if it is in flight; whether it is."""
        if _uid(new) not in self._in_flight:
            return False
        for event in events:
            self._push_event(event, old, new)
        return True

    def add_event_if_any_in_flight(self, old: Any, new: Any, event: ClusterEvent) -> bool:
        if not self._in_flight:
            return False
        self._push_event(event, old, new)
        return True

    def cluster_events_for_pod(self, uid: str) -> list[InFlightEvent] | None:
        """The events received since this pod was popped; None when it is not in flight (a caller bug)."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return None
        return self._events[bisect.bisect_right(self._events, entry[0], key=_seq) :]

    def done(self, uid: str) -> None:
        if self._in_flight.pop(uid, None) is None:
            return
        # Events older than every pod still in flight can no longer matter to anyone.
        if not self._in_flight:
            self._events.clear()
            return
        oldest = next(iter(self._in_flight.values()))[0]
        del self._events[: bisect.bisect_left(self._events, oldest, key=_seq)]

    def _push_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        self._next_seq += 1
        self._events.append(InFlightEvent(self._next_seq, event, old, new))
