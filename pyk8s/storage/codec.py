"""Objects to stored bytes and back.

A stored value is the object's JSON without `metadata.resourceVersion`: the revision of the write is the
resourceVersion, so it is set on the way out and never stored (upstream: the APIObjectVersioner's
PrepareObjectForStorage / UpdateObject).
"""

from __future__ import annotations

from typing import Any

import orjson

from .errors import CorruptObjectError, InvalidObjectError

Object = dict[str, Any]


def encode(obj: object, *, key: str = "") -> bytes:
    """The bytes to store for `obj`, with its resourceVersion dropped; the caller's dict is not changed."""
    if not isinstance(obj, dict):
        raise InvalidObjectError(f"object must be a JSON object, not {type(obj).__name__}", key=key)
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidObjectError("metadata must be a JSON object", key=key)
    if meta and "resourceVersion" in meta:
        meta = dict(meta)
        del meta["resourceVersion"]
        obj = {**obj, "metadata": meta}
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError) as e:
        raise InvalidObjectError(f"object is not serialisable as JSON: {e}", key=key) from None


def decode(data: bytes, revision: int, *, key: str = "") -> Object:
    """A fresh dict from stored bytes, with `metadata.resourceVersion` set to `revision`."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise CorruptObjectError(f"stored value is not JSON: {e}", key=key) from None
    if not isinstance(obj, dict):
        raise CorruptObjectError("stored value is not a JSON object", key=key)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta["resourceVersion"] = str(revision)
    elif meta is None:
        obj["metadata"] = {"resourceVersion": str(revision)}
    else:
        raise CorruptObjectError("stored metadata is not a JSON object", key=key)
    return obj


def with_revision(obj: Object, revision: int) -> Object:
    """A copy of `obj` (top level and metadata; deeper values are shared) with its resourceVersion set.

    Cheaper than decoding the stored bytes again, and equal to them as long as `obj` holds only JSON types.
    """
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta["resourceVersion"] = str(revision)
    return {**obj, "metadata": meta}


def resource_version(obj: Object) -> str:
    """The object's `metadata.resourceVersion`, or "" when unset."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        rv = meta.get("resourceVersion")
        if isinstance(rv, str):
            return rv
    return ""
