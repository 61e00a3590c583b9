"""ControllerRevisions: the template history of DaemonSets (and StatefulSets) (upstream: pkg/controller/history
and the daemon controller's update.go).

A revision records the pod template as a patch (`{"spec": {"template": {..., "$patch": "replace"}}}`) that
`kubectl rollout undo` applies back; it is named `<owner>-<hash of the template>` and numbered, the newest
highest. The hash is also the `controller-revision-hash` label of the owner's pods, which tells old pods from
updated ones.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..api.meta import json_copy

Object = Mapping[str, Any]

CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
REVISIONS = "controllerrevisions.apps"
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def revision_data(template: Object) -> dict[str, Any]:
    """What a revision stores: the template as a replacing patch of the owner's spec."""
    t = json_copy(template)
    t["$patch"] = "replace"
    return {"spec": {"template": t}}


def hash_revision(data: Object, collision_count: int | None) -> str:
    """A short hash of the revision's data (upstream: HashControllerRevision, FNV-32a over its JSON, here
    CRC-32: any stable hash works as nothing compares with a Go build), spelled in the safe alphabet."""
    h = zlib.crc32(orjson.dumps(data, option=orjson.OPT_SORT_KEYS))
    if collision_count:
        h = zlib.crc32(int(collision_count).to_bytes(4, "little"), h)
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(h))


def new_revision(owner: Object, owner_ref: Object, template: Object, number: int,
                 collision_count: int | None) -> dict[str, Any]:  # fmt: skip
    data = revision_data(template)
    h = hash_revision(data, collision_count)
    md = owner.get("metadata") or {}
    labels = dict(((template.get("metadata") or {}).get("labels")) or {})
    labels[CONTROLLER_REVISION_HASH_LABEL] = h
    return {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": f"{md.get('name')}-{h}", "namespace": md.get("namespace"), "labels": labels,
                     "ownerReferences": [dict(owner_ref)]},
        "data": data, "revision": number,
    }  # fmt: skip


def equal_revision(a: Object, b: Object) -> bool:
    return a.get("data") == b.get("data")


def max_revision(revisions: Sequence[Object]) -> int:
    return max((int(r.get("revision") or 0) for r in revisions), default=0)
