"""The TaintToleration Filter/Score plugin (upstream: plugins/tainttoleration/taint_toleration.go).

Filter rejects nodes with a NoSchedule or NoExecute taint the pod does not tolerate; Score counts the
PreferNoSchedule taints the pod does not tolerate, and NormalizeScore reverses the default normalisation so the
node with the fewest wins. The vectorized forms group nodes by their taint lists (few distinct ones in practice)
and memoise, per toleration set, one verdict per group until a Node object changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..framework.interface import (
    MAX_NODE_SCORE,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NodeScore,
    Pod,
    PreScorePlugin,
    QueueingHint,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from .helper import find_matching_untolerated_taint, node_taints, pod_tolerations, tolerations_tolerate_taint
from .normalize import default_normalize_score, default_normalize_vector

if TYPE_CHECKING:
    from ..framework.snapshot import Snapshot
    from ..framework.types import NodeInfo

PRE_SCORE_STATE_KEY = "PreScoreTaintToleration"
NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"

Taint = dict[str, Any]
Toleration = dict[str, Any]


def do_not_schedule(taint: Taint) -> bool:
    """The taints Filter cares about (upstream: helper.DoNotScheduleTaintsFilterFunc)."""
    return taint.get("effect") in (NO_SCHEDULE, NO_EXECUTE)


def untolerated_filter_taint(node: dict[str, Any], tolerations: list[Toleration]) -> Taint | None:
    return find_matching_untolerated_taint(node_taints(node), tolerations, do_not_schedule)


def prefer_no_schedule_tolerations(tolerations: list[Toleration]) -> list[Toleration]:
    """Tolerations that can tolerate a PreferNoSchedule taint: that effect or none (which means all)."""
    return [t for t in tolerations if not t.get("effect") or t.get("effect") == PREFER_NO_SCHEDULE]


def count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: list[Toleration]) -> int:
    return sum(
        1 for t in taints if t.get("effect") == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, t)
    )


def tolerations_key(tolerations: list[Toleration]) -> tuple[tuple[str, str, str, str], ...]:
    """The parts of tolerations that decide matching, hashable (tolerationSeconds does not matter here)."""
    return tuple(
        (t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "") for t in tolerations
    )


def _taint_groups(snapshot: Snapshot, include: Callable[[Taint], bool]) -> tuple[list[list[Taint]], np.ndarray]:
    """Nodes grouped by their (filtered) taint lists: the distinct lists, and each node's group number."""
    index: dict[tuple[tuple[str, str, str], ...], int] = {}
    groups: list[list[Taint]] = []
    nodes = snapshot.node_info_list
    codes = np.empty(len(nodes), dtype=np.int64)
    for i, ni in enumerate(nodes):
        taints = [t for t in node_taints(ni.node or {}) if include(t)]
        key = tuple((t.get("key") or "", t.get("value") or "", t.get("effect") or "") for t in taints)
        g = index.get(key)
        if g is None:
            g = index[key] = len(groups)
            groups.append(taints)
        codes[i] = g
    return groups, codes


class _PreScoreState:
    __slots__ = ("tolerations",)

    def __init__(self, tolerations: list[Toleration]) -> None:
        self.tolerations = tolerations

    def clone(self) -> _PreScoreState:
        return self  # not touched by preemption's what-ifs


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions):
    name: ClassVar[str] = "TaintToleration"
    node_local: ClassVar[bool] = True  # verdicts shared by pods of one equivalence class
    node_object_only: ClassVar[bool] = True  # pods coming and going leave its verdicts alone

    def __init__(self, enable_queueing_hints: bool = True) -> None:
        self.enable_queueing_hints = enable_queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> TaintToleration:
        gates = getattr(handle, "feature_gates", None) or {}
        return cls(enable_queueing_hints=gates.get("SchedulerQueueingHints", True))

    # -- events -------------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if self.enable_queueing_hints:
            return [
                ClusterEventWithHint(
                    ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                    self.is_schedulable_after_node_change,
                ),
                ClusterEventWithHint(
                    ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS),
                    self.is_schedulable_after_pod_toleration_change,
                ),
            ]
        # Without hints preCheck may swallow Node/Add, hence label updates too (kubernetes#109437); updates of the
        # unschedulable pod itself requeue it anyway, so no Pod event.
        action = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        return [ClusterEventWithHint(ClusterEvent(NODE, action), self.is_schedulable_after_node_change)]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Requeue when the node went from having an untolerated NoSchedule/NoExecute taint to having none."""
        if not isinstance(new, dict) or (old is not None and not isinstance(old, dict)):
            return QueueingHint.QUEUE
        tolerations = pod_tolerations(pod)
        was_untolerated = old is None or untolerated_filter_taint(old, tolerations) is not None
        is_untolerated = untolerated_filter_taint(new, tolerations) is not None
        return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.SKIP

    @staticmethod
    def is_schedulable_after_pod_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A toleration added to the rejected pod itself may make it fit; other pods' tolerations do not."""
        if not isinstance(new, dict):
            return QueueingHint.QUEUE
        same = new["metadata"].get("uid", "") == pod["metadata"].get("uid", "")
        return QueueingHint.QUEUE if same else QueueingHint.SKIP

    # -- filter -------------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("invalid nodeInfo")
        taint = untolerated_filter_taint(node, pod_tolerations(pod))
        if taint is None:
            return None
        reason = f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        tolerations = pod_tolerations(pod)
        key = ("TaintToleration", "filter", tolerations_key(tolerations))

        def compute() -> np.ndarray:
            groups, codes = snapshot.node_derived(
                ("TaintToleration", "filter-groups"), lambda: _taint_groups(snapshot, do_not_schedule)
            )
            ok = np.fromiter(
                (find_matching_untolerated_taint(g, tolerations) is None for g in groups), dtype=bool, count=len(groups)
            )
            return ok[codes]

        return snapshot.node_derived(key, compute)

    # -- score --------------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(prefer_no_schedule_tolerations(pod_tolerations(pod))))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, Status.as_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return count_intolerable_prefer_no_schedule(node_taints(node_info.node or {}), s.tolerations), None

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        tolerations = prefer_no_schedule_tolerations(pod_tolerations(pod))
        key = ("TaintToleration", "score", tolerations_key(tolerations))

        def compute() -> np.ndarray:
            groups, codes = snapshot.node_derived(
                ("TaintToleration", "score-groups"),
                lambda: _taint_groups(snapshot, lambda t: t.get("effect") == PREFER_NO_SCHEDULE),
            )
            counts = np.fromiter(
                (count_intolerable_prefer_no_schedule(g, tolerations) for g in groups),
                dtype=np.int64,
                count=len(groups),
            )
            return counts[codes]

        return snapshot.node_derived(key, compute)[idx]

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def normalize_vector(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_vector(MAX_NODE_SCORE, True, scores)
