"""DeltaFIFO: the queue between a Reflector and its informer (upstream: tools/cache/delta_fifo.go).

Per object key it keeps the ordered list of what happened (Added, Updated, Deleted, Replaced, Sync) and
queues the key once, in order of first change. `pop` hands one key's whole history to the informer. A relist
(`replace`) records Replaced for every listed object and a Deleted tombstone (`DeletedFinalStateUnknown`) for
each object the informer knew, or had queued, that the new list lacks: the delete happened while nobody was
watching, so its final state is unknown. Two deletes in a row collapse into one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from .indexer import meta_namespace_key


class DeltaType(StrEnum):
    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    # An object seen in a relist (upstream emits Replaced rather than Sync here, since v1.19).
    REPLACED = "Replaced"
    # A periodic resync of an object already known.
    SYNC = "Sync"


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """A tombstone: the object under `key` was deleted while the watch was down; `obj` is the last state
    the informer knew."""

    key: str
    obj: Any


def deleted_object(obj: Any) -> Any:
    """What a delete handler received, as an object: a tombstone's last known state, or the object itself."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


@dataclass(frozen=True)
class Delta:
    type: DeltaType
    object: Any


class KnownObjects(Protocol):
    """What the informer already holds (its Indexer)."""

    def list_keys(self) -> list[str]: ...
    def get_by_key(self, key: str) -> Any | None: ...


class FIFOClosedError(Exception):
    """`pop` on a closed queue."""


class DeltaFIFO:
    def __init__(
        self,
        known_objects: KnownObjects | None = None,
        key_func: Callable[[Any], str] = meta_namespace_key,
        transformer: Callable[[Any], Any] | None = None,
    ) -> None:
        self.known_objects = known_objects
        self.key_func = key_func
        self.transformer = transformer
        self._items: dict[str, list[Delta]] = {}
        self._queue: list[str] = []
        self._head = 0
        self._ready = asyncio.Event()
        self._populated = False
        self._initial_population_count = 0
        self._closed = False

    def key_of(self, obj: Any) -> str:
        if isinstance(obj, Delta):
            obj = obj.object
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return self.key_func(obj)

    # -- producers (the Reflector) --------------------------------------------------------------------

    def add(self, obj: Any) -> None:
        self._populated = True
        self._queue_action(DeltaType.ADDED, obj)

    def update(self, obj: Any) -> None:
        self._populated = True
        self._queue_action(DeltaType.UPDATED, obj)

    def delete(self, obj: Any) -> None:
        key = self.key_of(obj)
        self._populated = True
        if key not in self._items:
            # A delete of something we never knew and have nothing queued for is not news.
            if self.known_objects is None or self.known_objects.get_by_key(key) is None:
                return
        self._queue_action(DeltaType.DELETED, obj, key)

    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """A fresh list: Replaced for each listed object, tombstones for each known one that is gone."""
        keys: set[str] = set()
        for obj in objs:
            key = self.key_of(obj)
            keys.add(key)
            self._queue_action(DeltaType.REPLACED, obj, key)
        queued_deletions = 0
        if self.known_objects is not None:
            for key in self.known_objects.list_keys():
                if key in keys:
                    continue
                last = self.known_objects.get_by_key(key)
                queued_deletions += self._tombstone(key, last)
        # Objects queued but not yet popped into the informer, and absent from the list: without a tombstone
        # their queued Added would resurrect them.
        for key in list(self._items):
            if key in keys or (self.known_objects is not None and self.known_objects.get_by_key(key) is not None):
                continue
            deltas = self._items[key]
            queued_deletions += self._tombstone(key, deltas[-1].object)
        if not self._populated:
            self._populated = True
            self._initial_population_count = len(keys) + queued_deletions

    def _tombstone(self, key: str, last: Any) -> int:
        if isinstance(last, DeletedFinalStateUnknown):
            last = last.obj
        deltas = self._items.get(key)
        if deltas and deltas[-1].type is DeltaType.DELETED:
            return 0
        self._queue_action(DeltaType.DELETED, DeletedFinalStateUnknown(key, last), key)
        return 1

    def resync(self) -> None:
        """A Sync delta for every known object that has nothing queued."""
        if self.known_objects is None:
            return
        for key in self.known_objects.list_keys():
            if key in self._items:
                continue
            obj = self.known_objects.get_by_key(key)
            if obj is not None:
                self._queue_action(DeltaType.SYNC, obj, key)

    def _queue_action(self, typ: DeltaType, obj: Any, key: str | None = None) -> None:
        if key is None:
            key = self.key_of(obj)
        if self.transformer is not None and not isinstance(obj, DeletedFinalStateUnknown):
            obj = self.transformer(obj)
        deltas = self._items.get(key)
        if deltas is None:
            self._items[key] = [Delta(typ, obj)]
            self._queue.append(key)
            self._ready.set()
            return
        deltas.append(Delta(typ, obj))
        _dedup_tail(deltas)

    # -- the consumer (the informer) ------------------------------------------------------------------

    async def pop(self, process: Callable[[list[Delta], bool], None]) -> None:
        """Wait for a key, then call `process(deltas, is_in_initial_list)` on its history. `process` runs
        before `pop` returns and before `has_synced` can turn true for the item it got."""
        while self._head >= len(self._queue):
            if self._closed:
                raise FIFOClosedError("DeltaFIFO: manipulating with closed queue")
            self._ready.clear()
            await self._ready.wait()
        key = self._queue[self._head]
        self._head += 1
        if self._head > 1024 and self._head * 2 > len(self._queue):
            del self._queue[: self._head]
            self._head = 0
        in_initial_list = not self.has_synced()
        deltas = self._items.pop(key)
        try:
            process(deltas, in_initial_list)
        finally:
            if self._initial_population_count > 0:
                self._initial_population_count -= 1

    def has_synced(self) -> bool:
        """True once the first list has been fully popped."""
        return self._populated and self._initial_population_count == 0

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._queue) - self._head

    def list_keys(self) -> list[str]:
        return list(self._items)

    def get_by_key(self, key: str) -> list[Delta] | None:
        deltas = self._items.get(key)
        return list(deltas) if deltas is not None else None


def _dedup_tail(deltas: list[Delta]) -> None:
    """Collapse two trailing deletes into one, keeping the one that knows the object's final state."""
    if len(deltas) < 2:
        return
    a, b = deltas[-2], deltas[-1]
    if a.type is DeltaType.DELETED and b.type is DeltaType.DELETED:
        keep = a if isinstance(b.object, DeletedFinalStateUnknown) else b
        deltas[-2:] = [keep]
