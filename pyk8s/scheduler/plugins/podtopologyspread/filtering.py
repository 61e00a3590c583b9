"""PodTopologySpread's PreFilter, PreFilterExtensions and Filter (upstream: podtopologyspread/filtering.go).

PreFilter counts, per hard (DoNotSchedule) constraint, the pods its selector matches in each topology domain
and the two least-loaded domains ("critical paths"); Filter admits a node when placing the pod there keeps
every constraint's skew within maxSkew. `filter_vector` evaluates the same test for all nodes at once.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Self

import numpy as np

from ...framework.interface import Code, CycleState, Handle, Pod, PreFilterResult, Status
from ...framework.snapshot import Snapshot
from ...framework.types import NodeInfo, PodInfo
from ..helper import required_node_affinity_matches
from .common import (
    HONOR,
    Constraint,
    Features,
    count_pods_match_selector,
    match_node_inclusion_policies,
    node_has_all_keys,
    node_labels,
    pod_labels,
    pod_namespace,
)
from .vectors import NodeMasks, PodCounts, has_keys, topology, value_array, value_rank

PRE_FILTER_STATE_KEY = "PreFilterPodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two domains with the fewest matching pods seen so far (upstream: criticalPaths): paths[0] always
    holds the minimum; paths[1] is at least as large but, after updates, not necessarily the second minimum."""

    __slots__ = ("paths",)

    def __init__(self, paths: list[list] | None = None) -> None:
        self.paths: list[list] = paths if paths is not None else [["", MAX_INT32], ["", MAX_INT32]]

    @classmethod
    def of(cls, match_num: dict[str, int]) -> CriticalPaths:
        """The two least-loaded domains, ties broken by value, as upstream's update() would leave them had the
        domains come in value order (upstream's order is Go's random map order)."""
        cp = cls()
        for i, (num, value) in enumerate(heapq.nsmallest(2, ((n, v) for v, n in match_num.items()))):
            cp.paths[i] = [value, num]
        return cp

    @classmethod
    def of_arrays(cls, domains: np.ndarray, sums: np.ndarray, rank: np.ndarray, values: list[str]) -> CriticalPaths:
        """`of` from per-domain arrays: the present `domains`, their `sums`, and each value's rank in value
        order."""
        cp = cls()
        best = domains[np.lexsort((rank[domains], sums[domains]))[:2]].tolist()
        for i, j in enumerate(best):
            cp.paths[i] = [values[j], int(sums[j])]
        return cp

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i][1] = num
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = [value, num]
        elif num < p[1][1]:
            p[1] = [value, num]

    def clone(self) -> CriticalPaths:
        return CriticalPaths([list(self.paths[0]), list(self.paths[1])])

    def as_tuples(self) -> list[tuple[str, int]]:
        return [(v, n) for v, n in self.paths]

    def __repr__(self) -> str:
        return f"CriticalPaths({self.paths!r})"


class PreFilterState:
    """What PreFilter computed for Filter (upstream: preFilterState). An empty one (no constraints) admits
    every node. add_pod/remove_pod mutate it, so preemption works on clones."""

    __slots__ = ("arrays", "constraints", "critical_paths", "tp_value_to_match_num")

    def __init__(
        self,
        constraints: list[Constraint] | None = None,
        critical_paths: list[CriticalPaths] | None = None,
        tp_value_to_match_num: list[dict[str, int]] | None = None,
        arrays: list[tuple[list[str], np.ndarray] | None] | None = None,
    ) -> None:
        self.constraints: list[Constraint] = constraints or []
        self.critical_paths: list[CriticalPaths] = critical_paths or []
        self.tp_value_to_match_num: list[dict[str, int]] = tp_value_to_match_num or []
        # Per constraint, tp_value_to_match_num as an array over the snapshot's topology values (with the
        # values list it is indexed by), kept by the columnar PreFilter for filter_vector; dropped on updates.
        self.arrays: list[tuple[list[str], np.ndarray] | None] = arrays or [None] * len(self.constraints)

    def min_match_num(self, i: int, min_domains: int) -> int:
        """The global minimum for the skew; 0 while there are fewer eligible domains than minDomains."""
        if len(self.tp_value_to_match_num[i]) < min_domains:
            return 0
        return self.critical_paths[i].paths[0][1]

    def clone(self) -> PreFilterState:
        # Constraints never change after PreFilter, so they are shared.
        return PreFilterState(
            self.constraints,
            [cp.clone() for cp in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
            list(self.arrays),
        )


def get_pre_filter_state(state: CycleState) -> PreFilterState | Status:
    s = state.get(PRE_FILTER_STATE_KEY)
    if s is None:
        return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
    if not isinstance(s, PreFilterState):
        return Status.as_error(f"{s!r} convert to podtopologyspread.preFilterState error")
    return s


class FilteringMixin:
    """PreFilter, Filter and the PreFilterExtensions of PodTopologySpread."""

    # What the mixin uses of PodTopologySpread, which sets or defines all of it.
    handle: Handle
    features: Features
    vectorize: bool
    masks: NodeMasks
    pod_counts: PodCounts

    if TYPE_CHECKING:

        def get_constraints(self, pod: Pod) -> list[Constraint]: ...

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.get_constraints(pod)
        except ValueError as err:
            return None, Status.as_error(f"get constraints from pod: {err}")
        if not constraints:
            return None, Status(Code.SKIP)
        snap = self.handle.snapshot
        if self.vectorize and _same_nodes(nodes, snap.node_info_list):
            s = self.cal_pre_filter_state_vector(pod, constraints)
        else:
            s = self.cal_pre_filter_state(pod, constraints, nodes)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def cal_pre_filter_state(self, pod: Pod, constraints: list[Constraint], nodes: list[NodeInfo]) -> PreFilterState:
        """The per-node form: walk every node, count matching pods into their domains."""
        ns = pod_namespace(pod)
        inclusion = self.features.node_inclusion_policy
        tp: list[dict[str, int]] = [{} for _ in constraints]
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            if not inclusion and not required_node_affinity_matches(pod, node):
                continue
            labels = node_labels(node)
            if not node_has_all_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if inclusion and not match_node_inclusion_policies(c, pod, node):
                    continue
                value = labels[c.topology_key]
                tp[i][value] = tp[i].get(value, 0) + count_pods_match_selector(ni.pods, c.selector, ns)
        return PreFilterState(constraints, [CriticalPaths.of(m) for m in tp], tp)

    def cal_pre_filter_state_vector(self, pod: Pod, constraints: list[Constraint]) -> PreFilterState:
        """The columnar form over the snapshot: the same counts from per-node arrays and domain codes."""
        snap = self.handle.snapshot
        ns = pod_namespace(pod)
        inclusion = self.features.node_inclusion_policy
        base = has_keys(snap, tuple(sorted({c.topology_key for c in constraints})))
        affinity = self.masks.affinity(snap, pod)
        if not inclusion and affinity is not None:
            base = base & affinity
        taints = self.masks.taints(snap, pod) if inclusion else None
        tp: list[dict[str, int]] = []
        paths: list[CriticalPaths] = []
        arrays: list[tuple[list[str], np.ndarray] | None] = []
        for c in constraints:
            include = base
            if inclusion and c.node_affinity_policy == HONOR and affinity is not None:
                include = include & affinity
            if inclusion and c.node_taints_policy == HONOR and taints is not None:
                include = include & taints
            codes, values = topology(snap, c.topology_key)
            present, sums = self.pod_counts.domain_sums(snap, ns, c.selector, codes, include, len(values))
            domains = np.flatnonzero(present)
            tp.append(
                dict(zip(value_array(snap, c.topology_key)[domains].tolist(), sums[domains].tolist(), strict=True))
            )
            paths.append(CriticalPaths.of_arrays(domains, sums, value_rank(snap, c.topology_key), values))
            arrays.append((values, sums))  # absent domains sum to 0, as a missing map key reads
        return PreFilterState(constraints, paths, tp, arrays)

    # -- PreFilterExtensions ---------------------------------------------------------------------------------

    def pre_filter_extensions(self) -> Self:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = get_pre_filter_state(state)
        if isinstance(s, Status):
            return s
        self._update_with_pod(s, pod_to_add.pod, pod_to_schedule, node_info, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = get_pre_filter_state(state)
        if isinstance(s, Status):
            return s
        self._update_with_pod(s, pod_to_remove.pod, pod_to_schedule, node_info, -1)
        return None

    def _update_with_pod(
        self, s: PreFilterState, updated: Pod, preemptor: Pod, node_info: NodeInfo, delta: int
    ) -> None:
        node = node_info.node
        if node is None or pod_namespace(updated) != pod_namespace(preemptor):
            return
        labels = node_labels(node)
        if not node_has_all_keys(labels, s.constraints):
            return
        inclusion = self.features.node_inclusion_policy
        if not inclusion and not required_node_affinity_matches(preemptor, node):
            return
        updated_labels = pod_labels(updated)
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(updated_labels):
                continue
            if inclusion and not match_node_inclusion_policies(c, preemptor, node):
                continue
            value = labels[c.topology_key]
            s.tp_value_to_match_num[i][value] = s.tp_value_to_match_num[i].get(value, 0) + delta
            s.critical_paths[i].update(value, s.tp_value_to_match_num[i][value])
            s.arrays[i] = None

    # -- Filter ----------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = get_pre_filter_state(state)
        if isinstance(s, Status):
            return s
        if not s.constraints:  # an empty state is legit: it admits every pod
            return None
        labels = node_labels(node_info.node or {})
        own = pod_labels(pod)
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
            # existing matches + the pod itself (if it matches) - the global minimum must stay within maxSkew
            self_match = 1 if c.selector.matches(own) else 0
            skew = s.tp_value_to_match_num[i].get(value, 0) + self_match - s.min_match_num(i, c.min_domains)
            if skew > c.max_skew:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        """`filter` for every node of the snapshot at once: True where it would return success."""
        n = len(snapshot.node_info_list)
        s = get_pre_filter_state(state)
        if isinstance(s, Status):
            return np.zeros(n, dtype=bool)
        ok = np.ones(n, dtype=bool)
        own = pod_labels(pod)
        for i, c in enumerate(s.constraints):
            codes, values = topology(snapshot, c.topology_key)
            if not values:
                return np.zeros(n, dtype=bool)
            cached = s.arrays[i] if i < len(s.arrays) else None
            if cached is not None and cached[0] is values:
                per_domain = cached[1]
            else:
                m = s.tp_value_to_match_num[i]
                per_domain = np.fromiter((m.get(v, 0) for v in values), dtype=np.int64, count=len(values))
            has = codes >= 0
            match = per_domain[np.where(has, codes, 0)]
            limit = c.max_skew + s.min_match_num(i, c.min_domains) - (1 if c.selector.matches(own) else 0)
            ok &= has & (match <= limit)
        return ok


def _same_nodes(nodes: list[NodeInfo], snapshot_nodes: list[NodeInfo]) -> bool:
    """Whether PreFilter was given exactly the snapshot's node list (then the columnar path applies)."""
    if nodes is snapshot_nodes:
        return True
    return len(nodes) == len(snapshot_nodes) and all(a is b for a, b in zip(nodes, snapshot_nodes, strict=True))
