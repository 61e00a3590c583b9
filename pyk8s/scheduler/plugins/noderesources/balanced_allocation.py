"""The NodeResourcesBalancedAllocation plugin (upstream: plugins/noderesources/balanced_allocation.go, v1.32).

Favors nodes whose resources would be used evenly with the pod on them: the score is (1 - standard deviation
of the requested/allocatable fractions) on 0-100, over the configured resources (cpu and memory by default),
counting the pods' plain requests (no defaults for containers without requests). v1.32 scores every pod,
including best-effort ones, whose zero requests leave only the node's existing pods to compare (the PreScore
Skip for them came in v1.33, kubernetes#130260). The pod's requests follow the InPlacePodVerticalScaling and
PodLevelResources gates as NodeResourcesFit's scoring does.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...framework.features import DEFAULT_FEATURE_GATES
from ...framework.interface import CycleState, Handle, Pod, PreScorePlugin, ScorePlugin, Status
from ...framework.snapshot import Snapshot
from ...framework.types import NodeInfo, RequestOptions
from .args import BalancedAllocationArgs, balanced_allocation_args
from .resource_allocation import BALANCED_ALLOCATION, ResourceAllocationScorer

NAME = BALANCED_ALLOCATION
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class _PreScoreState:
    """The pod's request of each scored resource, in args order; never mutated."""

    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # verdicts shared by pods of one equivalence class

    def __init__(self, args: BalancedAllocationArgs, handle: Handle | None) -> None:
        self.args = args
        self.handle = handle
        gates = handle.feature_gates if handle is not None else DEFAULT_FEATURE_GATES
        options = RequestOptions(
            status_resources=bool(gates.get("InPlacePodVerticalScaling", False)),
            pod_level=bool(gates.get("PodLevelResources", False)),
        )
        self.scorer = ResourceAllocationScorer(NAME, args.resources, use_requested=True, options=options)

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle | None) -> NodeResourcesBalancedAllocation:
        return cls(balanced_allocation_args(args), handle)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(self.scorer.pod_request_list(state, pod)))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> list[int]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s.pod_requests
        return self.scorer.pod_request_list(state, pod)  # Score without PreScore

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self.scorer.score(node_info, self._pod_requests(state, pod))

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        return self.scorer.score_vector(snapshot, idx, self._pod_requests(state, pod))

    def score_extensions(self) -> None:
        return None
