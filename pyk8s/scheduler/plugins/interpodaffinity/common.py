"""Pieces the InterPodAffinity plugin's filtering and scoring share (upstream: interpodaffinity/plugin.go's
mergeAffinityTermNamespacesIfNotEmpty and filtering.go's term matching): the plugin name, namespace merging of the
incoming pod's terms, term matching, the per-topology-key node index the vectorized Filter and Score read, and the
caches that keep PreFilter and PreScore from testing every pod of the cluster on every cycle (no upstream
counterpart: upstream walks all pods each time).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....api.selectors import NOTHING
from ...framework.interface import Pod
from ...framework.snapshot import Snapshot
from ...framework.types import AffinityTerm, NodeInfo

NAME = "InterPodAffinity"

Matcher = Callable[[Pod], bool]
_EMPTY: dict[str, str] = {}


def node_labels(ni: NodeInfo) -> dict[str, str]:
    node = ni.node
    if node is None:
        return _EMPTY
    return (node.get("metadata") or {}).get("labels") or _EMPTY


def labels_of(obj: dict[str, Any] | None) -> dict[str, str]:
    if obj is None:
        return _EMPTY
    return (obj.get("metadata") or {}).get("labels") or _EMPTY


def merge_namespaces(term: AffinityTerm, namespaces: Callable[[], Iterable[dict[str, Any]]]) -> AffinityTerm:
    """The incoming pod's term with the namespaces its namespaceSelector picks folded into `namespaces`.

    As upstream, an empty selector (all namespaces) is kept as it is, and a merged term's selector becomes
    "nothing"; so the merged term can be matched without looking up the other pod's namespace labels. A new
    term is returned: the PodInfo's own terms are shared with the rest of the scheduler and must not change.
    """
    sel = term.namespace_selector
    if sel.empty or sel.nothing:  # nothing: no selector given, listing would add no namespace
        return term
    names = set(term.namespaces)
    for ns in namespaces():
        md = ns.get("metadata") or {}
        if sel.matches(md.get("labels") or _EMPTY):
            names.add(md.get("name", ""))
    return AffinityTerm(frozenset(names), term.selector, term.topology_key, NOTHING)


def pod_matches_all_terms(terms: list[AffinityTerm], pod: Pod) -> bool:
    """Whether `pod` matches every term (False for no terms); the pod's namespace labels are not consulted,
    as upstream's podMatchesAllAffinityTerms (the incoming pod's terms carry merged namespaces)."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def pod_signature(pod: Pod, namespace_labels: dict[str, str] | None) -> tuple[Any, ...]:
    """What decides whether other pods' terms select `pod`: its namespace, labels and namespace labels."""
    md = pod["metadata"]
    ns_labels = None if namespace_labels is None else frozenset(namespace_labels.items())
    return (md.get("namespace", ""), frozenset((md.get("labels") or _EMPTY).items()), ns_labels)


def _never(pod: Pod) -> bool:
    return False


def compile_term(term: AffinityTerm) -> Matcher:
    """`term.matches(pod, None)` as a closure with the constant parts decided once; PreFilter and PreScore run
    it against every pod in the cluster."""
    if term.selector.nothing:
        return _never
    any_namespace = term.namespace_selector.matches(None)
    namespaces = term.namespaces
    requirements = term.selector.requirements

    def match(pod: Pod) -> bool:
        md = pod["metadata"]
        if not any_namespace and md.get("namespace", "") not in namespaces:
            return False
        labels = md.get("labels") or _EMPTY
        for r in requirements:
            if not r.matches(labels):
                return False
        return True

    return match


def term_key(term: AffinityTerm) -> tuple[Any, ...]:
    """What decides which pods a (merged) term selects, hashable: its namespaces and selectors."""
    return (term.namespaces, term.selector, term.namespace_selector)


@dataclass(frozen=True, slots=True)
class TopologyIndex:
    """For one topology key: each node's label value as a small integer code (-1 when the node lacks the key)."""

    codes: np.ndarray  # int64, one per position of snapshot.node_info_list
    positions: dict[str, int]  # label value -> code
    values: list[str]  # code -> label value

    def table(self, dtype: type) -> np.ndarray:
        """A per-code lookup table with one spare slot at the end, which code -1 reads (nodes without the key)."""
        return np.zeros(len(self.values) + 1, dtype=dtype)

    def code_sums(self, per_node: np.ndarray) -> np.ndarray:
        """Per code, the sum of the per-node integers over the nodes with that value (int64)."""
        sel = np.flatnonzero((per_node != 0) & (self.codes >= 0))
        if not len(sel):
            return np.zeros(len(self.values), dtype=np.int64)
        # float64 sums of these small integers are exact (far below 2**53), so the cast back loses nothing.
        return np.bincount(self.codes[sel], weights=per_node[sel], minlength=len(self.values)).astype(np.int64)

    def code_any(self, per_node: np.ndarray) -> np.ndarray:
        """Per code, whether any node with that value is flagged in the per-node booleans."""
        sel = self.codes[per_node & (self.codes >= 0)]
        return np.bincount(sel, minlength=len(self.values)) > 0

    def pairs(self, key: str, code_counts: np.ndarray) -> dict[tuple[str, str], int]:
        """The non-zero per-code numbers as {(key, value): number}."""
        values = self.values
        nz = np.flatnonzero(code_counts)
        return {(key, values[c]): n for c, n in zip(nz.tolist(), code_counts[nz].tolist(), strict=True)}


def topology_index(snapshot: Snapshot, key: str) -> TopologyIndex:
    """The node -> value-code map of `key`, memoised until a Node object changes (pods moving do not matter)."""

    def build() -> TopologyIndex:
        positions: dict[str, int] = {}
        codes = np.full(len(snapshot.node_info_list), -1, dtype=np.int64)
        for i, ni in enumerate(snapshot.node_info_list):
            v = node_labels(ni).get(key)
            if v is not None:
                code = positions.get(v)
                if code is None:
                    code = positions[v] = len(positions)
                codes[i] = code
        return TopologyIndex(codes, positions, list(positions))

    return snapshot.node_derived((NAME, "topology", key), build)


class _LRU(OrderedDict[Hashable, Any]):
    """Entries kept per key, the least recently used dropped past `capacity` (pods differ in terms and labels, so
    the keys are unbounded over time)."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def fresh(self, key: Hashable, snapshot: Snapshot, make: Callable[[], Any]) -> Any:
        """The entry for `key`, a new one if it is missing or was built for another node list."""
        entry = self.get(key)
        if entry is None or entry.node_generation != snapshot.node_generation:
            entry = self[key] = make()
            if len(self) > self.capacity:
                self.popitem(last=False)
        else:
            self.move_to_end(key)
        return entry


def node_generations(snapshot: Snapshot) -> np.ndarray:
    """Every node's NodeInfo generation, by position; one pass per cycle serves every cache lookup."""
    return snapshot.columns.generation.copy()  # a copy: callers keep it to compare with the next cycle's


class _PositionCounts:
    __slots__ = ("counts", "generations", "node_generation")

    def __init__(self, node_generation: int, n: int) -> None:
        self.node_generation = node_generation
        self.generations = np.full(n, -1, dtype=np.int64)
        self.counts = np.zeros(n, dtype=np.int64)


class PodCounts:
    """Per node position, how many of the node's pods a predicate selects.

    Kept per predicate key across cycles and recounted only at positions whose NodeInfo generation moved, which
    every pod added or removed and every Node update does: a cycle costs one pass over the generations plus the
    pods of the nodes that changed, instead of testing every pod in the cluster.
    """

    def __init__(self, capacity: int = 64) -> None:
        self._entries = _LRU(capacity)

    def counts(self, snapshot: Snapshot, generations: np.ndarray, key: Hashable, predicate: Matcher) -> np.ndarray:
        """The per-position counts; `generations` is node_generations(snapshot) of this cycle."""
        nodes = snapshot.node_info_list
        entry = self._entries.fresh(key, snapshot, lambda: _PositionCounts(snapshot.node_generation, len(nodes)))
        counts = entry.counts
        for i in np.flatnonzero(generations != entry.generations).tolist():
            k = 0
            for pi in nodes[i].pods:
                if predicate(pi.pod):
                    k += 1
            counts[i] = k
        entry.generations = generations
        return counts


class _PositionShares:
    __slots__ = ("generations", "node_generation", "present", "weights")

    def __init__(self, node_generation: int, n: int) -> None:
        self.node_generation = node_generation
        self.generations = np.full(n, -1, dtype=np.int64)
        self.weights: dict[str, np.ndarray] = {}
        self.present: dict[str, np.ndarray] = {}


Shares = dict[str, tuple[np.ndarray, np.ndarray]]  # topology key -> (weight per node, whether the node has one)


class NodeShares:
    """Per node position and topology key, what a node's own pods contribute to the node's own topology value
    (existing pods' terms selecting the incoming pod): `compute(node)` gives {topology key: weight} for the keys
    the node has. Kept per key across cycles and recomputed only where the NodeInfo generation moved."""

    def __init__(self, capacity: int = 32) -> None:
        self._entries = _LRU(capacity)

    def shares(
        self,
        snapshot: Snapshot,
        generations: np.ndarray,
        key: Hashable,
        compute: Callable[[NodeInfo], dict[str, int]],
    ) -> Shares:
        """The per-position shares by topology key; `generations` is node_generations(snapshot) of this cycle."""
        nodes = snapshot.node_info_list
        n = len(nodes)
        entry = self._entries.fresh(key, snapshot, lambda: _PositionShares(snapshot.node_generation, n))
        weights, present = entry.weights, entry.present
        for i in np.flatnonzero(generations != entry.generations).tolist():
            for k in weights:
                weights[k][i] = 0
                present[k][i] = False
            for k, w in compute(nodes[i]).items():
                if k not in weights:
                    weights[k] = np.zeros(n, dtype=np.int64)
                    present[k] = np.zeros(n, dtype=bool)
                weights[k][i] = w
                present[k][i] = True
        entry.generations = generations
        return {k: (weights[k], present[k]) for k in weights}
