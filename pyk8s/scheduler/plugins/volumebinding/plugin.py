"""The VolumeBinding plugin (upstream: plugins/volumebinding/volume_binding.go, scorer.go, and the
VolumeBindingArgs defaults and validation).

PreFilter: every PVC the pod uses must exist (and not be lost or being deleted), and every one not bound yet
must wait for its first consumer: an unbound Immediate claim is the PV controller's job, so the pod waits.
Filter: bound PVs must admit the node; delayed claims must find an available PV or be provisionable there.
Reserve/Unreserve assume/revert the node's choices in the binder's caches; PreBind writes them and waits.
Score (only with the VolumeCapacityPriority gate, off in v1.32) prefers nodes whose matched static PVs are
closest in size to the requests.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ....api.quantity import QuantityError, parse_quantity, value
from ...framework.interface import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    MAX_NODE_SCORE,
    NODE,
    PV,
    PVC,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Pod,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from ...framework.types import NodeInfo
from ..storage_helpers import (
    ANN_MIGRATED_PLUGINS,
    annotations_of,
    ephemeral_claim_name,
    meta,
    pod_claim_names,
    pod_uses_claim,
    spec,
    volume_is_for_pod,
)
from .binder import BinderError, PodVolumeClaims, PodVolumes, VolumeBinder

log = logging.getLogger(__name__)

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass
class _StateData:
    all_bound: bool = False
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    claims: PodVolumeClaims | None = None
    has_static_bindings: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def clone(self) -> _StateData:
        return self  # shared between a cycle and its preemption what-ifs, as upstream's


# -- args ---------------------------------------------------------------------------------------------------


def _go_struct_points(shape: list[dict[str, Any]]) -> str:
    """A shape as Go's %#v prints []config.UtilizationShapePoint (what upstream's error shows)."""
    items = ", ".join(
        f"config.UtilizationShapePoint{{Utilization:{p.get('utilization', 0)}, Score:{p.get('score', 0)}}}"
        for p in shape
    )
    return f"[]config.UtilizationShapePoint{{{items}}}"


def validate_function_shape(shape: list[dict[str, Any]], path: str) -> list[str]:
    if not shape:
        return [f"{path}: Required value: at least one point must be specified"]
    errs = []
    for i in range(1, len(shape)):
        if int(shape[i - 1].get("utilization", 0)) >= int(shape[i].get("utilization", 0)):
            errs.append(
                f"{path}[{i}].utilization: Invalid value: {int(shape[i].get('utilization', 0))}: "
                "utilization values must be sorted in increasing order"
            )
            break
    for i, point in enumerate(shape):
        u, s = int(point.get("utilization", 0)), int(point.get("score", 0))
        if not 0 <= u <= MAX_UTILIZATION:
            errs.append(f"{path}[{i}].utilization: Invalid value: {u}: not in valid range [0, {MAX_UTILIZATION}]")
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(f"{path}[{i}].score: Invalid value: {s}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    return errs


def default_and_validate_args(args: dict[str, Any] | None, capacity_priority: bool) -> dict[str, Any]:
    """VolumeBindingArgs with upstream's v1 defaults applied; ValueError with upstream's messages when invalid."""
    out = dict(args or {})
    if out.get("bindTimeoutSeconds") is None:
        out["bindTimeoutSeconds"] = DEFAULT_BIND_TIMEOUT_SECONDS
    if not out.get("shape") and capacity_priority:
        out["shape"] = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": MAX_CUSTOM_PRIORITY_SCORE}]
    errs: list[str] = []
    timeout = int(out["bindTimeoutSeconds"])
    if timeout < 0:
        errs.append(
            f"bindTimeoutSeconds: Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a negative value"
        )
    if capacity_priority:
        errs.extend(validate_function_shape(out.get("shape") or [], "shape"))
    elif out.get("shape") is not None:
        # Rejected rather than ignored, so that it cannot take effect unnoticed once the gate turns on.
        errs.append(
            f"shape: Invalid value: {_go_struct_points(out['shape'])}: unexpected field `shape`, "
            "remove it or turn on the feature gate VolumeCapacityPriority"
        )
    if errs:
        unique = list(dict.fromkeys(errs))
        raise ValueError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
    return out


# -- scoring ------------------------------------------------------------------------------------------------


def _trunc_div(a: int, b: int) -> int:
    """Go's integer division (truncates towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def broken_linear(shape: list[tuple[int, int]], p: int) -> int:
    """The piecewise-linear function through the (utilization, score) points (upstream:
    helper.BuildBrokenLinearFunction)."""
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            u0, s0 = shape[i - 1]
            return s0 + _trunc_div((s - s0) * (p - u0), u - u0)
    return shape[-1][1]


def build_scorer(shape: list[tuple[int, int]]) -> Any:
    """Score = mean over storage classes of f(requested * 100 / capacity), rounded half away from zero."""

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(shape, MAX_UTILIZATION)
        return broken_linear(shape, _trunc_div(requested * MAX_UTILIZATION, capacity))

    def scorer(class_resources: dict[str, list[int]]) -> int:
        if not class_resources:
            return 0
        total = sum(class_score(req, cap) for req, cap in class_resources.values())
        n = len(class_resources)
        # math.Round of total/n, exactly: scores are never negative (the shape's are validated to 0..10).
        return (2 * total + n) // (2 * n)

    return scorer


# -- the plugin ---------------------------------------------------------------------------------------------


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions
):
    name: ClassVar[str] = NAME

    def __init__(self, args: dict[str, Any], handle: Any) -> None:
        self.handle = handle
        self.args = args
        gates = handle.feature_gates
        self.queueing_hints = bool(gates.get("SchedulerQueueingHints", True))
        self.binder = VolumeBinder(handle, float(args["bindTimeoutSeconds"]))
        self.scorer = None
        if gates.get("VolumeCapacityPriority", False):
            per_point = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            points = [(int(p["utilization"]), int(p["score"]) * per_point) for p in args["shape"]]
            self.scorer = build_scorer(points)

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> VolumeBinding:
        gate = bool(handle.feature_gates.get("VolumeCapacityPriority", False))
        return cls(default_and_validate_args(args, gate), handle)

    # -- PreFilter ------------------------------------------------------------------------------------------

    def _pod_has_pvcs(self, pod: Pod) -> bool:
        """Whether the pod uses any PVC; raises BinderError with upstream's text for a claim that is missing,
        lost, being deleted, or (ephemeral) not the pod's own."""
        has = False
        ns = meta(pod).get("namespace", "")
        for claim_name, ephemeral, _ in pod_claim_names(pod):
            has = True
            pvc = self.handle.objects.get("persistentvolumeclaims", ns, claim_name)
            if pvc is None:
                if ephemeral:
                    raise BinderError(
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim_name}"'
                    )
                raise BinderError(f'persistentvolumeclaim "{claim_name}" not found')
            if (pvc.get("status") or {}).get("phase") == "Lost":
                volume_name = spec(pvc).get("volumeName") or ""
                raise BinderError(
                    f'persistentvolumeclaim "{meta(pvc).get("name", "")}" bound to non-existent persistentvolume '
                    f'"{volume_name}"'
                )
            if meta(pvc).get("deletionTimestamp"):
                raise BinderError(f'persistentvolumeclaim "{meta(pvc).get("name", "")}" is being deleted')
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    raise BinderError(problem)
        return has

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not spec(pod).get("volumes"):  # the common case, without any lookup
            state.write(STATE_KEY, _StateData())
            return None, Status(Code.SKIP)
        try:
            has_pvc = self._pod_has_pvcs(pod)
        except BinderError as e:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(e))
        if not has_pvc:
            state.write(STATE_KEY, _StateData())
            return None, Status(Code.SKIP)
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except BinderError as e:
            return None, Status.as_error(e)
        if claims.unbound_claims_immediate:
            # The PV controller binds these; the pod comes back when a claim changes.
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE)
        state.write(
            STATE_KEY,
            _StateData(
                claims=PodVolumeClaims(
                    bound_claims=claims.bound_claims,
                    unbound_claims_delay_binding=claims.unbound_claims_delay_binding,
                    unbound_volumes_delay_binding=claims.unbound_volumes_delay_binding,
                )
            ),
        )
        return None, None

    # -- Filter ---------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data: _StateData | None = state.get(STATE_KEY)
        if data is None:
            return Status.as_error("not found")
        node = node_info.node or {}
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod, data.claims or PodVolumeClaims(), node)
        except BinderError as e:
            return Status.as_error(e)
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        with data.lock:  # filters of different nodes may run concurrently
            data.pod_volumes_by_node[node_info.name] = volumes
            data.has_static_bindings = data.has_static_bindings or bool(volumes.static_bindings)
        return None

    # -- Score ----------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        if self.scorer is None:
            return Status(Code.SKIP)
        data: _StateData | None = state.get(STATE_KEY)
        if data is None:
            return Status.as_error("not found")
        return None if data.has_static_bindings else Status(Code.SKIP)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        if self.scorer is None:
            return 0, None
        data: _StateData | None = state.get(STATE_KEY)
        if data is None:
            return 0, Status.as_error("not found")
        volumes = data.pod_volumes_by_node.get(node_info.name)
        if volumes is None:
            return 0, None
        by_class: dict[str, list[int]] = {}
        for b in volumes.static_bindings:
            requested, capacity = b.storage_resource()
            acc = by_class.setdefault(b.storage_class_name(), [0, 0])
            acc[0] += requested
            acc[1] += capacity
        return self.scorer(by_class), None

    # -- Reserve / PreBind ----------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _StateData | None = state.get(STATE_KEY)
        if data is None:
            return Status.as_error("not found")
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            data.all_bound = True  # the pod uses no PVC
            return None
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        except BinderError as e:
            return Status.as_error(e)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data: _StateData | None = state.get(STATE_KEY)
        if data is None:
            return
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data: _StateData | None = state.get(STATE_KEY)
        if data is None:
            return Status.as_error("not found")
        if data.all_bound:
            return None
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.as_error(f'no pod volumes found for node "{node_name}"')
        try:
            await self.binder.bind_pod_volumes(pod, node_name, volumes)
        except BinderError as e:
            return Status.as_error(e)
        except Exception as e:  # the API unreachable, …: retry the pod like any binding error
            log.warning("binding volumes of pod %s/%s: %s", meta(pod).get("namespace"), meta(pod).get("name"), e)
            return Status.as_error(e)
        return None

    # -- events ---------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        if not self.queueing_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT  # see upstream issue #109437
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            # A missing or mis-configured class (allowedTopologies, binding mode) may be fixed.
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, add_update), is_schedulable_after_storage_class_change),
            # Claims and volumes get bound: any change may help.
            ClusterEventWithHint(ClusterEvent(PVC, add_update), is_schedulable_after_pvc_change),
            ClusterEventWithHint(ClusterEvent(PV, add_update)),
            # Node labels decide PV node affinity and allowed topologies.
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, add_update), is_schedulable_after_csi_node_change),
            # Storage capacity tracking.
            ClusterEventWithHint(ClusterEvent(CSI_DRIVER, ActionType.UPDATE), is_schedulable_after_csi_driver_change),
            ClusterEventWithHint(ClusterEvent(CSI_STORAGE_CAPACITY, add_update), is_schedulable_after_capacity_change),
        ]


# -- queueing hints -----------------------------------------------------------------------------------------


def is_schedulable_after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    changed = annotations_of(old).get(ANN_MIGRATED_PLUGINS) != annotations_of(new).get(ANN_MIGRATED_PLUGINS)
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP


def is_schedulable_after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if pod_uses_claim(pod, new) else QueueingHint.SKIP
    name = meta(new).get("name")
    for vol in spec(pod).get("volumes") or ():
        if vol.get("persistentVolumeClaim") is not None:
            claim = vol["persistentVolumeClaim"].get("claimName")
        elif vol.get("ephemeral") is not None:
            claim = ephemeral_claim_name(pod, vol)
        else:
            continue
        if claim == name:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    # The binding mode is immutable; only allowedTopologies can turn a "no" into a "yes".
    changed = (old.get("allowedTopologies") or []) != (new.get("allowedTopologies") or [])
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP


def _volume_limit(capacity: dict[str, Any]) -> int | None:
    text = capacity.get("maximumVolumeSize")
    if text is None:
        text = capacity.get("capacity")
    if text is None:
        return None
    try:
        return value(parse_quantity(str(text)))
    except QuantityError:
        return None


def is_schedulable_after_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    old_limit, new_limit = _volume_limit(old), _volume_limit(new)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None or new is None:
        return QueueingHint.QUEUE
    name = meta(new).get("name")
    for vol in spec(pod).get("volumes") or ():
        csi = vol.get("csi")
        if csi is None or csi.get("driver") != name:
            continue
        # Capacity tracking switched off for a driver the pod uses.
        if spec(old).get("storageCapacity") and not spec(new).get("storageCapacity"):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


__all__ = ["NAME", "VolumeBinding", "default_and_validate_args"]
