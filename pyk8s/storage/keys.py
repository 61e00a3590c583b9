"""Storage keys: validation and key ranges.

Objects live at `/registry/<resource>/<namespace>/<name>` (cluster-scoped objects have no namespace segment).
A list or watch covers a directory: every key that starts with `<dir>/`. Keys are compared as UTF-8 bytes,
which is etcd's order and SQLite's BINARY collation.
"""

from __future__ import annotations

import re

from .errors import InvalidKeyError

DEFAULT_PREFIX = "/registry/"
MAX_KEY_BYTES = 3072


# A control character, or an empty, "." or ".." path segment (also at the end of the key).
_BAD = re.compile(r"[\x00-\x1f\x7f]|//|/\.\.?(?:/|$)")


def _check_path(key: object, prefix: str) -> str:
    if not isinstance(key, str):
        raise InvalidKeyError(f"key must be a string, not {type(key).__name__}")
    if not key:
        raise InvalidKeyError("empty key")
    if not key.startswith(prefix):
        raise InvalidKeyError(f"key {key!r} is not under the storage prefix {prefix!r}", key=key)
    if len(key) > MAX_KEY_BYTES // 4 and len(key.encode()) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"key is longer than {MAX_KEY_BYTES} bytes", key=key)
    bad = _BAD.search(key)
    if bad:
        what = "a control character" if len(bad.group()) == 1 else "an empty, '.' or '..' path segment"
        raise InvalidKeyError(f"invalid key {key!r}: {what}", key=key)
    return key


def object_key(key: object, prefix: str = DEFAULT_PREFIX) -> str:
    """`key` if it names one object under `prefix`; else InvalidKeyError."""
    k = _check_path(key, prefix)
    if k.endswith("/"):
        raise InvalidKeyError(f"invalid key {k!r}: an object key does not end with '/'", key=k)
    if len(k) <= len(prefix):
        raise InvalidKeyError(f"invalid key {k!r}: names the prefix itself", key=k)
    return k


def directory(key: object, prefix: str = DEFAULT_PREFIX) -> str:
    """`key` as a directory (with a trailing '/') under or equal to `prefix`; else InvalidKeyError."""
    if key == prefix:
        return prefix
    k = _check_path(key, prefix)
    return k if k.endswith("/") else k + "/"


def range_end(start: str) -> str:
    """The smallest key greater than every key that starts with `start` (etcd's prefix range end)."""
    data = bytearray(start.encode())
    while data:
        if data[-1] < 0xFF:
            data[-1] += 1
            return data.decode("utf-8", errors="surrogateescape")
        data.pop()
    return "\x00"


def key_after(key: str) -> str:
    """The smallest key greater than `key`."""
    return key + "\x00"
