"""The VolumeRestrictions plugin (upstream: plugins/volumerestrictions/volume_restrictions.go).

Filter rejects a node where another pod already mounts the same GCE PD / AWS EBS / Ceph RBD / iSCSI disk in a
conflicting way; PreFilter looks up the pod's PVCs and counts how many of its ReadWriteOncePod claims some
scheduled pod already uses (anywhere in the cluster), which Filter then rejects. Preemption keeps that count
current through add_pod/remove_pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..framework.interface import (
    NODE,
    POD,
    PVC,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ..framework.types import NodeInfo, PodInfo
from .storage_helpers import READ_WRITE_ONCE_POD, NotFoundError, access_modes, meta, spec

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_CONFLICT_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass
class _PreFilterState:
    rwop_claims: frozenset[str]  # names of the pod's ReadWriteOncePod claims
    conflicting_refs: int  # how many scheduled pods' volumes use one of them

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.rwop_claims, self.conflicting_refs)

    def update_with_pod(self, pod_info: PodInfo, multiplier: int) -> None:
        n = 0
        for vol in spec(pod_info.pod).get("volumes") or ():
            src = vol.get("persistentVolumeClaim")
            if src is not None and src.get("claimName") in self.rwop_claims:
                n += 1
        self.conflicting_refs += multiplier * n


def needs_restrictions_check(volume: dict[str, Any]) -> bool:
    return any(volume.get(k) is not None for k in _CONFLICT_SOURCES)


def _read_only(src: dict[str, Any]) -> bool:
    return bool(src.get("readOnly"))


def is_volume_conflict(volume: dict[str, Any], pod: Pod) -> bool:
    """Whether `volume` (of the pod being scheduled) conflicts with any volume of the existing `pod`."""
    gce, ebs, iscsi, rbd = (volume.get(k) for k in ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd"))
    for existing in spec(pod).get("volumes") or ():
        # A GCE PD may be mounted by several pods only when all mount it read-only.
        other = existing.get("gcePersistentDisk")
        if gce is not None and other is not None:
            if gce.get("pdName", "") == other.get("pdName", "") and not (_read_only(gce) and _read_only(other)):
                return True
        # An EBS volume may never be shared.
        other = existing.get("awsElasticBlockStore")
        if ebs is not None and other is not None and ebs.get("volumeID", "") == other.get("volumeID", ""):
            return True
        # iSCSI volumes are the same when the IQN is; only read-only sharing is allowed.
        other = existing.get("iscsi")
        if iscsi is not None and other is not None:
            if iscsi.get("iqn", "") == other.get("iqn", "") and not (_read_only(iscsi) and _read_only(other)):
                return True
        # RBD images are the same when a monitor is shared and pool and image match; only read-only sharing.
        other = existing.get("rbd")
        if rbd is not None and other is not None:
            same = (
                bool(set(rbd.get("monitors") or ()) & set(other.get("monitors") or ()))
                and (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd")
                and rbd.get("image", "") == other.get("image", "")
            )
            if same and not (_read_only(rbd) and _read_only(other)):
                return True
    return False


def satisfy_volume_conflicts(pod: Pod, existing: list[Pod]) -> bool:
    """Whether none of the pod's GCE PD / EBS / RBD / iSCSI volumes conflicts with the existing pods' volumes."""
    for vol in spec(pod).get("volumes") or ():
        if not needs_restrictions_check(vol):
            continue
        for other in existing:
            if is_volume_conflict(vol, other):
                return False
    return True


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, EnqueueExtensions, PreFilterExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.queueing_hints = bool(handle.feature_gates.get("SchedulerQueueingHints", True))

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> VolumeRestrictions:
        return cls(handle)

    # -- PreFilter --------------------------------------------------------------------------------------------

    def _rwop_claims(self, pod: Pod) -> frozenset[str]:
        """Names of the pod's PVC volumes whose claim asks for ReadWriteOncePod; NotFoundError for a missing
        claim (every PVC volume is looked up, whatever its access mode)."""
        ns = meta(pod).get("namespace", "")
        names: set[str] = set()
        for vol in spec(pod).get("volumes") or ():
            src = vol.get("persistentVolumeClaim")
            if src is None:
                continue
            claim_name = src.get("claimName") or ""
            pvc = self.handle.objects.get("persistentvolumeclaims", ns, claim_name)
            if pvc is None:
                raise NotFoundError("persistentvolumeclaims", claim_name)
            if READ_WRITE_ONCE_POD in access_modes(pvc):
                names.add(meta(pvc).get("name", claim_name))
        return frozenset(names)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        volumes = spec(pod).get("volumes")
        if not volumes:  # the common case: nothing to look up, nothing to check
            return None, Status(Code.SKIP)
        needs_check = any(needs_restrictions_check(v) for v in volumes)
        try:
            claims = self._rwop_claims(pod)
        except NotFoundError as e:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(e))
        conflicting = 0
        if claims:
            ns = meta(pod).get("namespace", "")
            for claim in claims:
                key = f"{ns}/{claim}"
                # At most one scheduled pod may use a ReadWriteOncePod claim, so count the claim once.
                if any(key in ni.pvc_ref_counts for ni in nodes):
                    conflicting += 1
        if not needs_check and conflicting == 0:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(claims, conflicting))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def _state(self, state: CycleState) -> _PreFilterState | None:
        return state.get(PRE_FILTER_STATE_KEY)

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_add, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = self._state(state)
        if s is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_remove, -1)
        return None

    # -- Filter -----------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if spec(pod).get("volumes") and not satisfy_volume_conflicts(pod, [pi.pod for pi in node_info.pods]):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        s = self._state(state)
        if s is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_refs > 0:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None

    # -- events -----------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Without queueing hints a missed Node/Add is recovered through label/taint updates (upstream #109437).
        node_actions = ActionType.ADD
        if not self.queueing_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(PVC, ActionType.ADD), is_schedulable_after_pvc_added),
        ]


def is_schedulable_after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod refers to was created (it had to exist for PreFilter)."""
    if new is None or meta(new).get("namespace") != meta(pod).get("namespace"):
        return QueueingHint.SKIP
    name = meta(new).get("name")
    for vol in spec(pod).get("volumes") or ():
        src = vol.get("persistentVolumeClaim")
        if src is not None and src.get("claimName") == name:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A deleted pod that held a conflicting disk or one of the pod's claims may free the way."""
    deleted = old
    if deleted is None or meta(deleted).get("namespace") != meta(pod).get("namespace"):
        return QueueingHint.SKIP
    if not satisfy_volume_conflicts(pod, [deleted]):
        return QueueingHint.QUEUE
    # The claim's access mode is not fetched here (too costly for a hint): any shared claim queues the pod.
    claims = {
        (v.get("persistentVolumeClaim") or {}).get("claimName")
        for v in spec(pod).get("volumes") or ()
        if v.get("persistentVolumeClaim") is not None
    }
    for vol in spec(deleted).get("volumes") or ():
        src = vol.get("persistentVolumeClaim")
        if src is not None and src.get("claimName") in claims:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
