"""The PersistentVolume controller (upstream: pkg/controller/volume/persistentvolume/pv_controller.go and
pv_controller_base.go, `persistentvolume-binder-controller`): binds claims to volumes and reclaims volumes whose
claims are gone.

A claim with no volume gets the smallest Available volume that satisfies it (class, access modes, size, volume
mode, selector; a volume pre-bound to the claim first). Claims of a WaitForFirstConsumer class are left to the
scheduler, which picks a node and writes `volume.kubernetes.io/selected-node`; with no volume to bind, a claim
with a class asks that class's provisioner for one (the `storage-provisioner` annotations and an
ExternalProvisioning event: every provisioner is external here, as in-tree ones are gone), and the volume it
creates, pre-bound to the claim, is bound on the next sync. Binding writes the volume's claimRef, the phases,
the claim's volumeName and the bind-completed / bound-by-controller annotations, as upstream. A bound claim whose
volume is gone or taken is Lost; a volume whose claim is gone is Released and then reclaimed: Retain keeps it,
Delete leaves provisioned volumes to their provisioner and fails the others (no in-tree deleter exists here).
A claim that names no class gets the default StorageClass once one exists (retroactive assignment).

Every claim and volume is synced again each `--pvclaimbinder-sync-period` (15 s). Writes are remembered until
the informers catch up, so a sync never acts on a version older than one it wrote.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ....api import errors
from ....api.meta import json_copy
from ....api.selectors import SelectorError
from ....api.storage_class import claim_names_class, default_class
from ....client.cache import SharedInformerFactory
from ....client.cache.delta_fifo import deleted_object
from ....client.cache.indexer import meta_namespace_key
from ....client.events import EventBroadcaster
from ....client.rest import RESTClient
from ....client.workqueue import RateLimitingQueue
from ....scheduler.plugins.storage_helpers import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
    pod_claim_names,
    storage_capacity,
    storage_request,
    volume_class,
)
from ...workers import queue_workers, run_workers

log = logging.getLogger(__name__)

Object = dict[str, Any]
CLASSES = "storageclasses.storage.k8s.io"
COMPONENT = "persistentvolume-controller"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
POD_PVC_INDEX = "pod-pvc-index"  # upstream: common.PodPVCIndex


def pvc_keys(pod: Mapping[str, Any]) -> list[str]:
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    return [f"{namespace}/{claim}" for claim, _, _ in pod_claim_names(pod)]  # type: ignore[arg-type]


def _rv(obj: Object | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _annotations(obj: Object) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _claim_key(ref: Object) -> str:
    return f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"


def _terminated(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def check_volume_satisfies_claim(pv: Object, pvc: Object) -> str | None:
    """Why a volume the claim asked for by name cannot serve it, or None (upstream: checkVolumeSatisfyClaim)."""
    if (pv.get("metadata") or {}).get("deletionTimestamp"):
        return f"the volume is marked for deletion {(pv.get('metadata') or {}).get('name')!r}"
    requested = storage_request(pvc)
    if requested is not None and storage_capacity(pv) < requested:
        return "requested PV is too small"
    if volume_class(pv) != claim_class(pvc):
        return "storageClassName does not match"
    if ((pv.get("spec") or {}).get("volumeMode") or "Filesystem") != (
        (pvc.get("spec") or {}).get("volumeMode") or "Filesystem"
    ):
        return "incompatible volumeMode"
    pv_modes = set((pv.get("spec") or {}).get("accessModes") or ())
    if any(m not in pv_modes for m in (pvc.get("spec") or {}).get("accessModes") or ()):
        return "incompatible accessMode"
    return None


class PersistentVolumeController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, sync_period: float = 15.0) -> None:
        self.client = client
        self.sync_period = sync_period
        self.volume_queue: RateLimitingQueue[str] = RateLimitingQueue(name="volumes")
        self.claim_queue: RateLimitingQueue[str] = RateLimitingQueue(name="claims")
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder(COMPONENT)
        self.volumes = factory.informer_for("persistentvolumes")
        self.claims = factory.informer_for("persistentvolumeclaims")
        self.classes = factory.informer_for(CLASSES)
        self.pods = factory.informer_for("pods")
        if POD_PVC_INDEX not in self.pods.indexer.get_indexers():
            self.pods.indexer.add_indexers({POD_PVC_INDEX: pvc_keys})
        # What this controller wrote, until the informers hold that version or a newer one.
        self._written_volumes: dict[str, Object] = {}
        self._written_claims: dict[str, Object] = {}
        self.volumes.add_event_handler(
            on_add=lambda v, _initial: self.volume_queue.add(meta_namespace_key(v)),
            on_update=lambda _o, v: self.volume_queue.add(meta_namespace_key(v)),
            on_delete=self._volume_deleted,
        )
        self.claims.add_event_handler(
            on_add=lambda c, _initial: self.claim_queue.add(meta_namespace_key(c)),
            on_update=lambda _o, c: self.claim_queue.add(meta_namespace_key(c)),
            on_delete=self._claim_deleted,
        )

    def _volume_deleted(self, obj: Any) -> None:
        pv = deleted_object(obj)
        self._written_volumes.pop(meta_namespace_key(pv), None)
        ref = (pv.get("spec") or {}).get("claimRef")
        if ref:  # its claim, if any, is now Lost
            self.claim_queue.add(_claim_key(ref))

    def _claim_deleted(self, obj: Any) -> None:
        pvc = deleted_object(obj)
        self._written_claims.pop(meta_namespace_key(pvc), None)
        name = (pvc.get("spec") or {}).get("volumeName")
        if name:  # its volume is now Released
            self.volume_queue.add(name)

    async def run(self) -> None:
        await asyncio.gather(*(i.wait_for_sync() for i in (self.volumes, self.claims, self.classes, self.pods)))
        tasks = [
            *queue_workers(self.volume_queue, self.sync_volume_key, "sync persistent volume"),
            *queue_workers(self.claim_queue, self.sync_claim_key, "sync persistent volume claim"),
            asyncio.create_task(self._resync()),
        ]
        await run_workers(tasks, [self.volume_queue, self.claim_queue], self.broadcaster)

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.sync_period)
            for key in self.claims.indexer.list_keys():
                self.claim_queue.add(key)
            for key in self.volumes.indexer.list_keys():
                self.volume_queue.add(key)

    # -- the newest known versions --------------------------------------------------------------------

    @staticmethod
    def _newest(cached: Object | None, written: dict[str, Object], key: str) -> Object | None:
        mine = written.get(key)
        if mine is None:
            return cached
        if cached is None or _rv(cached) >= _rv(mine):
            written.pop(key, None)
            return cached
        return mine

    def _volume(self, name: str) -> Object | None:
        return self._newest(self.volumes.indexer.get_by_key(name), self._written_volumes, name)

    def _claim(self, key: str) -> Object | None:
        return self._newest(self.claims.indexer.get_by_key(key), self._written_claims, key)

    def _remember_volume(self, pv: Object) -> Object:
        self._written_volumes[meta_namespace_key(pv)] = pv
        return pv

    def _remember_claim(self, pvc: Object) -> Object:
        self._written_claims[meta_namespace_key(pvc)] = pvc
        return pvc

    # -- claims ---------------------------------------------------------------------------------------

    async def sync_claim_key(self, key: str) -> None:
        claim = self._claim(key)
        if claim is None:
            return
        if ANN_BIND_COMPLETED in _annotations(claim):
            await self._sync_bound_claim(claim)
        else:
            await self._sync_unbound_claim(claim)

    def _delay_binding(self, claim: Object) -> bool:
        name = claim_class(claim)
        if not name:
            return False
        sc = self.classes.indexer.get_by_key(name)
        return sc is not None and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

    def _candidates(self, claim: Object) -> list[Object]:
        return [v for k in self.volumes.indexer.list_keys() if (v := self._volume(k)) is not None]

    async def _sync_unbound_claim(self, claim: Object) -> None:
        spec = claim.get("spec") or {}
        volume_name = spec.get("volumeName") or ""
        if not volume_name:
            delay = self._delay_binding(claim)
            try:
                volume = find_matching_volume(claim, self._candidates(claim), None, set(), delay_binding=delay)
            except SelectorError as err:
                raise ValueError(
                    f"error creating internal label selector for claim: {meta_namespace_key(claim)}: {err}"
                ) from None
            if volume is not None:
                await self._bind(volume, claim)
                return
            if await self._assign_default_class(claim):
                return
            if delay and ANN_SELECTED_NODE not in _annotations(claim):
                self._event_for_unbound_delay_binding_claim(claim)
            elif claim_class(claim):
                await self._provision_claim(claim)
                return
            else:
                self.recorder.event(claim, "Normal", "FailedBinding",
                                    "no persistent volumes available for this claim and no storage class is set")  # fmt: skip
            await self._update_claim_status(claim, "Pending", None)
            return
        volume = self._volume(volume_name)
        if volume is None:
            await self._update_claim_status(claim, "Pending", None)
            return
        if (volume.get("spec") or {}).get("claimRef") is None:
            why = check_volume_satisfies_claim(volume, claim)
            if why is not None:
                self.recorder.event(
                    claim, "Warning", "VolumeMismatch", f'Cannot bind to requested volume "{volume_name}": {why}'
                )
                await self._update_claim_status(claim, "Pending", None)
            else:
                await self._bind(volume, claim)
            return
        if is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
            return
        self.recorder.event(
            claim, "Warning", "FailedBinding", f'volume "{volume_name}" already bound to a different claim.'
        )
        if ANN_BOUND_BY_CONTROLLER in _annotations(claim):
            ref = (volume.get("spec") or {}).get("claimRef") or {}
            raise ValueError(f"invalid binding of claim {meta_namespace_key(claim)!r} to volume {volume_name!r}: "
                             f"volume already claimed by {_claim_key(ref)!r}")  # fmt: skip
        await self._update_claim_status(claim, "Pending", None)

    async def _sync_bound_claim(self, claim: Object) -> None:
        volume_name = (claim.get("spec") or {}).get("volumeName") or ""
        if not volume_name:
            await self._claim_lost(
                claim, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            )
            return
        volume = self._volume(volume_name)
        if volume is None:
            await self._claim_lost(
                claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            )
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref is None or ref.get("uid") == (claim.get("metadata") or {}).get("uid"):
            await self._bind(volume, claim)
        else:
            await self._claim_lost(
                claim, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"
            )

    async def _claim_lost(self, claim: Object, reason: str, message: str) -> None:
        if (claim.get("status") or {}).get("phase") == "Lost":
            return
        updated = await self._update_claim_status(claim, "Lost", None)
        self.recorder.event(updated, "Warning", reason, message)

    def _event_for_unbound_delay_binding_claim(self, claim: Object) -> None:
        waiting = sorted(
            str((p.get("metadata") or {}).get("name"))
            for p in self.pods.indexer.by_index(POD_PVC_INDEX, meta_namespace_key(claim))
            if not _terminated(p) and not (p.get("spec") or {}).get("nodeName")
        )
        if not waiting:
            self.recorder.event(
                claim, "Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding"
            )
        elif len(waiting) == 1:
            self.recorder.event(claim, "Normal", "WaitForPodScheduled", f"waiting for pod {waiting[0]} to be scheduled")
        else:
            self.recorder.event(
                claim, "Normal", "WaitForPodScheduled", f"waiting for pods {','.join(waiting)} to be scheduled"
            )

    async def _assign_default_class(self, claim: Object) -> bool:
        """Give a claim that names no class the default one, if there is one now (True: the claim was updated)."""
        if claim_names_class(claim):
            return False
        sc = default_class(self.classes.indexer.list())
        if sc is None:
            return False
        new = json_copy(claim)
        new.setdefault("spec", {})["storageClassName"] = (sc.get("metadata") or {}).get("name")
        self._remember_claim(await self.client.update("persistentvolumeclaims", new))
        return True

    async def _provision_claim(self, claim: Object) -> None:
        """Ask the class's (external) provisioner for a volume (upstream: provisionClaimOperationExternal)."""
        class_name = claim_class(claim)
        sc = self.classes.indexer.get_by_key(class_name)
        if sc is None:
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{class_name}" not found')  # fmt: skip
            await self._update_claim_status(claim, "Pending", None)
            return
        provisioner = str(sc.get("provisioner") or "")
        ann = _annotations(claim)
        if ann.get(ANN_STORAGE_PROVISIONER) != provisioner or ann.get(ANN_BETA_STORAGE_PROVISIONER) != provisioner:
            new = json_copy(claim)
            new["metadata"]["annotations"] = {
                **ann,
                ANN_STORAGE_PROVISIONER: provisioner,
                ANN_BETA_STORAGE_PROVISIONER: provisioner,
            }
            claim = self._remember_claim(await self.client.update("persistentvolumeclaims", new))
        self.recorder.event(
            claim, "Normal", "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by "
            "the system administrator. If volume creation is delayed, please verify that the provisioner is running "
            "and correctly registered.",
        )  # fmt: skip

    # -- binding --------------------------------------------------------------------------------------

    async def _bind(self, volume: Object, claim: Object) -> None:
        """Bind both ways and set both statuses; whatever step fails, the next sync finishes it (upstream: bind)."""
        volume = await self._bind_volume_to_claim(volume, claim)
        volume = await self._update_volume_phase(volume, "Bound", "")
        claim = await self._bind_claim_to_volume(claim, volume)
        await self._update_claim_status(claim, "Bound", volume)

    async def _bind_volume_to_claim(self, volume: Object, claim: Object) -> Object:
        md = claim.get("metadata") or {}
        ref = (volume.get("spec") or {}).get("claimRef")
        chosen_here = not is_volume_bound_to_claim(volume, claim)
        new = json_copy(volume)
        dirty = False
        if ref is None or (ref.get("name"), ref.get("namespace") or "", ref.get("uid") or "") != (
            md.get("name"),
            md.get("namespace") or "",
            md.get("uid") or "",
        ):
            new.setdefault("spec", {})["claimRef"] = {
                "kind": "PersistentVolumeClaim", "namespace": md.get("namespace"), "name": md.get("name"),
                "uid": md.get("uid"), "apiVersion": "v1", "resourceVersion": md.get("resourceVersion"),
            }  # fmt: skip
            dirty = True
        ann = dict(_annotations(volume))
        if chosen_here and ANN_BOUND_BY_CONTROLLER not in ann:
            new["metadata"]["annotations"] = {**ann, ANN_BOUND_BY_CONTROLLER: "yes"}
            dirty = True
        if not dirty:
            return volume
        return self._remember_volume(await self.client.update("persistentvolumes", new))

    async def _bind_claim_to_volume(self, claim: Object, volume: Object) -> Object:
        name = (volume.get("metadata") or {}).get("name")
        new = json_copy(claim)
        ann = dict(_annotations(claim))
        dirty = False
        if (claim.get("spec") or {}).get("volumeName") != name:
            new.setdefault("spec", {})["volumeName"] = name
            ann.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if ANN_BIND_COMPLETED not in ann:
            ann[ANN_BIND_COMPLETED] = "yes"
            dirty = True
        if not dirty:
            return claim
        new["metadata"]["annotations"] = ann
        return self._remember_claim(await self.client.update("persistentvolumeclaims", new))

    async def _update_claim_status(self, claim: Object, phase: str, volume: Object | None) -> Object:
        status = dict(claim.get("status") or {})
        old_phase = status.get("phase")
        dirty = old_phase != phase
        status["phase"] = phase
        if volume is None:
            for k in ("accessModes", "capacity"):
                if status.pop(k, None) is not None:
                    dirty = True
        else:
            modes = (volume.get("spec") or {}).get("accessModes")
            if status.get("accessModes") != modes:
                status["accessModes"] = modes
                dirty = True
            # Capacity is set as the claim becomes Bound only: a later difference may be a resize in progress.
            capacity = (volume.get("spec") or {}).get("capacity") or {}
            if old_phase != phase and (status.get("capacity") or {}).get("storage") != capacity.get("storage"):
                status["capacity"] = capacity
                dirty = True
        if not dirty:
            return claim
        new = json_copy(claim)
        new["status"] = status
        return self._remember_claim(await self.client.update_status("persistentvolumeclaims", new))

    async def _update_volume_phase(self, volume: Object, phase: str, message: str) -> Object:
        if (volume.get("status") or {}).get("phase") == phase:
            return volume
        new = json_copy(volume)
        status = new.setdefault("status", {})
        status["phase"] = phase
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        return self._remember_volume(await self.client.update_status("persistentvolumes", new))

    # -- volumes --------------------------------------------------------------------------------------

    async def sync_volume_key(self, key: str) -> None:
        volume = self._volume(key)
        if volume is not None:
            await self.sync_volume(volume)

    async def sync_volume(self, volume: Object) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref is None or not ref.get("uid"):
            # Unused, or reserved for a claim that has not bound yet: the claim's sync binds it.
            await self._update_volume_phase(volume, "Available", "")
            return
        key = _claim_key(ref)
        claim = self._claim(key)
        phase = (volume.get("status") or {}).get("phase")
        if claim is None and phase not in ("Released", "Failed"):
            claim = await self._live_claim(ref)  # a claim too new for the cache must not release its volume
        if claim is not None and (claim.get("metadata") or {}).get("uid") != ref.get("uid"):
            claim = await self._live_claim(ref)
            if claim is not None and (claim.get("metadata") or {}).get("uid") != ref.get("uid"):
                claim = None  # the claim was deleted and another made with its name
        if claim is None:
            if phase not in ("Released", "Failed"):
                volume = await self._update_volume_phase(volume, "Released", "")
            await self._reclaim(volume)
            return
        claim_volume = (claim.get("spec") or {}).get("volumeName") or ""
        name = (volume.get("metadata") or {}).get("name")
        if not claim_volume:
            if ((claim.get("spec") or {}).get("volumeMode") or "Filesystem") != (
                (volume.get("spec") or {}).get("volumeMode") or "Filesystem"
            ):
                self.recorder.event(volume, "Warning", "VolumeMismatch",
                                    f'Cannot bind PersistentVolume to requested PersistentVolumeClaim "{ref.get("name")}" '
                                    "due to incompatible volumeMode.")  # fmt: skip
                self.recorder.event(claim, "Warning", "VolumeMismatch",
                                    f'Cannot bind PersistentVolume "{name}" to requested PersistentVolumeClaim due to '
                                    "incompatible volumeMode.")  # fmt: skip
                return
            self.claim_queue.add(key)  # the claim's sync completes the binding (a provisioned volume's, above all)
        elif claim_volume == name:
            await self._update_volume_phase(volume, "Bound", "")
        elif (
            ANN_DYNAMICALLY_PROVISIONED in _annotations(volume)
            and (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
        ):
            # Provisioned for a claim that got another volume: not needed.
            if phase not in ("Released", "Failed"):
                volume = await self._update_volume_phase(volume, "Released", "")
            await self._reclaim(volume)
        else:
            await self._unbind_volume(volume)

    async def _live_claim(self, ref: Object) -> Object | None:
        try:
            return await self.client.get(
                "persistentvolumeclaims", str(ref.get("name")), str(ref.get("namespace") or "")
            )
        except errors.NotFound:
            return None

    async def _unbind_volume(self, volume: Object) -> None:
        """Undo a binding: one the controller made entirely, or only the claim UID of a user's pre-binding."""
        new = json_copy(volume)
        ann = dict(_annotations(volume))
        if ANN_BOUND_BY_CONTROLLER in ann:
            new["spec"].pop("claimRef", None)
            ann.pop(ANN_BOUND_BY_CONTROLLER)
            if ann:
                new["metadata"]["annotations"] = ann
            else:
                new["metadata"].pop("annotations", None)
        else:
            new["spec"]["claimRef"].pop("uid", None)
        updated = self._remember_volume(await self.client.update("persistentvolumes", new))
        await self._update_volume_phase(updated, "Available", "")

    async def _reclaim(self, volume: Object) -> None:
        policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        name = (volume.get("metadata") or {}).get("name")
        if policy == "Retain":
            return
        if policy == "Delete":
            if ANN_DYNAMICALLY_PROVISIONED in _annotations(volume):
                return  # its external provisioner deletes it
            await self._fail_volume(volume, "VolumeFailedDelete",
                                    f'error getting deleter volume plugin for volume "{name}": no deletable volume plugin matched')  # fmt: skip
        elif policy == "Recycle":
            await self._fail_volume(volume, "VolumeFailedRecycle", "No recycler plugin found for the volume!")
        else:
            await self._fail_volume(
                volume, "VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy"
            )

    async def _fail_volume(self, volume: Object, reason: str, message: str) -> None:
        if (volume.get("status") or {}).get("phase") == "Failed":
            return
        updated = await self._update_volume_phase(volume, "Failed", message)
        self.recorder.event(updated, "Warning", reason, message)
