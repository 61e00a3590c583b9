"""Which owners a StatefulSet's claim should have under its persistentVolumeClaimRetentionPolicy (upstream:
pkg/controller/statefulset/stateful_set_utils.go, claimOwnerMatchesSetAndPod / updateClaimOwnerRefForSetAndPod):
`whenDeleted: Delete` makes the set an owner, so the garbage collector deletes the claim with the set;
`whenScaled: Delete` makes the pod of a condemned ordinal (outside `[start, start+replicas)`) the owner instead,
so the claim goes with the pod the scale-down deletes. Retain removes the corresponding reference. The references
are plain ones (no controller, no blockOwnerDeletion), as upstream writes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Object = Mapping[str, Any]


def _uid(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _plain_ref(owner: Object, api_version: str, kind: str) -> dict[str, Any]:
    md = owner.get("metadata") or {}
    return {"apiVersion": api_version, "kind": kind, "name": md.get("name"), "uid": md.get("uid")}


def retention_policy(sts: Object) -> tuple[str, str]:
    """(whenDeleted, whenScaled), Retain where unset."""
    p = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(p.get("whenDeleted") or "Retain"), str(p.get("whenScaled") or "Retain")


def in_ordinal_range(ordinal: int, sts: Object) -> bool:
    spec = sts.get("spec") or {}
    start = int(((spec.get("ordinals") or {}).get("start")) or 0)
    return start <= ordinal < start + int(spec.get("replicas", 1))


def claim_owner_refs(claim: Object, sts: Object, pod: Object | None, ordinal: int) -> list[dict[str, Any]] | None:
    """The claim's owner references as the policy wants them, or None when they already are. `pod` is the
    ordinal's pod (None before it exists: only the set's reference is decided then)."""
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not in_ordinal_range(ordinal, sts)
    want_set = when_deleted == "Delete" and not (when_scaled == "Delete" and scaled_down)
    want_pod = pod is not None and when_scaled == "Delete" and scaled_down
    refs = [dict(r) for r in (claim.get("metadata") or {}).get("ownerReferences") or ()]
    changed = False
    for owner, wanted, api_version, kind in ((sts, want_set, "apps/v1", "StatefulSet"), (pod, want_pod, "v1", "Pod")):
        if owner is None:
            continue
        has = any(r.get("uid") == _uid(owner) for r in refs)
        if wanted and not has:
            refs.append(_plain_ref(owner, api_version, kind))
            changed = True
        elif not wanted and has:
            refs = [r for r in refs if r.get("uid") != _uid(owner)]
            changed = True
    return refs if changed else None
