"""ObjectMeta helpers: uids, timestamps, generated names, owner references and conditions, on plain dicts."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import os
import random
import time
from collections.abc import Mapping
from typing import Any

import orjson

Object = dict[str, Any]

# upstream: apiserver/pkg/storage/names: 5 characters from an alphabet without vowels or look-alikes.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# Generated names need to be unlikely to collide, not unpredictable (upstream uses math/rand): no syscall per
# character, which with one create per pod was a measurable share of the API server's time.
_names = random.Random()
GENERATED_SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - GENERATED_SUFFIX_LENGTH


# UIDs only need to be unique, not secret: random bits from a generator seeded from os.urandom, formatted as
# a version 4 UUID, cost a fraction of uuid.uuid4()'s syscall and UUID object (one per create).
_uids = random.Random()
os.register_at_fork(after_in_child=_uids.seed)  # a forked process must not repeat its parent's UIDs
_UUID_V4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID_V4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_uid() -> str:
    """A random (version 4, RFC 4122 variant) UUID string."""
    h = f"{(_uids.getrandbits(128) & _UUID_V4_CLEAR) | _UUID_V4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def rfc3339(t: dt.datetime | None = None) -> str:
    """A timestamp as the API writes `metav1.Time`: RFC 3339, whole seconds, UTC, `Z`."""
    if t is None:
        return _rfc3339_now(int(time.time()))
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=2)
def _rfc3339_now(second: int) -> str:
    # Every write stamps the current second: format it once per second, not once per write.
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))


def rfc3339_micro(t: dt.datetime | None = None) -> str:
    """A `metav1.MicroTime` (events' eventTime, leases' renewTime): microseconds, UTC, `Z`."""
    if t is None:
        # Every lease renewal stamps one (5,000 nodes: 500 a second): the seconds are formatted once a second.
        us = time.time_ns() // 1000
        return f"{_rfc3339_second(us // 1_000_000)}.{us % 1_000_000:06d}Z"
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@functools.lru_cache(maxsize=2)
def _rfc3339_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def parse_time(value: str) -> dt.datetime:
    """A `metav1.Time` or `MicroTime` string as an aware datetime; ValueError if it is neither."""
    v = value.strip()
    if v.endswith("Z"):
        v = v[:-1] + "+00:00"
    t = dt.datetime.fromisoformat(v)
    if t.tzinfo is None:
        raise ValueError(f"time {value!r} has no zone")
    return t


def generate_name(prefix: str) -> str:
    """`prefix` (cut to leave room) followed by five random characters."""
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH]
    return prefix + "".join(_names.choices(_NAME_ALPHABET, k=GENERATED_SUFFIX_LENGTH))


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (what API objects are), several times faster than copy.deepcopy; anything
    orjson cannot write (a tuple-free, str-keyed JSON tree always can) falls back to copy.deepcopy."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)


def parse_group_version(text: str) -> tuple[str, str]:
    """(group, version) of an apiVersion as schema.ParseGroupVersion reads it ("" and "/" are the empty group
    version); ValueError with upstream's message when it has more than one slash."""
    if not text or text == "/":
        return "", ""
    parts = text.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected GroupVersion string: {text}")


def metadata(obj: Object) -> Object:
    """The object's metadata dict, created if missing."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def name_of(obj: Object) -> str:
    meta = obj.get("metadata")
    return meta.get("name", "") if isinstance(meta, dict) else ""


def namespace_of(obj: Object) -> str:
    meta = obj.get("metadata")
    return meta.get("namespace", "") if isinstance(meta, dict) else ""


def labels_of(obj: Object) -> dict[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def resource_version_of(obj: Object) -> str:
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion", "") if isinstance(meta, dict) else ""
    return rv if isinstance(rv, str) else ""


def controller_of(obj: Mapping[str, Any]) -> Object | None:
    """The owner reference with `controller: true`, if any (the object is only read)."""
    md = obj.get("metadata")
    for ref in (md.get("ownerReferences") if isinstance(md, dict) else None) or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True, block_owner_deletion: bool = True) -> Object:
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


def get_condition(obj: Object, type_: str) -> Object | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def set_condition(obj: Object, condition: Object) -> bool:
    """Add or replace the condition of the same type; `lastTransitionTime` moves only when the status does.

    Returns whether anything changed.
    """
    status = obj.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    for i, c in enumerate(conditions):
        if c.get("type") == condition.get("type"):
            merged = dict(condition)
            if c.get("status") == condition.get("status") and "lastTransitionTime" in c:
                merged["lastTransitionTime"] = c["lastTransitionTime"]
            if merged == c:
                return False
            conditions[i] = merged
            return True
    conditions.append(dict(condition))
    return True
