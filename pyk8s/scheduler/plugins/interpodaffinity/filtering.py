"""InterPodAffinity's PreFilter, its add/remove-pod extensions and Filter (upstream: interpodaffinity/filtering.go).

PreFilter counts, per topology pair (key, value):
- existing pods whose required anti-affinity terms select the incoming pod (only nodes hosting pods with required
  anti-affinity contribute),
- existing pods that match all of the incoming pod's required affinity terms, and those that match each of its
  required anti-affinity terms (every pod, only when the incoming pod has such terms).
Per-node contributions are kept across cycles and recomputed only for nodes that changed (common.PodCounts,
common.NodeShares), then summed per topology value with numpy. Filter answers per node from its labels;
`filter_vector` answers for all nodes at once from per-key tables over the topology value codes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...framework.interface import (
    Code,
    CycleState,
    FilterPlugin,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from ...framework.snapshot import Snapshot
from ...framework.types import AffinityTerm, NodeInfo, PodInfo
from .common import (
    NAME,
    NodeShares,
    PodCounts,
    compile_term,
    merge_namespaces,
    node_generations,
    node_labels,
    pod_matches_all_terms,
    pod_signature,
    term_key,
    topology_index,
)

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]
HitTables = dict[str, np.ndarray]  # topology key -> per value code (+ a spare False slot): count > 0


def _bump(counts: Counts, labels: dict[str, str], key: str, value: int) -> None:
    """Add `value` to the pair (key, node's value of key), if the node has the key; drop pairs that reach zero
    (value is negative when preemption removes a pod)."""
    tv = labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = counts.get(pair, 0) + value
    if n == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = n


class PreFilterState:
    """What PreFilter computed for one pod; cloned for preemption's what-if add/remove of pods."""

    __slots__ = (
        "_affinity",
        "_anti",
        "_existing",
        "affinity_terms",
        "anti_affinity_terms",
        "namespace_labels",
        "node_generation",
        "pod",
        "self_match",
        "tables",
    )

    def __init__(
        self,
        pod: Pod,
        affinity_terms: list[AffinityTerm],
        anti_affinity_terms: list[AffinityTerm],
        namespace_labels: dict[str, str] | None,
        existing_anti_affinity_counts: Counts | CodeCounts,
        affinity_counts: Counts | CodeCounts,
        anti_affinity_counts: Counts | CodeCounts,
    ) -> None:
        self.pod = pod
        self.affinity_terms = affinity_terms  # the incoming pod's, namespaces merged
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels  # of the incoming pod's namespace (None: unknown namespace)
        # The counts as {(key, value): n}; PreFilter hands them over per value code and they become dicts only
        # when the per-node path or preemption reads them (on thousands of hostnames, building them is most of
        # a cycle, and the vectorized filter never needs them).
        self._existing = existing_anti_affinity_counts
        self._affinity = affinity_counts
        self._anti = anti_affinity_counts
        # Whether the pod would satisfy its own affinity: lets the first pod of a self-affine group in.
        self.self_match = pod_matches_all_terms(affinity_terms, pod)
        # The counts as hit tables over value codes of a snapshot (filter_vector reads them); None once
        # add/remove-pod changed the counts.
        self.tables: tuple[HitTables, HitTables, HitTables] | None = None
        self.node_generation = -1

    @property
    def existing_anti_affinity_counts(self) -> Counts:
        if isinstance(self._existing, CodeCounts):
            self._existing = self._existing.pairs()
        return self._existing

    @property
    def affinity_counts(self) -> Counts:
        if isinstance(self._affinity, CodeCounts):
            self._affinity = self._affinity.pairs()
        return self._affinity

    @property
    def anti_affinity_counts(self) -> Counts:
        if isinstance(self._anti, CodeCounts):
            self._anti = self._anti.pairs()
        return self._anti

    def no_counts(self) -> tuple[bool, bool, bool]:
        """Whether the (existing anti-affinity, affinity, anti-affinity) counts are empty, without building them."""
        return tuple(  # type: ignore[return-value]
            c.empty() if isinstance(c, CodeCounts) else not c for c in (self._existing, self._affinity, self._anti)
        )

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.pod = self.pod
        c.affinity_terms = self.affinity_terms
        c.anti_affinity_terms = self.anti_affinity_terms
        c.namespace_labels = self.namespace_labels
        c.self_match = self.self_match
        c._existing = dict(self.existing_anti_affinity_counts)
        c._affinity = dict(self.affinity_counts)
        c._anti = dict(self.anti_affinity_counts)
        c.tables = self.tables  # never changed in place; an update drops them
        c.node_generation = self.node_generation
        return c

    def update_with_pod(self, pi: PodInfo, labels: dict[str, str], multiplier: int) -> None:
        """Account for `pi` appearing on (+1) or leaving (-1) a node with these labels."""
        self.tables = None
        for t in pi.required_anti_affinity_terms:
            if t.matches(self.pod, self.namespace_labels):
                _bump(self.existing_anti_affinity_counts, labels, t.topology_key, multiplier)
        if pod_matches_all_terms(self.affinity_terms, pi.pod):
            for t in self.affinity_terms:
                _bump(self.affinity_counts, labels, t.topology_key, multiplier)
        for t in self.anti_affinity_terms:
            if t.matches(pi.pod, None):
                _bump(self.anti_affinity_counts, labels, t.topology_key, multiplier)

    def hit_tables(self, snapshot: Snapshot) -> tuple[HitTables, HitTables, HitTables]:
        """(existing anti-affinity, affinity, anti-affinity) hit tables over `snapshot`'s value codes."""
        if self.tables is not None and self.node_generation == snapshot.node_generation:
            return self.tables
        return (
            _hit_tables(snapshot, self.existing_anti_affinity_counts),
            _hit_tables(snapshot, self.affinity_counts),
            _hit_tables(snapshot, self.anti_affinity_counts),
        )


def _hit_tables(snapshot: Snapshot, counts: Counts) -> HitTables:
    """Hit tables rebuilt from counts (after add/remove-pod, or for another snapshot)."""
    by_key: dict[str, list[str]] = {}
    for (k, v), n in counts.items():
        if n > 0:
            by_key.setdefault(k, []).append(v)
    tables: HitTables = {}
    for key, values in by_key.items():
        ti = topology_index(snapshot, key)
        table = ti.table(bool)
        for v in values:
            code = ti.positions.get(v)
            if code is not None:
                table[code] = True
        tables[key] = table
    return tables


def existing_anti_affinity_share(pod: Pod, namespace_labels: dict[str, str] | None, ni: NodeInfo) -> dict[str, int]:
    """Per topology key of one node, how many of its pods' required anti-affinity terms select `pod`."""
    share: dict[str, int] = {}
    if not ni.pods_with_required_anti_affinity:
        return share
    labels = node_labels(ni)
    for epi in ni.pods_with_required_anti_affinity:
        for t in epi.required_anti_affinity_terms:
            if t.topology_key in labels and t.matches(pod, namespace_labels):
                share[t.topology_key] = share.get(t.topology_key, 0) + 1
    return share


def _state_error(key: str) -> Status:
    return Status.as_error(f'error reading "{key}" from cycleState: not found')


def satisfy_existing_pods_anti_affinity(s: PreFilterState, labels: dict[str, str]) -> bool:
    counts = s.existing_anti_affinity_counts
    if counts:
        for k, v in labels.items():
            if counts.get((k, v), 0) > 0:
                return False
    return True


def satisfy_pod_anti_affinity(s: PreFilterState, labels: dict[str, str]) -> bool:
    counts = s.anti_affinity_counts
    if counts:
        for t in s.anti_affinity_terms:
            tv = labels.get(t.topology_key)
            if tv is not None and counts.get((t.topology_key, tv), 0) > 0:
                return False
    return True


def satisfy_pod_affinity(s: PreFilterState, labels: dict[str, str]) -> bool:
    pods_exist = True
    for t in s.affinity_terms:
        tv = labels.get(t.topology_key)
        if tv is None:  # every topology key must be on the node
            return False
        if s.affinity_counts.get((t.topology_key, tv), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        # The first pod of a group that is affine to itself: allowed anywhere with the topology keys, as long
        # as no pod in the cluster matches yet.
        return len(s.affinity_counts) == 0 and s.self_match
    return True


class CodeCounts:
    """Counts per topology key over value codes: hit tables for the vectorized filter, pairs when asked."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.by_key: dict[str, np.ndarray] = {}

    def add(self, key: str, code_counts: np.ndarray) -> None:
        got = self.by_key.get(key)
        self.by_key[key] = code_counts if got is None else got + code_counts

    def pairs(self) -> Counts:
        counts: Counts = {}
        for key, cc in self.by_key.items():
            counts.update(topology_index(self.snapshot, key).pairs(key, cc))
        return counts

    def tables(self) -> HitTables:
        return {key: np.append(cc > 0, False) for key, cc in self.by_key.items()}

    def empty(self) -> bool:
        """Whether `pairs()` would be empty (only non-zero counts become pairs)."""
        return not any(cc.any() for cc in self.by_key.values())


class Filtering(PreFilterPlugin, FilterPlugin, PreFilterExtensions):
    """PreFilter, Filter and PreFilterExtensions of InterPodAffinity (mixed into the plugin class)."""

    _handle: Any
    _pod_counts: PodCounts
    _node_shares: NodeShares

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        # As upstream, the counts cover every node of the snapshot, not only `nodes`.
        snapshot = self._handle.snapshot
        pi = PodInfo(pod)
        if pi.parse_errors:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {pi.parse_error}")
        list_namespaces = self._list_namespaces
        affinity_terms = [merge_namespaces(t, list_namespaces) for t in pi.required_affinity_terms]
        anti_terms = [merge_namespaces(t, list_namespaces) for t in pi.required_anti_affinity_terms]
        ns_labels = self._handle.namespace_labels(pod["metadata"].get("namespace", ""))
        if not affinity_terms and not anti_terms and not snapshot.any_pods_with_required_anti_affinity():
            return None, Status(Code.SKIP)  # nothing could be counted: the same Skip as below, sooner
        generations = node_generations(snapshot)
        existing = self.existing_anti_affinity_counts(snapshot, generations, pod, ns_labels)
        if existing.empty() and not affinity_terms and not anti_terms:
            return None, Status(Code.SKIP)
        affinity, anti = self.incoming_affinity_counts(snapshot, generations, affinity_terms, anti_terms)
        s = PreFilterState(pod, affinity_terms, anti_terms, ns_labels, existing, affinity, anti)
        s.tables = (existing.tables(), affinity.tables(), anti.tables())
        s.node_generation = snapshot.node_generation
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def existing_anti_affinity_counts(
        self, snapshot: Snapshot, generations: np.ndarray, pod: Pod, namespace_labels: dict[str, str] | None
    ) -> CodeCounts:
        """Counts of existing pods' required anti-affinity terms that select `pod`."""
        sums = CodeCounts(snapshot)
        if snapshot.any_pods_with_required_anti_affinity():

            def share(ni: NodeInfo) -> dict[str, int]:
                return existing_anti_affinity_share(pod, namespace_labels, ni)

            key = ("existing-anti", pod_signature(pod, namespace_labels))
            for k, (weights, _) in self._node_shares.shares(snapshot, generations, key, share).items():
                sums.add(k, topology_index(snapshot, k).code_sums(weights))
        return sums

    def incoming_affinity_counts(
        self,
        snapshot: Snapshot,
        generations: np.ndarray,
        affinity_terms: list[AffinityTerm],
        anti_affinity_terms: list[AffinityTerm],
    ) -> tuple[CodeCounts, CodeCounts]:
        """Counts of existing pods that match all of `affinity_terms` (once per term), and counts of those
        matching each of `anti_affinity_terms` (the incoming pod's terms, namespaces merged)."""
        affinity = CodeCounts(snapshot)
        if affinity_terms:
            matchers = [compile_term(t) for t in affinity_terms]

            def match_all(p: Pod) -> bool:
                for m in matchers:
                    if not m(p):
                        return False
                return True

            per_node = self._pod_counts.counts(
                snapshot, generations, ("all", tuple(term_key(t) for t in affinity_terms)), match_all
            )
            for t in affinity_terms:
                affinity.add(t.topology_key, topology_index(snapshot, t.topology_key).code_sums(per_node))
        anti = CodeCounts(snapshot)
        for t in anti_affinity_terms:
            per_node = self._pod_counts.counts(snapshot, generations, ("one", term_key(t)), compile_term(t))
            anti.add(t.topology_key, topology_index(snapshot, t.topology_key).code_sums(per_node))
        return affinity, anti

    def _list_namespaces(self) -> list[dict[str, Any]]:
        return self._handle.objects.list("namespaces")

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _state_error(PRE_FILTER_STATE_KEY)
        s.update_with_pod(pod_to_add, node_labels(node_info), 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _state_error(PRE_FILTER_STATE_KEY)
        s.update_with_pod(pod_to_remove, node_labels(node_info), -1)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _state_error(PRE_FILTER_STATE_KEY)
        labels = node_labels(node_info)
        if not satisfy_pod_affinity(s, labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not satisfy_pod_anti_affinity(s, labels):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not satisfy_existing_pods_anti_affinity(s, labels):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        """`filter(...) is None` for every node of the snapshot, from per-key hit tables over value codes (code
        -1, a node without the key, reads the tables' spare False slot)."""
        n = len(snapshot.node_info_list)
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return np.zeros(n, dtype=bool)
        existing, affinity, anti = s.hit_tables(snapshot)
        no_existing, no_affinity, no_anti = s.no_counts()
        ok = np.ones(n, dtype=bool)
        if s.affinity_terms:
            has_keys = np.ones(n, dtype=bool)
            pods_exist = np.ones(n, dtype=bool)
            for t in s.affinity_terms:
                codes = topology_index(snapshot, t.topology_key).codes
                has_keys &= codes >= 0
                table = affinity.get(t.topology_key)
                if table is None:  # no pod matches in any domain of this key
                    pods_exist[:] = False
                else:
                    pods_exist &= table[codes]
            if no_affinity and s.self_match:
                ok &= has_keys
            else:
                ok &= has_keys & pods_exist
        if not no_anti:
            for t in s.anti_affinity_terms:
                table = anti.get(t.topology_key)
                if table is not None:
                    ok &= ~table[topology_index(snapshot, t.topology_key).codes]
        if not no_existing:
            for key, table in existing.items():
                ok &= ~table[topology_index(snapshot, key).codes]
        return ok
