"""The SchedulingGates PreEnqueue plugin (upstream: plugins/schedulinggates/scheduling_gates.go): a pod that
still carries spec.schedulingGates stays out of the active queue until the last gate is removed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..framework.interface import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    EnqueueExtensions,
    Pod,
    PreEnqueuePlugin,
    QueueingHint,
    Status,
)


def _uid(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    return (obj.get("metadata") or {}).get("uid", "")


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name: ClassVar[str] = "SchedulingGates"

    def __init__(self, enable_queueing_hints: bool = True) -> None:
        self.enable_queueing_hints = enable_queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> SchedulingGates:
        gates = getattr(handle, "feature_gates", None) or {}
        return cls(enable_queueing_hints=gates.get("SchedulerQueueingHints", True))

    def pre_enqueue(self, pod: Pod) -> Status | None:
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        if not gates:
            return None
        # Go prints a []string with %v as "[a b]".
        names = " ".join(g.get("name", "") for g in gates)
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enable_queueing_hints:
            # Without hints every update of the pod itself requeues it already.
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_gates_eliminated,
            )
        ]

    @staticmethod
    def is_schedulable_after_gates_eliminated(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only the pod whose gates went away can become schedulable through this event."""
        uid = _uid(new)
        if uid is None:
            return QueueingHint.QUEUE  # not a pod: upstream queues on conversion errors
        if uid != pod["metadata"].get("uid", ""):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
