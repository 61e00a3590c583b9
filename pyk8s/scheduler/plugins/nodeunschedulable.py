"""The NodeUnschedulable Filter plugin (upstream: plugins/nodeunschedulable/node_unschedulable.go): nodes with
spec.unschedulable (cordoned) reject pods unless they tolerate the node.kubernetes.io/unschedulable:NoSchedule
taint, as DaemonSet pods do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..framework.interface import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Pod,
    QueueingHint,
    Status,
)
from .helper import pod_tolerations, tolerations_tolerate_taint

if TYPE_CHECKING:
    from ..framework.snapshot import Snapshot
    from ..framework.types import NodeInfo

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def _unschedulable(node: dict[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def tolerates_unschedulable(pod: Pod) -> bool:
    return tolerations_tolerate_taint(pod_tolerations(pod), UNSCHEDULABLE_TAINT)


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = "NodeUnschedulable"
    node_local: ClassVar[bool] = True  # verdicts shared by pods of one equivalence class
    node_object_only: ClassVar[bool] = True  # pods coming and going leave its verdicts alone

    def __init__(self, enable_queueing_hints: bool = True) -> None:
        self.enable_queueing_hints = enable_queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> NodeUnschedulable:
        gates = getattr(handle, "feature_gates", None) or {}
        return cls(enable_queueing_hints=gates.get("SchedulerQueueingHints", True))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enable_queueing_hints:
            # preCheck may swallow Node/Add, hence the extra label update (kubernetes#109437).
            action = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
            return [ClusterEventWithHint(ClusterEvent(NODE, action), self.is_schedulable_after_node_change)]
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self.is_schedulable_after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS), self.is_schedulable_after_pod_toleration_change
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A node that became schedulable, or a schedulable node that appeared."""
        if not isinstance(new, dict) or (old is not None and not isinstance(old, dict)):
            return QueueingHint.QUEUE
        if _unschedulable(new):
            return QueueingHint.SKIP
        if old is None or _unschedulable(old):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def is_schedulable_after_pod_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The rejected pod itself gained a toleration of the unschedulable taint. Tolerations can only be
        added, and a pod already tolerating it was never rejected here, so the old pod need not be looked at."""
        if not isinstance(new, dict):
            return QueueingHint.QUEUE
        if new["metadata"].get("uid", "") != pod["metadata"].get("uid", ""):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if tolerates_unschedulable(new) else QueueingHint.SKIP

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            # Upstream's older nil-node guard; v1.32 assumes the snapshot always carries the Node.
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNKNOWN_CONDITION)
        if not _unschedulable(node) or tolerates_unschedulable(pod):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        if tolerates_unschedulable(pod):
            return np.ones(len(snapshot.node_info_list), dtype=bool)
        return snapshot.node_derived(("NodeUnschedulable", "schedulable"), lambda: _schedulable_mask(snapshot))


def _schedulable_mask(snapshot: Snapshot) -> np.ndarray:
    nodes = snapshot.node_info_list
    return np.fromiter(
        (ni.node is not None and not _unschedulable(ni.node) for ni in nodes), dtype=bool, count=len(nodes)
    )
