"""InterPodAffinity's PreScore, Score and NormalizeScore (upstream: interpodaffinity/scoring.go).

PreScore sums weights per topology pair: the incoming pod's preferred (anti-)affinity terms against existing pods,
and existing pods' required affinity (hardPodAffinityWeight) and preferred (anti-)affinity terms against the
incoming pod. The first part needs every pod, the second only pods with affinity; both are kept per node across
cycles (common.PodCounts, common.NodeShares) and summed per topology value with numpy. A node's score is the sum
over topology keys of its value's weight; NormalizeScore scales the scores to 0..100 between their min and max.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...framework.interface import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    NodeScore,
    Pod,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from ...framework.snapshot import Snapshot
from ...framework.types import NodeInfo, PodInfo, has_preferred_pod_affinity
from .common import (
    NAME,
    NodeShares,
    PodCounts,
    TopologyIndex,
    compile_term,
    merge_namespaces,
    node_generations,
    node_labels,
    pod_signature,
    term_key,
    topology_index,
)

PRE_SCORE_STATE_KEY = "PreScore" + NAME

ScoreMap = dict[str, dict[str, int]]  # topology key -> value -> summed weight


class _KeyScores:
    """One topology key's weights over value codes, and which values have a pair at all."""

    __slots__ = ("index", "present", "weights")

    def __init__(self, index: TopologyIndex) -> None:
        self.index = index
        self.weights = np.zeros(len(index.values), dtype=np.int64)
        self.present = np.zeros(len(index.values), dtype=bool)


class PreScoreState:
    """The summed weights per topology pair; never changed after PreScore, so cloning shares it."""

    __slots__ = ("_scores", "_topology_score", "node_generation")

    def __init__(self, scores: dict[str, _KeyScores], node_generation: int) -> None:
        self._scores = scores
        self.node_generation = node_generation
        self._topology_score: ScoreMap | None = None

    @property
    def topology_score(self) -> ScoreMap:
        """Upstream's shape, {key: {value: weight}} with every pair that got any weight (even a zero sum)."""
        if self._topology_score is None:
            out: ScoreMap = {}
            for key, ks in self._scores.items():
                values = ks.index.values
                pairs = {values[c]: int(ks.weights[c]) for c in np.flatnonzero(ks.present).tolist()}
                if pairs:
                    out[key] = pairs
            self._topology_score = out
        return self._topology_score


def symmetric_share(
    pod: Pod, namespace_labels: dict[str, str] | None, hard_pod_affinity_weight: int, ni: NodeInfo
) -> dict[str, int]:
    """Per topology key of one node, the weight its pods' own terms selecting the incoming pod give the node's
    value: required affinity at hardPodAffinityWeight, preferred affinity +weight, preferred anti-affinity
    -weight. A key appears once any term applies, even if the weights sum to zero."""
    share: dict[str, int] = {}
    if not ni.pods_with_affinity:
        return share
    labels = node_labels(ni)
    if not labels:  # no topology value to credit
        return share
    for epi in ni.pods_with_affinity:
        if hard_pod_affinity_weight > 0:
            for t in epi.required_affinity_terms:
                if t.topology_key in labels and t.matches(pod, namespace_labels):
                    share[t.topology_key] = share.get(t.topology_key, 0) + hard_pod_affinity_weight
        for w in epi.preferred_affinity_terms:
            if w.term.topology_key in labels and w.term.matches(pod, namespace_labels):
                share[w.term.topology_key] = share.get(w.term.topology_key, 0) + w.weight
        for w in epi.preferred_anti_affinity_terms:
            if w.term.topology_key in labels and w.term.matches(pod, namespace_labels):
                share[w.term.topology_key] = share.get(w.term.topology_key, 0) - w.weight
    return share


class Scoring(PreScorePlugin, ScorePlugin, ScoreExtensions):
    """PreScore, Score and NormalizeScore of InterPodAffinity (mixed into the plugin class)."""

    _handle: Any
    _pod_counts: PodCounts
    _node_shares: NodeShares
    hard_pod_affinity_weight: int
    ignore_preferred_terms_of_existing_pods: bool

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        # As upstream, both Skips come before the pod's terms are parsed, and a pod whose preferred terms are all
        # invalid still has constraints.
        if not nodes:
            return Status(Code.SKIP)
        if self.ignore_preferred_terms_of_existing_pods and not has_preferred_pod_affinity(pod):
            return Status(Code.SKIP)
        pi = PodInfo(pod)
        if pi.parse_errors:
            return Status.as_error(f"failed to parse pod: {pi.parse_error}")
        # As upstream, every node of the snapshot counts, not only `nodes`.
        snapshot = self._handle.snapshot
        weighted = [(w.term, w.weight) for w in pi.preferred_affinity_terms]
        weighted += [(w.term, -w.weight) for w in pi.preferred_anti_affinity_terms]
        if not weighted and not snapshot.any_pods_with_affinity():
            return Status(Code.SKIP)  # nothing could be scored: the same Skip as below, sooner
        ns_labels = self._handle.namespace_labels(pod["metadata"].get("namespace", ""))
        generations = node_generations(snapshot)
        scores: dict[str, _KeyScores] = {}

        def key_scores(key: str) -> _KeyScores:
            ks = scores.get(key)
            if ks is None:
                ks = scores[key] = _KeyScores(topology_index(snapshot, key))
            return ks

        def list_namespaces() -> list[dict[str, Any]]:
            return self._handle.objects.list("namespaces")

        # The incoming pod's preferred terms against every pod: matching pods counted per node, summed per
        # topology value; a value has a pair once any pod in its domain matches.
        for term, weight in weighted:
            merged = merge_namespaces(term, list_namespaces)
            per_node = self._pod_counts.counts(snapshot, generations, ("one", term_key(merged)), compile_term(merged))
            ks = key_scores(merged.topology_key)
            matched = ks.index.code_sums(per_node)
            ks.weights += matched * weight
            ks.present |= matched > 0
        # Existing pods' own terms: only nodes hosting pods with affinity contribute.
        if snapshot.any_pods_with_affinity():
            hard = self.hard_pod_affinity_weight

            def share(ni: NodeInfo) -> dict[str, int]:
                return symmetric_share(pod, ns_labels, hard, ni)

            memo_key = ("symmetric", pod_signature(pod, ns_labels), hard)
            for key, (node_weights, node_present) in self._node_shares.shares(
                snapshot, generations, memo_key, share
            ).items():
                ks = key_scores(key)
                ks.weights += ks.index.code_sums(node_weights)
                ks.present |= ks.index.code_any(node_present)
        if not any(ks.present.any() for ks in scores.values()):
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(scores, snapshot.node_generation))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, Status.as_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        labels = node_labels(node_info)
        total = 0
        for key, per_value in s.topology_score.items():
            tv = labels.get(key)
            if tv is not None:
                total += per_value.get(tv, 0)
        return total, None

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        """The raw scores of the nodes at positions `idx`: per key, the weight of each node's value code (a node
        without the key reads the spare 0 slot)."""
        s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        total = np.zeros(len(idx), dtype=np.int64)
        for key, per_value in self._weight_tables(s, snapshot):
            total += per_value[topology_index(snapshot, key).codes[idx]]
        return total

    @staticmethod
    def _weight_tables(s: PreScoreState, snapshot: Snapshot) -> list[tuple[str, np.ndarray]]:
        if s.node_generation == snapshot.node_generation:
            return [(key, np.append(ks.weights, 0)) for key, ks in s._scores.items()]
        tables = []  # another node list than PreScore's: rebuild from the pairs
        for key, per_value in s.topology_score.items():
            ti = topology_index(snapshot, key)
            table = ti.table(np.int64)
            for v, weight in per_value.items():
                code = ti.positions.get(v)
                if code is not None:
                    table[code] = weight
            tables.append((key, table))
        return tables

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_vector(self, state: CycleState, pod: Pod, raw: np.ndarray) -> np.ndarray:
        """normalize_score over an array of raw scores: the same float64 operations elementwise, truncated."""
        s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        if not s.topology_score or not len(raw):
            return raw
        lo = int(raw.min())
        diff = int(raw.max()) - lo
        if diff <= 0:
            return np.zeros(len(raw), dtype=np.int64)
        return (float(MAX_NODE_SCORE) * ((raw - lo).astype(np.float64) / float(diff))).astype(np.int64)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return Status.as_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if not s.topology_score or not scores:
            return None
        lo = min(ns.score for ns in scores)
        diff = max(ns.score for ns in scores) - lo
        for ns in scores:
            # Same float64 operations, in the same order, as upstream; int() truncates like Go's conversion.
            ns.score = int(float(MAX_NODE_SCORE) * (float(ns.score - lo) / float(diff))) if diff > 0 else 0
        return None
