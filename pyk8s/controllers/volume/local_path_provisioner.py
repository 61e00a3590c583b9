"""A simulated dynamic provisioner in the manner of Rancher's local-path-provisioner, which k3s ships as its
default storage (upstream: rancher/local-path-provisioner provisioner.go, and k3s's manifests/local-storage.yaml):
the `local-path` StorageClass (the default, WaitForFirstConsumer, reclaim Delete) and a provisioner named
`rancher.io/local-path` that serves it, so a StatefulSet's volumeClaimTemplates bind with no setup.

For a claim the PV controller handed to this provisioner (the `storage-provisioner` annotation) once the scheduler
chose a node (`volume.kubernetes.io/selected-node`), it creates PV `pvc-<claim uid>`, pre-bound to the claim:
a `local` volume (the class's `defaultVolumeType: local`, as k3s sets it; `hostPath` DirectoryOrCreate otherwise)
at `<base>/<pv>_<namespace>_<claim>`, the claim's size and access modes (ReadWriteOnce / ReadWriteOncePod only:
a node's directory), node affinity to that node's hostname. A Released volume of its own with reclaim policy
Delete is deleted. No helper pod runs and no directory is made: the simulated nodes have no disks; they only need
the volume bound.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Mapping
from typing import Any

from ...api import errors
from ...client.cache import SharedInformerFactory
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ...scheduler.plugins.storage_helpers import ANN_SELECTED_NODE, claim_class, claim_reference
from ..workers import queue_workers, run_workers
from .persistentvolume.pv_controller import ANN_DYNAMICALLY_PROVISIONED, ANN_STORAGE_PROVISIONER, CLASSES

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
PROVISIONER_NAME = "rancher.io/local-path"
CLASS_NAME = "local-path"
DEFAULT_BASE_PATH = "/var/lib/rancher/k3s/storage"  # k3s's DEFAULT_LOCAL_STORAGE_PATH
ANN_PROVISIONER_SELECTED_NODE = "local.path.provisioner/selected-node"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NODE_LOCAL_MODES = ("ReadWriteOnce", "ReadWriteOncePod")


def local_path_storage_class() -> dict[str, Any]:
    """The StorageClass k3s installs."""
    return {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": CLASS_NAME, "annotations": {
            "storageclass.kubernetes.io/is-default-class": "true", "defaultVolumeType": "local"}},
        "provisioner": PROVISIONER_NAME, "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete",
    }  # fmt: skip


class ProvisioningError(Exception):
    pass


class LocalPathProvisioner:
    def __init__(
        self, client: RESTClient, factory: SharedInformerFactory, *, base_path: str = DEFAULT_BASE_PATH,
        install_class: bool = True,
    ) -> None:  # fmt: skip
        self.client = client
        self.base_path = base_path.rstrip("/")
        self.install_class = install_class
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="local-path-provisioner")
        self.broadcaster = EventBroadcaster(client)
        # The provisioner library names its event source `<provisioner>_<identity>`.
        identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        self.recorder = self.broadcaster.new_core_recorder(f"{PROVISIONER_NAME}_{identity}")
        self.claims = factory.informer_for("persistentvolumeclaims")
        self.volumes = factory.informer_for("persistentvolumes")
        self.classes = factory.informer_for(CLASSES)
        self.nodes = factory.informer_for("nodes")
        self.claims.add_event_handler(
            on_add=lambda c, _initial: self._claim_changed(c), on_update=lambda _o, c: self._claim_changed(c)
        )
        self.volumes.add_event_handler(
            on_add=lambda v, _initial: self._volume_changed(v), on_update=lambda _o, v: self._volume_changed(v)
        )

    @staticmethod
    def _wants_volume(pvc: Object) -> bool:
        """Handed to this provisioner, with a node chosen, not bound nor being deleted."""
        md = pvc.get("metadata") or {}
        ann = md.get("annotations") or {}
        return (
            ann.get(ANN_STORAGE_PROVISIONER) == PROVISIONER_NAME
            and ANN_SELECTED_NODE in ann
            and not (pvc.get("spec") or {}).get("volumeName")
            and not md.get("deletionTimestamp")
        )

    @staticmethod
    def _wants_deletion(pv: Object) -> bool:
        """One of its volumes, Released, to be deleted by its reclaim policy."""
        md = pv.get("metadata") or {}
        return (
            (md.get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED) == PROVISIONER_NAME
            and (pv.get("status") or {}).get("phase") == "Released"
            and (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
            and not md.get("deletionTimestamp")
        )

    def _claim_changed(self, pvc: Object) -> None:
        if self._wants_volume(pvc):
            self.queue.add("claim:" + meta_namespace_key(pvc))

    def _volume_changed(self, pv: Object) -> None:
        if self._wants_deletion(pv):
            self.queue.add("volume:" + meta_namespace_key(pv))

    async def run(self) -> None:
        if self.install_class:
            try:
                await self.client.create(CLASSES, local_path_storage_class())
            except errors.AlreadyExists:
                pass
        await asyncio.gather(*(i.wait_for_sync() for i in (self.claims, self.volumes, self.classes, self.nodes)))
        await run_workers(
            queue_workers(self.queue, self.sync, "local-path provisioning"), [self.queue], self.broadcaster
        )

    async def sync(self, item: str) -> None:
        kind, _, key = item.partition(":")
        if kind == "volume":
            await self._delete(key)
            return
        pvc = self.claims.indexer.get_by_key(key)
        if pvc is None or not self._wants_volume(pvc):
            return
        name = f"pvc-{(pvc.get('metadata') or {}).get('uid')}"
        if self.volumes.indexer.get_by_key(name) is not None:
            return  # provisioned already; the PV controller binds it
        class_name = claim_class(pvc)  # type: ignore[arg-type]
        try:
            pv = self._volume_for(pvc, name)
        except ProvisioningError as err:
            self.recorder.event(pvc, "Warning", "ProvisioningFailed",
                                f'failed to provision volume with StorageClass "{class_name}": {err}')  # fmt: skip
            raise ValueError(str(err)) from None
        self.recorder.event(
            pvc, "Normal", "Provisioning", f'External provisioner is provisioning volume for claim "{key}"'
        )
        try:
            await self.client.create("persistentvolumes", pv)
        except errors.AlreadyExists:
            return
        self.recorder.event(pvc, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {name}")

    def _volume_for(self, pvc: Object, name: str) -> dict[str, Any]:
        md, spec = pvc.get("metadata") or {}, pvc.get("spec") or {}
        class_name = claim_class(pvc)  # type: ignore[arg-type]
        sc = self.classes.indexer.get_by_key(class_name)
        if sc is None:
            raise ProvisioningError(f'storageclass.storage.k8s.io "{class_name}" not found')
        modes = list(spec.get("accessModes") or ())
        if any(m not in NODE_LOCAL_MODES for m in modes):
            raise ProvisioningError("NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes")
        node_name = str((md.get("annotations") or {}).get(ANN_SELECTED_NODE) or "")
        node = self.nodes.indexer.get_by_key(node_name)
        if node is None:
            raise ProvisioningError(f'nodes "{node_name}" not found')
        hostname = ((node.get("metadata") or {}).get("labels") or {}).get(HOSTNAME_LABEL) or node_name
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if size is None:
            raise ProvisioningError("claim Spec.Resources[storage] not specified")
        path = f"{self.base_path}/{name}_{md.get('namespace')}_{md.get('name')}"
        source: dict[str, Any] = (
            {"local": {"path": path}}
            if ((sc.get("metadata") or {}).get("annotations") or {}).get("defaultVolumeType") == "local"
            else {"hostPath": {"path": path, "type": "DirectoryOrCreate"}}
        )
        return {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {
                ANN_DYNAMICALLY_PROVISIONED: PROVISIONER_NAME, ANN_PROVISIONER_SELECTED_NODE: node_name}},
            "spec": {
                "capacity": {"storage": size}, "accessModes": modes,
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                "storageClassName": class_name, "volumeMode": spec.get("volumeMode") or "Filesystem",
                "claimRef": claim_reference(pvc),  # type: ignore[arg-type]
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}]}]}},
                **source,
            },
        }  # fmt: skip

    async def _delete(self, name: str) -> None:
        pv = self.volumes.indexer.get_by_key(name)
        if pv is None or not self._wants_deletion(pv):
            return
        try:
            await self.client.delete(
                "persistentvolumes", name, preconditions={"uid": str((pv.get("metadata") or {}).get("uid"))}
            )
        except errors.NotFound:
            pass


SERVICE_ACCOUNT = "local-path-provisioner-service-account"  # the name of rancher's manifest, as kind installs it


def rbac_objects() -> list[Object]:
    """The ClusterRole and ClusterRoleBinding the provisioner runs under when the controller manager uses
    service-account credentials: it is an add-on (kind installs rancher's local-path-provisioner with its own
    RBAC), so upstream's bootstrap policy has no role for it."""
    group = "rbac.authorization.k8s.io"
    role = {
        "apiVersion": f"{group}/v1", "kind": "ClusterRole", "metadata": {"name": "pyk8s:local-path-provisioner"},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "configmaps"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch", "create"]},
        ],
    }  # fmt: skip
    binding = {
        "apiVersion": f"{group}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pyk8s:local-path-provisioner"},
        "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": "pyk8s:local-path-provisioner"},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": "kube-system"}],
    }  # fmt: skip
    return [role, binding]
