"""The watch cache: one per resource, holding every object and a window of recent events in memory, so
lists and watches are served without touching storage (upstream: apiserver/pkg/storage/cacher).

It lists the resource's directory once, then follows a storage watch (with progress notifications, so its
resourceVersion advances while nothing changes). Watchers are filtered by key prefix and by a predicate on
labels and fields; an object that stops matching reaches a watcher as DELETED and one that starts matching as
ADDED, as upstream does. A resource may name a trigger field (pods: `spec.nodeName`): watchers whose field
selector pins it are kept by its value, and lists that pin it read an index instead of every object
(cacher_index.py). A watcher that cannot keep up is ended, and its client resumes from the last resourceVersion
it saw. Events are shared by every watcher: whatever a handler caches on them (such as their JSON encoding) is
computed once.

Reads that must be at least as fresh as a revision (`wait_until_fresh`) wait for the cache to reach it. While
some do and storage supports reliable progress requests, one progress request at a time goes to storage: the
next one once the previous has been answered (or after `PROGRESS_REQUEST_PERIOD`), so the wait is about one
round trip to storage however many readers wait (upstream: conditionalProgressRequester, which asks every 100 ms
instead). Without that support the cache waits for events and storage's periodic progress notifications, and the
registry serves consistent reads from storage instead.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import codec
from .cacher_index import IndexedWatchers, TriggerIndex
from .codec import Object
from .errors import GoneError, TooLargeResourceVersionError
from .interface import ADDED, BOOKMARK, DELETED, MODIFIED, REQUEST_WATCH_PROGRESS, Storage, Watch, WatchEvent
from .keys import range_end

log = logging.getLogger(__name__)

Attrs = Callable[[Object], tuple[Mapping[str, str], Mapping[str, str]]]  # (labels, fields)

# Upstream's progressRequestPeriod: how long a progress request may go unanswered before the next one (etcd
# before 3.5.13 ignores a request while the watch is catching up).
PROGRESS_REQUEST_PERIOD = 0.1
# Upstream's blockTimeout: how long a read waits for the cache to reach its revision before answering 504.
FRESHNESS_TIMEOUT = 3.0


@dataclass(frozen=True)
class Predicate:
    """Which objects a list or watch wants: by labels and fields (upstream: storage.SelectionPredicate)."""

    label: Callable[[Mapping[str, str]], bool] | None = None
    field: Callable[[Mapping[str, str]], bool] | None = None
    # The value `field` requires a given field to equal, or None if it does not pin it (upstream:
    # Field.RequiresExactMatch): watches and lists that pin the cache's trigger field use its index.
    field_exact: Callable[[str], str | None] | None = None

    @property
    def everything(self) -> bool:
        return self.label is None and self.field is None

    def matches(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        if self.label is not None and not self.label(labels):
            return False
        return self.field is None or self.field(fields)


EVERYTHING = Predicate()


class Entry:
    """One cached object with its revision and the labels and fields predicates look at.

    An entry made from a storage event keeps the event and decodes the object (and works out its labels and
    fields) only when something reads it: objects nobody watches or reads — the Events a busy cluster writes
    by the thousand — are never decoded, and wait as the bytes storage sent."""

    __slots__ = ("_attrs", "_data", "_fields", "_labels", "_obj", "key", "revision")

    def __init__(
        self, key: str, obj: Object | None, revision: int, labels: Mapping[str, str], fields: Mapping[str, str]
    ) -> None:
        self.key = key
        self.revision = revision
        self._obj = obj
        self._labels = labels
        self._fields = fields
        self._data: bytes | None = None
        self._attrs: Attrs | None = None

    @classmethod
    def deferred(cls, event: WatchEvent, attrs: Attrs) -> Entry:
        """The entry for the object a storage event carries (for DELETED, its last state), not decoded yet."""
        entry = cls(event.key, None, event.revision, {}, {})
        entry._data = event.prev_value if event.type == DELETED else event.value
        entry._attrs = attrs
        return entry

    def _materialise(self) -> Object:
        if self._obj is None:
            assert self._data is not None and self._attrs is not None
            obj = codec.decode(self._data, self.revision, key=self.key)
            self._labels, self._fields = self._attrs(obj)
            self._obj, self._data = obj, None
        return self._obj

    @property
    def obj(self) -> Object:
        return self._obj if self._obj is not None else self._materialise()

    @property
    def labels(self) -> Mapping[str, str]:
        self._materialise()
        return self._labels

    @property
    def fields(self) -> Mapping[str, str]:
        self._materialise()
        return self._fields

    def __repr__(self) -> str:
        return f"Entry({self.key!r}, revision={self.revision})"


@dataclass
class CacheEvent:
    """A change as the cache saw it; `prev` is the entry before it (None for ADDED)."""

    type: str
    key: str
    revision: int
    entry: Entry | None  # the object after the change (the last state for DELETED)
    prev: Entry | None
    memo: dict[Any, Any] = field(default_factory=dict)  # encodings shared by all watchers


@dataclass
class WatchedEvent:
    """What one watcher receives: the event type as this watcher sees it, and the shared event."""

    type: str
    event: CacheEvent | None  # None for bookmarks
    revision: int
    initial_events_end: bool = False  # the bookmark that ends a WatchList's initial events

    @property
    def object(self) -> Object | None:
        e = self.event
        if e is None or e.entry is None:
            return None
        return e.entry.obj


class CacheWatcher:
    """One watch served from the cache."""

    def __init__(
        self,
        cacher: Cacher,
        prefix: str,
        predicate: Predicate,
        bookmarks: bool,
        queue_size: int,
        trigger_value: str | None = None,
    ) -> None:
        self.cacher = cacher
        self.prefix = prefix
        self.predicate = predicate
        self.trigger_value = trigger_value  # the value its selector pins the cache's trigger field to
        self.bookmarks = bookmarks
        self.queue: asyncio.Queue[WatchedEvent | BaseException | None] = asyncio.Queue(queue_size)
        self.last_revision = 0
        self.after = 0  # events at or before this revision are not for this watcher (it started after them)
        self.stopped = False

    def offer(self, event: CacheEvent) -> None:
        if self.stopped or event.revision <= self.after or not event.key.startswith(self.prefix):
            return
        typ = _as_seen(event, self.predicate)
        if typ is None:
            return
        self._put(WatchedEvent(typ, event, event.revision))

    def offer_bookmark(self, revision: int) -> None:
        if self.bookmarks and not self.stopped and revision > self.last_revision and self.queue.empty():
            self._put(WatchedEvent(BOOKMARK, None, revision))

    def _put(self, item: WatchedEvent) -> None:
        try:
            self.queue.put_nowait(item)
            self.last_revision = item.revision
        except asyncio.QueueFull:
            # Too slow: end this watch rather than hold unbounded memory; the client resumes from the
            # last resourceVersion it processed.
            log.info("watcher of %s is too slow; ending its watch", self.prefix)
            self.stop()

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.cacher._watchers.discard(self)
            # Wake a consumer blocked on get(); the sentinel may not fit if the queue is full.
            while True:
                try:
                    self.queue.put_nowait(None)
                    break
                except asyncio.QueueFull:
                    self.queue.get_nowait()

    def __aiter__(self) -> CacheWatcher:
        return self

    async def __anext__(self) -> WatchedEvent:
        item = await self.queue.get()
        if item is None:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self.stop()
            raise item
        return item

    def next_nowait(self) -> WatchedEvent | None:
        """The next queued event without waiting, or None (lets a handler batch its writes)."""
        try:
            item = self.queue.get_nowait()
        except asyncio.QueueEmpty:
            return None
        if item is None:
            self.queue.put_nowait(None)  # keep the end marker for the next __anext__
            return None
        if isinstance(item, BaseException):
            self.queue.put_nowait(item)
            return None
        return item


def _as_seen(event: CacheEvent, pred: Predicate) -> str | None:
    """The event type a watcher with predicate `pred` sees, or None if the event is not for it."""
    if pred.everything:
        return event.type
    cur = event.entry
    prev = event.prev
    if event.type == DELETED:
        return DELETED if prev is not None and pred.matches(prev.labels, prev.fields) else None
    cur_ok = cur is not None and pred.matches(cur.labels, cur.fields)
    prev_ok = prev is not None and pred.matches(prev.labels, prev.fields)
    if cur_ok:
        return MODIFIED if prev_ok else ADDED
    return DELETED if prev_ok else None


class Cacher:
    """The watch cache of one storage directory; see the module docstring."""

    def __init__(
        self,
        storage: Storage,
        prefix: str,
        attrs: Attrs,
        *,
        history: int = 100_000,
        history_seconds: float = 300.0,
        watcher_queue: int = 10_000,
        bookmark_interval: float = 60.0,
        trigger: str | None = None,
    ) -> None:
        self.storage = storage
        self.prefix = prefix
        self.attrs = attrs
        # The field watchers and lists are indexed by (upstream: the registry's TriggerFunc and Indexers).
        self.trigger = trigger
        self._index = TriggerIndex(trigger) if trigger is not None else None
        self.history = history
        self.history_seconds = history_seconds
        self.watcher_queue = watcher_queue
        self.bookmark_interval = bookmark_interval
        self._entries: dict[str, Entry] = {}
        self._sorted_keys: list[str] | None = []
        self._events: collections.deque[tuple[float, CacheEvent]] = collections.deque()
        self._oldest = 0  # events after this revision are all in the window
        self.revision = 0
        self._watchers = IndexedWatchers()
        self._ready = asyncio.Event()
        self._stopped = False
        self._advanced = asyncio.Event()  # set (and replaced) whenever the revision advances
        self._progressed = asyncio.Event()  # set (and replaced) at each progress notification from storage
        self._task: asyncio.Task[None] | None = None
        self._watch: Watch | None = None
        self._bookmark_task: asyncio.Task[None] | None = None
        self._waiting = 0  # reads waiting in wait_until_fresh
        self._wanted = 0  # the highest revision one of them waits for
        self._progress_wanted = asyncio.Event()
        self._progress_task: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"cacher {self.prefix}")
        self._bookmark_task = asyncio.create_task(self._bookmarks(), name=f"cacher bookmarks {self.prefix}")
        self._progress_task = asyncio.create_task(self._request_progress(), name=f"cacher progress {self.prefix}")

    async def wait_ready(self, timeout: float | None = None) -> None:
        if self._ready.is_set():
            return  # the common case, without wait_for's task and timer
        await asyncio.wait_for(self._ready.wait(), timeout)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def stop(self) -> None:
        self._stopped = True
        tasks = [t for t in (self._task, self._bookmark_task, self._progress_task) if t is not None]
        # Cancelled again until they end: on 3.11 a storage watch's wait_for drops a cancel that lands as a
        # write wakes it (CPython gh-86296), and one cancel would leave stop() waiting for good.
        pending = set(tasks)
        while pending:
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.1)
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in list(self._watchers):
            w.stop()

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                await self._list_and_watch()
                backoff = 0.1
            except asyncio.CancelledError:
                raise
            except Exception as err:  # storage trouble: relist after a pause, watchers resume by revision
                log.warning("watch cache for %s: %s; relisting", self.prefix, err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def _list_and_watch(self) -> None:
        if not self._ready.is_set():
            await self._initial_list()
        try:
            watch = await self.storage.watch(self.prefix, self.revision, progress_notify=True)
        except GoneError:
            await self._relist()
            return
        self._watch = watch
        if self._waiting:
            self._progress_wanted.set()  # readers waited while there was no watch to ask
        try:
            async with watch:
                async for ev in watch:
                    self._apply(ev)
        finally:
            self._watch = None

    async def _initial_list(self) -> None:
        res = await self.storage.list(self.prefix)
        for obj in res.items:
            key = self._key_of(obj)
            labels, fields = self.attrs(obj)
            self._entries[key] = Entry(key, obj, int(obj["metadata"]["resourceVersion"]), labels, fields)
        self._sorted_keys = None
        self.revision = self._oldest = res.revision
        self._ready.set()

    async def _relist(self) -> None:
        """After losing the storage watch beyond its history: rebuild; every watcher ends and re-watches."""
        res = await self.storage.list(self.prefix)
        fresh: dict[str, Entry] = {}
        for obj in res.items:
            key = self._key_of(obj)
            labels, fields = self.attrs(obj)
            fresh[key] = Entry(key, obj, int(obj["metadata"]["resourceVersion"]), labels, fields)
        self._entries = fresh
        self._sorted_keys = None
        if self._index is not None:
            self._index.reset()
        self._events.clear()
        self.revision = self._oldest = res.revision
        for w in list(self._watchers):
            w.stop()
        self._signal()

    def _key_of(self, obj: Object) -> str:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace")
        return f"{self.prefix}{ns}/{meta['name']}" if ns else f"{self.prefix}{meta['name']}"

    def _apply(self, ev: WatchEvent) -> None:
        if ev.type == BOOKMARK:
            if ev.revision > self.revision:
                self.revision = ev.revision
                self._signal()
            self._progressed.set()
            self._progressed = asyncio.Event()
            return
        key = ev.key
        prev = self._entries.get(key)
        entry = Entry.deferred(ev, self.attrs)
        if ev.type == DELETED:
            self._entries.pop(key, None)
            if self._sorted_keys is not None and prev is not None:
                i = bisect.bisect_left(self._sorted_keys, key)
                if i < len(self._sorted_keys) and self._sorted_keys[i] == key:
                    del self._sorted_keys[i]
        else:
            self._entries[key] = entry
            if self._sorted_keys is not None and prev is None:
                bisect.insort(self._sorted_keys, key)
        if self._index is not None:
            self._index.changed(key)
        # After a relist the cache may not know an object storage calls MODIFIED: to the cache it is new.
        typ = ADDED if ev.type == MODIFIED and prev is None else ev.type
        event = CacheEvent(typ, key, ev.revision, entry, prev)
        self._record(event)
        self.revision = ev.revision
        self._watchers.dispatch(event, self.trigger)
        self._signal()

    def _record(self, event: CacheEvent) -> None:
        now = time.monotonic()
        self._events.append((now, event))
        while len(self._events) > self.history or (
            len(self._events) > 100 and now - self._events[0][0] > self.history_seconds
        ):
            _, old = self._events.popleft()
            self._oldest = old.revision

    def trim(self, revision: int) -> None:
        """Forget events at or below `revision` (storage compacted there): watches from older
        resourceVersions now answer 410, as they would against storage."""
        while self._events and self._events[0][1].revision <= revision:
            self._events.popleft()
        self._oldest = max(self._oldest, min(revision, self.revision))

    def _signal(self) -> None:
        self._advanced.set()
        self._advanced = asyncio.Event()

    async def _bookmarks(self) -> None:
        while True:
            await asyncio.sleep(self.bookmark_interval)
            for w in list(self._watchers):
                w.offer_bookmark(self.revision)

    # -- reads -----------------------------------------------------------------------------------------

    async def wait_until_fresh(self, revision: int, timeout: float = FRESHNESS_TIMEOUT) -> None:
        """Return once the cache has seen `revision`; TooLargeResourceVersionError after `timeout`."""
        if self.revision >= revision and self._ready.is_set():
            return
        await self.wait_ready(timeout=30.0)
        if self.revision >= revision:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self._waiting += 1
        self._wanted = max(self._wanted, revision)
        self._progress_wanted.set()
        try:
            while self.revision < revision:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TooLargeResourceVersionError(revision, self.revision)
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that arrives just as the
                # event is set (CPython gh-86296, fixed in 3.12), and stop() would then wait for good.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await self._advanced.wait()
        finally:
            self._waiting -= 1
            if not self._waiting:
                self._wanted = 0

    async def _request_progress(self) -> None:
        """While reads wait for a revision the cache has not reached, ask storage for progress notifications,
        one request at a time (see the module docstring). Requests go out only when storage supports them
        reliably: an unreliable answer could claim a revision whose events have not arrived yet."""
        while True:
            await self._progress_wanted.wait()
            self._progress_wanted.clear()
            while self._waiting and self._wanted > self.revision:
                watch = self._watch
                if watch is None or not self.storage.supports(REQUEST_WATCH_PROGRESS):
                    break  # a new watch sets _progress_wanted again
                answered = self._progressed
                await watch.request_progress()
                with contextlib.suppress(TimeoutError):  # (asyncio.timeout: see wait_until_fresh)
                    async with asyncio.timeout(PROGRESS_REQUEST_PERIOD):
                        await answered.wait()

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def list(self, prefix: str, predicate: Predicate = EVERYTHING) -> tuple[list[Entry], int]:
        """Entries under `prefix` that match, sorted by key, and the cache's revision."""
        entries = self._entries
        value = self._trigger_value(predicate)
        if value is not None:
            assert self._index is not None
            out = [entries[k] for k in sorted(self._index.keys(value, entries)) if k.startswith(prefix)]
        else:
            if self._sorted_keys is None:
                self._sorted_keys = sorted(entries)
            keys = self._sorted_keys
            lo = bisect.bisect_left(keys, prefix)
            hi = bisect.bisect_left(keys, range_end(prefix)) if prefix else len(keys)
            out = [entries[k] for k in keys[lo:hi]]
        if not predicate.everything:
            out = [en for en in out if predicate.matches(en.labels, en.fields)]
        return out, self.revision

    def count(self) -> int:
        return len(self._entries)

    def _trigger_value(self, predicate: Predicate) -> str | None:
        """The value `predicate` pins the trigger field to, if the cache has one and it does."""
        if self.trigger is None or predicate.field_exact is None:
            return None
        return predicate.field_exact(self.trigger)

    async def watch(
        self,
        prefix: str,
        from_revision: int | None,
        predicate: Predicate = EVERYTHING,
        *,
        bookmarks: bool = False,
        initial_events_end: bool = False,
    ) -> CacheWatcher:
        """A watch on keys under `prefix`.

        `from_revision` None or 0: ADDED events for the current matching objects first, then changes; with
        `initial_events_end` (a WatchList), a bookmark at the revision of that state follows them.
        Otherwise every change after it; GoneError if the window no longer reaches back that far. A revision
        the cache has not reached yet (one a list from storage returned) is not waited for: the watch starts
        now and passes on the changes after that revision as they come (upstream's cacher does the same).
        """
        await self.wait_ready(timeout=30.0)
        w = CacheWatcher(self, prefix, predicate, bookmarks, self.watcher_queue, self._trigger_value(predicate))
        if not from_revision:
            entries, rev = self.list(prefix, predicate)
            if len(entries) >= self.watcher_queue:
                w.queue = asyncio.Queue(len(entries) + self.watcher_queue)
            for en in entries:
                w._put(WatchedEvent(ADDED, CacheEvent(ADDED, en.key, en.revision, en, None), en.revision))
            if initial_events_end:
                w._put(WatchedEvent(BOOKMARK, None, rev, initial_events_end=True))
            w.last_revision = rev
        else:
            if from_revision < self._oldest:
                raise GoneError(
                    f"too old resource version: {from_revision} ({self._oldest + 1})",
                    revision=from_revision,
                    compacted_revision=self._oldest,
                )
            backlog = [ev for _, ev in self._events if ev.revision > from_revision]
            if len(backlog) >= self.watcher_queue:
                w.queue = asyncio.Queue(len(backlog) + self.watcher_queue)
            for ev in backlog:
                w.offer(ev)
            w.last_revision = max(w.last_revision, from_revision)
            w.after = from_revision
        if self._stopped:
            # A client that re-watched as the server stopped: its watch ends at once, or it would hold the
            # server's shutdown until the connection times out.
            w.stop()
            return w
        self._watchers.add(w)
        return w

    @property
    def watcher_count(self) -> int:
        return len(self._watchers)
