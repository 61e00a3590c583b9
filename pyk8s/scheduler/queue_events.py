"""The cluster events the scheduling queue reacts to (upstream: pkg/scheduler/framework/events.go, v1.32),
and how an update of a pod translates into events. `queue` re-exports all of them.

A ClusterEvent's label (logs, the scheduler_queue_incoming_pods_total metric) is upstream's: resource then
action ("NodeAdd", "AssignedPodDelete", "UnschedulablePodUpdatePodLabel"), or the special label of a wildcard
event ("ForceActivate", "UnschedulableTimeout").
"""

from __future__ import annotations

from typing import Any

from .framework.features import process_gates
from .framework.interface import (
    ASSIGNED_POD,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    POD,
    PV,
    PVC,
    STORAGE_CLASS,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    Pod,
)
from .framework.types import RequestOptions, pod_requests

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ASSIGNED_POD_UPDATE",
    "BACKOFF_COMPLETE",
    "CSI_DRIVER_ADD",
    "CSI_DRIVER_UPDATE",
    "CSI_NODE_ADD",
    "CSI_NODE_UPDATE",
    "CSI_STORAGE_CAPACITY_ADD",
    "CSI_STORAGE_CAPACITY_UPDATE",
    "FORCE_ACTIVATE",
    "FORCE_ACTIVATE_LABEL",
    "NODE_ADD",
    "NODE_ALLOCATABLE_CHANGE",
    "NODE_ANNOTATION_CHANGE",
    "NODE_CONDITION_CHANGE",
    "NODE_DELETE",
    "NODE_LABEL_CHANGE",
    "NODE_SPEC_UNSCHEDULABLE_CHANGE",
    "NODE_TAINT_CHANGE",
    "POD_SCALE_DOWN",
    "POD_TOPOLOGY_SPREAD",
    "PVC_ADD",
    "PVC_DELETE",
    "PVC_UPDATE",
    "PV_ADD",
    "PV_DELETE",
    "PV_UPDATE",
    "SCHEDULE_ATTEMPT_FAILURE",
    "SCHEDULING_GATES",
    "STORAGE_CLASS_ADD",
    "STORAGE_CLASS_UPDATE",
    "UNSCHEDULABLE_TIMEOUT",
    "UNSCHEDULABLE_TIMEOUT_LABEL",
    "UNSCHEDULED_POD_ADD",
    "UNSCHEDULED_POD_DELETE",
    "UNSCHEDULED_POD_UPDATE",
    "WILDCARD_EVENT",
    "is_pod_updated",
    "is_wildcard",
    "pod_scheduling_properties_change",
]

# Labels of how a pod entered a queue that are not cluster events.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE_LABEL = "ForceActivate"
UNSCHEDULABLE_TIMEOUT_LABEL = "UnschedulableTimeout"

A = ActionType
NODE_ADD = ClusterEvent(NODE, A.ADD)
NODE_DELETE = ClusterEvent(NODE, A.DELETE)
NODE_ALLOCATABLE_CHANGE = ClusterEvent(NODE, A.UPDATE_NODE_ALLOCATABLE)
NODE_LABEL_CHANGE = ClusterEvent(NODE, A.UPDATE_NODE_LABEL)
NODE_TAINT_CHANGE = ClusterEvent(NODE, A.UPDATE_NODE_TAINT)
NODE_SPEC_UNSCHEDULABLE_CHANGE = NODE_TAINT_CHANGE  # upstream reports spec.unschedulable as a taint change
NODE_CONDITION_CHANGE = ClusterEvent(NODE, A.UPDATE_NODE_CONDITION)
NODE_ANNOTATION_CHANGE = ClusterEvent(NODE, A.UPDATE_NODE_ANNOTATION)
ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, A.ADD)
ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, A.UPDATE)
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, A.DELETE)
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, A.ADD)
UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULED_POD, A.UPDATE)
UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULED_POD, A.DELETE)
PV_ADD, PV_UPDATE, PV_DELETE = (ClusterEvent(PV, a) for a in (A.ADD, A.UPDATE, A.DELETE))
PVC_ADD, PVC_UPDATE, PVC_DELETE = (ClusterEvent(PVC, a) for a in (A.ADD, A.UPDATE, A.DELETE))
STORAGE_CLASS_ADD, STORAGE_CLASS_UPDATE = ClusterEvent(STORAGE_CLASS, A.ADD), ClusterEvent(STORAGE_CLASS, A.UPDATE)
CSI_NODE_ADD, CSI_NODE_UPDATE = ClusterEvent(CSI_NODE, A.ADD), ClusterEvent(CSI_NODE, A.UPDATE)
CSI_DRIVER_ADD, CSI_DRIVER_UPDATE = ClusterEvent(CSI_DRIVER, A.ADD), ClusterEvent(CSI_DRIVER, A.UPDATE)
CSI_STORAGE_CAPACITY_ADD = ClusterEvent(CSI_STORAGE_CAPACITY, A.ADD)
CSI_STORAGE_CAPACITY_UPDATE = ClusterEvent(CSI_STORAGE_CAPACITY, A.UPDATE)
# Wildcard events move every unschedulable pod whatever rejected it.
FORCE_ACTIVATE = ClusterEvent(WILDCARD, A.ALL, FORCE_ACTIVATE_LABEL)
UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, A.ALL, UNSCHEDULABLE_TIMEOUT_LABEL)
WILDCARD_EVENT = ClusterEvent(WILDCARD, A.ALL, "WildCardEvent")
del A

SCHEDULING_GATES = "SchedulingGates"  # plugin names the queue treats specially, as upstream does
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
POD_SCALE_DOWN = ClusterEvent(POD, ActionType.UPDATE_POD_SCALE_DOWN)


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == WILDCARD and event.action == ActionType.ALL


def pod_scheduling_properties_change(new: Pod, old: Pod, dra_enabled: bool = False) -> list[ClusterEvent]:
    """The update events an update of a pod stands for (upstream: PodSchedulingPropertiesChange); a change of
    nothing specific is a plain Update, which only plugins registered for every pod update see."""
    resource = ASSIGNED_POD if (new.get("spec") or {}).get("nodeName") else UNSCHEDULED_POD
    nmd, omd = new.get("metadata") or {}, old.get("metadata") or {}
    nspec, ospec = new.get("spec") or {}, old.get("spec") or {}
    actions: list[ActionType] = []
    if (nmd.get("labels") or {}) != (omd.get("labels") or {}):
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not nspec.get("schedulingGates") and ospec.get("schedulingGates"):
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(nspec.get("tolerations") or ()) != len(ospec.get("tolerations") or ()):
        # The API only lets tolerations be added, so a different count is the whole story.
        actions.append(ActionType.UPDATE_POD_TOLERATIONS)
    if dra_enabled and (new.get("status") or {}).get("resourceClaimStatuses") != (old.get("status") or {}).get(
        "resourceClaimStatuses"
    ):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    return [ClusterEvent(resource, a) for a in actions] or [ClusterEvent(resource, ActionType.UPDATE_OTHER)]


def _scaled_down(new: Pod, old: Pod) -> bool:
    """Whether any resource the old pod requested is requested less, or not at all, by the new one (upstream:
    extractPodScaleDown, which reads resized requests from the status with the process's
    InPlacePodVerticalScaling gate, and pod-level requests whatever PodLevelResources is)."""
    opts = RequestOptions(status_resources=process_gates().in_place_pod_vertical_scaling, pod_level=True)
    n, o = pod_requests(new, opts=opts), pod_requests(old, opts=opts)
    if o.milli_cpu > n.milli_cpu or o.memory > n.memory or o.ephemeral_storage > n.ephemeral_storage:
        return True
    return any(name not in n.scalar or v > n.scalar[name] for name, v in o.scalar.items())


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """Whether anything but the status and bookkeeping metadata changed (upstream: isPodUpdated); the
    resource-claim statuses count, since the DRA plugin waits for them."""

    def strip(pod: Pod) -> dict[str, Any]:
        md = {
            k: v for k, v in (pod.get("metadata") or {}).items()
            if k not in ("resourceVersion", "generation", "managedFields", "finalizers")
        }  # fmt: skip
        status = pod.get("status") or {}
        rest = {k: v for k, v in pod.items() if k not in ("metadata", "status")}
        return {**rest, "metadata": md, "claims": status.get("resourceClaimStatuses")}

    return strip(old) != strip(new)
