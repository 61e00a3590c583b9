"""One pod's way through the scheduler (upstream: pkg/scheduler/schedule_one.go).

`ScheduleAlgorithm.schedule_pod` is the algorithm: refresh the snapshot, PreFilter, try the node the pod is
nominated to, else find feasible nodes (at most `num_feasible_nodes_to_find`, searching round-robin from where the
last pod stopped), score them, pick the best (ties at random). `scheduling_cycle` adds what follows a choice —
assume, Reserve, Permit — and `binding_cycle` runs asynchronously: wait on Permit, PreBind, Bind, PostBind.
`handle_scheduling_failure` records upstream's event and PodScheduled condition and hands the pod back to the
queue.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..api.errors import go_quote
from . import metrics
from .extender import EXTENDER_NAME, MAX_EXTENDER_PRIORITY, ExtenderError, HTTPExtender, extenders_binding
from .framework.interface import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    Diagnosis,
    FitError,
    Pod,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from .framework.runtime import FilterError, Framework, ScoreError
from .framework.types import FeasibleNodes, QueuedPodInfo

if TYPE_CHECKING:
    from .cache import SchedulerCache
    from .framework.snapshot import Snapshot
    from .scheduler import Scheduler

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def _log_failed_nomination(pod: Pod, error: object) -> None:
    # Upstream only logs it: the search over all nodes (or PreFilter's) follows either way.
    md = pod["metadata"]
    log.error(
        "evaluation failed on nominated node %s for pod %s/%s: %s",
        pod["status"]["nominatedNodeName"], md.get("namespace", ""), md["name"], error,
    )  # fmt: skip


class ScheduleError(Exception):
    """An internal failure of the algorithm (not "no node fits"): the pod is retried after backoff."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    nominating_info: PostFilterResult | None = None  # what preemption decided about the pod's nomination
    scores: dict[str, int] = field(default_factory=dict)


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream: numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct >= 100:
        return num_all_nodes
    if pct <= 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass
class _Search:
    """What one filter search over the nodes did: the feasible positions, and the window it went through."""

    feasible: Sequence[int]
    candidates: list[int] | None  # positions PreFilter narrowed the search to, or None for all nodes
    num_nodes: int
    start: int
    processed: int

    def rejected_positions(self) -> list[int]:
        """The positions the search went through that were not feasible."""
        order = list(range(self.num_nodes)) if self.candidates is None else self.candidates
        if not order:
            return []
        s = self.start % len(order)
        window = (order[s:] + order[:s])[: self.processed]
        ok = set(self.feasible)
        return [i for i in window if i not in ok]

    def reached(self, position: int) -> bool:
        """Whether the search went through the node at this position."""
        if self.candidates is None:
            k, n = position, self.num_nodes
        elif position in self.candidates:
            k, n = self.candidates.index(position), len(self.candidates)
        else:
            return False
        return (k - self.start % n) % n < self.processed


class ScheduleAlgorithm:
    """The part of the scheduler that picks a node; usable without an API server (benchmarks, evaluate)."""

    def __init__(self, cache: SchedulerCache | None, snapshot: Snapshot, percentage_of_nodes_to_score: int = 0) -> None:
        self.cache = cache
        self.snapshot = snapshot
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.rng = random.Random()
        self.extenders: list[HTTPExtender] = []  # HTTP extenders, consulted by schedule_pod_async only

    def schedule_pod(self, fw: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        n = self._refresh_snapshot()
        feasible, diagnosis = self.find_nodes_that_fit_pod(fw, state, pod)
        if len(feasible) > 1:
            return self._result(feasible, diagnosis, self.prioritize_nodes(fw, state, pod, feasible))
        return self._result_without_scoring(pod, n, feasible, diagnosis)

    async def schedule_pod_async(self, fw: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        """schedule_pod with the extenders: their filters narrow the feasible nodes, their scores add up."""
        n = self._refresh_snapshot()
        feasible, diagnosis = await self.find_nodes_that_fit_pod_async(fw, state, pod)
        if len(feasible) > 1:
            return self._result(feasible, diagnosis, await self.prioritize_nodes_async(fw, state, pod, feasible))
        return self._result_without_scoring(pod, n, feasible, diagnosis)

    def _refresh_snapshot(self) -> int:
        if self.cache is not None:
            self.cache.update_snapshot(self.snapshot)
        n = self.snapshot.num_nodes()
        if n == 0:
            raise ScheduleError(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE))
        return n

    def _result_without_scoring(
        self, pod: Pod, n: int, feasible: Sequence[int], diagnosis: Diagnosis
    ) -> ScheduleResult:
        if not feasible:
            raise FitError(pod, n, diagnosis)
        return ScheduleResult(self.snapshot.node_info_list[feasible[0]].name, 1 + len(diagnosis.node_to_status), 1)

    def _result(self, feasible: Sequence[int], diagnosis: Diagnosis, total: np.ndarray) -> ScheduleResult:
        host = self.select_host(feasible, total)
        return ScheduleResult(host, len(feasible) + len(diagnosis.node_to_status), len(feasible))

    def find_nodes_that_fit_pod(self, fw: Framework, state: CycleState, pod: Pod) -> tuple[Sequence[int], Diagnosis]:
        pre_result, diagnosis, rejected = self._pre_filter(fw, state, pod)
        if rejected:
            return [], diagnosis
        nominated = self._nominated_node_fits(fw, state, pod, diagnosis)
        if nominated is not None:
            return [nominated], diagnosis
        return self._search(fw, state, pod, pre_result, diagnosis).feasible, diagnosis

    async def find_nodes_that_fit_pod_async(
        self, fw: Framework, state: CycleState, pod: Pod
    ) -> tuple[Sequence[int], Diagnosis]:
        pre_result, diagnosis, rejected = self._pre_filter(fw, state, pod)
        if rejected:
            return [], diagnosis
        nominated = self._nominated_node_fits(fw, state, pod, diagnosis)
        if nominated is not None:
            try:
                passed = await self.find_nodes_that_pass_extenders(pod, [nominated], diagnosis)
            except ScheduleError as e:
                _log_failed_nomination(pod, e)
                passed = []
            if passed:
                return passed, diagnosis
        search = self._search(fw, state, pod, pre_result, diagnosis)
        feasible = await self.find_nodes_that_pass_extenders(pod, search.feasible, diagnosis)
        if len(feasible) != len(search.feasible):
            # Extenders have no queueing hints: the pod is retried on any cluster event (upstream: ExtenderName).
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        if not feasible and search.feasible:
            # The framework's verdicts on the nodes it rejected belong in the FitError too; the search skips them
            # while it finds feasible nodes.
            self._record_statuses(fw, state, pod, search.rejected_positions(), diagnosis)
        return feasible, diagnosis

    def _pre_filter(self, fw: Framework, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Diagnosis, bool]:
        """PreFilter: (its result, the diagnosis, whether it rejected the pod — then with its status for every
        node)."""
        all_nodes = self.snapshot.node_info_list
        diagnosis = Diagnosis()
        pre_result, st, rejecting = fw.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins |= rejecting
        if st is not None:
            if not st.is_rejected():
                raise ScheduleError(st)
            for ni in all_nodes:
                diagnosis.node_to_status[ni.name] = st
            diagnosis.pre_filter_msg = st.message()
            diagnosis.add_plugin_status(st)
            return pre_result, diagnosis, True
        return pre_result, diagnosis, False

    def _nominated_node_fits(self, fw: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> int | None:
        """A pod nominated by an earlier preemption has its nominated node judged first, whatever PreFilter narrowed
        the search to (upstream: evaluateNominatedNode): the node's position if it passes the filters. A node that
        fails keeps its own status in the diagnosis, and its plugin joins the unschedulable ones."""
        name = (pod.get("status") or {}).get("nominatedNodeName")
        if not name:
            return None
        i = self.snapshot.positions.get(name)
        if i is None:
            _log_failed_nomination(pod, f"nodeinfo not found for node name {go_quote(name)}")
            return None
        if not fw.has_filter_plugins():
            return i
        st = fw.run_filter_plugins_with_nominated_pods(state, pod, self.snapshot.node_info_list[i])
        if st is None:
            return i
        if st.code == Code.ERROR:
            _log_failed_nomination(pod, st.message())
            return None
        diagnosis.node_to_status[name] = st
        # Not add_plugin_status, so a Pending plugin is not named pending: upstream judges the node into a copy of
        # the diagnosis that shares the node statuses and the unschedulable set but not the pending one, which the
        # copy creates for itself.
        if st.plugin:
            diagnosis.unschedulable_plugins.add(st.plugin)
        return None

    def _search(
        self, fw: Framework, state: CycleState, pod: Pod, pre_result: PreFilterResult | None, diagnosis: Diagnosis
    ) -> _Search:
        """Run the filters over the nodes (or PreFilter's candidates) round-robin from where the last pod stopped."""
        snapshot = self.snapshot
        all_nodes = snapshot.node_info_list
        judged = dict(diagnosis.node_to_status)  # the nominated node, when it failed
        candidates: list[int] | None = None
        if pre_result is not None and pre_result.node_names is not None:
            candidates = [snapshot.positions[name] for name in pre_result.node_names if name in snapshot.positions]
            candidates.sort()
            narrowed = " ".join(sorted(diagnosis.unschedulable_plugins))
            outside = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{narrowed}]")
            chosen = set(candidates)
            for i, ni in enumerate(all_nodes):
                if i not in chosen:
                    diagnosis.node_to_status[ni.name] = outside
            diagnosis.node_to_status.update(judged)  # the framework's reason is for nodes without one of their own
        num_nodes = len(all_nodes) if candidates is None else len(candidates)
        to_find = num_feasible_nodes_to_find(
            fw.percentage_of_nodes_to_score if fw.percentage_of_nodes_to_score is not None
            else self.percentage_of_nodes_to_score,
            num_nodes,
        )  # fmt: skip
        if not fw.has_score_plugins() and not any(e.is_filter() or e.is_prioritizer() for e in self.extenders):
            to_find = 1  # nothing would tell feasible nodes apart: the first one will do (upstream since 1.30)
        start = self.next_start_node_index
        try:
            feasible, processed = fw.find_feasible(state, pod, candidates, to_find, start)
        except FilterError as e:
            raise ScheduleError(e.status) from None
        if not feasible:
            positions = range(len(all_nodes)) if candidates is None else candidates
            self._record_statuses(fw, state, pod, positions, diagnosis)
        search = _Search(feasible, candidates, len(all_nodes), start, processed)
        if judged:
            # Upstream advances by the feasible nodes plus the nodes with a status of their own: a nominated node
            # judged before the search counts too when the search did not reach it.
            processed += sum(not search.reached(snapshot.positions[name]) for name in judged)
        if all_nodes:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        return search

    def _record_statuses(
        self, fw: Framework, state: CycleState, pod: Pod, positions: Iterable[int], diagnosis: Diagnosis
    ) -> None:
        statuses = fw.node_statuses(state, pod, positions)
        diagnosis.node_to_status.update(statuses)
        for s in statuses.values():
            if s.code == Code.ERROR:
                raise ScheduleError(s)
            diagnosis.add_plugin_status(s)

    async def find_nodes_that_pass_extenders(
        self, pod: Pod, feasible: Sequence[int], diagnosis: Diagnosis
    ) -> Sequence[int]:
        """Each interested extender in turn narrows the feasible nodes; the nodes it fails get its reason as an
        Unschedulable or UnschedulableAndUnresolvable status (upstream: findNodesThatPassExtenders)."""
        snapshot = self.snapshot
        for ext in self.extenders:
            if not feasible:
                break
            if not ext.is_interested(pod):
                continue
            nodes = [snapshot.node_info_list[i] for i in feasible]
            try:
                passed, failed, unresolvable = await ext.filter(pod, nodes)
            except ExtenderError as e:
                if ext.is_ignorable():
                    log.info("skipping extender %s as it returned error and has ignorable flag set: %s", ext.name, e)
                    continue
                raise ScheduleError(Status.as_error(e)) from None
            for name, msg in unresolvable.items():
                diagnosis.node_to_status[name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
            for name, msg in failed.items():
                if name not in unresolvable:  # a node in both maps is unresolvable
                    diagnosis.node_to_status[name] = Status(Code.UNSCHEDULABLE, msg)
            # Names outside the snapshot cannot be scheduled to; upstream would build empty NodeInfos for them.
            feasible = [snapshot.positions[name] for name in passed if name in snapshot.positions]
        return feasible

    def prioritize_nodes(self, fw: Framework, state: CycleState, pod: Pod, feasible: Sequence[int]) -> np.ndarray:
        if not fw.has_score_plugins():
            return np.ones(len(feasible), dtype=np.int64)
        return self._framework_scores(fw, state, pod, feasible)

    async def prioritize_nodes_async(
        self, fw: Framework, state: CycleState, pod: Pod, feasible: Sequence[int]
    ) -> np.ndarray:
        """prioritize_nodes plus the extenders' scores (upstream: prioritizeNodes): with extenders configured
        the framework's plugins run even when there are none (every node then starts at 0)."""
        if not self.extenders:
            return self.prioritize_nodes(fw, state, pod, feasible)
        total = self._framework_scores(fw, state, pod, feasible)
        return total + await self.extender_scores(pod, feasible)

    def _framework_scores(self, fw: Framework, state: CycleState, pod: Pod, feasible: Sequence[int]) -> np.ndarray:
        st = fw.run_pre_score_plugins(state, pod, FeasibleNodes(self.snapshot.node_info_list, feasible))
        if st is not None:
            raise ScheduleError(st)
        try:
            total, _ = fw.run_score_plugins(state, pod, feasible)
        except ScoreError as e:
            raise ScheduleError(e.status) from None
        return total

    async def extender_scores(self, pod: Pod, feasible: Sequence[int]) -> np.ndarray:
        """Each interested prioritizing extender's score * its weight, scaled from 0..10 to 0..100, summed per
        node; the extenders are asked concurrently and one that fails gives no score."""
        nodes = [self.snapshot.node_info_list[i] for i in feasible]
        asked = [e for e in self.extenders if e.is_prioritizer() and e.is_interested(pod)]
        replies = await asyncio.gather(*(e.prioritize(pod, nodes) for e in asked), return_exceptions=True)
        where: dict[str, list[int]] = {}
        for k, ni in enumerate(nodes):
            where.setdefault(ni.name, []).append(k)
        added = [0] * len(feasible)
        for ext, reply in zip(asked, replies, strict=True):
            if isinstance(reply, BaseException):
                if not isinstance(reply, ExtenderError):
                    raise reply
                log.debug("extender %s failed to prioritize pod %s: %s", ext.name, pod["metadata"]["name"], reply)
                continue
            for host, score in reply.items():
                for k in where.get(host, ()):
                    added[k] += score * ext.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        # int64 sums as in Go (a wildly out-of-range extender score wraps rather than failing the cycle).
        return np.array([(a + 2**63) % 2**64 - 2**63 for a in added], dtype=np.int64)

    def select_host(self, feasible: Sequence[int], total: np.ndarray) -> str:
        """The highest total; among equal totals one chosen uniformly at random (upstream: selectHost)."""
        best = (total == total.max()).nonzero()[0]
        pick = int(best[0]) if len(best) == 1 else int(best[self.rng.randrange(len(best))])
        return self.snapshot.node_info_list[feasible[pick]].name


# -- the cycle with the API (used by the running scheduler) ---------------------------------------------------


# Upstream's clearNominatedNode: failures after a node was chosen drop any nomination the pod had.
CLEAR_NOMINATION = PostFilterResult("", "ModeOverride")
PODS_TO_ACTIVATE = "kubernetes.io/pods-to-activate"  # CycleState key plugins write pods to activate under


async def schedule_one(sched: Scheduler, qpi: QueuedPodInfo) -> None:
    pod = qpi.pod
    md = pod["metadata"]
    fw = sched.framework_for_pod(pod)
    if fw is None:
        log.error("pod %s/%s names an unknown scheduler profile", md.get("namespace"), md["name"])
        sched.queue.done(md["uid"])
        return
    if skip_pod_schedule(sched, fw, pod):
        sched.queue.done(md["uid"])
        return
    started = time.perf_counter()
    state = CycleState()
    state.record_plugin_metrics = random.random() < 0.1  # upstream samples plugin metrics in 10% of cycles
    state.write(PODS_TO_ACTIVATE, {})
    cycle = sched.queue.scheduling_cycle()
    try:
        result, assumed_pod, status, fit_error = await scheduling_cycle(sched, fw, state, qpi, started)
    except Exception as e:  # a plugin bug: the pod goes back to the queue with an error, the loop goes on
        log.exception("scheduling cycle of pod %s/%s failed", md.get("namespace"), md["name"])
        assumed = sched.cache.get_pod(pod)
        if assumed is not None and sched.cache.is_assumed_pod(pod):
            sched.cache.forget_pod(assumed)
        result, assumed_pod, status, fit_error = (
            ScheduleResult("", nominating_info=CLEAR_NOMINATION),
            None,
            (Status.as_error(e)),
            None,
        )
    if status is not None:
        await handle_scheduling_failure(sched, fw, qpi, status, fit_error, result, cycle, started)
        return
    assert result is not None and assumed_pod is not None
    _activate(sched, state)
    sched.run_in_background(binding_cycle(sched, fw, state, result, assumed_pod, qpi, started, cycle), "binding")


def _activate(sched: Scheduler, state: CycleState) -> None:
    """Pods plugins asked to activate during a cycle move to activeQ (upstream: PodsToActivate)."""
    pods = state.get(PODS_TO_ACTIVATE)
    if pods:
        sched.queue.activate(dict(pods))
        pods.clear()


def skip_pod_schedule(sched: Scheduler, fw: Framework, pod: Pod) -> bool:
    """A pod being deleted, or one already assumed (an update raced the binding), is not scheduled."""
    md = pod["metadata"]
    if md.get("deletionTimestamp"):
        sched.record_event(
            fw, pod, "Warning", "FailedScheduling", "Scheduling",
            f"skip schedule deleting pod: {md.get('namespace')}/{md.get('name')}",
        )  # fmt: skip
        return True
    return sched.cache.is_assumed_pod(pod)


async def scheduling_cycle(
    sched: Scheduler, fw: Framework, state: CycleState, qpi: QueuedPodInfo, started: float
) -> tuple[ScheduleResult | None, Pod | None, Status | None, FitError | None]:
    pod = qpi.pod
    t0 = time.perf_counter()
    try:
        if sched.algorithm.extenders:
            result = await sched.algorithm.schedule_pod_async(fw, state, pod)
        else:
            result = sched.algorithm.schedule_pod(fw, state, pod)
    except FitError as fit:
        metrics.scheduling_algorithm_duration.observe(time.perf_counter() - t0)
        if not fw.has_post_filter_plugins():
            return ScheduleResult(""), None, Status(Code.UNSCHEDULABLE, fit.message()), fit
        pf_result, pf_status = await fw.run_post_filter_plugins(state, pod, fit.diagnosis.node_to_status)
        fit.diagnosis.post_filter_msg = pf_status.message() if pf_status is not None else ""
        return ScheduleResult("", nominating_info=pf_result), None, Status(Code.UNSCHEDULABLE, fit.message()), fit
    except ScheduleError as e:
        metrics.scheduling_algorithm_duration.observe(time.perf_counter() - t0)
        clear = ScheduleResult("", nominating_info=CLEAR_NOMINATION)
        if e.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return clear, None, e.status, None
        return clear, None, Status(Code.ERROR, e.status.message()), None
    metrics.scheduling_algorithm_duration.observe(time.perf_counter() - t0)
    host = result.suggested_host
    clear = ScheduleResult("", nominating_info=CLEAR_NOMINATION)
    assumed = copy.copy(pod)
    assumed["spec"] = {**pod["spec"], "nodeName": host}
    try:
        sched.cache.assume_pod(assumed)
    except ValueError as e:
        return clear, None, Status.as_error(e), None
    # An assumed pod is no longer a nominated one (upstream: assume).
    sched.queue.delete_nominated_pod_if_exists(assumed)
    for run in (fw.run_reserve_plugins_reserve, fw.run_permit_plugins):
        try:
            st = run(state, assumed, host)
        except Exception as e:
            st = Status.as_error(e)
        if st is not None and st.code != Code.WAIT:
            fw.run_reserve_plugins_unreserve(state, assumed, host)
            sched.cache.forget_pod(assumed)
            return clear, None, st, _fit_error_for(pod, host, st)
    return result, assumed, None, None


def _fit_error_for(pod: Pod, host: str, st: Status) -> FitError | None:
    """A rejection at Reserve, Permit or PreBind reads as a FitError over the one node tried (upstream)."""
    if not st.is_rejected():
        return None
    d = Diagnosis(node_to_status={host: st})
    d.add_plugin_status(st)
    return FitError(pod, 1, d)


async def binding_cycle(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    result: ScheduleResult,
    assumed: Pod,
    qpi: QueuedPodInfo,
    started: float,
    cycle: int,
) -> None:
    host = result.suggested_host
    md = assumed["metadata"]
    fit_error: FitError | None = None
    try:
        st = await fw.wait_on_permit(assumed)
        if st is not None:
            fit_error = _fit_error_for(assumed, host, st)
        else:
            # Past Permit no failure makes the pod unschedulable, so the queue's in-flight record can go.
            sched.queue.done(md["uid"])
            async with sched.api_slot():
                st = await fw.run_pre_bind_plugins(state, assumed, host)
                if st is not None:
                    fit_error = _fit_error_for(assumed, host, st)
                else:
                    # A binder extender interested in the pod binds it instead of the bind plugins (upstream: bind).
                    bound, st = await extenders_binding(sched.algorithm.extenders, assumed, host)
                    if not bound:
                        st = await fw.run_bind_plugins(state, assumed, host)
                        if st is not None and st.code == Code.SKIP:
                            st = Status.as_error("no bind plugin bound the pod")
                    if st is not None and st.is_rejected():
                        st = Status(st.code, *st.reasons)  # a Bind rejection names no unschedulable plugin
    except Exception as e:  # a plugin bug: treated as a failed binding, never a leaked assumed pod
        log.exception("binding cycle of pod %s/%s failed", md.get("namespace"), md.get("name"))
        st, fit_error = Status.as_error(e), None
    sched.cache.finish_binding(assumed)
    if st is not None:
        await handle_binding_cycle_error(sched, fw, state, qpi, assumed, host, st, fit_error, cycle, started)
        return
    elapsed = time.perf_counter() - started
    metrics.child(metrics.schedule_attempts, "scheduled", fw.profile_name).inc()
    metrics.child(metrics.scheduling_attempt_duration, "scheduled", fw.profile_name).observe(elapsed)
    metrics.pod_scheduling_attempts.observe(qpi.attempts)
    if qpi.initial_attempt_timestamp is not None:
        attempts = str(qpi.attempts) if qpi.attempts < 16 else "15+"
        metrics.child(metrics.pod_scheduling_sli_duration, attempts).observe(
            max(0.0, sched.queue_clock() - qpi.initial_attempt_timestamp)
        )
    sched.record_event(
        fw, assumed, "Normal", "Scheduled", "Binding",
        f"Successfully assigned {md.get('namespace')}/{md.get('name')} to {host}",
    )  # fmt: skip
    fw.run_post_bind_plugins(state, assumed, host)
    _activate(sched, state)


async def handle_binding_cycle_error(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    qpi: QueuedPodInfo,
    assumed: Pod,
    host: str,
    st: Status,
    fit_error: FitError | None,
    cycle: int,
    started: float,
) -> None:
    """Unreserve, forget the assumed pod and requeue it (upstream: handleBindingCycleError)."""
    fw.run_reserve_plugins_unreserve(state, assumed, host)
    forgotten = sched.cache.is_assumed_pod(assumed)
    sched.cache.forget_pod(assumed)
    uid = assumed["metadata"]["uid"]
    # The room the pod held is free again, as if an assigned pod were deleted. A rejected pod is itself left
    # out and handed back first, so its own event cannot requeue it (upstream defers the move).
    if forgotten and not st.is_rejected():
        sched.on_binding_failed(assumed)
    result = ScheduleResult("", nominating_info=CLEAR_NOMINATION)
    await handle_scheduling_failure(sched, fw, qpi, st, fit_error, result, cycle, started)
    if forgotten and st.is_rejected():
        sched.on_binding_failed(assumed, exclude_uid=uid)


async def handle_scheduling_failure(
    sched: Scheduler,
    fw: Framework,
    qpi: QueuedPodInfo,
    status: Status,
    fit_error: FitError | None,
    result: ScheduleResult | None,
    cycle: int,
    started: float,
) -> None:
    """Record the failure on the pod (event, PodScheduled=False, nomination) and give it back to the queue
    (upstream: handleSchedulingFailure)."""
    pod = qpi.pod
    md = pod["metadata"]
    elapsed = time.perf_counter() - started
    if status.is_rejected():
        reason = "Unschedulable"
        metrics.child(metrics.schedule_attempts, "unschedulable", fw.profile_name).inc()
        metrics.child(metrics.scheduling_attempt_duration, "unschedulable", fw.profile_name).observe(elapsed)
        if fit_error is not None:
            qpi.unschedulable_plugins = set(fit_error.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(fit_error.diagnosis.pending_plugins)
            message = fit_error.message()
        else:
            qpi.unschedulable_plugins = {status.plugin} if status.plugin else set()
            qpi.pending_plugins = set()
            message = status.message()
        if status.code == Code.PENDING and status.plugin:
            qpi.pending_plugins.add(status.plugin)
    else:
        reason = "SchedulerError"
        metrics.child(metrics.schedule_attempts, "error", fw.profile_name).inc()
        metrics.child(metrics.scheduling_attempt_duration, "error", fw.profile_name).observe(elapsed)
        message = status.message()
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
    # The pod may have changed or gone meanwhile: requeue what the informer cache has now (upstream does too).
    current = sched.pod_lister_get(md.get("namespace", ""), md["name"])
    if current is None or current["metadata"].get("uid") != md.get("uid"):
        log.info("pod %s/%s doesn't exist in the informer cache", md.get("namespace"), md["name"])
        sched.queue.done(md["uid"])
    elif (current.get("spec") or {}).get("nodeName"):
        log.info("pod %s/%s has been assigned to a node; not adding it back", md.get("namespace"), md["name"])
        sched.queue.done(md["uid"])
    else:
        if current is not pod:
            qpi.pod_info = type(qpi.pod_info)(current)
        sched.queue.add_unschedulable_if_not_present(qpi, cycle)  # also marks the attempt done
    nominating = result.nominating_info if result is not None else None
    # Tell the queue before the pod update comes back, so the next cycles already count the nomination.
    sched.queue.add_nominated_pod(qpi.pod_info, nominating)
    sched.record_event(fw, pod, "Warning", "FailedScheduling", "Scheduling", message)
    # Written in the background as the binding is: the next pod need not wait for this round trip.
    sched.run_in_background(sched.update_pod_status(pod, reason, message, nominating), "status")
