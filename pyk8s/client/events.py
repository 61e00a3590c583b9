"""The EventBroadcaster: the queue Events wait in and the task that writes them, as client-go's tools/events
(events.k8s.io/v1) and tools/record (core/v1) broadcasters do.

A component owns one `EventBroadcaster` (upstream: events.eventBroadcasterImpl and record.eventBroadcasterImpl,
joined the way upstream's EventBroadcasterAdapter joins them) and hands out recorders (`event_recorder`):
`new_recorder(reporting_controller, reporting_instance)` gives an `EventRecorder` writing events.k8s.io/v1
Events, `new_core_recorder(component, host)` a `CoreEventRecorder` writing core/v1 Events.

Recording never blocks and never raises into the caller: a recorder builds the Event and puts it on the
broadcaster's bounded queue (upstream maxQueuedEvents, 1000); when the queue is full the event is dropped
and the drop logged (upstream's DropIfChannelFull). One background task (`run()`, or `start()` for a task
of its own) takes events off the queue in order. As upstream, the two kinds are written differently:

- an events.k8s.io Event is folded into the isomorphism cache right there, in order, and then written by a
  task of its own (upstream starts a goroutine per event), at most `max_concurrent_writes` at a time; so the
  queue drains as fast as events arrive and a busy component (the scheduler writes one Scheduled event per
  pod) loses none to a full queue while the API server keeps up;
- core/v1 Events go, in order, to one writer of their own with its own bounded queue (upstream's per-sink
  watcher channel), since the correlator's state depends on the previous write.

`shutdown()` writes what is still queued. A write that fails for want of a connection is retried up to 12
times (upstream maxTriesPerEvent) with `sleep_duration` (10 s) between tries; one the server rejects is dropped.

How repeats are folded, as upstream:

- events.k8s.io (upstream event_broadcaster.go): events with the same type, action, reason,
  reportingController, reportingInstance, regarding and related references (upstream eventKey; the note
  is not part of it) are isomorphic. The first is created and cached. The first repeat turns the cached
  Event into a series (`series: {count: 2, lastObservedTime}`) and PATCHes that onto the Event on the
  server. Later repeats only count up in the cache, writing nothing; the server learns the count from a
  heartbeat every `refresh_time` (upstream refreshTime, 30 min), which patches every series, and from the
  finishing pass every `finish_time` (upstream finishTime, 6 min), which writes a series' final count once it
  has had no repeat for `finish_time` and forgets it (a singleton is forgotten once that old), so the next
  isomorphic event starts a new Event. Unlike upstream, `shutdown()` also writes every series' current
  count, so a clean exit leaves correct counts behind.
- core/v1: each event passes the broadcaster's `EventCorrelator` (`event_correlator`: aggregator, logger,
  spam filter, as upstream events_cache.go) and is then created, PATCHed onto the Event it repeats, or
  skipped.

The recorders and the correlator pieces are re-exported here (`__all__`), so `pyk8s.client.events` stays the
one place to import the events API from.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api import errors
from .event_correlator import (
    EventAggregator,
    EventCorrelateResult,
    EventCorrelator,
    EventLogger,
    EventSourceObjectSpamFilter,
)
from .event_recorder import (
    _V1,
    NOTE_LENGTH_LIMIT,
    CoreEventRecorder,
    EventRecorder,
    Object,
    _ref_key,
    object_reference,
)
from .rest import RESTClient

log = logging.getLogger(__name__)

__all__ = [
    "MAX_QUEUED_EVENTS",
    "NOTE_LENGTH_LIMIT",
    "CoreEventRecorder",
    "EventAggregator",
    "EventBroadcaster",
    "EventCorrelateResult",
    "EventCorrelator",
    "EventLogger",
    "EventRecorder",
    "EventSourceObjectSpamFilter",
    "object_reference",
]

MAX_QUEUED_EVENTS = 1000  # upstream maxQueuedEvents
MAX_TRIES_PER_EVENT = 12  # upstream maxTriesPerEvent
DEFAULT_SLEEP_DURATION = 10.0  # upstream defaultSleepDuration
FINISH_TIME = 6 * 60.0  # upstream finishTime
REFRESH_TIME = 30 * 60.0  # upstream refreshTime
# Upstream starts a goroutine per events.k8s.io write and lets the client's rate limiter pace them; a bound on
# the writes in flight here keeps a burst from opening a connection per event. 32 keeps up with the scheduler
# at full speed (bench/scheduler_perf.py counts every Scheduled event) without queueing at the API server.
MAX_CONCURRENT_WRITES = 32

_EVENTS_V1 = "events.events.k8s.io"
_EVENTS_CORE = "events"
# How often a run of dropped events is reported, so a flood of drops does not become a flood of log lines.
_DROP_LOG_INTERVAL = 10.0


# ---------------------------------------------------------------------------------------------- broadcaster

_STOP = object()


@dataclass
class _CachedEvent:
    """An events.k8s.io Event in the isomorphism cache, and when it was last seen on our clock."""

    event: Object
    last_seen: float


class EventBroadcaster:
    """Owns the event queue and the task that writes events to the API server through `client`.

    `start()` (or `await run()`) begins writing; `await shutdown()` writes what is queued and the current
    series counts, then stops. `queue_size`, `sleep_duration`, `max_tries`, `finish_time` and
    `refresh_time` default to upstream's values; tests shorten them. `max_concurrent_writes` bounds the
    events.k8s.io writes in flight. `correlator` is the core/v1 event correlator (a default one if not given).
    """

    def __init__(
        self,
        client: RESTClient,
        *,
        queue_size: int = MAX_QUEUED_EVENTS,
        sleep_duration: float = DEFAULT_SLEEP_DURATION,
        max_tries: int = MAX_TRIES_PER_EVENT,
        finish_time: float = FINISH_TIME,
        refresh_time: float = REFRESH_TIME,
        max_concurrent_writes: int = MAX_CONCURRENT_WRITES,
        correlator: EventCorrelator | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.sleep_duration = sleep_duration
        self.max_tries = max_tries
        self.finish_time = finish_time
        self.refresh_time = refresh_time
        self.correlator = correlator or EventCorrelator()
        self._clock = clock
        self._queue: asyncio.Queue[tuple[str, Object] | object] = asyncio.Queue(queue_size)
        # core/v1 events wait here for their one writer (upstream: the sink watcher's own channel).
        self._core_queue: asyncio.Queue[Object] = asyncio.Queue(queue_size)
        self._core_writer: asyncio.Task[None] | None = None
        # events.k8s.io writes in flight, each its own task (upstream: a goroutine each), by isomorphism key: the
        # latest per key, which waits for the one before it so a series' counts reach the server in order.
        self._writes: dict[Hashable, asyncio.Task[None]] = {}
        self._write_slots = asyncio.Semaphore(max_concurrent_writes)
        self._event_cache: dict[Hashable, _CachedEvent] = {}
        self._stopping = False
        self._worker: asyncio.Task[Any] | None = None
        self._started: asyncio.Task[None] | None = None
        self.dropped = 0
        self._drops_unreported = 0
        self._last_drop_log = -float("inf")

    # -- recorders --------------------------------------------------------------------------------------

    def new_recorder(self, reporting_controller: str, reporting_instance: str | None = None) -> EventRecorder:
        """An events.k8s.io recorder; the instance defaults to `<controller>-<hostname>` as upstream."""
        if reporting_instance is None:
            reporting_instance = f"{reporting_controller}-{socket.gethostname()}"
        return EventRecorder(self, reporting_controller, reporting_instance)

    def new_core_recorder(self, component: str, host: str = "") -> CoreEventRecorder:
        """A core/v1 recorder for the event source `component` (on `host`)."""
        return CoreEventRecorder(self, component, host)

    def _enqueue(self, kind: str, event: Object) -> None:
        if self._stopping:
            self._drop("the broadcaster is shut down", event)
            return
        if self._queue.full():
            self._drop("too many queued events", event)
            return
        self._queue.put_nowait((kind, event))

    def _drop(self, why: str, event: Object) -> None:
        self.dropped += 1
        self._drops_unreported += 1
        now = self._clock()
        if now - self._last_drop_log >= _DROP_LOG_INTERVAL:
            log.error(
                "unable to record event: %s; dropped %d event(s), latest %s/%s %s",
                why, self._drops_unreported, event["metadata"].get("namespace"), event["metadata"].get("name"),
                event.get("reason"),
            )  # fmt: skip
            self._drops_unreported = 0
            self._last_drop_log = now

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Run the broadcaster in a task of its own (returned)."""
        if self._started is None:
            self._started = asyncio.create_task(self.run(), name="event-broadcaster")
        return self._started

    async def run(self) -> None:
        """Write queued events until `shutdown()`, and run the series heartbeat and finishing passes."""
        if self._stopping and self._queue.empty():
            return
        self._worker = asyncio.current_task()
        next_refresh = self._clock() + self.refresh_time
        next_finish = self._clock() + self.finish_time
        while True:
            item: tuple[str, Object] | object | None = None
            try:
                async with asyncio.timeout(max(0.0, min(next_refresh, next_finish) - self._clock())):
                    item = await self._queue.get()
            except TimeoutError:
                pass
            if item is _STOP:
                self._queue.task_done()
                return
            if item is not None:
                try:
                    self._dispatch(item)  # type: ignore[arg-type]
                except Exception:
                    log.exception("recording an event failed")
                finally:
                    self._queue.task_done()
            # The periodic passes run here, between events, so they never race the recording path.
            now = self._clock()
            if now >= next_finish:
                await self.finish_series()
                next_finish = self._clock() + self.finish_time
            if now >= next_refresh:
                await self.refresh_existing_event_series()
                next_refresh = self._clock() + self.refresh_time

    async def drain(self) -> None:
        """Wait until every event queued so far has been handled (written, folded into a series, or
        given up on). Needs `run()` to be running."""
        await self._queue.join()
        await self._writes_done()

    async def _writes_done(self) -> None:
        await self._core_queue.join()
        while self._writes:
            await asyncio.gather(*self._writes.values(), return_exceptions=True)

    async def _key_idle(self, key: Hashable) -> None:
        """Wait until no write of the isomorphic events `key` is in flight."""
        while (task := self._writes.get(key)) is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def shutdown(self, timeout: float | None = 30.0) -> None:
        """Stop taking events; write what is queued (one try each, as upstream after Shutdown) and every
        series' current count; stop. Whatever is not written within `timeout` seconds is dropped."""
        if self._stopping:
            return
        self._stopping = True
        # The task running run(): ours from start(), or whichever task awaits run().
        worker = next((t for t in (self._worker, self._started) if t is not None and not t.done()), None)
        try:
            async with asyncio.timeout(timeout):
                if worker is not None:
                    await self._queue.join()
                    self._queue.put_nowait(_STOP)
                    await asyncio.shield(worker)
                else:
                    while not self._queue.empty():
                        item = self._queue.get_nowait()
                        self._queue.task_done()
                        if item is not _STOP:
                            self._dispatch(item)  # type: ignore[arg-type]
                await self._writes_done()
                await self.refresh_existing_event_series()
        except TimeoutError:
            unwritten = self._queue.qsize() + self._core_queue.qsize() + len(self._writes)
            log.warning("event broadcaster shut down with %d event(s) not written", unwritten)
        finally:
            pending = [t for t in (worker, self._core_writer, *self._writes.values()) if t is not None and not t.done()]
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def __aenter__(self) -> EventBroadcaster:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def _dispatch(self, item: tuple[str, Object]) -> None:
        """Pass one dequeued event on to its writer without waiting for the write."""
        kind, event = item
        if kind == _V1:
            key = _isomorphic_key(event)
            to_write = self._record_to_sink(key, event)
            if to_write is not None:
                task = asyncio.create_task(self._write_v1(to_write, self._writes.get(key)))
                self._writes[key] = task
                task.add_done_callback(lambda t: self._writes.pop(key) if self._writes.get(key) is t else None)
            return
        if self._core_queue.full():
            self._drop("too many queued events", event)
            return
        self._core_queue.put_nowait(event)
        if self._core_writer is None or self._core_writer.done():
            self._core_writer = asyncio.create_task(self._write_core(), name="event-broadcaster-core")

    async def _write_v1(self, event: Object, after: asyncio.Task[None] | None) -> None:
        try:
            if after is not None:
                await asyncio.gather(after, return_exceptions=True)
            async with self._write_slots:
                await self._attempt_recording(event)
        except Exception:
            log.exception("recording an event failed")

    async def _write_core(self) -> None:
        while True:
            event = await self._core_queue.get()
            try:
                await self._record_core_to_sink(event)
            except Exception:
                log.exception("recording an event failed")
            finally:
                self._core_queue.task_done()

    def _tries(self) -> int:
        return 1 if self._stopping else self.max_tries

    # -- events.k8s.io ----------------------------------------------------------------------------------

    def _record_to_sink(self, key: Hashable, event: Object) -> Object | None:
        """Fold `event`, whose isomorphism key is `key`, into the cache (upstream recordToSink's locked part);
        returns the Event to write, or None when the repeat is only counted."""
        now = self._clock()
        cached = self._event_cache.get(key)
        if cached is not None:
            cached.last_seen = now
            series = cached.event.get("series")
            if series is not None:
                # Counted locally only; the heartbeat, the finishing pass or shutdown writes it.
                series["count"] += 1
                series["lastObservedTime"] = event["eventTime"]
                return None
            cached.event["series"] = {"count": 2, "lastObservedTime": event["eventTime"]}
            return _snapshot(cached.event)
        self._event_cache[key] = _CachedEvent(event, now)
        return _snapshot(event)

    async def _attempt_recording(self, event: Object) -> None:
        tries = 0
        while True:
            _, retry = await self._record_event(event)
            if not retry:
                return
            tries += 1
            if tries >= self._tries():
                log.error("unable to write event %s (retry limit exceeded)", event["metadata"].get("name"))
                return
            await asyncio.sleep(self.sleep_duration * (1 + random.random() * 0.25))

    async def _record_event(self, event: Object) -> tuple[Object | None, bool]:
        """One write (upstream recordEvent): PATCH the series onto an existing Event, or create it.
        Returns the server's Event and whether trying again could help."""
        meta = event["metadata"]
        ns = meta.get("namespace") or ""
        is_series = event.get("series") is not None
        if not ns:
            log.error("cannot write event %s with an empty namespace", meta.get("name"))
            return None, False
        try:
            if is_series:
                try:
                    patched = await self.client.patch(_EVENTS_V1, meta["name"], {"series": event["series"]}, ns)
                    return patched, False
                except errors.NotFound:
                    pass  # deleted meanwhile (or never written): create it whole
            body = {**event, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
            return await self.client.create(_EVENTS_V1, body, ns), False
        except errors.AlreadyExists:
            # A series create losing to the Event's own create is worth another try; a plain duplicate is not.
            return None, is_series
        except errors.StatusError as err:
            log.error("server rejected event %s (will not retry): %s", meta.get("name"), err)
            return None, False
        except Exception as err:
            log.warning("unable to write event %s (may retry): %s", meta.get("name"), err)
            return None, True

    async def refresh_existing_event_series(self) -> None:
        """The heartbeat (upstream refreshExistingEventSeries): write every series' current count."""
        for key, cached in list(self._event_cache.items()):
            if cached.event.get("series") is not None:
                await self._key_idle(key)
                await self._record_event(_snapshot(cached.event))

    async def finish_series(self) -> None:
        """The finishing pass (upstream finishSeries): a series without a repeat for `finish_time` gets its
        final count written and is forgotten; so is a singleton that old."""
        horizon = self._clock() - self.finish_time
        for key, cached in list(self._event_cache.items()):
            if cached.last_seen >= horizon:
                continue
            if cached.event.get("series") is not None:
                await self._key_idle(key)
                _, retry = await self._record_event(_snapshot(cached.event))
                if retry:
                    continue
            if self._event_cache.get(key) is cached:
                del self._event_cache[key]

    # -- core/v1 ----------------------------------------------------------------------------------------

    async def _record_core_to_sink(self, event: Object) -> None:
        result = self.correlator.correlate(event)
        if result.skip or result.event is None:
            return
        tries = 0
        while True:
            if await self._record_core_event(result.event, result.patch):
                return
            tries += 1
            if tries >= self._tries():
                log.error("unable to write event %s (retry limit exceeded)", result.event["metadata"].get("name"))
                return
            # The first wait is random, so clients cut off together do not come back together.
            delay = self.sleep_duration * (random.random() if tries == 1 else 1.0)
            await asyncio.sleep(delay)

    async def _record_core_event(self, event: Object, patch: Object | None) -> bool:
        """One write of a core Event: PATCH a repeat, create a new one. True when done (written or
        rejected), False when worth another try."""
        meta = event["metadata"]
        ns = meta.get("namespace") or ""
        try:
            written: Object | None = None
            if int(event.get("count") or 0) > 1 and patch is not None:
                try:
                    written = await self.client.patch(_EVENTS_CORE, meta["name"], patch, ns)
                except errors.NotFound:
                    written = None
            if written is None:
                body = {**event, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
                written = await self.client.create(_EVENTS_CORE, body, ns)
        except errors.AlreadyExists as err:
            log.debug("server rejected event %s (will not retry): %s", meta.get("name"), err)
            return True
        except errors.StatusError as err:
            log.error("server rejected event %s (will not retry): %s", meta.get("name"), err)
            return True
        except Exception as err:
            log.warning("unable to write event %s (may retry): %s", meta.get("name"), err)
            return False
        self.correlator.update_state(written)
        return True


def _snapshot(event: Object) -> Object:
    """A copy of a cached Event to write while the cache lives on. Only `series` (added, then counted up in
    place) ever changes in a cached Event, so a shallow copy with its own `series` is enough."""
    out = dict(event)
    series = out.get("series")
    if series is not None:
        out["series"] = dict(series)
    return out


def _isomorphic_key(event: Mapping[str, Any]) -> tuple[Hashable, ...]:
    """What makes two events.k8s.io events the same thing happening again (upstream eventKey)."""
    return (
        event.get("type") or "",
        event.get("action") or "",
        event.get("reason") or "",
        event.get("reportingController") or "",
        event.get("reportingInstance") or "",
        _ref_key(event.get("regarding")),
        _ref_key(event.get("related")),
    )
