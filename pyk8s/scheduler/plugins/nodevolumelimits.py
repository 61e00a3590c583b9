"""The NodeVolumeLimits plugin, upstream's CSI volume limits (upstream: plugins/nodevolumelimits/csi.go, utils.go).

Filter counts the unique CSI volumes (driver + volume handle) the pod would add to a node, per driver, and
rejects the node when a driver's attach limit would be exceeded. Limits come from the node's allocatable
"attachable-volumes-*" resources, overridden by the CSINode's spec.drivers[].allocatable.count. Volumes come
from PVCs (bound PV's CSI source; an unbound claim counts under its StorageClass's provisioner with a
placeholder handle) and from in-tree AWS EBS / GCE PD / Azure Disk / Cinder volumes, counted under their CSI
driver when the node has a CSINode (CSI migration of those four is complete in v1.32); in-tree Portworx volumes
count under pxd.portworx.com with the CSIMigrationPortworx gate (beta, on in v1.32) where the CSINode's
migrated-plugins annotation names the plugin.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, ClassVar
from urllib.parse import urlparse

from ..framework.interface import (
    CSI_NODE,
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
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ..framework.types import NodeInfo
from .storage_helpers import (
    NotFoundError,
    claim_class,
    ephemeral_claim_name,
    meta,
    migrated_plugins,
    pod_uses_claim,
    spec,
    volume_is_for_pod,
)  # fmt: skip

CSI_NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
RESOURCE_NAME_LENGTH_LIMIT = 63
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"

# In-tree volume sources the CSI translation library can migrate (IsInlineMigratable / IsPVMigratable):
# source field -> in-tree plugin name.
MIGRATABLE_SOURCES = {
    "awsElasticBlockStore": "kubernetes.io/aws-ebs",
    "gcePersistentDisk": "kubernetes.io/gce-pd",
    "azureDisk": "kubernetes.io/azure-disk",
    "azureFile": "kubernetes.io/azure-file",
    "cinder": "kubernetes.io/cinder",
    "vsphereVolume": "kubernetes.io/vsphere-volume",
    "portworxVolume": "kubernetes.io/portworx-volume",
}
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"
# The plugins whose migration the scheduler may treat as on, and their drivers (csi-translation-lib's names).
MIGRATED_DRIVERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    PORTWORX_PLUGIN: "pxd.portworx.com",
}
_GCE_UNSPECIFIED = "UNSPECIFIED"


class TranslationError(ValueError):
    """An in-tree volume that the CSI translation library would refuse to translate."""


def csi_attach_limit_key(driver: str) -> str:
    """The node resource holding a CSI driver's attach limit; long names are cut and hashed like upstream."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def is_csi_migration_on(csi_node: dict[str, Any] | None, plugin: str, portworx_gate: bool = True) -> bool:
    """Whether the node counts the in-tree plugin's volumes under its CSI driver (upstream: isCSIMigrationOn):
    any node with a CSINode for the four whose migration is complete; for Portworx only with its gate and where
    the CSINode says the plugin was migrated."""
    if csi_node is None or plugin not in MIGRATED_DRIVERS:
        return False
    if plugin != PORTWORX_PLUGIN:
        return True
    return portworx_gate and plugin in migrated_plugins(csi_node)


def is_inline_migratable(volume: dict[str, Any]) -> bool:
    return any(volume.get(k) is not None for k in MIGRATABLE_SOURCES)


def _ebs_volume_id(kubernetes_id: str) -> str:
    """An EBS volume ID from the forms Kubernetes accepts: "vol-…" or "aws://<zone>/vol-…"."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    url = urlparse(kubernetes_id)
    aws_id = url.path.strip("/")
    if url.scheme != "aws" or not aws_id.startswith("vol-") or "/" in aws_id:
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: [region]-[zone], got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def translated_handle(source_key: str, source: dict[str, Any], pv: dict[str, Any] | None) -> str:
    """The CSI volume handle csi-translation-lib gives an in-tree volume (inline when `pv` is None)."""
    if source_key == "awsElasticBlockStore":
        return _ebs_volume_id(source.get("volumeID", ""))
    if source_key == "gcePersistentDisk":
        pd = source.get("pdName", "")
        if pv is None:
            return f"projects/{_GCE_UNSPECIFIED}/zones/{_GCE_UNSPECIFIED}/disks/{pd}"
        labels = meta(pv).get("labels") or {}
        zones_label = labels.get("failure-domain.beta.kubernetes.io/zone") or labels.get(
            "topology.kubernetes.io/zone", ""
        )
        zones = zones_label.split("__")
        if len(zones) == 1 and zones[0]:
            return f"projects/{_GCE_UNSPECIFIED}/zones/{zones[0]}/disks/{pd}"
        if len(zones) > 1:
            return f"projects/{_GCE_UNSPECIFIED}/regions/{_gce_region(zones)}/disks/{pd}"
        return f"projects/{_GCE_UNSPECIFIED}/zones/{_GCE_UNSPECIFIED}/disks/{pd}"
    if source_key == "azureDisk":
        return source.get("diskURI", "")
    if source_key in ("cinder", "portworxVolume"):
        return source.get("volumeID", "")
    raise TranslationError(f"no CSI translation for {source_key}")


def _migratable_source(obj_spec: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    for key in MIGRATABLE_SOURCES:
        src = obj_spec.get(key)
        if src is not None:
            return key, src
    return None


class CSILimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = CSI_NAME

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        # Unbound claims get a per-scheduler random handle prefix so they never collide with real handles.
        self.random_volume_id_prefix = secrets.token_hex(16)
        self.portworx_migration = bool((getattr(handle, "feature_gates", None) or {}).get("CSIMigrationPortworx", True))

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> CSILimits:
        return cls(handle)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for vol in spec(pod).get("volumes") or ():
            if vol.get("persistentVolumeClaim") is not None or vol.get("ephemeral") is not None:
                return None, None
            if is_inline_migratable(vol):
                return None, None
        return None, Status(Code.SKIP)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not spec(pod).get("volumes"):
            return None
        node_name = node_info.name
        csi_node = self.handle.objects.get("csinodes", "", node_name)
        new_volumes: dict[str, str] = {}
        try:
            self._attachable_volumes(pod, csi_node, True, new_volumes)
        except NotFoundError as e:
            # The pod cannot run before its claim exists.
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, e.args[0])
        except (TranslationError, ValueError) as e:
            return Status.as_error(e)
        if not new_volumes:
            return None
        limits = volume_limits(node_info, csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        try:
            for pi in node_info.pods:
                self._attachable_volumes(pi.pod, csi_node, False, attached)
        except (TranslationError, ValueError) as e:
            return Status.as_error(e)
        attached_count: dict[str, int] = {}
        for unique, limit_key in attached.items():
            new_volumes.pop(unique, None)  # a volume shared with a pod already there is attached once
            attached_count[limit_key] = attached_count.get(limit_key, 0) + 1
        new_count: dict[str, int] = {}
        for limit_key in new_volumes.values():
            new_count[limit_key] = new_count.get(limit_key, 0) + 1
        for limit_key, count in new_count.items():
            limit = limits.get(limit_key)
            if limit is not None and attached_count.get(limit_key, 0) + count > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _attachable_volumes(
        self, pod: Pod, csi_node: dict[str, Any] | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """Add "<driver>/<handle>" -> limit key for each CSI volume of the pod to `result`. Raises NotFoundError
        (wrapped in upstream's "looking up PVC" text) for a new pod's missing claim, ValueError for errors."""
        ns = meta(pod).get("namespace", "")
        for vol in spec(pod).get("volumes") or ():
            ephemeral = False
            if vol.get("persistentVolumeClaim") is not None:
                claim_name = vol["persistentVolumeClaim"].get("claimName") or ""
            elif vol.get("ephemeral") is not None:
                claim_name = ephemeral_claim_name(pod, vol)
                ephemeral = True
            else:
                self._inline_volume(vol, csi_node, result)
                continue
            if not claim_name:
                raise ValueError("PersistentVolumeClaim had no name")
            pvc = self.handle.objects.get("persistentvolumeclaims", ns, claim_name)
            if pvc is None:
                if new_pod:
                    err = NotFoundError("persistentvolumeclaims", claim_name)
                    err.args = (f"looking up PVC {ns}/{claim_name}: {err}",)
                    raise err
                continue  # an existing pod's missing claim is not counted
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    raise ValueError(problem)
            driver, handle = self._csi_driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = csi_attach_limit_key(driver)

    def _inline_volume(self, vol: dict[str, Any], csi_node: dict[str, Any] | None, result: dict[str, str]) -> None:
        found = _migratable_source(vol)
        if found is None:
            return
        key, src = found
        plugin = MIGRATABLE_SOURCES[key]
        if not is_csi_migration_on(csi_node, plugin, self.portworx_migration):
            return
        try:
            handle = translated_handle(key, src, None)
        except TranslationError as e:
            raise ValueError(f"converting volume({vol.get('name', '')}) from inline to csi: {e}") from None
        driver = MIGRATED_DRIVERS[plugin]
        result[f"{driver}/{handle}"] = csi_attach_limit_key(driver)

    def _csi_driver_info(self, csi_node: dict[str, Any] | None, pvc: dict[str, Any]) -> tuple[str, str]:
        """(driver, volume handle) of a claim; an unbound claim (or one whose PV is gone) falls back to its
        StorageClass."""
        pv_name = spec(pvc).get("volumeName") or ""
        if not pv_name:
            return self._csi_driver_info_from_sc(csi_node, pvc)
        pv = self.handle.objects.get("persistentvolumes", "", pv_name)
        if pv is None:
            return self._csi_driver_info_from_sc(csi_node, pvc)
        pv_spec = spec(pv)
        csi = pv_spec.get("csi")
        if csi is not None:
            return csi.get("driver", ""), csi.get("volumeHandle", "")
        found = _migratable_source(pv_spec)
        if found is None:
            return "", ""
        key, src = found
        plugin = MIGRATABLE_SOURCES[key]
        if not is_csi_migration_on(csi_node, plugin, self.portworx_migration):
            return "", ""
        try:
            return MIGRATED_DRIVERS[plugin], translated_handle(key, src, pv)
        except TranslationError:
            return "", ""  # upstream logs and does not count the volume

    def _csi_driver_info_from_sc(self, csi_node: dict[str, Any] | None, pvc: dict[str, Any]) -> tuple[str, str]:
        sc_name = claim_class(pvc)
        # Without a class the claim binds immediately, so it must already be bound: nothing to count.
        if not sc_name:
            return "", ""
        sc = self.handle.objects.get("storageclasses", "", sc_name)
        if sc is None:
            return "", ""
        # A handle that cannot match a real one: a claim bound meanwhile may be counted twice, as upstream.
        md = meta(pvc)
        handle = f"{self.random_volume_id_prefix}-{md.get('namespace', '')}/{md.get('name', '')}"
        provisioner = sc.get("provisioner") or ""
        if provisioner in MIGRATABLE_SOURCES.values():
            if not is_csi_migration_on(csi_node, provisioner, self.portworx_migration):
                return "", ""
            return MIGRATED_DRIVERS[provisioner], handle
        return provisioner, handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Any new CSINode may bring limits: no hint.
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(PVC, ActionType.ADD), is_schedulable_after_pvc_added),
        ]


def volume_limits(node_info: NodeInfo, csi_node: dict[str, Any] | None) -> dict[str, int]:
    """Attach limits by resource name: the node's allocatable attachable-volumes-*, then the CSINode's counts."""
    limits = {k: v for k, v in node_info.allocatable.scalar.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)}
    if csi_node is not None:
        for d in spec(csi_node).get("drivers") or ():
            count = (d.get("allocatable") or {}).get("count")
            if count is not None:
                limits[csi_attach_limit_key(d.get("name", ""))] = int(count)
    return limits


def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A scheduled pod with a claim or a migratable in-tree volume went away."""
    deleted = old
    if deleted is None:
        return QueueingHint.QUEUE
    volumes = spec(deleted).get("volumes") or ()
    if not volumes or not spec(deleted).get("nodeName"):
        return QueueingHint.SKIP
    for vol in volumes:
        if vol.get("persistentVolumeClaim") is not None or vol.get("ephemeral") is not None:
            return QueueingHint.QUEUE
        if is_inline_migratable(vol):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod refers to (directly or as its ephemeral volume) was created."""
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


# The plugin under its registered name (upstream's type is CSILimits).
NodeVolumeLimits = CSILimits
