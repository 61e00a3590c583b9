"""The VolumeZone plugin (upstream: plugins/volumezone/volume_zone.go).

PreFilter collects the zone/region topology labels of the PVs bound to the pod's claims (claims still waiting
for their first consumer are skipped: VolumeBinding places them); Filter rejects nodes whose zone/region labels
do not match. A node without any topology label accepts every volume (single-zone clusters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..framework.interface import (
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
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ..framework.types import NodeInfo
from .storage_helpers import WAIT_FOR_FIRST_CONSUMER, NotFoundError, claim_class, meta, spec

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_TO_GA = {LABEL_BETA_ZONE: LABEL_ZONE, LABEL_BETA_REGION: LABEL_REGION}
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


@dataclass
class _State:
    topologies: list[PVTopology]

    def clone(self) -> _State:
        return self  # read-only after PreFilter, as upstream's


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """A "__"-separated zone list as a set; None when an entry is empty (upstream: LabelZonesToSet's error)."""
    zones = set()
    for z in value.split(MULTI_ZONE_DELIMITER):
        z = z.strip()
        if not z:
            return None
        zones.add(z)
    return frozenset(zones)


def pv_topologies(pv: dict[str, Any]) -> list[PVTopology]:
    """The PV's zone/region labels (unparsable values are ignored, as upstream logs and skips them)."""
    labels = meta(pv).get("labels") or {}
    out = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            values = label_zones_to_set(labels[key])
            if values is not None:
                out.append(PVTopology(meta(pv).get("name", ""), key, values))
    return out


def _claim_names(pod: Pod) -> list[str]:
    return [
        (v["persistentVolumeClaim"].get("claimName") or "")
        for v in spec(pod).get("volumes") or ()
        if v.get("persistentVolumeClaim") is not None
    ]


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.queueing_hints = bool(handle.feature_gates.get("SchedulerQueueingHints", True))

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> VolumeZone:
        return cls(handle)

    def _pv_topologies_of_pod(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        objects = self.handle.objects
        ns = meta(pod).get("namespace", "")
        out: list[PVTopology] = []
        for claim_name in _claim_names(pod):
            if claim_name == "":
                return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolumeClaim had no name")
            pvc = objects.get("persistentvolumeclaims", ns, claim_name)
            if pvc is None:
                return [], _not_found("persistentvolumeclaims", claim_name)
            pv_name = spec(pvc).get("volumeName") or ""
            if not pv_name:
                sc_name = claim_class(pvc)
                if not sc_name:
                    msg = "PersistentVolumeClaim had no pv name and storageClass name"
                    return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
                sc = objects.get("storageclasses", "", sc_name)
                if sc is None:
                    return [], _not_found("storageclasses", sc_name)
                mode = sc.get("volumeBindingMode")
                if mode is None:
                    msg = f'VolumeBindingMode not set for StorageClass "{sc_name}"'
                    return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue  # not bound yet: VolumeBinding picks a volume for the chosen node
                return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolume had no name")
            pv = objects.get("persistentvolumes", "", pv_name)
            if pv is None:
                return [], _not_found("persistentvolumes", pv_name)
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not spec(pod).get("volumes"):
            return None, Status(Code.SKIP)
        topologies, status = self._pv_topologies_of_pod(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, _State(topologies))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not spec(pod).get("volumes"):
            return None
        st = state.get(PRE_FILTER_STATE_KEY)
        if st is not None:
            topologies = st.topologies
        else:
            # PreFilter did not run (or skipped): work it out here, as upstream falls back to.
            topologies, status = self._pv_topologies_of_pod(pod)
            if status is not None:
                return status
        labels = meta(node_info.node or {}).get("labels") or {}
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None  # a node without topology labels: single-zone cluster
        for topo in topologies:
            value = labels.get(topo.key)
            if value is None:
                # A PV with a beta label still matches a node that carries only the GA label.
                value = labels.get(_TO_GA.get(topo.key, topo.key))
            if value is None or value not in topo.values:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        if not self.queueing_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT  # see upstream issue #109437
        return [
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, ActionType.ADD), is_schedulable_after_storage_class_added),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(PVC, ActionType.ADD | ActionType.UPDATE), is_schedulable_after_pvc_change
            ),
            ClusterEventWithHint(ClusterEvent(PV, ActionType.ADD | ActionType.UPDATE), is_schedulable_after_pv_change),
        ]


def _not_found(resource: str, name: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(NotFoundError(resource, name)))


def is_schedulable_after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses was created or changed (e.g. got its volumeName)."""
    if new is None or meta(new).get("namespace") != meta(pod).get("namespace"):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if meta(new).get("name") in _claim_names(pod) else QueueingHint.SKIP


def is_schedulable_after_storage_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a WaitForFirstConsumer class lets an unbound claim pass PreFilter."""
    if new is not None and new.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pv_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new PV, or a PV whose zone/region labels changed."""
    if old is None or new is None:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.SKIP
