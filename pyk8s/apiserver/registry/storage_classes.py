"""Strategies of storage.k8s.io/v1 StorageClasses (upstream: pkg/registry/storage/storageclass)."""

from __future__ import annotations

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object
from . import register
from .strategy import Strategy, immutable


@register("storage.k8s.io", "StorageClass")
class StorageClassStrategy(Strategy):
    def default(self, obj: Object) -> None:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")

    def validate(self, obj: Object) -> list[FieldError]:
        errs: list[FieldError] = []
        if not obj.get("provisioner"):
            errs.append(e.required("provisioner", ""))
        if obj.get("volumeBindingMode") not in ("Immediate", "WaitForFirstConsumer"):
            errs.append(
                e.not_supported(
                    "volumeBindingMode", obj.get("volumeBindingMode"), ("Immediate", "WaitForFirstConsumer")
                )
            )
        return errs

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        for f in ("parameters", "provisioner", "reclaimPolicy", "volumeBindingMode"):
            errs += immutable(new.get(f), old.get(f), f)
        return errs
