"""Watches on the embedded store: catch up from the log, then follow the write path.

A watch that starts in the past (or falls more than `_MAX_BUFFERED_EVENTS` behind) reads the log in steps
of `_CATCH_UP_ROWS` rows; once a step comes back short it has read everything up to the store's revision and
goes live: the writer hands it each committed event. Reading the log and going live happen in one step on
the event loop, which is also where writes commit, so no event falls between them.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Protocol

from .errors import GoneError
from .interface import BOOKMARK, WatchEvent

# Replaying history to a watcher reads this many rows per step, so a long catch-up never holds the loop.
_CATCH_UP_ROWS = 1000
# A live watcher that is this many events behind drops its buffer and catches up from the log instead.
_MAX_BUFFERED_EVENTS = 10_000


class LogSource(Protocol):
    """What a watch needs of the store it follows (`sqlite.SqliteKV`)."""

    @property
    def revision(self) -> int: ...

    @property
    def compacted_revision(self) -> int: ...

    def read_history(self, start: str, end: str, after: int, limit: int) -> list[WatchEvent]: ...

    def remove_watcher(self, watcher: SqliteWatch) -> None: ...


class SqliteWatch:
    """A watch over [start, end): catches up from the log, then follows the write path."""

    def __init__(
        self, kv: LogSource, start: str, end: str, from_revision: int, progress_interval: float | None
    ) -> None:
        self._kv = kv
        self.start = start
        self.end = end
        self.position = from_revision  # the revision of the last event handed out (or the start)
        self.live = False  # when True, the write path appends events to `buffer`
        self.buffer: collections.deque[WatchEvent] = collections.deque()
        self._wake = asyncio.Event()
        self._progress_interval = progress_interval
        self._stopped = False
        self._progress_wanted = False
        self._error: BaseException | None = None

    def matches(self, key: str) -> bool:
        return self.start <= key < self.end

    def deliver(self, event: WatchEvent) -> None:
        if not self.live:
            return
        if len(self.buffer) >= _MAX_BUFFERED_EVENTS:
            # Too slow to keep up: forget the buffer and re-read the log from where the consumer is.
            self.buffer.clear()
            self.live = False
        else:
            self.buffer.append(event)
        self._wake.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._wake.set()

    def __aiter__(self) -> SqliteWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._stopped:
                raise StopAsyncIteration
            if self._error is not None:
                err, self._error = self._error, None
                self._stopped = True
                self._kv.remove_watcher(self)
                raise err
            if self.buffer:
                event = self.buffer.popleft()
                self.position = event.revision
                return event
            if self._progress_wanted and self.live:
                self._progress_wanted = False
                self.position = self._kv.revision
                return WatchEvent(BOOKMARK, "", self.position, None)
            if not self.live:
                try:
                    self._catch_up()
                except GoneError:
                    await self.stop()
                    raise
                continue
            self._wake.clear()
            if self._progress_interval is None:
                await self._wake.wait()
                continue
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for drops a cancel that arrives as the event is set
                # (CPython gh-86296), and a watch stopped just as a write woke it then never ended.
                async with asyncio.timeout(self._progress_interval):
                    await self._wake.wait()
            except TimeoutError:
                if self.live and not self.buffer and not self._stopped and self._error is None:
                    # Everything up to the store's revision has been delivered: say so.
                    self.position = self._kv.revision
                    return WatchEvent(BOOKMARK, "", self.position, None)

    def _catch_up(self) -> None:
        """Read the next rows of the log after `position`; when none are left, go live.

        This runs without awaiting, and writes commit on this same loop, so no event can fall between the
        last row read and the switch to live delivery.
        """
        kv = self._kv
        if self.position < kv.compacted_revision:
            raise GoneError(
                "The resourceVersion for the provided watch is too old.",
                revision=self.position,
                compacted_revision=kv.compacted_revision,
            )
        events = kv.read_history(self.start, self.end, self.position, _CATCH_UP_ROWS)
        self.buffer.extend(events)
        if len(events) < _CATCH_UP_ROWS:
            # The log is read up to the store's revision: later events arrive through `deliver`.
            self.live = True

    async def request_progress(self) -> None:
        """Send a BOOKMARK at the store's revision as soon as everything before it is delivered."""
        if self.live and not self.buffer and not self._stopped:
            self.buffer.append(WatchEvent(BOOKMARK, "", self._kv.revision, None))
            self._wake.set()
        else:
            self._progress_wanted = True

    async def stop(self) -> None:
        self._stopped = True
        self._kv.remove_watcher(self)
        self._wake.set()

    async def __aenter__(self) -> SqliteWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
