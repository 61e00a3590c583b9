"""The NodePorts PreFilter/Filter plugin (upstream: plugins/nodeports/node_ports.go): a pod asking for host
ports fits only nodes where no pod already holds the same (protocol, port) on the same host IP, 0.0.0.0
conflicting with every IP. In v1.32 only regular containers' ports count, the pod's and those held on the node
(framework.types.host_ports); sidecars' ports count only from v1.34 (kubernetes#132040).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

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
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ..framework.types import NodeInfo, host_ports

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilterNodePorts"
BIND_ALL = "0.0.0.0"

Port = tuple[str, str, int]  # (hostIP, protocol, hostPort), the key of NodeInfo.used_ports


def conflicts(used: Mapping[Port, Any] | Iterable[Port], port: Port) -> bool:
    """Whether `port` clashes with a used one (upstream: HostPortInfo.CheckConflict): a wildcard IP clashes
    with the same protocol and port on any IP; a specific IP with itself and the wildcard."""
    ip, proto, hp = port
    if ip == BIND_ALL:
        return any(u[1] == proto and u[2] == hp for u in used)
    return (BIND_ALL, proto, hp) in used or port in used


def fits_ports(want: Iterable[Port], used: Mapping[Port, Any] | Iterable[Port]) -> bool:
    return not any(conflicts(used, p) for p in want)


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = "NodePorts"

    def __init__(self, enable_queueing_hints: bool = True) -> None:
        self.enable_queueing_hints = enable_queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> NodePorts:
        gates = getattr(handle, "feature_gates", None) or {}
        return cls(enable_queueing_hints=gates.get("SchedulerQueueingHints", True))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Ports are immutable, so only a deleted pod frees one; node updates never free ports, but without hints
        # preCheck may swallow Node/Add, hence taint/label updates too (kubernetes#109437).
        node_action = ActionType.ADD
        if not self.enable_queueing_hints:
            node_action |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, node_action)),
        ]

    @staticmethod
    def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Requeue only when the deleted pod sat (or was nominated) on a node and held a port this pod wants."""
        if not isinstance(old, dict):
            return QueueingHint.QUEUE
        if not (old.get("spec") or {}).get("nodeName") and not (old.get("status") or {}).get("nominatedNodeName"):
            return QueueingHint.SKIP
        freed = set(host_ports(old))
        if not freed:
            return QueueingHint.SKIP
        return QueueingHint.SKIP if fits_ports(host_ports(pod), freed) else QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = host_ports(pod)
        if not ports:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, tuple(ports))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        want = state.get(PRE_FILTER_STATE_KEY)
        if want is None:
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not fits_ports(want, node_info.used_ports):
            return Status(Code.UNSCHEDULABLE, ERR_REASON)
        return None
