"""The PrioritySort QueueSort plugin (upstream: plugins/queuesort/priority_sort.go): pods with a higher
spec.priority leave the queue first; among equals, the one queued earlier.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..framework.interface import QueueSortPlugin
from ..framework.types import QueuedPodInfo, pod_priority


class PrioritySort(QueueSortPlugin):
    name: ClassVar[str] = "PrioritySort"

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> PrioritySort:
        return cls()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = pod_priority(a.pod), pod_priority(b.pod)
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, info: QueuedPodInfo) -> tuple[int, float]:
        """A key ordering pods exactly as `less` does, for heaps and sorted(): smaller sorts first."""
        return (-pod_priority(info.pod), info.timestamp)
