"""The preemption Evaluator (upstream: pkg/scheduler/framework/preemption/preemption.go): the plugin-neutral
half of preemption. It finds the nodes where evicting lower-priority pods would let a pod fit (a dry run per
node through the plugin's `select_victims_on_node`), picks one, then evicts the victims through the API and
clears lower-priority nominations to that node.

A preemption plugin supplies the policy through `PreemptionInterface` (DefaultPreemption is the in-tree one).
Extenders that support preemption narrow the candidates between the dry run and the choice (`extender.py`).
The asynchronous preemption of v1.32's alpha SchedulerAsyncPreemption gate is not part of pyk8s.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ...api.errors import go_quote
from .. import metrics
from .equivalence import UNKNOWN, recall, remember
from .interface import Code, CycleState, Diagnosis, FitError, Pod, PostFilterResult, Status
from .runtime import IN_TREE_PREFIX
from .types import pod_priority

if TYPE_CHECKING:
    from .types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

# How preemption describes nodes it did not (or could not) try; v1.32 gives every node absent from the
# filter statuses this UnschedulableAndUnresolvable status.
NOT_HELPFUL_MSG = "Preemption is not helpful for scheduling"
ABSENT_NODE_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_INT32_SPAN = 2**31  # upstream's MaxInt32+1, added to each victim priority so sums compare sensibly


@dataclass
class Victims:
    """Pods to evict on one node, most important first, and how many of them violate a PDB
    (upstream: extenderv1.Victims)."""

    pods: list[Pod]
    num_pdb_violations: int = 0


@dataclass
class Candidate:
    """A node the preemptor could be nominated to once `victims` are gone."""

    name: str
    victims: Victims


class PreemptionInterface(Protocol):
    """What a preemption plugin decides (upstream: preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]: ...

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: list[dict[str, Any]]
    ) -> tuple[list[Pod], int, Status | None]: ...

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]) -> list[Callable[[str], int]] | None: ...


# -- pod start times and importance (upstream: scheduler/util) -------------------------------------------------


def parse_time_ns(text: str | None) -> int | None:
    """An RFC 3339 timestamp (seconds or fractional seconds) as nanoseconds since the epoch; None if absent
    or malformed."""
    if not text:
        return None
    frac_ns = 0
    main = text
    dot = text.find(".")
    if dot != -1:
        end = dot + 1
        while end < len(text) and text[end].isdigit():
            end += 1
        digits = text[dot + 1 : end]
        frac_ns = int((digits + "000000000")[:9]) if digits else 0
        main = text[:dot] + text[end:]
    try:
        dt = datetime.fromisoformat(main.replace("z", "Z"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + frac_ns


def pod_start_time_ns(pod: Pod, now_ns: int) -> int:
    """status.startTime; a pod not started yet counts as starting now (upstream: GetPodStartTime)."""
    t = parse_time_ns((pod.get("status") or {}).get("startTime"))
    return now_ns if t is None else t


def importance_key(pod: Pod, now_ns: int) -> tuple[int, int]:
    """Sorting ascending by this key puts the more important pod first (upstream: MoreImportantPod):
    higher priority, then the one that started earlier."""
    return (-pod_priority(pod), pod_start_time_ns(pod, now_ns))


def more_important_pod(a: Pod, b: Pod, now_ns: int | None = None) -> bool:
    now = time.time_ns() if now_ns is None else now_ns
    return importance_key(a, now) < importance_key(b, now)


def earliest_start_of_highest_priority(pods: Sequence[Pod], now_ns: int) -> int | None:
    """The earliest start time among the victims with the highest priority (upstream: GetEarliestPodStartTime)."""
    if not pods:
        return None
    top = max(pod_priority(p) for p in pods)
    return min(pod_start_time_ns(p, now_ns) for p in pods if pod_priority(p) == top)


# -- the node choice -------------------------------------------------------------------------------------------


def pick_one_node_for_preemption(
    nodes_to_victims: dict[str, Victims], score_funcs: list[Callable[[str], int]] | None = None
) -> str:
    """The node to preempt on. Each score function keeps the nodes with its highest score; the next one breaks
    ties; the first remaining node wins. The default functions prefer, in order: fewest PDB violations, the
    lowest highest-priority victim, the smallest sum of (shifted) victim priorities, the fewest victims, and the
    latest start among the highest-priority victims."""
    if not nodes_to_victims:
        return ""
    remaining = list(nodes_to_victims)
    if not score_funcs:
        now_ns = time.time_ns()

        def fewest_pdb_violations(node: str) -> int:
            return -nodes_to_victims[node].num_pdb_violations

        def lowest_top_priority(node: str) -> int:
            return -pod_priority(nodes_to_victims[node].pods[0])

        def smallest_priority_sum(node: str) -> int:
            # Shifting every priority to >= 0 keeps many negative-priority victims from looking cheaper than few.
            return -sum(pod_priority(p) + _INT32_SPAN for p in nodes_to_victims[node].pods)

        def fewest_victims(node: str) -> int:
            return -len(nodes_to_victims[node].pods)

        def latest_start(node: str) -> int:
            t = earliest_start_of_highest_priority(nodes_to_victims[node].pods, now_ns)
            return -(2**63) if t is None else t

        score_funcs = [fewest_pdb_violations, lowest_top_priority, smallest_priority_sum, fewest_victims, latest_start]
    for f in score_funcs:
        best = -math.inf
        selected: list[str] = []
        for node in remaining:
            s = f(node)
            if s > best:
                best, selected = s, [node]
            elif s == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        remaining = selected
    return remaining[0]


# -- pod status helpers (upstream: api/v1/pod UpdatePodCondition) -------------------------------------------------


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def updated_condition(status: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any] | None:
    """The condition to write when setting `condition` on a pod status, or None when the status already carries
    it unchanged. Its lastTransitionTime stays the old one unless the condition's status changes."""
    new = {**condition, "lastTransitionTime": now_rfc3339()}
    old = next((c for c in status.get("conditions") or () if c.get("type") == condition["type"]), None)
    if old is None:
        return new
    if old.get("status") == new["status"]:
        new["lastTransitionTime"] = old.get("lastTransitionTime")
        if new["lastTransitionTime"] is None:
            del new["lastTransitionTime"]
    same = (
        old.get("status") == new["status"]
        and (old.get("reason") or "") == (new.get("reason") or "")
        and (old.get("message") or "") == (new.get("message") or "")
        and not old.get("lastProbeTime")
        and old.get("lastTransitionTime") == new.get("lastTransitionTime")
    )
    return None if same else new


def aggregate_message(messages: Sequence[str]) -> str:
    """Several errors as one message, without repeats (upstream: utilerrors.NewAggregate(...).Error())."""
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# -- the Evaluator ---------------------------------------------------------------------------------------------


@dataclass
class DryRunResult:
    candidates: list[Candidate]
    node_statuses: dict[str, Status] = field(default_factory=dict)  # nodes tried that gave no candidate
    errors: list[str] = field(default_factory=list)


class Evaluator:
    """Runs preemption for one preemption plugin of one profile (upstream: preemption.Evaluator).

    `last_candidate` and `last_preempted` record the latest node chosen and the victims `preempt_pod` acted on,
    so what preemption did can be read offline (with no API client nothing is patched or deleted).
    """

    def __init__(self, plugin_name: str, handle: Any, interface: PreemptionInterface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface
        self.last_candidate: Candidate | None = None
        self.last_preempted: list[Pod] = []

    async def preempt(
        self, state: CycleState, pod: Pod, m: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """(result, status) as upstream's Preempt:
        - (None, Error): a transient failure; (None, Unschedulable): the pod may not preempt now. Both keep the
          pod's nomination as it is.
        - (result with no node, Unschedulable): preemption cannot help; the nomination is cleared.
        - (result with the node, None): victims are being evicted; the pod is nominated to that node.
        """
        # 1) Is the pod allowed to preempt (now)?
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        nominated_status = m.get(nominated, ABSENT_NODE_STATUS) if nominated else ABSENT_NODE_STATUS
        ok, msg = self.interface.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            log.debug("pod %s is not eligible for preemption: %s", _key(pod), msg)
            return None, Status(Code.UNSCHEDULABLE, msg)

        # 2) Candidates from a dry run on the nodes where evicting pods might help.
        all_nodes = self.handle.snapshot.node_info_list
        if not all_nodes:
            return None, Status.as_error("no nodes available")
        dry = self.find_candidates(state, all_nodes, pod, m)
        if not dry.candidates:
            if dry.errors:
                return None, Status.as_error(aggregate_message(dry.errors))
            statuses = dict(dry.node_statuses)
            absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL_MSG)
            for ni in all_nodes:
                statuses.setdefault(ni.name, absent)
            fit = FitError(pod, len(all_nodes), Diagnosis(node_to_status=statuses))
            # A result without a node clears the pod's nomination.
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, fit.message())

        # 3) Extenders that handle preemption may narrow the candidates and their victims.
        candidates = dry.candidates
        extenders = getattr(self.handle, "extenders", None)
        if extenders:
            from ..extender import call_extenders_for_preemption

            candidates, st = await call_extenders_for_preemption(extenders, pod, candidates, self.handle.snapshot)
            if st is not None:
                return None, st
        # 4) The best candidate.
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")
        log.debug("pod %s: preempting on node %s", _key(pod), best.name)

        # 5) Evict the victims and drop lower-priority nominations to the node.
        st = await self.prepare_candidate(best, pod)
        if st is not None:
            return None, st
        return PostFilterResult(best.name), None

    def find_candidates(
        self, state: CycleState, all_nodes: list[NodeInfo], pod: Pod, m: dict[str, Status]
    ) -> DryRunResult:
        """Dry-run preemption on the nodes whose filter status is Unschedulable (nodes marked
        UnschedulableAndUnresolvable, or absent from `m`, cannot be helped by evicting pods)."""
        potential = [ni for ni in all_nodes if (s := m.get(ni.name)) is not None and s.code == Code.UNSCHEDULABLE]
        if not potential:
            log.debug("preemption will not help schedule pod %s on any node", _key(pod))
            return DryRunResult([])
        pdbs = self.handle.objects.list("poddisruptionbudgets")
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num_candidates)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential_nodes: list[NodeInfo],
        pdbs: list[dict[str, Any]],
        offset: int,
        num_candidates: int,
    ) -> DryRunResult:
        """Try the nodes round-robin from `offset` on copies of the node and the cycle state, until
        `num_candidates` candidates are found with at least one that violates no PDB. Candidates that violate no
        PDB come first. Each kind keeps at most `num_candidates` (upstream's fixed-size candidate lists).

        Nodes where preemption cannot help are remembered per equivalence class until they change (when the
        verdict depends only on the pod and the node: see `Framework.class_memo`), so a stream of pods that
        fit nowhere does not redo the dry run on every node for each of them."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        out = DryRunResult([])
        n = len(potential_nodes)
        fw, memo, nominated = self._memo(state, pod)
        positions = self.handle.snapshot.positions
        for i in range(n):
            original = potential_nodes[(offset + i) % n]
            pos = -1
            to_add: tuple[PodInfo, ...] = ()
            if memo is not None:
                pos = positions[original.name]
                if original.name in nominated:
                    to_add = tuple(fw.nominated_pods_to_add(pod, original.name))
                known = recall(memo, pos, to_add)
                if known is not UNKNOWN:
                    out.node_statuses[original.name] = known  # type: ignore[assignment]
                    continue
            ni = original.clone()
            try:
                pods, num_violations, st = self.interface.select_victims_on_node(state.clone(), pod, ni, pdbs)
            except Exception as e:  # a plugin bug fails this node, not the scheduler
                pods, num_violations, st = [], 0, Status.as_error(f"selecting victims on node {ni.name}: {e}")
            if st is None and pods:
                bucket = non_violating if num_violations == 0 else violating
                if len(bucket) < num_candidates:
                    bucket.append(Candidate(ni.name, Victims(pods, num_violations)))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if st is None:
                st = Status.as_error(f"expected at least one victim pod on node {go_quote(ni.name)}")
            if st.code == Code.ERROR:
                out.errors.append(st.message())
            elif memo is not None:
                remember(memo, pos, to_add, st)
            out.node_statuses[ni.name] = st
        out.candidates = non_violating + violating
        return out

    def _memo(self, state: CycleState, pod: Pod) -> tuple[Any, np.ndarray | None, set[str]]:
        """(the framework, the class's memo of nodes where preemption cannot help, nodes with nominated pods);
        the memo only for the in-tree policy, whose verdict on a node depends on nothing else."""
        fw = getattr(self.handle, "framework", None)
        if fw is None or not type(self.interface).__module__.startswith(IN_TREE_PREFIX):
            return fw, None, set()
        memo = fw.class_memo(f"preemption:{self.plugin_name}", state, pod)
        if memo is None:
            return fw, None, set()
        return fw, memo, fw.nodes_with_nominated_pods()

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims_map = self.interface.candidates_to_victims_map(candidates)
        node = pick_one_node_for_preemption(victims_map, self.interface.ordered_score_funcs(victims_map))
        victims = victims_map.get(node)
        if victims is not None:
            return Candidate(node, victims)
        log.error("no candidate selected among %s; taking the first", [c.name for c in candidates])
        return candidates[0]

    async def prepare_candidate(self, c: Candidate, pod: Pod) -> Status | None:
        """Evict every victim (in parallel, the first failure stops the rest), then clear the nomination of
        lower-priority pods nominated to the node: they may no longer fit there."""
        self.last_candidate = c
        self.last_preempted = []
        limit = asyncio.Semaphore(max(1, int(getattr(self.handle, "parallelism", 16) or 16)))

        async def one(victim: Pod) -> None:
            async with limit:
                await self.preempt_pod(c, pod, victim)

        tasks = [asyncio.ensure_future(one(v)) for v in c.victims.pods]
        if tasks:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            for t in tasks:
                if t in done and not t.cancelled() and (exc := t.exception()) is not None:
                    return Status.as_error(exc)
        metrics.preemption_victims.observe(len(c.victims.pods))

        nominated = self.lower_priority_nominated_pods(pod, c.name)
        try:
            await self.clear_nominated_node_name(nominated)
        except Exception as e:  # not fatal: the pods will find out at their next attempt
            log.error("cannot clear nominatedNodeName of lower-priority pods on node %s: %s", c.name, e)
        return None

    async def preempt_pod(self, c: Candidate, preemptor: Pod, victim: Pod) -> None:
        """Evict one victim (upstream: Evaluator.PreemptPod): a pod waiting at Permit is rejected; any other
        gets a DisruptionTarget condition and is deleted. Raises on an API failure."""
        self.last_preempted.append(victim)
        fw = self.handle.framework
        uid = victim["metadata"].get("uid", "")
        waiting = fw.waiting_pods.get(uid) if fw is not None else None
        client = self.handle.client
        if waiting is not None:
            waiting.reject(self.plugin_name, "preempted")
            log.debug("pod %s rejected waiting pod %s on node %s", _key(preemptor), _key(victim), c.name)
        elif client is not None:
            from ...api import errors as api_errors

            md = victim["metadata"]
            name, ns = md.get("name", ""), md.get("namespace", "")
            if self.handle.feature_gates.get("PodDisruptionConditions", True):
                scheduler_name = (preemptor.get("spec") or {}).get("schedulerName") or ""
                cond = updated_condition(
                    victim.get("status") or {},
                    {
                        "type": DISRUPTION_TARGET,
                        "status": "True",
                        "reason": REASON_PREEMPTION_BY_SCHEDULER,
                        "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
                    },
                )
                if cond is not None:
                    patch = {"status": {"conditions": [cond]}}
                    await client.patch("pods", name, patch, ns, patch_type="strategic", subresource="status")
            try:
                await client.delete("pods", name, ns)
            except api_errors.NotFound:
                log.debug("victim %s of %s is already deleted", _key(victim), _key(preemptor))
                return
        self.handle.record_event(
            victim,
            preemptor,
            "Normal",
            "Preempted",
            "Preempting",
            f"Preempted by pod {preemptor['metadata'].get('uid', '')} on node {c.name}",
        )

    def lower_priority_nominated_pods(self, pod: Pod, node_name: str) -> list[Pod]:
        nominator = self.handle.nominator
        if nominator is None:
            return []
        prio = pod_priority(pod)
        return [pi.pod for pi in nominator.nominated_pods_for_node(node_name) if pod_priority(pi.pod) < prio]

    async def clear_nominated_node_name(self, pods: list[Pod]) -> None:
        """Patch status.nominatedNodeName away on pods whose status carries one (upstream:
        util.ClearNominatedNodeName), and drop their nomination from the queue right away rather than when the
        update comes back through the informer. Every pod is tried; the errors are raised together."""
        errs: list[str] = []
        client = self.handle.client
        nominator = self.handle.nominator
        for p in pods:
            if not (p.get("status") or {}).get("nominatedNodeName"):
                continue
            md = p["metadata"]
            if client is not None:
                try:
                    await client.patch(
                        "pods",
                        md.get("name", ""),
                        {"status": {"nominatedNodeName": None}},
                        md.get("namespace", ""),
                        patch_type="strategic",
                        subresource="status",
                    )
                except Exception as e:
                    errs.append(str(e))
                    continue
            if nominator is not None:
                nominator.delete_nominated_pod_if_exists(p)
        if errs:
            raise RuntimeError(aggregate_message(errs))


def _key(pod: Pod) -> str:
    md = pod.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"
