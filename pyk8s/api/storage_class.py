"""Which StorageClass is the default, and whether a claim chose a class: rules the API server's
DefaultStorageClass admission and the PV controller's retroactive assignment share (upstream:
pkg/volume/util GetDefaultClass, component-helpers/storage/volume PersistentVolumeClaimHasClass)."""

from __future__ import annotations

from collections.abc import Iterable

from .meta import Object

IS_DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def is_default_class(sc: Object) -> bool:
    ann = (sc.get("metadata") or {}).get("annotations") or {}
    return ann.get(IS_DEFAULT_ANNOTATION) == "true" or ann.get(BETA_IS_DEFAULT_ANNOTATION) == "true"


def default_class(classes: Iterable[Object]) -> Object | None:
    """The default StorageClass: among those marked default, the newest, then the first by name."""
    defaults = [sc for sc in classes if is_default_class(sc)]
    if not defaults:
        return None

    # Stable sorts: by name, then newest first (RFC 3339 timestamps of one format sort as text).
    defaults.sort(key=lambda sc: str((sc.get("metadata") or {}).get("name") or ""))
    defaults.sort(key=lambda sc: str((sc.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True)
    return defaults[0]


def claim_names_class(pvc: Object) -> bool:
    """Whether the claim asked for a class (an empty name counts: it asks for none)."""
    ann = (pvc.get("metadata") or {}).get("annotations") or {}
    return BETA_STORAGE_CLASS_ANNOTATION in ann or (pvc.get("spec") or {}).get("storageClassName") is not None
