"""The NodeName Filter plugin (upstream: plugins/nodename/node_name.go): a pod naming a node in spec.nodeName
fits only that node. v1.32 has no PreFilter here; the vectorized form marks the one named position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..framework.interface import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Pod,
    Status,
)

if TYPE_CHECKING:
    from ..framework.snapshot import Snapshot
    from ..framework.types import NodeInfo

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    want = (pod.get("spec") or {}).get("nodeName") or ""
    return not want or want == node_info.name


class NodeName(FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = "NodeName"
    node_local: ClassVar[bool] = True  # verdicts shared by pods of one equivalence class
    node_object_only: ClassVar[bool] = True  # pods coming and going leave its verdicts alone

    def __init__(self, enable_queueing_hints: bool = True) -> None:
        self.enable_queueing_hints = enable_queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> NodeName:
        gates = getattr(handle, "feature_gates", None) or {}
        return cls(enable_queueing_hints=gates.get("SchedulerQueueingHints", True))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only a new node can be the named one. Without hints, the queue's preCheck may swallow Node/Add, so
        # upstream also listens to taint and label updates (kubernetes#109437). No hint: always requeue.
        action = ActionType.ADD
        if not self.enable_queueing_hints:
            action |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        return [ClusterEventWithHint(ClusterEvent(NODE, action))]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None:
            return Status(Code.ERROR, "node not found")
        if not fits(pod, node_info):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)
        return None

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        n = len(snapshot.node_info_list)
        want = (pod.get("spec") or {}).get("nodeName") or ""
        if not want:
            return np.ones(n, dtype=bool)
        out = np.zeros(n, dtype=bool)
        i = snapshot.positions.get(want)
        if i is not None:
            out[i] = True
        return out
