"""The watch cache's indexes on a resource's trigger field (for pods `spec.nodeName`), so that a cache with one
watcher per node neither tests each event against every node's watcher nor scans every object to list one
node's (upstream: the cacher's indexedWatchers and indexedTrigger, and the watch cache's field indexer, which the
pods registry sets up with its NodeNameTriggerFunc and Indexers).

- `IndexedWatchers`: a watcher whose field selector pins the trigger field to a value (`spec.nodeName=n1`) is
  kept under that value; every other watcher is kept with the unindexed ones. An event is offered to the
  unindexed watchers and to those under the trigger value of the object after the change and of the object
  before it: no other watcher's selector can match either, so each watcher gets exactly what testing every
  watcher would give it.
- `TriggerIndex`: the keys of the cached objects by their trigger value, for lists (and the initial events of
  watches) whose selector pins it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from .interface import DELETED

if TYPE_CHECKING:
    from .cacher import CacheEvent, CacheWatcher


class _Fielded(Protocol):
    @property
    def fields(self) -> Mapping[str, str]: ...


def value_of(entry: _Fielded, field: str) -> str:
    # An absent field reads as "", as a field selector's requirement reads it.
    return entry.fields.get(field, "")


def trigger_values(event: CacheEvent, field: str) -> tuple[str, ...]:
    """The trigger values whose watchers may see `event`: the object's after the change and before it."""
    prev = event.prev
    if event.type == DELETED:
        # A deletion reaches only watchers that matched the object before it (see cacher._as_seen).
        return () if prev is None else (value_of(prev, field),)
    assert event.entry is not None
    now = value_of(event.entry, field)
    if prev is None:
        return (now,)
    before = value_of(prev, field)
    return (now,) if before == now else (now, before)


class IndexedWatchers:
    """A cache's watchers: unindexed ones, and the others by the trigger value their selector pins.

    Dicts keep them (as ordered sets): watchers are offered an event in the order they started."""

    def __init__(self) -> None:
        self.unindexed: dict[CacheWatcher, None] = {}
        self.by_value: dict[str, dict[CacheWatcher, None]] = {}
        self._count = 0

    def add(self, watcher: CacheWatcher) -> None:
        value = watcher.trigger_value
        group = self.unindexed if value is None else self.by_value.setdefault(value, {})
        if watcher not in group:
            group[watcher] = None
            self._count += 1

    def discard(self, watcher: CacheWatcher) -> None:
        value = watcher.trigger_value
        group = self.unindexed if value is None else self.by_value.get(value)
        if group is None or watcher not in group:
            return
        del group[watcher]
        self._count -= 1
        if value is not None and not group:
            del self.by_value[value]

    def dispatch(self, event: CacheEvent, field: str | None) -> None:
        """Offer `event` to every watcher that may see it (a copy of each group: offering may end a watcher)."""
        if self.by_value and field is not None:
            for value in trigger_values(event, field):
                group = self.by_value.get(value)
                if group:
                    for w in list(group):
                        w.offer(event)
        if self.unindexed:
            for w in list(self.unindexed):
                w.offer(event)

    def __iter__(self) -> Iterator[CacheWatcher]:
        """Every watcher (for bookmarks and shutdown; copy before ending them)."""
        yield from self.unindexed
        for group in self.by_value.values():
            yield from group

    def __len__(self) -> int:
        return self._count


class TriggerIndex:
    """The keys of a cache's objects by trigger value.

    It is built at the first list that can use it, and then brought up to date at each such list from the keys
    that changed since: the cache keeps objects nobody reads undecoded, and an index kept at every event would
    decode them all."""

    def __init__(self, field: str) -> None:
        self.field = field
        self._keys: dict[str, set[str]] | None = None
        self._value: dict[str, str] = {}  # key -> the value it is filed under
        self._changed: set[str] = set()

    def changed(self, key: str) -> None:
        if self._keys is not None:
            self._changed.add(key)

    def reset(self) -> None:
        """Forget everything (the cache's objects were replaced)."""
        self._keys = None
        self._value.clear()
        self._changed.clear()

    def keys(self, value: str, entries: Mapping[str, _Fielded]) -> set[str]:
        """The keys of the objects in `entries` (the cache's, current) whose trigger value is `value`."""
        if self._keys is None:
            self._keys = {}
            for key, entry in entries.items():
                self._file(key, entry)
        elif self._changed:
            for key in self._changed:
                old = self._value.pop(key, None)
                if old is not None:
                    group = self._keys[old]
                    group.discard(key)
                    if not group:
                        del self._keys[old]
                entry = entries.get(key)
                if entry is not None:
                    self._file(key, entry)
            self._changed.clear()
        return self._keys.get(value) or set()

    def _file(self, key: str, entry: _Fielded) -> None:
        assert self._keys is not None
        value = value_of(entry, self.field)
        self._value[key] = value
        self._keys.setdefault(value, set()).add(key)
