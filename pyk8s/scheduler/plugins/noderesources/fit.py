"""The NodeResourcesFit plugin (upstream: plugins/noderesources/fit.go, v1.32).

PreFilter computes what the pod asks for (containers, sidecars, init containers, overhead); Filter rejects a
node whose free pods/cpu/memory/ephemeral-storage/extended resources cannot hold it, listing every shortage
("Too many pods", "Insufficient cpu", …) and always as Unschedulable — preemption may free room (v1.32 does
not yet single out nodes too small even when empty). PreScore/Score rank nodes with the configured scoring
strategy (LeastAllocated by default) over the pods' non-zero requests. Queueing hints requeue a pod when a
scheduled pod goes away or shrinks, or a node appears or grows in a resource the pod asks for.

With the PodLevelResources gate a pod's spec.resources cpu/memory requests replace its containers' sum, in the
Filter as in scoring; with InPlacePodVerticalScaling scoring and the shrink hint read a container's resized
requests from its status (framework.types.RequestOptions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ....api.validation import is_qualified_name
from ...framework.features import DEFAULT_FEATURE_GATES
from ...framework.interface import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    Node,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
)
from ...framework.snapshot import Snapshot
from ...framework.types import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NO_GATES,
    PODS,
    NodeInfo,
    RequestOptions,
    Resource,
    is_scalar_resource,
    pod_requests_pair,
)  # fmt: skip
from .args import FitArgs, fit_args
from .resource_allocation import ResourceAllocationScorer, cycle_pod_requests
from .vectors import free_threshold

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

REASON_TOO_MANY_PODS = "Too many pods"
REASON_SIDECARS_DISABLED = "Pod has a restartable init container and the SidecarContainers feature is disabled"


def insufficient_reason(resource: str) -> str:
    return f"Insufficient {resource}"


def is_extended_resource_name(name: str) -> bool:
    """A resource outside the kubernetes.io domain, e.g. example.com/gpu (upstream: IsExtendedResourceName)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    # A quota can be set on it as requests.<name>, so that must be a valid qualified name.
    return not is_qualified_name("requests." + name)


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """A resource the node lacks for the pod (upstream: InsufficientResource)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


class _PreFilterState:
    """The pod's requests, and (resource, amount) of the non-zero extended/hugepages requests the Filter
    checks, in the pod's order (precomputed for the vector form). Never mutated, so clones share it."""

    __slots__ = ("requests", "scalar_checks")

    def __init__(self, requests: Resource, scalar_checks: tuple[tuple[str, int], ...]) -> None:
        self.requests = requests
        self.scalar_checks = scalar_checks

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    """The pod's request of each scored resource, in args order."""

    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


def _ignored(name: str, ignored: frozenset[str], ignored_groups: frozenset[str]) -> bool:
    # only extended resources can be ignored, by name or by their domain
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(ignored_groups) and name.split("/")[0] in ignored_groups)


def fits_request(
    req: Resource,
    ni: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """Every resource the node cannot spare for requests `req` (upstream: fitsRequest)."""
    out: list[InsufficientResource] = []
    alloc, used = ni.allocatable, ni.requested
    if len(ni.pods) + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource(PODS, REASON_TOO_MANY_PODS, 1, len(ni.pods), alloc.allowed_pod_number))
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar:
        return out
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(InsufficientResource(CPU, insufficient_reason(CPU), req.milli_cpu, used.milli_cpu, alloc.milli_cpu))
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        out.append(InsufficientResource(MEMORY, insufficient_reason(MEMORY), req.memory, used.memory, alloc.memory))
    if req.ephemeral_storage > 0 and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(
            InsufficientResource(
                EPHEMERAL_STORAGE,
                insufficient_reason(EPHEMERAL_STORAGE),
                req.ephemeral_storage,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
            )
        )
    # Upstream walks a Go map here (random order); the pod's own order is the deterministic choice.
    for name, q in req.scalar.items():
        if q == 0 or _ignored(name, ignored, ignored_groups):
            continue
        have, taken = alloc.scalar.get(name, 0), used.scalar.get(name, 0)
        if q > have - taken:
            out.append(InsufficientResource(name, insufficient_reason(name), q, taken, have))
    return out


def fits(pod: Pod, ni: NodeInfo, opts: RequestOptions = NO_GATES) -> list[InsufficientResource]:
    """fits_request for a whole pod with nothing ignored (upstream: Fits)."""
    return fits_request(pod_requests_pair(pod, opts)[0], ni)


def is_fit(pod: Pod, node: Node | None, opts: RequestOptions = NO_GATES) -> bool:
    """Whether the pod would fit an empty copy of `node` (upstream: isFit)."""
    if node is None:
        return False
    return not fits(pod, NodeInfo(node), opts)


def has_restartable_init_container(pod: Pod) -> bool:
    return any(c.get("restartPolicy") == "Always" for c in (pod.get("spec") or {}).get("initContainers") or ())


def _requested_names(req: Resource) -> list[str]:
    """The resources a pod asks a non-zero amount of (what iterating upstream's request list visits)."""
    names = []
    if req.milli_cpu:
        names.append(CPU)
    if req.memory:
        names.append(MEMORY)
    if req.ephemeral_storage:
        names.append(EPHEMERAL_STORAGE)
    names.extend(n for n, v in req.scalar.items() if v)
    return names


def have_any_requested_resources_increased(
    pod: Pod, original: Node, modified: Node, opts: RequestOptions = NO_GATES
) -> bool:
    """Whether the node update grew the pod count or a resource the pod asks for (upstream:
    haveAnyRequestedResourcesIncreased)."""
    req = pod_requests_pair(pod, opts)[0]
    old, new = NodeInfo(original).allocatable, NodeInfo(modified).allocatable
    if new.allowed_pod_number > old.allowed_pod_number:
        return True
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar:
        return False
    if (
        (req.milli_cpu > 0 and new.milli_cpu > old.milli_cpu)
        or (req.memory > 0 and new.memory > old.memory)
        or (req.ephemeral_storage > 0 and new.ephemeral_storage > old.ephemeral_storage)
    ):
        return True
    return any(q != 0 and new.scalar.get(n, 0) > old.scalar.get(n, 0) for n, q in req.scalar.items())


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # verdicts shared by pods of one equivalence class

    def __init__(self, args: FitArgs, handle: Handle | None, gates: dict[str, bool]) -> None:
        self.args = args
        self.handle = handle
        self.ignored_resources = args.ignored_resources
        self.ignored_resource_groups = args.ignored_resource_groups
        self.enable_sidecar_containers = gates.get("SidecarContainers", True)
        self.enable_in_place_pod_vertical_scaling = gates.get("InPlacePodVerticalScaling", False)
        self.enable_scheduling_queue_hint = gates.get("SchedulerQueueingHints", True)
        pod_level = bool(gates.get("PodLevelResources", False))
        # A pending pod's requests are its spec's (upstream: computePodResourceRequest); scoring and a scheduled
        # pod's shrinking read its status too.
        self.pre_filter_options = RequestOptions(pod_level=pod_level)
        self.scale_down_options = RequestOptions(
            status_resources=self.enable_in_place_pod_vertical_scaling, pod_level=True
        )
        self.scorer = ResourceAllocationScorer(
            args.strategy,
            args.resources,
            use_requested=False,
            shape=args.shape,
            options=RequestOptions(self.enable_in_place_pod_vertical_scaling, pod_level),
        )

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle | None) -> NodeResourcesFit:
        gates = dict(handle.feature_gates) if handle is not None else dict(DEFAULT_FEATURE_GATES)
        return cls(fit_args(args), handle, gates)

    # -- PreFilter / Filter -----------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not self.enable_sidecar_containers and has_restartable_init_container(pod):
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_SIDECARS_DISABLED)
        req = cycle_pod_requests(state, pod, self.pre_filter_options)[0]
        checks: tuple[tuple[str, int], ...] = ()
        if req.scalar:
            ignored, groups = self.ignored_resources, self.ignored_resource_groups
            checks = tuple((n, q) for n, q in req.scalar.items() if q != 0 and not _ignored(n, ignored, groups))
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(req, checks))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _pre_filter_state(self, state: CycleState) -> _PreFilterState | Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return s

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        insufficient = fits_request(s.requests, node_info, self.ignored_resources, self.ignored_resource_groups)
        if insufficient:
            return Status(Code.UNSCHEDULABLE, *(r.reason for r in insufficient))
        return None

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        """`filter(...) is None` for every node of the snapshot at once."""
        c = snapshot.columns
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            # the per-node form reports the error
            return np.zeros(len(snapshot.node_info_list), dtype=bool)
        ok = c.num_pods < c.alloc_pods
        r = s.requests
        # A node fits a resource when the pod's request is at most what is left: used <= alloc - request.
        for name, amount, alloc, used in (
            (CPU, r.milli_cpu, c.alloc_cpu, c.req_cpu),
            (MEMORY, r.memory, c.alloc_mem, c.req_mem),
            (EPHEMERAL_STORAGE, r.ephemeral_storage, c.alloc_eph, c.req_eph),
        ):
            if amount > 0:
                ok &= used <= free_threshold(snapshot, name, alloc, amount)
        for name, q in s.scalar_checks:
            alloc, used = c.scalar(name, snapshot.node_info_list)
            ok &= used <= free_threshold(snapshot, name, alloc, q)
        return ok

    # -- PreScore / Score -------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(self.scorer.pod_request_list(state, pod)))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> list[int]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s.pod_requests
        # Score without PreScore (upstream allows it): compute on the spot.
        return self.scorer.pod_request_list(state, pod)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self.scorer.score(node_info, self._pod_requests(state, pod))

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        return self.scorer.score_vector(snapshot, idx, self._pod_requests(state, pod))

    def score_extensions(self) -> None:
        return None

    # -- queueing hints ---------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_action = ActionType.DELETE
        if self.enable_in_place_pod_vertical_scaling:
            # a pod resized down in place frees room
            pod_action |= ActionType.UPDATE_POD_SCALE_DOWN
        node_action = ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
        if not self.enable_scheduling_queue_hint:
            # without hints the queue's preCheck may drop Node/Add, so label/taint updates stand in for it
            node_action |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        return [
            ClusterEventWithHint(ClusterEvent(POD, pod_action), self.is_schedulable_after_pod_event),
            ClusterEventWithHint(ClusterEvent(NODE, node_action), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_event(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A scheduled pod deleted or scaled down may leave room (upstream: isSchedulableAfterPodEvent)."""
        if (old is not None and not isinstance(old, dict)) or (new is not None and not isinstance(new, dict)):
            return QueueingHint.QUEUE  # upstream returns Queue along with the type error
        if new is None:
            if old is None or not (old.get("spec") or {}).get("nodeName"):
                return QueueingHint.SKIP  # an unscheduled pod held nothing
            return QueueingHint.QUEUE
        if not self.enable_in_place_pod_vertical_scaling:
            return QueueingHint.SKIP
        if self._is_schedulable_after_pod_scale_down(pod, old or {}, new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def _is_schedulable_after_pod_scale_down(self, target: Pod, original: Pod, modified: Pod) -> bool:
        # upstream: isSchedulableAfterPodScaleDown
        if (modified.get("metadata") or {}).get("uid") == (target.get("metadata") or {}).get("uid"):
            return True  # the pod itself got smaller
        if not (modified.get("spec") or {}).get("nodeName"):
            return False
        # upstream passes only UseStatusResources here, so pod-level requests count whatever PodLevelResources is
        opts = self.scale_down_options
        before, after = pod_requests_pair(original, opts)[0], pod_requests_pair(modified, opts)[0]
        for name in _requested_names(pod_requests_pair(target, opts)[0]):
            if name == CPU:
                if before.milli_cpu > after.milli_cpu:
                    return True
            elif name == MEMORY:
                if before.memory > after.memory:
                    return True
            elif name == EPHEMERAL_STORAGE:
                if before.ephemeral_storage > after.ephemeral_storage:
                    return True
            elif is_scalar_resource(name) and before.scalar.get(name, 0) > after.scalar.get(name, 0):
                return True
        return False

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A node added, or one grown in something the pod asks for, on which the pod would fit empty
        (upstream: isSchedulableAfterNodeChange)."""
        if (old is not None and not isinstance(old, dict)) or (new is not None and not isinstance(new, dict)):
            return QueueingHint.QUEUE
        if new is None or not is_fit(pod, new, self.pre_filter_options):  # is_fit is False for no node
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if not have_any_requested_resources_increased(pod, old, new, self.pre_filter_options):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
