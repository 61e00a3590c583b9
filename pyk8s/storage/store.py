"""`Store`: the object storage the registry uses, over any revisioned `KV` (upstream: etcd3/store.go).

All of the semantics that do not depend on the backend live here, once: key validation, the stored form
of objects, continue tokens, preconditions, the read-modify-write loop of `guaranteed_update` (which
skips the write when the bytes do not change), and automatic compaction.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from . import codec, keys
from .codec import Object
from .compactor import DEFAULT_COMPACTION_INTERVAL, Compactor
from .continue_token import decode_continue, encode_continue
from .errors import (
    ConflictError,
    GoneError,
    InvalidContinueError,
    InvalidObjectError,
    InvalidRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    RequestTooLargeError,
)
from .interface import (
    KV,
    Feature,
    KeyValue,
    ListResult,
    Preconditions,
    TryUpdate,
    ValidateDeletion,
    Watch,
)

log = logging.getLogger(__name__)

# etcd's default --max-request-bytes: no write may carry more (key and value together). The SQLite store keeps
# the same limit, so an object that fits one backend fits the other.
MAX_REQUEST_BYTES = 3 * 512 * 1024
T = TypeVar("T")


def check_preconditions(key: str, pre: Preconditions | None, obj: Object | None) -> None:
    """Raise ConflictError unless `obj` satisfies `pre` (an absent object satisfies none)."""
    if pre is None:
        return
    meta = (obj or {}).get("metadata") or {}
    if pre.uid is not None and pre.uid != meta.get("uid", ""):
        raise ConflictError(
            f"Precondition failed: UID in precondition: {pre.uid}, UID in object meta: {meta.get('uid', '')}",
            key=key,
        )
    if pre.resource_version is not None and pre.resource_version != meta.get("resourceVersion", ""):
        raise ConflictError(
            "Precondition failed: ResourceVersion in precondition: "
            f"{pre.resource_version}, ResourceVersion in object meta: {meta.get('resourceVersion', '')}",
            key=key,
        )


def _check_revision(revision: int | None) -> None:
    if revision is not None and (not isinstance(revision, int) or isinstance(revision, bool) or revision < 0):
        raise InvalidRevisionError(f"invalid revision {revision!r}: must be a non-negative integer")


async def _maybe_await(value: T | Awaitable[T]) -> T:
    if type(value) is not dict and inspect.isawaitable(value):
        return await value
    return value  # type: ignore[return-value]


class Store:
    """Storage with etcd semantics over a `KV` backend; see `interface.Storage` for the contract."""

    def __init__(
        self,
        kv: KV,
        *,
        prefix: str = keys.DEFAULT_PREFIX,
        compaction_interval: float = DEFAULT_COMPACTION_INTERVAL,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        if not prefix.startswith("/") or not prefix.endswith("/"):
            raise ValueError(f"storage prefix must start and end with '/': {prefix!r}")
        self.kv = kv
        self.prefix = prefix
        self.max_request_bytes = max_request_bytes
        self._compactor = Compactor(kv, compaction_interval, self._compacted) if compaction_interval > 0 else None
        # Called with the revision after every compaction (watch caches forget history below it).
        self.compaction_listeners: list[Callable[[int], None]] = []
        self._compactor_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.kv.start()
        if self._compactor is not None:
            self._compactor_task = asyncio.create_task(self._compactor.run(), name="storage-compactor")

    async def close(self) -> None:
        if self._compactor_task is not None:
            self._compactor_task.cancel()
            await asyncio.gather(self._compactor_task, return_exceptions=True)
            self._compactor_task = None
        await self.kv.close()

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- reads -------------------------------------------------------------------------------------

    async def current_revision(self) -> int:
        return await self.kv.current_revision()

    def supports(self, feature: Feature) -> bool:
        return self.kv.supports(feature)

    async def get(self, key: str) -> Object:
        k = keys.object_key(key, self.prefix)
        kv = await self.kv.get(k)
        if kv is None:
            raise KeyNotFoundError(k)
        return codec.decode(kv.value, kv.mod_revision, key=k)

    async def list(
        self,
        prefix: str,
        *,
        limit: int = 0,
        continue_token: str | None = None,
        revision: int | None = None,
    ) -> ListResult:
        d = keys.directory(prefix, self.prefix)
        end = keys.range_end(d)
        _check_revision(revision)
        if not isinstance(limit, int) or limit < 0:
            raise InvalidRevisionError(f"invalid limit {limit!r}: must be a non-negative integer")
        if continue_token:
            if revision:
                raise InvalidContinueError("specifying resource version is not allowed when using continue")
            start, rev = decode_continue(continue_token, d)
            try:
                res = await self.kv.range(start, end, revision=rev, limit=limit, count=limit > 0)
            except GoneError as e:
                raise GoneError(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.",
                    revision=rev,
                    compacted_revision=e.compacted_revision,
                    key=d,
                ) from None
        else:
            res = await self.kv.range(d, end, revision=revision or 0, limit=limit, count=limit > 0)
        items = [codec.decode(kv.value, kv.mod_revision, key=kv.key) for kv in res.kvs]
        out = ListResult(items=items, revision=res.revision)
        if res.more and res.kvs:
            out.continue_token = encode_continue(keys.key_after(res.kvs[-1].key), d, res.revision)
            if res.count is not None:
                out.remaining_item_count = max(res.count - len(res.kvs), 0)
        return out

    async def count(self, prefix: str) -> int:
        d = keys.directory(prefix, self.prefix)
        return await self.kv.count(d, keys.range_end(d))

    async def watch(
        self,
        key: str,
        from_revision: int | None = None,
        *,
        recursive: bool = True,
        progress_notify: bool = False,
    ) -> Watch:
        _check_revision(from_revision)
        if recursive:
            start = keys.directory(key, self.prefix)
            end = keys.range_end(start)
        else:
            start = keys.object_key(key, self.prefix)
            end = keys.key_after(start)
        return await self.kv.watch(start, end, from_revision, progress_notify=progress_notify)

    # -- writes ------------------------------------------------------------------------------------

    async def create(self, key: str, obj: Object) -> Object:
        k = keys.object_key(key, self.prefix)
        if isinstance(obj, dict) and codec.resource_version(obj):
            raise InvalidObjectError("resourceVersion should not be set on objects to be created", key=k)
        data = codec.encode(obj, key=k)
        self._check_size(k, data)
        res = await self.kv.create(k, data)
        if not res.succeeded:
            raise KeyExistsError(k)
        return codec.with_revision(obj, res.revision)

    async def guaranteed_update(
        self,
        key: str,
        try_update: TryUpdate,
        *,
        preconditions: Preconditions | None = None,
        ignore_not_found: bool = False,
        cached_existing: Object | None = None,
    ) -> Object:
        k = keys.object_key(key, self.prefix)
        # With the caller's copy of the object (the API server has one in its watch cache) the first
        # attempt skips the read: one round trip to etcd instead of two. The copy may be stale, so
        # whatever it makes fail or look unchanged is retried on the current state, as upstream does.
        cur: KeyValue | None
        existing: Object | None
        if cached_existing is not None:
            rev = codec.resource_version(cached_existing)
            if not rev.isdigit():
                raise InvalidObjectError("the cached object has no resourceVersion", key=k)
            cur = KeyValue(k, codec.encode(cached_existing, key=k), int(rev))
            existing, current = cached_existing, False
        else:
            cur, existing, current = await self.kv.get(k), None, True
        while True:
            if current:
                if cur is None and not ignore_not_found:
                    raise KeyNotFoundError(k)
                existing = codec.decode(cur.value, cur.mod_revision, key=k) if cur is not None else None
            try:
                check_preconditions(k, preconditions, existing)
                new = await _maybe_await(try_update(existing))
                data = codec.encode(new, key=k)
            except Exception:
                if current:
                    raise
                cur, current = await self.kv.get(k), True
                continue
            if cur is None:
                self._check_size(k, data)
                res = await self.kv.create(k, data)
            elif data == cur.value:
                if not current:
                    cur, current = await self.kv.get(k), True
                    continue
                # Nothing changed: no write, no new revision (upstream skips the txn too).
                return codec.with_revision(new, cur.mod_revision)
            else:
                self._check_size(k, data)
                res = await self.kv.update(k, cur.mod_revision, data)
            if res.succeeded:
                return codec.with_revision(new, res.revision)
            cur, current = res.current, True

    def _check_size(self, key: str, data: bytes) -> None:
        size = len(key) + len(data)
        if size > self.max_request_bytes:
            raise RequestTooLargeError(key=key)

    async def delete(
        self,
        key: str,
        *,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
    ) -> Object:
        k = keys.object_key(key, self.prefix)
        cur = await self.kv.get(k)
        while True:
            if cur is None:
                raise KeyNotFoundError(k)
            existing = codec.decode(cur.value, cur.mod_revision, key=k)
            check_preconditions(k, preconditions, existing)
            if validate_deletion is not None:
                await _maybe_await(validate_deletion(existing))
            res = await self.kv.delete(k, cur.mod_revision)
            if res.succeeded:
                return existing
            cur = res.current

    async def compact(self, revision: int) -> None:
        _check_revision(revision)
        await self.kv.compact(revision)
        self._compacted(revision)

    def _compacted(self, revision: int) -> None:
        for listener in self.compaction_listeners:
            listener(revision)
