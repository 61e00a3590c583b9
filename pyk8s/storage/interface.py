"""The storage protocols and the values that cross them.

Two layers, as upstream's etcd3 store sits on an etcd client:

- `KV` is a revisioned key-value store with compare-and-swap on a key's mod revision, range reads at a
  revision, and watches over a key range: what etcd v3 offers and what `sqlite.SqliteKV` and `etcd.EtcdKV`
  implement. It moves bytes.
- `Storage` is what the API server's registry uses (upstream: storage.Interface): create, get, list with
  pagination, guaranteed_update, delete with preconditions, watch, compact, count. It moves objects (plain
  dicts in their JSON shape) and is implemented once, in `store.Store`, over any `KV`.

A store may lack a feature a caller would like to rely on; `supports(feature)` says (upstream: storage.Feature and
the etcd FeatureSupportChecker). The one feature so far is `REQUEST_WATCH_PROGRESS`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from . import codec
from .codec import Object

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
ADDED: EventType = "ADDED"
MODIFIED: EventType = "MODIFIED"
DELETED: EventType = "DELETED"
BOOKMARK: EventType = "BOOKMARK"

Feature = Literal["RequestWatchProgress"]
# `Watch.request_progress()` is answered with a bookmark at a revision the watch has delivered everything up to,
# so a watch cache can prove it is as fresh as storage without a write (and serve consistent reads). etcd has
# progress requests since 3.4, but they are reliable only from 3.4.31 and 3.5.13 (etcd issues 15220 and 17507).
REQUEST_WATCH_PROGRESS: Feature = "RequestWatchProgress"


class KeyValue(NamedTuple):
    """One key's value as of its last write (`mod_revision`). A tuple: made on every read, so cheap."""

    key: str
    value: bytes
    mod_revision: int


@dataclass(slots=True, frozen=True)
class RangeResult:
    """A range read at one revision: `kvs` sorted by key; `more` if `limit` cut it short; `count` is the
    number of keys in the whole range at that revision, when asked for."""

    kvs: list[KeyValue]
    revision: int
    more: bool
    count: int | None = None


@dataclass(slots=True, frozen=True)
class TxnResult:
    """The outcome of a compare-and-swap: on success `revision` is the write's revision; on failure
    `current` is the key's value now (None if absent), so a retry needs no extra read."""

    succeeded: bool
    revision: int
    current: KeyValue | None = None


class WatchEvent:
    """One change seen by a watch, or a BOOKMARK saying "nothing changed for you up to `revision`".

    `object` and `prev_object` decode lazily and are cached on the event, which may be shared by several
    watchers: treat them as read-only (copy before changing). For DELETED the object is the last state with
    its resourceVersion set to the deletion's revision, as upstream's etcd3 watcher reports it.
    """

    __slots__ = ("_object", "_prev_object", "key", "prev_revision", "prev_value", "revision", "type", "value")

    def __init__(
        self,
        type: EventType,
        key: str,
        revision: int,
        value: bytes | None,
        prev_value: bytes | None = None,
        prev_revision: int = 0,
    ) -> None:
        self.type = type
        self.key = key
        self.revision = revision
        self.value = value
        self.prev_value = prev_value
        self.prev_revision = prev_revision
        self._object: Object | None = None
        self._prev_object: Object | None = None

    @property
    def object(self) -> Object:
        if self._object is None:
            if self.type == BOOKMARK:
                self._object = {"metadata": {"resourceVersion": str(self.revision)}}
            else:
                data = self.prev_value if self.type == DELETED else self.value
                assert data is not None
                self._object = codec.decode(data, self.revision, key=self.key)
        return self._object

    @property
    def prev_object(self) -> Object | None:
        if self._prev_object is None and self.prev_value is not None:
            self._prev_object = codec.decode(self.prev_value, self.prev_revision, key=self.key)
        return self._prev_object

    def __repr__(self) -> str:
        return f"WatchEvent({self.type}, {self.key!r}, rev={self.revision})"


class Watch(Protocol):
    """A running watch: iterate it for events; `stop()` ends it (also on leaving `async with`)."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    async def __anext__(self) -> WatchEvent: ...

    async def stop(self) -> None: ...

    async def request_progress(self) -> None:
        """Ask for a BOOKMARK at the store's current revision once everything before it has been delivered
        (upstream: RequestWatchProgress); lets a watch cache prove it is fresh without a write."""
        ...

    async def __aenter__(self) -> Watch: ...

    async def __aexit__(self, *exc: object) -> None: ...


class KV(Protocol):
    """A revisioned key-value store with etcd v3's semantics (see the module docstring)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def current_revision(self) -> int: ...

    def supports(self, feature: Feature) -> bool:
        """Whether the store offers `feature`; may change while the store runs (an etcd endpoint is checked
        when it can be reached)."""
        ...

    async def get(self, key: str) -> KeyValue | None: ...

    async def range(
        self, start: str, end: str, *, revision: int = 0, limit: int = 0, count: bool = False
    ) -> RangeResult:
        """Keys in [start, end) at `revision` (0: now). Raises GoneError below the compacted revision and
        TooLargeResourceVersionError above the current one."""
        ...

    async def count(self, start: str, end: str) -> int: ...

    async def create(self, key: str, value: bytes) -> TxnResult:
        """Write `value` if the key is absent."""
        ...

    async def update(self, key: str, expected_revision: int, value: bytes) -> TxnResult:
        """Write `value` if the key's mod revision is `expected_revision`."""
        ...

    async def delete(self, key: str, expected_revision: int) -> TxnResult:
        """Delete the key if its mod revision is `expected_revision`."""
        ...

    async def watch(self, start: str, end: str, from_revision: int | None, *, progress_notify: bool = False) -> Watch:
        """Every change to keys in [start, end) after `from_revision` (None: from now), in revision order.
        Raises GoneError if `from_revision` is compacted, TooLargeResourceVersionError if it is in the
        future; a watch that falls behind a compaction while running ends with GoneError."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget history older than `revision`: reads at revisions below it answer GoneError."""
        ...

    async def claim_compaction(self, expected_version: int, revision: int) -> tuple[bool, int, int]:
        """The compactors' lease (upstream: compact_rev_key): if the compaction record's version is
        `expected_version`, record `revision` and return (True, version + 1, current revision); else
        (False, the record's version, current revision)."""
        ...


@dataclass(slots=True, frozen=True)
class Preconditions:
    """Conditions an update or delete requires of the current object (upstream: storage.Preconditions)."""

    uid: str | None = None
    resource_version: str | None = None


@dataclass(slots=True)
class ListResult:
    """A page of a list: `items` sorted by key, all as of `revision`.

    `continue_token` is set when more items follow; `remaining_item_count` is how many, when known.
    """

    items: list[Object]
    revision: int
    continue_token: str | None = None
    remaining_item_count: int | None = None


TryUpdate = Callable[[Object | None], Object | Awaitable[Object]]
ValidateDeletion = Callable[[Object], Awaitable[None] | None]


class Storage(Protocol):
    """Object storage with etcd semantics, as kube-apiserver's registry uses it.

    Objects returned by create and guaranteed_update are shallow copies of the object written (top level
    and metadata are new dicts; deeper values are shared with it). Objects from get and list are fresh.
    """

    async def create(self, key: str, obj: Object) -> Object: ...

    async def get(self, key: str) -> Object: ...

    async def list(
        self,
        prefix: str,
        *,
        limit: int = 0,
        continue_token: str | None = None,
        revision: int | None = None,
    ) -> ListResult: ...

    async def guaranteed_update(
        self,
        key: str,
        try_update: TryUpdate,
        *,
        preconditions: Preconditions | None = None,
        ignore_not_found: bool = False,
        cached_existing: Object | None = None,
    ) -> Object:
        """Read the object, apply `try_update` to it, write the result if the object has not changed in
        between (else retry on the new state). No write, and no new revision, when the bytes are equal.
        `cached_existing`, a copy the caller owns (it is handed to `try_update`), saves the first read."""
        ...

    async def delete(
        self,
        key: str,
        *,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
    ) -> Object: ...

    async def watch(
        self,
        key: str,
        from_revision: int | None = None,
        *,
        recursive: bool = True,
        progress_notify: bool = False,
    ) -> Watch: ...

    async def compact(self, revision: int) -> None: ...

    async def count(self, prefix: str) -> int: ...

    async def current_revision(self) -> int: ...

    def supports(self, feature: Feature) -> bool:
        """Whether the store offers `feature` (upstream: FeatureSupportChecker.Supports)."""
        ...

    async def close(self) -> None: ...
