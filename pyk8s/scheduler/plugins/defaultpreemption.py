"""The DefaultPreemption PostFilter plugin (upstream: plugins/defaultpreemption/default_preemption.go): when a
pod fits nowhere, find a node where evicting lower-priority pods makes room, evicting as few and as unimportant
pods as possible and preferring evictions that respect PodDisruptionBudgets. The shared machinery is the
preemption Evaluator; this module holds the default policy (eligibility, victim selection, candidate count).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ...api.selectors import SelectorError, label_selector_from_object
from .. import metrics
from ..framework.interface import (
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    Pod,
    PostFilterPlugin,
    PostFilterResult,
    Status,
)
from ..framework.preemption import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
    Candidate,
    Evaluator,
    Victims,
    importance_key,
)
from ..framework.types import pod_priority

if TYPE_CHECKING:
    from ..framework.types import NodeInfo, PodInfo

NAME = "DefaultPreemption"

# v1 defaults of DefaultPreemptionArgs.
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

ERR_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."


def default_args(args: dict[str, Any] | None) -> dict[str, int]:
    """The args with v1 defaults for missing keys (an explicit 0 stays 0, as upstream's pointer defaulting)."""
    args = args or {}
    defaults = {
        "minCandidateNodesPercentage": DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
        "minCandidateNodesAbsolute": DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
    }
    out: dict[str, int] = {}
    for k, default in defaults.items():
        v = args.get(k)
        if v is None:
            v = default
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{k}: Invalid value: {v!r}: must be an integer")
        out[k] = v
    return out


def validate_args(args: dict[str, int]) -> None:
    """Upstream's ValidateDefaultPreemptionArgs; several problems are reported together."""
    pct, absolute = args["minCandidateNodesPercentage"], args["minCandidateNodesAbsolute"]
    errs: list[str] = []
    if pct < 0 or pct > 100:
        errs.append(f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
    if absolute < 0:
        errs.append(f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        errs.append(
            f"minCandidateNodesPercentage: Invalid value: {pct}: cannot be zero at the same time as "
            "minCandidateNodesAbsolute"
        )
        errs.append(
            f"minCandidateNodesAbsolute: Invalid value: {absolute}: cannot be zero at the same time as "
            "minCandidateNodesPercentage"
        )
    if errs:
        raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")


def pod_terminating_by_preemption(pod: Pod, pod_disruption_conditions: bool = True) -> bool:
    """The pod is being deleted, and (with PodDisruptionConditions) because the scheduler preempted it."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if not pod_disruption_conditions:
        return True
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == DISRUPTION_TARGET:
            return c.get("status") == "True" and c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
    return False


def _pdb_selector(pdb: dict[str, Any]) -> Any:
    try:
        return label_selector_from_object((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return None  # an invalid selector matches no pod


def filter_pods_with_pdb_violation(
    pod_infos: Sequence[PodInfo], pdbs: Sequence[dict[str, Any]]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split the pods, keeping their order, into those whose eviction would exceed a PDB's
    status.disruptionsAllowed (counting the earlier pods' evictions) and the rest. A pod already listed in a
    PDB's status.disruptedPods was accounted for by the API server and does not use up that budget."""
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    selectors = [_pdb_selector(pdb) for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pod_infos:
        md = pi.pod.get("metadata") or {}
        labels = md.get("labels") or {}
        violated = False
        if labels:  # a pod without labels matches no PDB
            for i, pdb in enumerate(pdbs):
                if (pdb.get("metadata") or {}).get("namespace", "") != md.get("namespace", ""):
                    continue
                sel = selectors[i]
                # A missing, empty or invalid selector matches nothing.
                if sel is None or sel.empty or not sel.matches(labels):
                    continue
                if md.get("name", "") in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


class DefaultPreemption(PostFilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: dict[str, int], handle: Any) -> None:
        self.args = args
        self.handle = handle
        # The random offset into the potential nodes (upstream: getOffsetRand); replaceable for determinism.
        self.offset_rand: Callable[[int], int] = random.randrange
        self.evaluator = Evaluator(NAME, handle, self)

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> DefaultPreemption:
        full = default_args(args)
        validate_args(full)
        return cls(full, handle)

    # -- extension points ---------------------------------------------------------------------------------------

    async def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        try:
            result, status = await self.evaluator.preempt(state, pod, filtered_node_status)
        finally:
            metrics.preemption_attempts.inc()
        if status is not None and status.message():
            return result, Status(status.code, "preemption: " + status.message(), error=status.error)
        return result, status

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only asynchronous preemption (off in v1.32) ever rejects pods here, so no event concerns this plugin.
        return []

    # -- the preemption policy (upstream: preemption.Interface) --------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for: a percentage of the nodes, at least the absolute minimum,
        at most all of them."""
        n = num_nodes * self.args["minCandidateNodesPercentage"] // 100
        n = max(n, self.args["minCandidateNodesAbsolute"])
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.offset_rand(num_nodes), self.calculate_num_candidates(num_nodes)

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]:
        return {c.name: c.victims for c in candidates}

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]) -> list[Callable[[str], int]] | None:
        return None  # the Evaluator's default criteria

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        """Whether the pod may preempt, and why not: never with preemptionPolicy Never; not while lower-priority
        pods it already preempted are still terminating on its nominated node (unless that node has become
        UnschedulableAndUnresolvable for it)."""
        spec = pod.get("spec") or {}
        if spec.get("preemptionPolicy") == "Never":
            return False, MSG_PREEMPT_NEVER
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        if nominated:
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = self.handle.snapshot.get(nominated)
            if ni is not None:
                prio = pod_priority(pod)
                gate = self.handle.feature_gates.get("PodDisruptionConditions", True)
                for pi in ni.pods:
                    if pod_priority(pi.pod) < prio and pod_terminating_by_preemption(pi.pod, gate):
                        return False, MSG_TERMINATING_ON_NOMINATED
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: list[dict[str, Any]]
    ) -> tuple[list[Pod], int, Status | None]:
        """The fewest, least important pods to evict from (a copy of) the node so the pod fits: remove every
        lower-priority pod; if the pod then fits, put pods back one by one — PDB-violating ones first, each group
        most important first — keeping each that still leaves room. Returns (victims, how many of them violate a
        PDB, status)."""
        fw = self.handle.framework

        def remove(pi: PodInfo) -> Status | None:
            if not node_info.remove_pod(pi.pod):
                name = pi.pod["metadata"].get("name", "")
                return Status.as_error(f"no corresponding pod {name} in pods of node {node_info.name}")
            return fw.run_pre_filter_extension_remove_pod(state, pod, pi, node_info)

        def add(pi: PodInfo) -> Status | None:
            node_info.add_pod(pi)
            return fw.run_pre_filter_extension_add_pod(state, pod, pi, node_info)

        prio = pod_priority(pod)
        potential: list[PodInfo] = []
        for pi in list(node_info.pods):
            if pod_priority(pi.pod) < prio:
                potential.append(pi)
                if (st := remove(pi)) is not None:
                    return [], 0, _as_error(st)
        if not potential:
            # Nothing to evict: the node's state is what the filters already rejected.
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_VICTIMS)

        # If the pod does not fit even with all of them gone, this node cannot help. (Affinity of the pod to
        # the evicted pods themselves is deliberately not considered, as upstream.)
        if (st := fw.run_filter_plugins_with_nominated_pods(state, pod, node_info)) is not None:
            return [], 0, st

        now_ns = time.time_ns()
        potential.sort(key=lambda pi: importance_key(pi.pod, now_ns))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(pi: PodInfo) -> tuple[bool, Status | None]:
            if (st := add(pi)) is not None:
                return False, st
            fits = fw.run_filter_plugins_with_nominated_pods(state, pod, node_info) is None
            if not fits:
                if (st := remove(pi)) is not None:
                    return False, st
                victims.append(pi)
            return fits, None

        num_violating = 0
        for pi in violating:
            fits, err = reprieve(pi)
            if err is not None:
                return [], 0, _as_error(err)
            if not fits:
                num_violating += 1
        for pi in non_violating:
            _, err = reprieve(pi)
            if err is not None:
                return [], 0, _as_error(err)
        # Keep the victims most important first when both groups contributed.
        if violating and non_violating:
            victims.sort(key=lambda pi: importance_key(pi.pod, now_ns))
        return [pi.pod for pi in victims], num_violating, None


def _as_error(st: Status) -> Status:
    return st if st.code == Code.ERROR else Status.as_error(st.message())
