"""DefaultStorageClass (upstream: plugin/pkg/admission/storage/storageclass/setdefault): a new
PersistentVolumeClaim that names no storage class (neither `spec.storageClassName` nor the beta annotation; an
empty string is a choice, "no class") gets the default StorageClass, the one annotated
`storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation). With several defaults the newest
wins, ties broken by name (upstream: GetDefaultClass since 1.26). No default: the claim is left alone, and the PV
controller assigns one later if a default appears (retroactive default StorageClass assignment)."""

from __future__ import annotations

from collections.abc import Callable

from ...api.meta import Object
from ...api.storage_class import claim_names_class, default_class
from . import CREATE, Attributes


class DefaultStorageClass:
    name = "DefaultStorageClass"

    def __init__(self, list_classes: Callable[[], list[Object]]) -> None:
        self.list_classes = list_classes

    async def admit(self, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource or a.resource.group != "" or a.object is None:
            return
        if a.resource.plural != "persistentvolumeclaims" or claim_names_class(a.object):
            return
        sc = default_class(self.list_classes())
        if sc is not None:
            a.object.setdefault("spec", {})["storageClassName"] = (sc.get("metadata") or {}).get("name")

    async def validate(self, a: Attributes) -> None:
        return None
