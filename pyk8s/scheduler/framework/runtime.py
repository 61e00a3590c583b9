"""The framework runtime (upstream: framework/runtime/framework.go): one profile's plugins instantiated and
run at each extension point in configured order, with upstream's rules for statuses, skips and weights.

Filter and Score have two paths. The per-node path (`run_filter_plugins`, `node_statuses`, and every plugin
with `vectorized=False`) is upstream's loop, used by preemption and nodes with nominated pods. The fast path
(`find_feasible`, `run_score_plugins`) asks plugins that offer `filter_vector` / `score_vector` for whole
columns at once, keeps node-local plugins' columns per equivalence class (`equivalence.py`), and runs the rest
per node, in upstream's order, so both paths decide alike. When every active Filter is node-local, the per-node
verdicts the vectorized framework works out (`node_statuses`, nodes with nominated pods, preemption's dry run)
are memoised per class too (`class_memo`), so a stream of pods that fit nowhere costs only the nodes that
changed.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ...api.duration import format_go_duration
from ...api.errors import go_quote
from .. import metrics
from .equivalence import (
    UNKNOWN,
    EquivalenceCache,
    FilterError,
    ScoreError,
    equivalence_key,
    recall,
    remember,
    run_filter,
    run_score,
)
from .handle import FrameworkHandle
from .interface import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    NodeScore,
    Plugin,
    PluginFactory,
    Pod,
    PostFilterResult,
    PreFilterResult,
    ScorePlugin,
    Status,
)
from .types import NodeInfo, PodInfo, Positions, pod_priority, position_array

F = TypeVar("F", bound=Callable[..., Any])
# How run_score_plugins runs a Score plugin: summed with the other node-local in-tree plugins without
# normalisation and cached per equivalence class; its raw column cached per class; its score_vector; per node.
_SUMMED, _COLUMN, _VECTOR, _PER_NODE = "summed", "column", "vector", "per-node"


class _FilterPlan(NamedTuple):
    """The active Filter plugins by how find_feasible runs them."""

    node_local: tuple[Any, ...]  # with filter_vector, masks cached per equivalence class
    vector: list[Any]  # with filter_vector, asked every cycle
    per_node: list[FilterPlugin]  # no vector form


IN_TREE_PREFIX = "pyk8s.scheduler.plugins."


class FrameworkError(ValueError):
    """A profile whose plugins cannot be assembled (unknown plugin, wrong extension point, bad weight)."""


def _go_duration(seconds: float) -> str:
    return format_go_duration(round(seconds * 1_000_000_000))


class WaitingPod:
    """A pod Permit plugins asked to wait (upstream: waitingPod). Each waiting plugin's timer starts here and,
    when it runs out before that plugin allowed the pod, rejects the pod; the pod is allowed once every waiting
    plugin allowed it. `future` holds the outcome: None (allowed) or the rejection."""

    def __init__(self, pod: Pod, pending: dict[str, float]) -> None:
        self.pod = pod
        self.pending = dict(pending)  # plugin -> its timeout (s), until the plugin allows the pod
        loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Status | None] = loop.create_future()
        self._timers = {
            plugin: loop.call_later(timeout, self._timed_out, plugin, timeout)
            for plugin, timeout in self.pending.items()
        }

    def _timed_out(self, plugin: str, timeout: float) -> None:
        self.reject(plugin, f"rejected due to timeout after waiting {_go_duration(timeout)} at plugin {plugin}")

    def get_pending_plugins(self) -> list[str]:
        return list(self.pending)

    def allow(self, plugin: str) -> None:
        """`plugin` allows the pod: its timer stops, the others keep running."""
        timer = self._timers.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        self.pending.pop(plugin, None)
        if not self.pending and not self.future.done():
            self.future.set_result(None)

    def reject(self, plugin: str, message: str) -> None:
        self.cancel_timers()
        if not self.future.done():
            self.future.set_result(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    def cancel_timers(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


def _status_in(result: Any) -> Status | None:
    if isinstance(result, Status):
        return result
    if isinstance(result, tuple):
        return next((r for r in result if isinstance(r, Status)), None)
    return None


def _timed(point: str) -> Callable[[F], F]:
    """Record the extension point's duration under upstream's metric, labelled by the resulting status, in the
    cycles sampled for plugin metrics (upstream samples 10% of them: timing every cycle costs more than it
    tells)."""

    def wrap(fn: F) -> F:
        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(self: Framework, state: CycleState, *args: Any, **kwargs: Any) -> Any:
                if not state.record_plugin_metrics:
                    return await fn(self, state, *args, **kwargs)
                t0 = time.perf_counter()
                result = await fn(self, state, *args, **kwargs)
                self.observe(point, t0, _status_in(result))
                return result

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(self: Framework, state: CycleState, *args: Any, **kwargs: Any) -> Any:
            if not state.record_plugin_metrics:
                return fn(self, state, *args, **kwargs)
            t0 = time.perf_counter()
            result = fn(self, state, *args, **kwargs)
            self.observe(point, t0, _status_in(result))
            return result

        return run  # type: ignore[return-value]

    return wrap


class Framework:
    """One scheduling profile: its plugins per extension point, weights and the handle they share."""

    def __init__(
        self,
        profile_name: str,
        plugins: dict[str, list[tuple[str, int]]],
        registry: dict[str, PluginFactory],
        plugin_args: dict[str, dict[str, Any]] | None = None,
        handle: FrameworkHandle | None = None,
        *,
        percentage_of_nodes_to_score: int | None = None,
        vectorized: bool = True,
        require_bind: bool = True,
    ) -> None:
        self.profile_name = profile_name
        self.handle = handle or FrameworkHandle()
        self.handle.framework = self
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        plugin_args = plugin_args or {}
        self.plugins: dict[str, Plugin] = {}
        for entries in plugins.values():
            for name, _ in entries:
                if name in self.plugins:
                    continue
                factory = registry.get(name)
                if factory is None:
                    raise FrameworkError(f'plugin "{name}" does not exist')
                try:
                    self.plugins[name] = factory(plugin_args.get(name), self.handle)
                except ValueError as e:
                    raise FrameworkError(f"initializing plugin {go_quote(name)}: {e}") from None
        self.points: dict[str, list[Any]] = {}
        self.score_weights: dict[str, int] = {}
        for point, base in EXTENSION_POINTS.items():
            chosen = []
            for name, weight in plugins.get(point, []):
                plugin = self.plugins[name]
                if not isinstance(plugin, base):
                    raise FrameworkError(f'plugin "{name}" does not extend {point} plugin')
                chosen.append(plugin)
                if point == "score":
                    if weight is not None and weight < 0:
                        raise FrameworkError(f"score plugin {go_quote(name)} has a negative weight")
                    self.score_weights[name] = weight or 1
            self.points[point] = chosen
        if require_bind and not self.points["bind"]:
            raise FrameworkError("at least one bind plugin is needed")
        self.waiting_pods: dict[str, WaitingPod] = {}
        self._metric_children: dict[tuple[str, Code], Any] = {}
        # vectorized=False runs every plugin per node: the readable path, and the benchmark's baseline
        self.vectorized = vectorized
        self._vector_filters = {p.name for p in self.points["filter"] if vectorized and hasattr(p, "filter_vector")}
        self.equivalence = EquivalenceCache()
        self._nominated_answers: tuple[Any, dict[str, list[PodInfo]]] = (None, {})
        self._trusted = {n for n, p in self.plugins.items() if type(p).__module__.startswith(IN_TREE_PREFIX)}
        self._score_plans: dict[frozenset[str], list[tuple[ScorePlugin, int, str]]] = {}
        self._filter_plans: dict[frozenset[str], _FilterPlan] = {}

    # -- queue-side ------------------------------------------------------------------------------------------

    def queue_sort_less(self) -> Any:
        sorters = self.points["queueSort"]
        return sorters[0].less if sorters else None

    def pre_enqueue_plugins(self) -> list[Any]:
        return list(self.points["preEnqueue"])

    def events_to_register(self) -> list[tuple[ClusterEventWithHint, str]]:
        """(event with hint, plugin) for every plugin; a plugin without EnqueueExtensions registers every event."""
        from .interface import ActionType, ClusterEvent, EnqueueExtensions

        out: list[tuple[ClusterEventWithHint, str]] = []
        for name, plugin in self.plugins.items():
            if isinstance(plugin, EnqueueExtensions):
                out.extend((ev, name) for ev in plugin.events_to_register())
            else:
                out.append((ClusterEventWithHint(ClusterEvent("*", ActionType.ALL)), name))
        return out

    def has_filter_plugins(self) -> bool:
        return bool(self.points["filter"])

    def has_score_plugins(self) -> bool:
        return bool(self.points["score"])

    def has_post_filter_plugins(self) -> bool:
        return bool(self.points["postFilter"])

    # -- PreFilter --------------------------------------------------------------------------------------------

    @_timed("PreFilter")
    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Upstream's RunPreFilterPlugins: (merged result, status, the plugins whose PreFilterResult narrowed the
        nodes — pluginsWithNodes, also on success). UnschedulableAndUnresolvable stops at once (no preemption
        follows), and so does any other failure, Pending included, as an Error status. Unschedulable is kept
        while the remaining PreFilters run (preemption reads their state) and returned at the end (the last one,
        as upstream). A merged result with no node left is UnschedulableAndUnresolvable. The skipped plugins
        are recorded in the state whatever the outcome (upstream: in a defer)."""
        skipped: set[str] = set()
        try:
            return self._pre_filter(state, pod, nodes, skipped)
        finally:
            state.skip_filter_plugins = skipped

    def _pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo], skipped: set[str]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        rejection: Status | None = None
        for plugin in self.points["preFilter"]:
            name = plugin.name
            try:
                r, st = plugin.pre_filter(state, pod, nodes)
            except Exception as e:  # a plugin bug must not take the scheduler down
                return None, Status.as_error(f"running PreFilter plugin {go_quote(name)}: {e}", name), set()
            if st is not None and st.code == Code.SKIP:
                skipped.add(name)
                continue
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = name
                if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, st, set()  # no preemption follows: the other PreFilters need not run
                if st.code == Code.UNSCHEDULABLE:
                    rejection = st  # preemption follows in this cycle and reads every PreFilter's state
                    continue
                return None, Status.as_error(f"running PreFilter plugin {go_quote(name)}: {st.message()}", name), set()
            if r is None or r.node_names is None:
                continue
            with_nodes.add(name)
            result = PreFilterResult(set(r.node_names)) if result is None else result.merge(r)
            if not result.node_names:
                listed = sorted(with_nodes)
                msg = f"node(s) didn't satisfy plugin(s) [{' '.join(listed)}] simultaneously"
                if len(listed) == 1:
                    msg = f"node(s) didn't satisfy plugin {listed[0]}"
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), with_nodes
        return result, rejection, with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node_info)

    def _run_pre_filter_extension(
        self, which: str, state: CycleState, pod: Pod, other: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Tell each PreFilter's state that `other` was added to (AddPod) or removed from (RemovePod) the node."""
        for plugin in self.points["preFilter"]:
            if plugin.name in state.skip_filter_plugins:
                continue
            ext = plugin.pre_filter_extensions()
            if ext is None:
                continue
            run = ext.add_pod if which == "AddPod" else ext.remove_pod
            st = run(state, pod, other, node_info)
            if st is not None and st.code != Code.SUCCESS:
                return Status.as_error(f"running {which} on PreFilter plugin {go_quote(plugin.name)}: {st.message()}")
        return None

    # -- Filter -----------------------------------------------------------------------------------------------

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Upstream's RunFilterPlugins: plugins in order; the first non-success status is the node's."""
        for plugin in self.points["filter"]:
            if plugin.name in state.skip_filter_plugins:
                continue
            st = run_filter(plugin, state, pod, node_info)
            if st is not None:
                return st
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, nominated: Sequence[PodInfo] | None = None
    ) -> Status | None:
        """Filters run twice when pods of equal or higher priority are nominated to the node: once with them
        added (they will land there) and once without (they may not) — both must pass (upstream). `nominated`
        is `nominated_pods_to_add` when the caller has it already."""
        if nominated is None:
            nominated = self.nominated_pods_to_add(pod, node_info.name)
        for with_nominated in (True, False):
            if with_nominated and not nominated:
                continue
            st_state, ni = state, node_info
            if with_nominated:
                st_state = state.clone()
                ni = node_info.clone()
                for pi in nominated:
                    ni.add_pod(pi)
                    s = self.run_pre_filter_extension_add_pod(st_state, pod, pi, ni)
                    if s is not None:
                        return s
            st = self.run_filter_plugins(st_state, pod, ni)
            if st is not None:
                return st
        return None

    def nominated_pods_to_add(self, pod: Pod, node_name: str) -> list[PodInfo]:
        """The other pods nominated to the node with at least the pod's priority (callers must not modify the
        list: while the nominations stay the same, the answers for one pod are kept — a cycle asks per node,
        several times, on thousands of nodes)."""
        nominator = self.handle.nominator
        if nominator is None:
            return []
        has = getattr(nominator, "has_nominated_pods", None)
        if has is not None and not has(node_name):
            return []
        uid = pod["metadata"].get("uid")
        prio = pod_priority(pod)
        version = getattr(nominator, "nominations_version", None)
        answers: dict[str, list[PodInfo]] | None = None
        if version is not None:
            key = (uid, prio, version)
            if self._nominated_answers[0] != key:
                self._nominated_answers = (key, {})
            answers = self._nominated_answers[1]
            if (known := answers.get(node_name)) is not None:
                return known
        out = [
            pi for pi in nominator.nominated_pods_for_node(node_name) if pi.uid != uid and pod_priority(pi.pod) >= prio
        ]
        if answers is not None:
            answers[node_name] = out
        return out

    def judge_node(self, state: CycleState, pod: Pod, i: int, memo: np.ndarray) -> Status | None:
        """The filter verdict at snapshot position i, with the node's nominated pods, through the class memo."""
        ni = self.handle.snapshot.node_info_list[i]
        nominated = tuple(self.nominated_pods_to_add(pod, ni.name))
        st = recall(memo, i, nominated)
        if st is UNKNOWN:
            st = self.run_filter_plugins_with_nominated_pods(state, pod, ni, nominated)
            remember(memo, i, nominated, st)
        return st  # type: ignore[return-value]

    def nodes_with_nominated_pods(self) -> set[str]:
        nominator = self.handle.nominator
        if nominator is None:
            return set()
        return set(getattr(nominator, "nominated_node_names", lambda: set())())

    def _filter_plan(self, skipped: set[str]) -> _FilterPlan:
        """The active Filter plugins split by how they run, kept per set of skipped plugins."""
        key = frozenset(skipped)
        plan = self._filter_plans.get(key)
        if plan is None:
            active = [p for p in self.points["filter"] if p.name not in skipped]
            vector = [p for p in active if p.name in self._vector_filters]
            plan = _FilterPlan(
                tuple(p for p in vector if p.node_local),
                [p for p in vector if not p.node_local],
                [p for p in active if p.name not in self._vector_filters],
            )
            self._filter_plans[key] = plan
        return plan

    def filter_mask(self, state: CycleState, pod: Pod) -> np.ndarray | None:
        """AND of the vectorized filters over the snapshot's nodes (None when no plugin has one)."""
        mask: np.ndarray | None = None
        snapshot = self.handle.snapshot
        plan = self._filter_plan(state.skip_filter_plugins)
        for plugin in plan.vector:
            m = plugin.filter_vector(state, pod, snapshot)
            mask = m if mask is None else (mask & m)
        local = plan.node_local
        if local:
            m = self.equivalence.filter_mask(state, pod, snapshot, local)
            mask = m if mask is None else (mask & m)
        return mask

    @_timed("Filter")
    def find_feasible(
        self,
        state: CycleState,
        pod: Pod,
        candidates: list[int] | None,
        num_to_find: int,
        start: int,
    ) -> tuple[Sequence[int], int]:
        """Positions of up to `num_to_find` feasible nodes, searching the snapshot from `start` round-robin
        (or only `candidates`, positions a PreFilter narrowed to). Returns (feasible positions, nodes processed).
        """
        snapshot = self.handle.snapshot
        nodes = snapshot.node_info_list
        n = len(nodes) if candidates is None else len(candidates)
        if n == 0:
            return [], 0
        mask = self.filter_mask(state, pod)
        nominated = self.nodes_with_nominated_pods()
        per_node = self._filter_plan(state.skip_filter_plugins).per_node
        if candidates is None and not per_node and not nominated:
            # The common case, all in numpy: the feasible positions at or after `start`, then wrapping around.
            s = start % n
            if mask is None:
                take = min(num_to_find, n)
                return Positions((np.arange(take, dtype=np.int64) + s) % n), take
            ok = mask.nonzero()[0]  # the methods, not np.flatnonzero/np.searchsorted: no wrapper layers per cycle
            k = int(ok.searchsorted(s))
            chosen = ok[k : k + num_to_find]
            if len(chosen) < num_to_find:
                chosen = np.concatenate((chosen, ok[: min(k, num_to_find - len(chosen))]))
            if len(chosen) < num_to_find:
                return Positions(chosen), n
            return Positions(chosen), (int(chosen[-1]) - s) % n + 1
        if candidates is None:
            order = np.arange(n, dtype=np.int64)
            if start:
                order = np.roll(order, -(start % n))
        else:
            order = np.asarray(candidates, dtype=np.int64)
            if start:
                order = np.roll(order, -(start % n))
        ok_order = order if mask is None else order[mask[order]]
        if not per_node and not nominated:
            chosen = ok_order[:num_to_find]
            if len(chosen) < num_to_find:
                return Positions(chosen), n
            # processed = how far along `order` the last chosen node sits
            last = int(chosen[-1])
            processed = int(np.nonzero(order == last)[0][0]) + 1
            return Positions(chosen), processed
        feasible: list[int] = []
        maybe = ok_order.tolist()
        if nominated and mask is not None:
            # nodes with nominated pods are always judged per node: their vector verdict ignores those pods
            extra = {snapshot.positions[name] for name in nominated if name in snapshot.positions}
            if extra:
                allowed = set(order.tolist()) & extra
                maybe = [i for i in order.tolist() if i in allowed or mask[i]]
        memo = self.class_memo("statuses", state, pod) if nominated else None
        for i in maybe:
            ni = nodes[i]
            if ni.name in nominated:
                if memo is not None:
                    st = self.judge_node(state, pod, i, memo)
                else:
                    st = self.run_filter_plugins_with_nominated_pods(state, pod, ni)
            else:
                st = None
                for plugin in per_node:
                    st = run_filter(plugin, state, pod, ni)
                    if st is not None:
                        break
            if st is None:
                feasible.append(i)
                if len(feasible) >= num_to_find:
                    processed = int(np.nonzero(order == i)[0][0]) + 1
                    return feasible, processed
            elif st.code == Code.ERROR:
                raise FilterError(st)
        return feasible, n

    def class_memo(self, kind: str, state: CycleState, pod: Pod) -> np.ndarray | None:
        """A per-node memo of `kind` verdicts for the pod's equivalence class (see `EquivalenceCache.memo`), or
        None when a verdict may depend on more than the pod and the node: on the per-node path, or when an
        active Filter plugin or PreFilter extension is not node-local. Nodes with nominated pods must not use it.
        """
        if not self.vectorized:
            return None
        skipped = state.skip_filter_plugins
        active = [p for p in self.points["filter"] if p.name not in skipped]
        if not all(p.node_local for p in active):
            return None
        for p in self.points["preFilter"]:
            if p.name not in skipped and not p.node_local and p.pre_filter_extensions() is not None:
                return None
        key = (kind, equivalence_key(state, pod), tuple(p.name for p in active))
        return self.equivalence.memo(key, self.handle.snapshot)

    def node_statuses(self, state: CycleState, pod: Pod, positions: Iterable[int]) -> dict[str, Status]:
        """The per-node verdict (first failing plugin's status) of each infeasible node among `positions`.
        Rejections are memoised per equivalence class, so the next pod of a class that fits nowhere only
        re-judges the nodes that changed."""
        nodes = self.handle.snapshot.node_info_list
        memo = self.class_memo("statuses", state, pod)
        out: dict[str, Status] = {}
        if memo is None:
            for i in positions:
                ni = nodes[i]
                if (st := self.run_filter_plugins_with_nominated_pods(state, pod, ni)) is not None:
                    out[ni.name] = st
            return out
        nominated = self.nodes_with_nominated_pods()
        for i in positions:
            ni = nodes[i]
            if ni.name in nominated:
                st = self.judge_node(state, pod, i, memo)
            else:
                known = recall(memo, i, ())
                if known is UNKNOWN:
                    st = self.run_filter_plugins(state, pod, ni)
                    remember(memo, i, (), st)
                else:
                    st = known  # type: ignore[assignment]
            if st is not None:
                out[ni.name] = st
        return out

    # -- PostFilter -------------------------------------------------------------------------------------------

    @_timed("PostFilter")
    async def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream's RunPostFilterPlugins: the first success wins; otherwise the last result that is not a
        no-op (e.g. a cleared nomination) is returned with the plugins' reasons as Unschedulable."""
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.points["postFilter"]:
            try:
                r, st = await plugin.post_filter(state, pod, statuses)
            except Exception as e:
                return None, Status.as_error(f"running PostFilter plugin {go_quote(plugin.name)}: {e}", plugin.name)
            if st is None or st.code == Code.SUCCESS:
                return r, Status(plugin=plugin.name)
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, st.with_plugin(plugin.name)
            if not st.is_rejected():
                return None, Status.as_error(st.message(), plugin.name)
            if r is not None and r.mode != "ModeNoop":
                result = r
            reasons.extend(st.reasons)
            rejector = rejector or plugin.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # -- PreScore / Score -------------------------------------------------------------------------------------

    @_timed("PreScore")
    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        skipped: set[str] = set()
        for plugin in self.points["preScore"]:
            try:
                st = plugin.pre_score(state, pod, nodes)
            except Exception as e:
                st = Status.as_error(e)
            if st is not None and st.code == Code.SKIP:
                skipped.add(plugin.name)
            elif st is not None and st.code != Code.SUCCESS:
                state.skip_score_plugins = skipped  # upstream writes it in a defer, whatever the outcome
                return Status.as_error(f"running PreScore plugin {go_quote(plugin.name)}: {st.message()}", plugin.name)
        state.skip_score_plugins = skipped
        return None

    def _score_plan(self, skipped: set[str]) -> list[tuple[ScorePlugin, int, str]]:
        """How each active Score plugin is run — (plugin, weight, SUMMED | COLUMN | VECTOR | PER_NODE) — kept
        per set of skipped plugins, which repeats from pod to pod."""
        key = frozenset(skipped)
        plan = self._score_plans.get(key)
        if plan is None:
            plan = []
            for plugin in self.points["score"]:
                if plugin.name in skipped:
                    continue
                how = _PER_NODE
                if self.vectorized and hasattr(plugin, "score_vector"):
                    how = _COLUMN if plugin.node_local else _VECTOR
                    if how == _COLUMN and plugin.name in self._trusted and plugin.score_extensions() is None:
                        how = _SUMMED
                plan.append((plugin, self.score_weights[plugin.name], how))
            self._score_plans[key] = plan
        return plan

    @_timed("Score")
    def run_score_plugins(
        self, state: CycleState, pod: Pod, positions: Sequence[int], *, per_plugin: bool = False
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Weighted total per node in `positions` order, and with `per_plugin` each plugin's normalised
        (0..100, unweighted) scores. Uses each plugin's score_vector/normalize_vector when it has them; the
        in-tree node-local plugins without normalisation are summed once per equivalence class and kept."""
        snapshot = self.handle.snapshot
        idx = position_array(positions)
        scores_by_plugin: dict[str, np.ndarray] = {}
        plan = self._score_plan(state.skip_score_plugins)
        summed = [(plugin, weight) for plugin, weight, how in plan if how == _SUMMED] if not per_plugin else []
        if summed:
            total = self.equivalence.weighted_scores(state, pod, snapshot, summed)[idx]
        else:
            total = np.zeros(len(positions), dtype=np.int64)
        for plugin, weight, how in plan:
            if how == _SUMMED and not per_plugin:
                continue
            if how == _SUMMED or how == _COLUMN:
                raw = self.equivalence.raw_scores(state, pod, snapshot, plugin)[idx]
            elif how == _VECTOR:
                raw = np.asarray(plugin.score_vector(state, pod, snapshot, idx), dtype=np.int64)  # type: ignore[attr-defined]
            else:
                raw = np.fromiter(
                    (run_score(plugin, state, pod, snapshot.node_info_list[i]) for i in positions),
                    dtype=np.int64,
                    count=len(positions),
                )
            scores = self._normalize(plugin, state, pod, raw, positions)
            if per_plugin:
                scores_by_plugin[plugin.name] = scores
            total += scores * weight
        return total, scores_by_plugin

    def _normalize(
        self, plugin: ScorePlugin, state: CycleState, pod: Pod, raw: np.ndarray, positions: Sequence[int]
    ) -> np.ndarray:
        ext = plugin.score_extensions()
        if ext is None:
            scores = raw
        elif self.vectorized and hasattr(ext, "normalize_vector"):
            scores = np.asarray(ext.normalize_vector(state, pod, raw), dtype=np.int64)
        else:
            nodes = self.handle.snapshot.node_info_list
            ns = [NodeScore(nodes[i].name, int(s)) for i, s in zip(positions, raw.tolist(), strict=True)]
            try:
                st = ext.normalize_score(state, pod, ns)
            except Exception as e:
                st = Status.as_error(e)
            if st is not None and st.code != Code.SUCCESS:
                msg = f"running Normalize on Score plugins: plugin {go_quote(plugin.name)} failed with: {st.message()}"
                raise ScoreError(Status.as_error(msg, plugin.name))
            scores = np.fromiter((x.score for x in ns), dtype=np.int64, count=len(ns))
        # In-tree plugins are proven in range by their tests; others are checked as upstream checks every one.
        if plugin.name not in self._trusted and len(scores) and (scores.max() > MAX_NODE_SCORE or scores.min() < 0):
            bad = int(scores.max() if scores.max() > MAX_NODE_SCORE else scores.min())
            raise ScoreError(
                Status.as_error(
                    f"applying score defaultWeights on Score plugins: plugin {go_quote(plugin.name)} returns an "
                    f"invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after "
                    "normalizing",
                    plugin.name,
                )
            )
        return scores

    # -- Reserve, Permit, binding -----------------------------------------------------------------------------

    @_timed("Reserve")
    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for plugin in self.points["reserve"]:
            st = plugin.reserve(state, pod, node_name)
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = plugin.name
                if st.is_rejected():
                    return st
                return Status.as_error(f"running Reserve plugin {go_quote(plugin.name)}: {st.message()}", plugin.name)
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in reversed(self.points["reserve"]):  # upstream unreserves in reverse order
            plugin.unreserve(state, pod, node_name)

    @_timed("Permit")
    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        waits: dict[str, float] = {}
        for plugin in self.points["permit"]:
            st, timeout = plugin.permit(state, pod, node_name)
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.is_rejected():
                st.plugin = plugin.name
                return st
            if st.code == Code.WAIT:
                waits[plugin.name] = min(timeout, 15 * 60)  # upstream caps permit waits at 15 minutes
                continue
            return Status.as_error(f"running Permit plugin {go_quote(plugin.name)}: {st.message()}", plugin.name)
        if waits:
            self.waiting_pods[pod["metadata"].get("uid", "")] = WaitingPod(pod, waits)
            name = pod["metadata"].get("name", "")
            return Status(Code.WAIT, f"one or more plugins asked to wait and no plugin rejected pod {go_quote(name)}")
        return None

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        """Upstream's WaitOnPermit: block until the waiting pod is allowed (None) or rejected — by a plugin, by
        its deletion or preemption, or by a waiting plugin's timer."""
        uid = pod["metadata"].get("uid", "")
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return None
        try:
            st = await wp.future
        finally:
            wp.cancel_timers()
            if self.waiting_pods.get(uid) is wp:
                del self.waiting_pods[uid]
        if st is None or st.code == Code.SUCCESS:
            return None
        if st.is_rejected():
            return st
        return Status.as_error(f"waiting on permit for pod: {st.message()}", st.plugin)

    @_timed("PreBind")
    async def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for plugin in self.points["preBind"]:
            st = await plugin.pre_bind(state, pod, node_name)
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = plugin.name
                if st.is_rejected():
                    return st
                return Status.as_error(f"running PreBind plugin {go_quote(plugin.name)}: {st.message()}", plugin.name)
        return None

    @_timed("Bind")
    async def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for plugin in self.points["bind"]:
            st = await plugin.bind(state, pod, node_name)
            if st is not None and st.code == Code.SKIP:
                continue
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = plugin.name
                if st.is_rejected():
                    return st
                return Status.as_error(f"running Bind plugin {go_quote(plugin.name)}: {st.message()}", plugin.name)
            return None
        return Status(Code.SKIP)

    @_timed("PostBind")
    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in self.points["postBind"]:
            plugin.post_bind(state, pod, node_name)

    # -- metrics ----------------------------------------------------------------------------------------------

    def observe(self, point: str, started: float, status: Status | None) -> None:
        code = Code.SUCCESS if status is None else status.code
        child = self._metric_children.get((point, code))
        if child is None:
            child = self._metric_children[(point, code)] = metrics.framework_extension_point_duration.labels(
                point, str(code), self.profile_name
            )
        child.observe(time.perf_counter() - started)
