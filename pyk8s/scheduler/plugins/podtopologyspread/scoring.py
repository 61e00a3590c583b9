"""PodTopologySpread's PreScore, Score and NormalizeScore (upstream: podtopologyspread/scoring.go).

PreScore counts, per soft (ScheduleAnyway) constraint, the matching pods in each domain that holds a candidate
node; Score sums, over constraints, count * log(domains + 2) + (maxSkew - 1) for the node's domain; Normalize
maps the smallest raw score to 100 and the largest towards 0. `score_vector` computes raw scores columnarly.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ...framework.interface import MAX_NODE_SCORE, Code, CycleState, Handle, NodeScore, Pod, Status
from ...framework.snapshot import Snapshot
from ...framework.types import FeasibleNodes, NodeInfo, position_array
from ..helper import required_node_affinity_matches
from .common import (
    HONOR,
    HOSTNAME_KEY,
    Constraint,
    Features,
    count_pods_match_selector,
    match_node_inclusion_policies,
    node_has_all_keys,
    node_labels,
    pod_namespace,
)
from .vectors import NodeMasks, PodCounts, go_round, has_keys, topology, topology_or_empty

PRE_SCORE_STATE_KEY = "PreScorePodTopologySpread"
INVALID_SCORE = -1


class PreScoreState:
    """What PreScore computed for Score and NormalizeScore (upstream: preScoreState)."""

    __slots__ = ("_vec", "constraints", "ignored_nodes", "topology_normalizing_weight", "topology_value_to_pod_counts")

    def __init__(
        self,
        constraints: list[Constraint],
        ignored_nodes: set[str],
        topology_value_to_pod_counts: list[dict[str, int]],
        topology_normalizing_weight: list[float],
    ) -> None:
        self.constraints = constraints
        # Candidate nodes missing some constraint's topology key: scored 0.
        self.ignored_nodes = ignored_nodes
        # Per constraint, matching pods per domain holding a candidate (empty for the hostname key: Score
        # counts a node's own pods).
        self.topology_value_to_pod_counts = topology_value_to_pod_counts
        # Per constraint, log(domains + 2), so counts in topologies with few domains are not watered down.
        self.topology_normalizing_weight = topology_normalizing_weight
        self._vec: dict[Any, np.ndarray] = {}  # per-domain arrays for score_vector, built on first use

    def clone(self) -> PreScoreState:
        # Nothing mutates it after PreScore, so sharing is safe (as upstream).
        return self


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def score_for_count(cnt: int, max_skew: int, weight: float) -> float:
    # maxSkew - 1 waters down differences between domains: the larger the tolerated skew, the flatter.
    return cnt * weight + float(max_skew - 1)


def go_round_scalar(x: float) -> int:
    """Go's math.Round (halves away from zero) for a non-negative float."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def get_pre_score_state(state: CycleState) -> PreScoreState | Status:
    s = state.get(PRE_SCORE_STATE_KEY)
    if s is None:
        return Status.as_error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
    if not isinstance(s, PreScoreState):
        return Status.as_error(f"{s!r}  convert to podtopologyspread.preScoreState error")
    return s


class ScoringMixin:
    """PreScore, Score and ScoreExtensions of PodTopologySpread."""

    # What the mixin uses of PodTopologySpread, which sets or defines all of it.
    handle: Handle
    features: Features
    system_defaulted: bool
    vectorize: bool
    masks: NodeMasks
    pod_counts: PodCounts

    if TYPE_CHECKING:

        def get_soft_constraints(self, pod: Pod) -> list[Constraint]: ...

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        snap = self.handle.snapshot
        if not snap.node_info_list:
            return Status(Code.SKIP)
        has_own = bool((pod.get("spec") or {}).get("topologySpreadConstraints"))
        try:
            constraints = self.get_soft_constraints(pod)
        except ValueError as err:
            return Status.as_error(f"calculating preScoreState: {err}")
        if not constraints:
            return Status(Code.SKIP)
        # Only non-system-default spreading requires nodes to carry every topology key, so nodes without a
        # zone label still get hostname spreading under the system defaults.
        require_all = has_own or not self.system_defaulted
        s = None
        if self.vectorize:
            s = self.pre_score_state_vector(pod, constraints, nodes, require_all)
        if s is None:
            s = self.pre_score_state(pod, constraints, nodes, require_all)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def pre_score_state(
        self, pod: Pod, constraints: list[Constraint], nodes: list[NodeInfo], require_all: bool
    ) -> PreScoreState:
        """The per-node form (upstream: initPreScoreState and PreScore's walk over all nodes)."""
        ignored: set[str] = set()
        tp: list[dict[str, int]] = [{} for _ in constraints]
        for ni in nodes:
            labels = node_labels(ni.node or {})
            if require_all and not node_has_all_keys(labels, constraints):
                ignored.add(ni.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key != HOSTNAME_KEY:  # per-node counts are taken in Score
                    tp[i].setdefault(labels.get(c.topology_key, ""), 0)
        weights = self._weights(constraints, tp, len(nodes) - len(ignored))
        ns = pod_namespace(pod)
        inclusion = self.features.node_inclusion_policy
        for ni in self.handle.snapshot.node_info_list:
            node = ni.node
            if node is None:
                continue
            if not inclusion and not required_node_affinity_matches(pod, node):
                continue
            labels = node_labels(node)
            if require_all and not node_has_all_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if inclusion and not match_node_inclusion_policies(c, pod, node):
                    continue
                value = labels.get(c.topology_key, "")
                if value in tp[i]:  # only domains holding a candidate node are counted
                    tp[i][value] += count_pods_match_selector(ni.pods, c.selector, ns)
        return PreScoreState(constraints, ignored, tp, weights)

    def pre_score_state_vector(
        self, pod: Pod, constraints: list[Constraint], nodes: list[NodeInfo], require_all: bool
    ) -> PreScoreState | None:
        """The columnar form; None when the candidates are not the snapshot's own nodes."""
        snap = self.handle.snapshot
        positions, all_nodes = snap.positions, snap.node_info_list
        known = nodes.positions_in(all_nodes) if isinstance(nodes, FeasibleNodes) else None
        if nodes is all_nodes:
            idx = np.arange(len(all_nodes), dtype=np.int64)
        elif known is not None:
            idx = position_array(known)
        else:
            pos: list[int] = []
            for ni in nodes:
                node = ni.node
                p = positions.get(node["metadata"]["name"]) if node is not None else None
                if p is None or all_nodes[p].node is not node:
                    return None
                pos.append(p)
            idx = np.array(pos, dtype=np.int64)
        all_keys = has_keys(snap, tuple(sorted({c.topology_key for c in constraints})))
        ignored: set[str] = set()
        ok_idx = idx
        base = np.ones(len(all_nodes), dtype=bool)
        if require_all:
            missing = ~all_keys[idx]
            ignored = {all_nodes[i].name for i in idx[missing].tolist()}
            ok_idx = idx[~missing]
            base = all_keys
        inclusion = self.features.node_inclusion_policy
        affinity = self.masks.affinity(snap, pod)
        if not inclusion and affinity is not None:
            base = base & affinity
        taints = self.masks.taints(snap, pod) if inclusion else None
        ns = pod_namespace(pod)
        tp: list[dict[str, int]] = []
        for c in constraints:
            codes, values = topology(snap, c.topology_key) if require_all else topology_or_empty(snap, c.topology_key)
            if c.topology_key == HOSTNAME_KEY or not values:
                tp.append({})
                continue
            present = np.zeros(len(values), dtype=bool)
            present[codes[ok_idx]] = True
            include = base
            if inclusion and c.node_affinity_policy == HONOR and affinity is not None:
                include = include & affinity
            if inclusion and c.node_taints_policy == HONOR and taints is not None:
                include = include & taints
            if not present.all():
                # Included nodes always have a domain (every key is required of them, or a missing label reads
                # as ""): with every domain holding a candidate nothing is left out, and the mask stays the same
                # object, whose sums the pod counts keep up to date.
                include = include & (codes >= 0) & present[np.maximum(codes, 0)]
            _, sums = self.pod_counts.domain_sums(snap, ns, c.selector, codes, include, len(values))
            domains = np.flatnonzero(present).tolist()
            tp.append(dict(zip([values[j] for j in domains], sums[domains].tolist(), strict=True)))
        weights = self._weights(constraints, tp, len(nodes) - len(ignored))
        return PreScoreState(constraints, ignored, tp, weights)

    @staticmethod
    def _weights(constraints: list[Constraint], tp: list[dict[str, int]], hostname_size: int) -> list[float]:
        return [
            topology_normalizing_weight(hostname_size if c.topology_key == HOSTNAME_KEY else len(tp[i]))
            for i, c in enumerate(constraints)
        ]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = get_pre_score_state(state)
        if isinstance(s, Status):
            return 0, s
        if node_info.name in s.ignored_nodes:
            return 0, None
        labels = node_labels(node_info.node or {})
        ns = pod_namespace(pod)
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME_KEY:
                cnt = count_pods_match_selector(node_info.pods, c.selector, ns)
            else:
                cnt = s.topology_value_to_pod_counts[i].get(value, 0)
            total += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i])
        return go_round_scalar(total), None

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        """Raw scores of the nodes at positions `idx`, exactly as `score` computes them one by one."""
        idx = np.asarray(idx, dtype=np.int64)
        s = get_pre_score_state(state)
        if isinstance(s, Status):
            return np.zeros(len(idx), dtype=np.int64)
        ns = pod_namespace(pod)
        total = np.zeros(len(idx), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            codes, values = topology(snapshot, c.topology_key)
            cidx = codes[idx]
            has = cidx >= 0
            if c.topology_key == HOSTNAME_KEY:
                cnt = self.pod_counts.counts(snapshot, ns, c.selector)[idx]
            elif values:
                key = (i, snapshot.node_generation, len(values))
                per_domain = s._vec.get(key)
                if per_domain is None:
                    m = s.topology_value_to_pod_counts[i]
                    per_domain = np.fromiter((m.get(v, 0) for v in values), dtype=np.int64, count=len(values))
                    s._vec[key] = per_domain
                cnt = per_domain[np.where(has, cidx, 0)]
            else:
                continue
            term = cnt.astype(np.float64) * s.topology_normalizing_weight[i] + float(c.max_skew - 1)
            total = np.where(has, total + term, total)
        out = go_round(total)
        s._vec["idx"] = idx  # normalize_vector gets scores in this order and needs to know the ignored ones
        if s.ignored_nodes:
            ignored = np.zeros(len(snapshot.node_info_list), dtype=bool)
            ignored[[snapshot.positions[n] for n in s.ignored_nodes if n in snapshot.positions]] = True
            out[ignored[idx]] = 0
        return out

    # -- ScoreExtensions -------------------------------------------------------------------------------------

    def score_extensions(self) -> Self:
        return self

    def normalize_vector(self, state: CycleState, pod: Pod, raw: np.ndarray) -> np.ndarray:
        """`normalize_score` over the raw scores `score_vector` just returned (same positions, same order)."""
        s = get_pre_score_state(state)
        raw = np.asarray(raw, dtype=np.int64)
        if isinstance(s, Status):
            return np.zeros(len(raw), dtype=np.int64)
        ignored = np.zeros(len(raw), dtype=bool)
        if s.ignored_nodes:
            idx = s._vec["idx"]
            snapshot = self.handle.snapshot
            names = [snapshot.node_info_list[i].name for i in idx.tolist()]
            ignored = np.fromiter((n in s.ignored_nodes for n in names), dtype=bool, count=len(names))
        valid = raw[~ignored]
        if len(valid) == 0 or valid.max() == 0:
            out = np.full(len(raw), MAX_NODE_SCORE, dtype=np.int64)
        else:
            lo, hi = int(valid.min()), int(valid.max())
            out = MAX_NODE_SCORE * (hi + lo - raw) // hi
        out[ignored] = 0
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        s = get_pre_score_state(state)
        if isinstance(s, Status):
            return s
        min_score, max_score = 2**63 - 1, 0
        for item in scores:
            if item.name in s.ignored_nodes:
                item.score = INVALID_SCORE
                continue
            min_score = min(min_score, item.score)
            max_score = max(max_score, item.score)
        for item in scores:
            if item.score == INVALID_SCORE:
                item.score = 0
            elif max_score == 0:
                item.score = MAX_NODE_SCORE
            else:
                # fewest matching pods -> 100; all values are non-negative, so // is Go's int64 division
                item.score = MAX_NODE_SCORE * (max_score + min_score - item.score) // max_score
        return None
