"""Small readers and writers of a CustomResourceDefinition dict: its conditions, versions and finalizer
(upstream: apiextensions-apiserver pkg/apihelpers)."""

from __future__ import annotations

from typing import Any

from ..api import meta
from ..api.meta import Object
from ..api.types.codec import decoder_for

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
STATUS_TYPE = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus"

# Condition types (upstream: apiextensions/v1 types.go)
ESTABLISHED = "Established"
NAMES_ACCEPTED = "NamesAccepted"
TERMINATING = "Terminating"
NON_STRUCTURAL_SCHEMA = "NonStructuralSchema"


def conditions(crd: Object) -> list[dict[str, Any]]:
    return list((crd.get("status") or {}).get("conditions") or [])


def find_condition(crd: Object, type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions(crd) if c.get("type") == type_), None)


def is_condition_true(crd: Object, type_: str) -> bool:
    c = find_condition(crd, type_)
    return c is not None and c.get("status") == "True"


def set_condition(crd: Object, type_: str, status: str, reason: str, message: str) -> None:
    """Set a condition in place; its lastTransitionTime moves only when its status does (upstream
    SetCRDCondition)."""
    st = crd.setdefault("status", {})
    conds = st.get("conditions")
    if not isinstance(conds, list):
        conds = st["conditions"] = []
    new = {"type": type_, "status": status, "lastTransitionTime": meta.rfc3339(), "reason": reason,
           "message": message}  # fmt: skip
    for i, c in enumerate(conds):
        if c.get("type") == type_:
            if c.get("status") == status:
                new["lastTransitionTime"] = c.get("lastTransitionTime") or new["lastTransitionTime"]
            conds[i] = new
            return
    conds.append(new)


def stored_status(crd: Object) -> None:
    """Put the CRD's status, as the server wrote it, into the form Go writes it (empty reasons and messages
    left out, `conditions: null` when there are none), as it must be stored."""
    crd["status"] = decoder_for(STATUS_TYPE).decode(crd.get("status") or {}, None)


def remove_condition(crd: Object, type_: str) -> None:
    st = crd.get("status") or {}
    if st.get("conditions"):
        st["conditions"] = [c for c in st["conditions"] if c.get("type") != type_]


def versions(crd: Object) -> list[dict[str, Any]]:
    return [v for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]


def storage_version(crd: Object) -> str:
    for v in versions(crd):
        if v.get("storage"):
            return str(v.get("name", ""))
    return ""


def has_finalizer(crd: Object, finalizer: str) -> bool:
    return finalizer in ((crd.get("metadata") or {}).get("finalizers") or [])


def is_served(crd: Object) -> bool:
    """Whether the CRD's resource is served (upstream crdHandler: once its names are accepted or it is
    established; not while it is being deleted, when it still answers reads)."""
    return is_condition_true(crd, NAMES_ACCEPTED) or is_condition_true(crd, ESTABLISHED)
