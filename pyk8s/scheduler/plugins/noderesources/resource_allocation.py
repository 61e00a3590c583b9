"""The resource-allocation scorer NodeResourcesFit and NodeResourcesBalancedAllocation share (upstream:
noderesources/resource_allocation.go, least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go,
plugins/helper/shape_score.go), plus the pod's requests both plugins need (framework.types.pod_requests_pair),
computed once per cycle.

Here each strategy is written per node over Python ints, the readable form following upstream's int64
arithmetic with Go's truncating division (and float64 for BalancedAllocation); vectors.py has the same
arithmetic over the snapshot's numpy columns, and the property tests prove both give the same integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ...framework.interface import MAX_NODE_SCORE, Code, CycleState, Pod, Status
from ...framework.snapshot import Snapshot
from ...framework.types import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NO_GATES,
    NodeInfo,
    RequestOptions,
    Resource,
    is_scalar_resource,
    pod_requests_pair,
)
from ..normalize import go_div
from . import vectors
from .args import LEAST_ALLOCATED, MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION, MOST_ALLOCATED, ResourceSpec
from .vectors import BALANCED_ALLOCATION

# -- the pod's requests ------------------------------------------------------------------------------------

_REQUESTS_KEY = "NodeResources/podRequests"


def cycle_pod_requests(
    state: CycleState | None, pod: Pod, opts: RequestOptions = NO_GATES, *, scoring: bool = False
) -> tuple[Resource, Resource]:
    """The pod's (requests, non-zero requests) with these options, computed once per scheduling cycle and shared
    by the plugins of this package (upstream computes them separately in each; the values are the same).
    `scoring` asks for the scorers' defaults (see framework.types.pod_requests_pair)."""
    if state is None:
        return pod_requests_pair(pod, opts, defaults_everywhere=scoring)
    # Without the gated options, Filter and scoring get the same values: one entry serves both.
    key = (opts, scoring) if opts.status_resources or opts.pod_level else None
    got = state.get(_REQUESTS_KEY)
    if got is None or got[0] is not pod:
        got = (pod, {})
        state.write(_REQUESTS_KEY, got)
    pair = got[1].get(key)
    if pair is None:
        pair = got[1][key] = pod_requests_pair(pod, opts, defaults_everywhere=scoring)
    return pair


# -- per-node scoring functions (Python ints, Go semantics) ----------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    """Free share of a resource on a 0-100 scale, 0 when over-committed (upstream: leastRequestedScore)."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    """Used share of a resource on a 0-100 scale; requests beyond capacity (defaults for pods without requests
    can overshoot) count as full (upstream: mostRequestedScore)."""
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return go_div(requested * MAX_NODE_SCORE, capacity)


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """The piecewise-linear function through `shape`'s (utilization, score) points, flat before the first and
    after the last, with Go's truncating integer division (upstream: helper.BuildBrokenLinearFunction)."""
    points = list(shape)

    def f(p: int) -> int:
        for i, (u, s) in enumerate(points):
            if p <= u:
                if i == 0:
                    return points[0][1]
                u0, s0 = points[i - 1]
                return s0 + go_div((s - s0) * (p - u0), u - u0)
        return points[-1][1]

    return f


def _weighted(
    resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]
) -> Callable[[list[int], list[int]], int]:
    """The weighted mean of `per_resource(requested, allocatable)` over resources the node has (upstream's
    least/mostResourceScorer)."""

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, r in enumerate(requested):
            if allocatable[i] == 0:
                continue
            w = resources[i].weight
            node_score += per_resource(r, allocatable[i]) * w
            weight_sum += w
        return 0 if weight_sum == 0 else go_div(node_score, weight_sum)

    return scorer


def _least(resources: Sequence[ResourceSpec]) -> Callable[[list[int], list[int]], int]:
    return _weighted(resources, least_requested_score)


def _most(resources: Sequence[ResourceSpec]) -> Callable[[list[int], list[int]], int]:
    return _weighted(resources, most_requested_score)


def go_round(x: float) -> int:
    """math.Round: halves away from zero (Python's round() would go to even); exact, as the fractional part
    of a float is itself a float."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t


def scaled_shape(shape: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Shape scores are given on 0-10; the scheduler scores on 0-100."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((u, s * factor) for u, s in shape)


def _rtcr(resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]) -> Callable[[list[int], list[int]], int]:
    raw = broken_linear(scaled_shape(shape))

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(go_div(requested * MAX_UTILIZATION, capacity))

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, r in enumerate(requested):
            if allocatable[i] == 0:
                continue
            w = resources[i].weight
            s = resource_score(r, allocatable[i])
            # A resource scoring 0 does not count at all, not even its weight (upstream quirk).
            if s > 0:
                node_score += s * w
                weight_sum += w
        return 0 if weight_sum == 0 else go_round(float(node_score) / float(weight_sum))

    return scorer


def balanced_score(requested: list[int], allocatable: list[int]) -> int:
    """(1 - standard deviation of the used fractions) on 0-100, in float64 as upstream
    (upstream: balancedResourceScorer); two resources use |f0 - f1| / 2, which is the same std."""
    fractions: list[float] = []
    total = 0.0
    for i, r in enumerate(requested):
        if allocatable[i] == 0:
            continue
        f = float(r) / float(allocatable[i])
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        ss = 0.0
        for f in fractions:
            ss = ss + (f - mean) * (f - mean)
        std = math.sqrt(ss / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


class ResourceAllocationScorer:
    """One scoring strategy over a list of weighted resources (upstream: resourceAllocationScorer).

    `use_requested` picks what existing pods count as: their plain requests (BalancedAllocation) or the non-zero
    ones with defaults for containers without requests (NodeResourcesFit), for cpu and memory. `options` are the
    gated ways of reading the pod's own requests (InPlacePodVerticalScaling, PodLevelResources).
    """

    def __init__(
        self,
        name: str,
        resources: Sequence[ResourceSpec],
        *,
        use_requested: bool = False,
        shape: Sequence[tuple[int, int]] | None = None,
        options: RequestOptions = NO_GATES,
    ) -> None:
        self.name = name
        self.options = options
        self.resources = tuple(resources)
        self.use_requested = use_requested
        self.weights = [r.weight for r in self.resources]
        self._scorer: Callable[[list[int], list[int]], int]
        self.rtcr_table: np.ndarray | None = None
        self._plans: dict[tuple[int, ...], vectors.Plan] = {}  # by pod requests: pods of a workload repeat them
        if name == LEAST_ALLOCATED:
            self._scorer = _least(self.resources)
        elif name == MOST_ALLOCATED:
            self._scorer = _most(self.resources)
        elif name == BALANCED_ALLOCATION:
            self._scorer = balanced_score
        else:
            if shape is None:
                raise ValueError("scoring strategy RequestedToCapacityRatio needs a shape")
            self._scorer = _rtcr(self.resources, shape)
            raw = broken_linear(scaled_shape(shape))
            # Utilization reaches the function only as 0..100, so a lookup table is exact for the vector form.
            self.rtcr_table = np.array([raw(p) for p in range(MAX_UTILIZATION + 1)], dtype=np.int64)

    def pod_request_list(self, state: CycleState | None, pod: Pod) -> list[int]:
        """The pod's request of each configured resource, in order (upstream: calculatePodResourceRequestList)."""
        plain, non_zero = cycle_pod_requests(state, pod, self.options, scoring=True)
        res = plain if self.use_requested else non_zero
        return [res.get(r.name) for r in self.resources]

    def _allocatable_requested(self, ni: NodeInfo, name: str, pod_request: int) -> tuple[int, int]:
        # upstream: calculateResourceAllocatableRequest
        requested = ni.requested if self.use_requested else ni.non_zero_requested
        if pod_request == 0 and is_scalar_resource(name):
            return 0, 0  # an extended resource the pod does not ask for is left out of the score
        if name == CPU:
            return ni.allocatable.milli_cpu, requested.milli_cpu + pod_request
        if name == MEMORY:
            return ni.allocatable.memory, requested.memory + pod_request
        if name == EPHEMERAL_STORAGE:
            return ni.allocatable.ephemeral_storage, ni.requested.ephemeral_storage + pod_request
        if name in ni.allocatable.scalar:
            return ni.allocatable.scalar[name], ni.requested.scalar.get(name, 0) + pod_request
        return 0, 0

    def score(self, ni: NodeInfo, pod_requests: list[int]) -> tuple[int, Status | None]:
        """The node's score for a pod with these requests (upstream: resourceAllocationScorer.score)."""
        if not self.resources:
            return 0, Status(Code.ERROR, "resources not found")
        n = len(self.resources)
        requested = [0] * n
        allocatable = [0] * n
        for i, r in enumerate(self.resources):
            alloc, req = self._allocatable_requested(ni, r.name, pod_requests[i])
            if alloc == 0:
                continue
            allocatable[i] = alloc
            requested[i] = req
        return self._scorer(requested, allocatable), None

    # -- vector form ------------------------------------------------------------------------------------------

    def score_vector(self, snapshot: Snapshot, idx: np.ndarray, pod_requests: list[int]) -> np.ndarray:
        """Scores of the nodes at positions `idx`, equal to `score` node by node (see vectors.py)."""
        if not self.resources:
            raise ValueError("resources not found")
        key = tuple(pod_requests)
        pl = self._plans.get(key)
        if pl is None:
            if len(self._plans) >= 256:
                self._plans.clear()
            pl = self._plans[key] = vectors.plan(self.resources, pod_requests)
        return vectors.score_vector(self.name, pl, self.use_requested, self.rtcr_table, snapshot, np.asarray(idx))

    def score_extensions(self) -> None:
        return None
