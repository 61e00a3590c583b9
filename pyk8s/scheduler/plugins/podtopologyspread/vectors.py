"""Columnar helpers for PodTopologySpread's vectorized paths (no upstream counterpart; upstream walks nodes).

Nodes map once to integer codes of their topology values (memoised on the snapshot until a node object
changes); matching-pod counts per node are kept per (namespace, selector) and refreshed only for nodes whose
NodeInfo generation moved since the last cycle, so a cycle costs O(nodes) array work plus the changed nodes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from ....api.selectors import LabelSelector
from ...framework.interface import Pod
from ...framework.snapshot import Snapshot
from ..helper import find_matching_untolerated_taint, node_taints, pod_tolerations, required_node_affinity_matches
from .common import DO_NOT_SCHEDULE_EFFECTS, count_pods_match_selector, node_labels

_INT = np.int64


def topology(snapshot: Snapshot, key: str) -> tuple[np.ndarray, list[str]]:
    """(codes, values): codes[i] indexes values for node i's value of label `key`, -1 where it is missing."""

    def compute() -> tuple[np.ndarray, list[str]]:
        index: dict[str, int] = {}
        codes = np.empty(len(snapshot.node_info_list), dtype=_INT)
        for i, ni in enumerate(snapshot.node_info_list):
            v = node_labels(ni.node or {}).get(key)
            codes[i] = -1 if v is None else index.setdefault(v, len(index))
        return codes, list(index)

    return snapshot.node_derived(("PodTopologySpread/topology", key), compute)


def value_array(snapshot: Snapshot, key: str) -> np.ndarray:
    """`topology`'s values as an object array, for picking many at once."""

    def compute() -> np.ndarray:
        values = topology(snapshot, key)[1]
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    return snapshot.node_derived(("PodTopologySpread/value-array", key), compute)


def value_rank(snapshot: Snapshot, key: str) -> np.ndarray:
    """Each of `topology`'s values' position in sorted order (ties between equal counts break by value)."""

    def compute() -> np.ndarray:
        values = topology(snapshot, key)[1]
        rank = np.empty(len(values), dtype=_INT)
        rank[sorted(range(len(values)), key=values.__getitem__)] = np.arange(len(values))
        return rank

    return snapshot.node_derived(("PodTopologySpread/value-rank", key), compute)


def topology_or_empty(snapshot: Snapshot, key: str) -> tuple[np.ndarray, list[str]]:
    """Like `topology`, but a node without the label has the value "" (as Go's map lookup gives it)."""

    def compute() -> tuple[np.ndarray, list[str]]:
        codes, values = topology(snapshot, key)
        values = list(values)
        if "" in values:
            empty = values.index("")
        else:
            empty = len(values)
            values.append("")
        return np.where(codes < 0, empty, codes), values

    return snapshot.node_derived(("PodTopologySpread/topology-or-empty", key), compute)


def has_keys(snapshot: Snapshot, keys: tuple[str, ...]) -> np.ndarray:
    """True where the node carries every one of `keys`."""

    def compute() -> np.ndarray:
        mask = np.ones(len(snapshot.node_info_list), dtype=bool)
        for k in keys:
            mask &= topology(snapshot, k)[0] >= 0
        return mask

    return snapshot.node_derived(("PodTopologySpread/has-keys", keys), compute)


class _Memo:
    """A small LRU of node masks keyed by (snapshot node generation, pod-derived key): pods differ in
    affinity and tolerations, so an unbounded per-snapshot memo could grow without limit."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        try:
            value = self._items[key]
            self._items.move_to_end(key)
            return value
        except KeyError:
            value = self._items[key] = compute()
            if len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value


def _canonical(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


class NodeMasks:
    """Per-pod node masks (required node affinity holds; no untolerated NoSchedule/NoExecute taint)."""

    def __init__(self, capacity: int = 64) -> None:
        self._memo = _Memo(capacity)

    def affinity(self, snapshot: Snapshot, pod: Pod) -> np.ndarray | None:
        """True where the pod's nodeSelector and required node affinity match; None when it has neither."""
        spec = pod.get("spec") or {}
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        selector = spec.get("nodeSelector") or {}
        if required is None and not selector:
            return None
        key = (snapshot.node_generation, "affinity", _canonical([selector, required]))

        def compute() -> np.ndarray:
            nodes = snapshot.node_info_list
            return np.fromiter(
                (required_node_affinity_matches(pod, ni.node or {}) for ni in nodes), dtype=bool, count=len(nodes)
            )

        return self._memo.get(key, compute)

    def taints(self, snapshot: Snapshot, pod: Pod) -> np.ndarray | None:
        """True where every NoSchedule/NoExecute taint is tolerated; None when no node has such a taint."""
        tainted = snapshot.node_derived(("PodTopologySpread/tainted",), lambda: _tainted_nodes(snapshot))
        if not tainted:
            return None
        tolerations = pod_tolerations(pod)
        key = (snapshot.node_generation, "taints", _canonical(tolerations))

        def compute() -> np.ndarray:
            mask = np.ones(len(snapshot.node_info_list), dtype=bool)
            for pos, taints in tainted:
                mask[pos] = find_matching_untolerated_taint(taints, tolerations) is None
            return mask

        return self._memo.get(key, compute)


def _tainted_nodes(snapshot: Snapshot) -> list[tuple[int, list[dict[str, Any]]]]:
    out = []
    for i, ni in enumerate(snapshot.node_info_list):
        taints = [t for t in node_taints(ni.node or {}) if t.get("effect") in DO_NOT_SCHEDULE_EFFECTS]
        if taints:
            out.append((i, taints))
    return out


class _Sums:
    """Per-domain sums of one count column over one domain coding and inclusion mask, and the counts they
    were summed from (so a later call adds only what changed)."""

    __slots__ = ("basis", "codes", "include", "present", "sums")

    def __init__(self, codes: np.ndarray, include: np.ndarray, basis: np.ndarray, present: np.ndarray,
                 sums: np.ndarray) -> None:  # fmt: skip
        self.codes, self.include, self.basis, self.present, self.sums = codes, include, basis, present, sums


class _Counts:
    __slots__ = ("counts", "generations", "node_generation", "sums")

    def __init__(self, node_generation: int, n: int) -> None:
        self.node_generation = node_generation
        self.generations = np.full(n, -1, dtype=_INT)
        self.counts = np.zeros(n, dtype=_INT)
        self.sums: dict[tuple[int, int, int], _Sums] = {}


class PodCounts:
    """Matching-pod counts per node position, per (namespace, selector), refreshed where the snapshot's
    generation column (each row's NodeInfo generation, set when the cache replaces a row) has moved."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[str, LabelSelector], _Counts] = OrderedDict()

    def counts(self, snapshot: Snapshot, ns: str, selector: LabelSelector) -> np.ndarray:
        nodes = snapshot.node_info_list
        n = len(nodes)
        key = (ns, selector)
        entry = self._entries.get(key)
        if entry is None or entry.node_generation != snapshot.node_generation or len(entry.counts) != n:
            entry = _Counts(snapshot.node_generation, n)
            self._entries[key] = entry
            if len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        gens = getattr(snapshot.columns, "generation", None)
        if gens is None or len(gens) != n:  # a snapshot without the generation column: read the NodeInfos
            gens = np.fromiter((ni.generation for ni in nodes), dtype=_INT, count=n)
        gens = gens.copy()
        for i in np.flatnonzero(gens != entry.generations).tolist():
            entry.counts[i] = count_pods_match_selector(nodes[i].pods, selector, ns)
        entry.generations = gens
        return entry.counts

    def domain_sums(
        self, snapshot: Snapshot, ns: str, selector: LabelSelector, codes: np.ndarray, include: np.ndarray, size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """`domain_sums(codes, counts(...), include, size)`, kept per (codes, include) array pair and brought up
        to date by the counts that changed since: a stream of pods spreading over the same domains re-sums one
        node per cycle instead of every node. Answers copies."""
        counts = self.counts(snapshot, ns, selector)
        entry = self._entries[(ns, selector)]
        key = (id(codes), id(include), size)
        got = entry.sums.get(key)
        if got is None or got.codes is not codes or got.include is not include or len(got.basis) != len(counts):
            present, sums = domain_sums(codes, counts, include, size)
            if len(entry.sums) >= 8:
                entry.sums.clear()
            entry.sums[key] = _Sums(codes, include, counts.copy(), present, sums)
            return present.copy(), sums.copy()
        changed = (counts != got.basis).nonzero()[0]
        for i in changed.tolist():
            if include[i]:
                got.sums[codes[i]] += counts[i] - got.basis[i]
            got.basis[i] = counts[i]
        return got.present.copy(), got.sums.copy()


def domain_sums(
    codes: np.ndarray, weights: np.ndarray, include: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """(present, sums) over `size` domains: which domains an included node falls in, and the sum of the
    included nodes' weights per domain. `codes` must be >= 0 where `include` is True."""
    sel = np.flatnonzero(include)
    cc = codes[sel]
    present = np.bincount(cc, minlength=size)[:size] > 0
    sums = np.bincount(cc, weights=weights[sel], minlength=size)[:size].astype(_INT)
    return present, sums


def go_round(x: np.ndarray) -> np.ndarray:
    """Go's math.Round (halves away from zero) for non-negative floats, exactly, as int64."""
    f = np.floor(x)
    return (f + (x - f >= 0.5)).astype(_INT)
