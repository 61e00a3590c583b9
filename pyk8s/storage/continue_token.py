"""List continuation tokens (upstream: storage.EncodeContinue / DecodeContinue).

A token pins the revision of the list's first page and the next key to read, relative to the listed
directory, so every page is read at one snapshot and a token cannot be turned on another directory.
The wire form is upstream's: unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":R,"start":"..."}`.
"""

from __future__ import annotations

import base64
import binascii
import posixpath

import orjson

from .errors import InvalidContinueError

_VERSION = "meta.k8s.io/v1"


def encode_continue(next_key: str, directory: str, revision: int) -> str:
    """A token that resumes listing `directory` at `next_key`, at `revision`."""
    if not next_key.startswith(directory):
        raise ValueError(f"{next_key!r} is not under {directory!r}")
    rel = next_key[len(directory) :]
    data = orjson.dumps({"v": _VERSION, "rv": revision, "start": rel})
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decode_continue(token: str, directory: str) -> tuple[str, int]:
    """(the key to resume at, the snapshot revision) from a token for `directory`."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = orjson.loads(raw)
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise InvalidContinueError("continue key is not valid: not a base64 encoded continue token") from None
    if not isinstance(body, dict) or body.get("v") != _VERSION:
        raise InvalidContinueError("continue key is not valid: server does not recognize this encoded key")
    rv, start = body.get("rv"), body.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv <= 0:
        raise InvalidContinueError(
            f"continue key is not valid: incorrect encoded start resourceVersion (version {_VERSION})"
        )
    if not isinstance(start, str) or not start:
        raise InvalidContinueError("continue key is not valid: encoded start key was empty")
    # The start key must stay inside the directory: no path tricks such as '../'.
    probe = start if start.startswith("/") else "/" + start
    if posixpath.normpath(probe) != probe or probe.startswith("//"):
        raise InvalidContinueError(f"continue key is not valid: {start}")
    return directory + probe[1:], rv
