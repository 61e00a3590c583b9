"""Equivalence classes of pods (the seed's EquivalenceCache, done correctly): pods with the same spec and
namespace — the replicas of one ReplicaSet, Job or benchmark template — get the same verdict from every
*node-local* plugin, whose Filter and raw Score on a node read only the pod and that node's NodeInfo.

For such plugins the cache keeps, per class, the filter mask and the raw scores over every node of the snapshot.
The next pod of the class does not recompute them: it replays the snapshot's change log and reruns the plugins'
per-node forms only on the nodes whose NodeInfo changed since (usually the one node the previous pod was assumed
on). When only pods changed since (no Node object did), plugins that read the Node object alone keep their
verdicts: a node that passed is re-judged by the others only. A rebuilt node list invalidates everything. The per-node forms are the specification and the vectorized
forms are proven equal to them, so a cached column equals a freshly computed one.

The same classes also memoise per-node verdicts that have no vectorized form (`memo`): a rejected node's filter
status, and whether preempting on it can help. Those are filled lazily, one node at a time, and forgotten for
each node that changes — what makes a stream of identical unschedulable pods cheap after the first.

A replayed node is judged by `run_filter` / `run_score`, the functions the framework's per-node path uses too:
a plugin that raises or answers a Score with a non-success status fails the cycle (FilterError / ScoreError,
which the scheduling cycle turns into an Error status) instead of becoming a verdict or a score of 0.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ...api.errors import go_quote
from .interface import Code, CycleState, Pod, Status
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .types import NodeInfo, PodInfo

CAPACITY = 256  # classes kept (least recently used dropped)
REPLAY_LIMIT = 256  # more changed nodes than this: recomputing the column is cheaper than replaying


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()  # a memo entry not computed yet, or whose node changed since


class NominatedVerdict:
    """A memo entry for a node judged with pods nominated to it: it holds while the same pods (the same
    PodInfo objects, which the queue replaces when a pod changes) are the ones to add."""

    __slots__ = ("pods", "status")

    def __init__(self, pods: tuple[PodInfo, ...], status: Status | None) -> None:
        self.pods = pods
        self.status = status

    def holds_for(self, pods: tuple[PodInfo, ...]) -> bool:
        return len(pods) == len(self.pods) and all(a is b for a, b in zip(pods, self.pods, strict=True))


def recall(memo: np.ndarray, i: int, nominated: tuple[PodInfo, ...]) -> Status | _Unknown | None:
    """The memoised verdict at position i for a node with these nominated pods to add, or UNKNOWN."""
    entry = memo[i]
    if isinstance(entry, NominatedVerdict):
        return entry.status if nominated and entry.holds_for(nominated) else UNKNOWN
    return UNKNOWN if nominated else entry


def remember(memo: np.ndarray, i: int, nominated: tuple[PodInfo, ...], status: Status | None) -> None:
    """Keep a verdict; an Error is not kept, so a failing plugin is asked again next time."""
    if status is None or status.code != Code.ERROR:
        memo[i] = NominatedVerdict(nominated, status) if nominated else status


class FilterError(Exception):
    """A Filter plugin failed (raised, or answered neither Success nor a rejection): the cycle's Error status."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


class ScoreError(Exception):
    """A Score plugin or its NormalizeScore failed, or a score is out of range: the cycle's Error status."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


def run_filter(plugin: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
    """One Filter plugin on one node as upstream's RunFilterPlugins judges it: None on success, a rejection with
    the plugin set, or an Error status for any other answer (or an exception; Go plugins cannot raise)."""
    try:
        st = plugin.filter(state, pod, node_info)
    except Exception as e:  # a plugin bug must not take the scheduler down
        st = Status.as_error(e)
    if st is None or st.code == Code.SUCCESS:
        return None
    if not st.is_rejected():
        return Status.as_error(f"running {go_quote(plugin.name)} filter plugin: {st.message()}", plugin.name)
    st.plugin = plugin.name
    return st


def run_score(plugin: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
    """One Score plugin's raw score on one node; ScoreError with upstream's message when it does not succeed."""
    try:
        score, st = plugin.score(state, pod, node_info)
    except Exception as e:
        score, st = 0, Status.as_error(e)
    if st is not None and st.code != Code.SUCCESS:
        msg = f"running Score plugins: plugin {go_quote(plugin.name)} failed with: {st.message()}"
        raise ScoreError(Status.as_error(msg, plugin.name))
    return int(score)


def equivalence_key(state: CycleState, pod: Pod) -> bytes:
    """The pod's class: its spec and namespace, and its containers' reported resources if it has any (computed
    once per cycle)."""
    key = state.get("__equivalence")
    if key is None:
        spec = pod.get("spec") or {}
        parts: list[Any] = [pod["metadata"].get("namespace", ""), spec]
        status = pod.get("status") or {}
        if status.get("containerStatuses"):
            # With InPlacePodVerticalScaling the scorers read a container's resized requests from its status
            parts.append([[cs.get("name"), cs.get("resources")] for cs in status["containerStatuses"]])
            parts.append(status.get("resize"))
        key = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)
        state.write("__equivalence", key)
    return key


class _Column:
    __slots__ = ("epoch", "node_generation", "seq", "values")

    def __init__(self, epoch: int, seq: int, node_generation: int, values: np.ndarray) -> None:
        self.epoch = epoch
        self.seq = seq
        self.node_generation = node_generation  # the snapshot's, when the column was last brought up to date
        self.values = values


class EquivalenceCache:
    def __init__(self) -> None:
        self._columns: OrderedDict[tuple[Any, ...], _Column] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def column(
        self,
        key: tuple[Any, ...],
        snapshot: Snapshot,
        compute: Callable[[], np.ndarray],
        one: Callable[[int], Any],
        replay_limit: int = REPLAY_LIMIT,
        pods_changed: Callable[[int, Any], Any] | None = None,
    ) -> np.ndarray:
        """The column under `key` brought up to date: `compute()` builds it over all nodes, `one(i)` gives the
        value at position i (the per-node form). When no Node object has changed since the last update, only
        pods did, and `pods_changed(i, old)` gives the value at i from the old one instead (None: `one(i)`).
        Callers must not modify the returned array."""
        col = self._columns.get(key)
        if col is not None:
            changed = snapshot.changed_since(col.epoch, col.seq)
            if changed is not None and len(changed) <= replay_limit:
                values = col.values
                if pods_changed is not None and col.node_generation == snapshot.node_generation:
                    for i in changed:
                        values[i] = pods_changed(i, values[i])
                else:
                    for i in changed:
                        values[i] = one(i)
                col.seq = snapshot.change_seq
                col.node_generation = snapshot.node_generation
                self._columns.move_to_end(key)
                self.hits += 1
                return values
        self.misses += 1
        values = np.array(compute())  # a private copy: plugins may return memoised arrays
        self._columns[key] = _Column(snapshot.epoch, snapshot.change_seq, snapshot.node_generation, values)
        self._columns.move_to_end(key)
        while len(self._columns) > CAPACITY:
            self._columns.popitem(last=False)
        return values

    def memo(self, key: tuple[Any, ...], snapshot: Snapshot) -> np.ndarray:
        """A per-node memo (an object array, UNKNOWN where not known) under `key`, with the entries of nodes
        changed since reset to UNKNOWN. The caller fills in what it computes: the array is the cache's own."""
        n = snapshot.num_nodes()

        def compute() -> np.ndarray:
            return np.full(n, UNKNOWN, dtype=object)

        # Forgetting an entry costs nothing, so replaying is worth it up to a much longer log.
        return self.column(key, snapshot, compute, lambda i: UNKNOWN, replay_limit=max(REPLAY_LIMIT, n // 2))

    def filter_mask(self, state: CycleState, pod: Pod, snapshot: Snapshot, plugins: Sequence[Any]) -> np.ndarray:
        """AND of node-local plugins' filters over all nodes, for the pod's class."""
        nodes = snapshot.node_info_list

        def compute() -> np.ndarray:
            mask = plugins[0].filter_vector(state, pod, snapshot)
            for p in plugins[1:]:
                mask = mask & p.filter_vector(state, pod, snapshot)
            return mask

        def passes(i: int, which: Sequence[Any]) -> bool:
            ni = nodes[i]
            for p in which:
                st = run_filter(p, state, pod, ni)
                if st is None:
                    continue
                if st.code == Code.ERROR:
                    raise FilterError(st)
                return False
            return True

        def one(i: int) -> bool:
            return passes(i, plugins)

        # A node that passed and only had pods come or go still passes the plugins that read the Node alone.
        pod_readers = [p for p in plugins if not p.node_object_only]

        def pods_changed(i: int, passed: bool) -> bool:
            return passes(i, pod_readers) if passed else passes(i, plugins)

        # The plugin objects themselves name the column: hashing them is cheaper than collecting their names.
        key = ("filter", equivalence_key(state, pod), tuple(plugins))
        return self.column(key, snapshot, compute, one, pods_changed=pods_changed)

    def raw_scores(self, state: CycleState, pod: Pod, snapshot: Snapshot, plugin: Any) -> np.ndarray:
        """A node-local plugin's raw scores over all nodes, for the pod's class."""
        nodes = snapshot.node_info_list

        def compute() -> np.ndarray:
            return np.asarray(
                plugin.score_vector(state, pod, snapshot, np.arange(len(nodes), dtype=np.int64)), dtype=np.int64
            )

        def one(i: int) -> int:
            return run_score(plugin, state, pod, nodes[i])

        key = ("score", equivalence_key(state, pod), plugin)
        keep = (lambda i, old: old) if plugin.node_object_only else None
        return self.column(key, snapshot, compute, one, pods_changed=keep)

    def weighted_scores(
        self, state: CycleState, pod: Pod, snapshot: Snapshot, plugins: Sequence[tuple[Any, int]]
    ) -> np.ndarray:
        """The sum of weight * raw score over node-local plugins without normalisation, over all nodes, for the class."""
        nodes = snapshot.node_info_list
        everywhere = np.arange(len(nodes), dtype=np.int64)

        def compute() -> np.ndarray:
            total = np.zeros(len(nodes), dtype=np.int64)
            for p, w in plugins:
                total += w * np.asarray(p.score_vector(state, pod, snapshot, everywhere), dtype=np.int64)
            return total

        def one(i: int) -> int:
            return sum(w * run_score(p, state, pod, nodes[i]) for p, w in plugins)

        key = ("weighted", equivalence_key(state, pod), tuple(plugins))
        return self.column(key, snapshot, compute, one)
