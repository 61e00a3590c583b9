"""StorageObjectInUseProtection (upstream: plugin/pkg/admission/storage/storageobjectinuseprotection): every new
PersistentVolumeClaim gets the `kubernetes.io/pvc-protection` finalizer and every new PersistentVolume the
`kubernetes.io/pv-protection` one, so that neither disappears while in use; the protection controllers in the
controller manager remove them when it is safe."""

from __future__ import annotations

from . import CREATE, Attributes

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"

_FINALIZERS = {"persistentvolumeclaims": PVC_PROTECTION_FINALIZER, "persistentvolumes": PV_PROTECTION_FINALIZER}


class StorageObjectInUseProtection:
    name = "StorageObjectInUseProtection"

    async def admit(self, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource or a.resource.group != "" or a.object is None:
            return
        finalizer = _FINALIZERS.get(a.resource.plural)
        if finalizer is None:
            return
        md = a.object.setdefault("metadata", {})
        finalizers = md.get("finalizers") or []
        if finalizer not in finalizers:
            md["finalizers"] = [*finalizers, finalizer]

    async def validate(self, a: Attributes) -> None:
        return None
