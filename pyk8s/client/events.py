"""Recording Events about objects, the way client-go's tools/events (events.k8s.io/v1) and tools/record
(core/v1) do.

A component owns one `EventBroadcaster` (upstream: events.eventBroadcasterImpl and record.eventBroadcasterImpl,
joined the way upstream's EventBroadcasterAdapter joins them) and hands out recorders:

- `EventRecorder` (upstream events.recorderImpl), from `new_recorder(reporting_controller,
  reporting_instance)`: `eventf(regarding, related, type, reason, action, note, *args)` writes
  events.k8s.io/v1 Events.
- `CoreEventRecorder` (upstream record.recorderImpl), from `new_core_recorder(component, host)`:
  `event(obj, type, reason, message)` / `eventf(...)` write core/v1 Events.

Recording never blocks and never raises into the caller: a recorder builds the Event and puts it on the
broadcaster's bounded queue (upstream maxQueuedEvents, 1000); when the queue is full the event is dropped
and the drop logged (upstream's DropIfChannelFull). One background task (`run()`, or `start()` for a task
of its own) takes events off the queue in order and writes them; `shutdown()` writes what is still queued.
A write that fails for want of a connection is retried up to 12 times (upstream maxTriesPerEvent) with
`sleep_duration` (10 s) between tries; one the server rejects is dropped.

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
- core/v1 (upstream events_cache.go, the EventCorrelator), applied in this order to each event:
  the aggregator (`EventAggregator`) groups events by source, involved object, type, reason and reporting
  fields; once 10 different messages were seen in the group within 10 minutes, the event is replaced by
  one whose message is "(combined from similar events): <message>"; the logger (`EventLogger`, upstream
  eventLogger) turns an event seen before (same source, object, type, reason, message) into a PATCH of the
  existing Event's count, lastTimestamp and message; the spam filter (`EventSourceObjectSpamFilter`)
  allows each source+object a burst of 25 events, refilled at one per 5 minutes, and drops the rest. The
  logger counts an event before the filter can drop it, as upstream, so a later accepted repeat carries the
  full count.

Names are `<object name>.<hex nanoseconds>` as upstream, made strictly increasing within the process so
two events in one nanosecond still get distinct names. The namespace is the object's, or "default".
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
import random
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..api import errors
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

Object = dict[str, Any]

MAX_QUEUED_EVENTS = 1000  # upstream maxQueuedEvents
MAX_TRIES_PER_EVENT = 12  # upstream maxTriesPerEvent
DEFAULT_SLEEP_DURATION = 10.0  # upstream defaultSleepDuration
FINISH_TIME = 6 * 60.0  # upstream finishTime
REFRESH_TIME = 30 * 60.0  # upstream refreshTime
NOTE_LENGTH_LIMIT = 1024  # upstream validation.NoteLengthLimit, in bytes
EVENT_TYPES = ("Normal", "Warning")

# upstream events_cache.go defaults
MAX_LRU_CACHE_ENTRIES = 4096
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL = 600.0
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
AGGREGATE_MESSAGE_PREFIX = "(combined from similar events): "

_EVENTS_V1 = "events.events.k8s.io"
_EVENTS_CORE = "events"
_REFERENCE_FIELDS = ("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion", "fieldPath")
# How often a run of dropped events is reported, so a flood of drops does not become a flood of log lines.
_DROP_LOG_INTERVAL = 10.0


# ---------------------------------------------------------------------------------------------- helpers


def object_reference(obj: Mapping[str, Any] | None) -> Object | None:
    """An ObjectReference to `obj` (upstream reference.GetReference): apiVersion, kind, namespace, name,
    uid and resourceVersion of an object dict; a dict that already is a reference is copied. None when
    there is nothing to refer to (no kind or no name)."""
    if not obj:
        return None
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        ref = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
    else:
        ref = {k: obj.get(k) for k in _REFERENCE_FIELDS}
    out = {k: str(v) for k, v in ref.items() if v}
    if not out.get("kind") or not out.get("name"):
        return None
    return out


def _ref_key(ref: Mapping[str, Any] | None) -> tuple[str, ...]:
    ref = ref or {}
    return tuple(str(ref.get(k) or "") for k in _REFERENCE_FIELDS)


_last_nanos = 0


def _unique_suffix() -> str:
    """Upstream's name suffix, hex Unix nanoseconds, but never repeated within this process."""
    global _last_nanos
    n = time.time_ns()
    if n <= _last_nanos:
        n = _last_nanos + 1
    _last_nanos = n
    return f"{n:x}"


def _micro(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _format(fmt: str, args: tuple[Any, ...]) -> str:
    """printf-style formatting of an event message that never raises (Go's Sprintf never panics)."""
    if not args:
        return fmt
    try:
        return fmt % args
    except (TypeError, ValueError, KeyError):
        return " ".join([fmt, *(str(a) for a in args)])


def truncate_note(note: str, limit: int = NOTE_LENGTH_LIMIT) -> str:
    """`note` cut to `limit` bytes of UTF-8 with a " ..." marker, as upstream's truncateMessage does for
    the API's note length limit; never splits a character."""
    raw = note.encode()
    if len(raw) <= limit:
        return note
    suffix = " ..."
    return raw[: limit - len(suffix)].decode(errors="ignore") + suffix


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A bounded map that forgets the least recently used key (upstream groupcache lru.Cache)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


# ---------------------------------------------------------------------------------------------- recorders


class EventRecorder:
    """Records events.k8s.io/v1 Events for one reporting controller instance (upstream events.recorderImpl)."""

    def __init__(self, broadcaster: EventBroadcaster, reporting_controller: str, reporting_instance: str) -> None:
        self.broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance

    def eventf(
        self,
        regarding: Mapping[str, Any] | None,
        related: Mapping[str, Any] | None,
        type: str,
        reason: str,
        action: str,
        note: str,
        *args: Any,
    ) -> None:
        """Record that `action` happened to `regarding` (an object dict or an ObjectReference) for `reason`,
        with `note % args` as the human-readable note. `type` is "Normal" or "Warning". Returns at once;
        problems are logged, never raised."""
        try:
            self._eventf(regarding, related, type, reason, action, note, args)
        except Exception:
            log.exception("could not record event %s/%s", reason, action)

    def _eventf(
        self,
        regarding: Mapping[str, Any] | None,
        related: Mapping[str, Any] | None,
        type_: str,
        reason: str,
        action: str,
        note: str,
        args: tuple[Any, ...],
    ) -> None:
        message = _format(note, args)
        ref = object_reference(regarding)
        if ref is None:
            log.error("could not construct a reference to %r; will not report event %s %s %s", regarding, type_, reason, message)  # fmt: skip
            return
        if type_ not in EVENT_TYPES:
            log.error("unsupported event type %r; will not report event %s %s", type_, reason, message)
            return
        now = dt.datetime.now(dt.UTC)
        event: Object = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{_unique_suffix()}", "namespace": ref.get("namespace") or "default"},
            "eventTime": _micro(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": ref,
            "note": truncate_note(message),
            "type": type_,
        }
        related_ref = object_reference(related)
        if related_ref is not None:
            event["related"] = related_ref
        self.broadcaster._enqueue(_V1, event)


class CoreEventRecorder:
    """Records core/v1 Events for one event source (upstream record.recorderImpl with its EventSource)."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self.broadcaster = broadcaster
        self.component = component
        self.host = host

    def event(self, obj: Mapping[str, Any] | None, type: str, reason: str, message: str) -> None:
        """Record an event about `obj` (an object dict or an ObjectReference). Returns at once; problems
        are logged, never raised."""
        self.annotated_eventf(obj, None, type, reason, "%s", message)

    def eventf(self, obj: Mapping[str, Any] | None, type: str, reason: str, message_fmt: str, *args: Any) -> None:
        self.annotated_eventf(obj, None, type, reason, message_fmt, *args)

    def annotated_eventf(
        self,
        obj: Mapping[str, Any] | None,
        annotations: Mapping[str, str] | None,
        type: str,
        reason: str,
        message_fmt: str,
        *args: Any,
    ) -> None:
        try:
            self._generate(obj, annotations, type, reason, _format(message_fmt, args))
        except Exception:
            log.exception("could not record event %s", reason)

    def _generate(
        self,
        obj: Mapping[str, Any] | None,
        annotations: Mapping[str, str] | None,
        type_: str,
        reason: str,
        message: str,
    ) -> None:
        ref = object_reference(obj)
        if ref is None:
            log.error("could not construct a reference to %r; will not report event %s %s %s", obj, type_, reason, message)  # fmt: skip
            return
        if type_ not in EVENT_TYPES:
            log.error("unsupported event type %r; will not report event %s %s", type_, reason, message)
            return
        stamp = _seconds(dt.datetime.now(dt.UTC))
        metadata: Object = {"name": f"{ref['name']}.{_unique_suffix()}", "namespace": ref.get("namespace") or "default"}
        if annotations:
            metadata["annotations"] = dict(annotations)
        source: Object = {"component": self.component}
        if self.host:
            source["host"] = self.host
        event: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": metadata,
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": type_,
            "source": source,
            "reportingComponent": self.component,
        }
        if self.host:
            event["reportingInstance"] = self.host
        self.broadcaster._enqueue(_CORE, event)


# ---------------------------------------------------------------------------------------------- correlator


def _event_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """Everything that makes two core events the same occurrence (upstream getEventKey)."""
    src = event.get("source") or {}
    inv = event.get("involvedObject") or {}
    return (
        src.get("component") or "",
        src.get("host") or "",
        inv.get("kind") or "",
        inv.get("namespace") or "",
        inv.get("name") or "",
        inv.get("fieldPath") or "",
        inv.get("uid") or "",
        inv.get("apiVersion") or "",
        event.get("type") or "",
        event.get("reason") or "",
        event.get("message") or "",
    )


def _spam_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """One source reporting about one object (upstream getSpamKey)."""
    src = event.get("source") or {}
    inv = event.get("involvedObject") or {}
    return (
        src.get("component") or "",
        src.get("host") or "",
        inv.get("kind") or "",
        inv.get("namespace") or "",
        inv.get("name") or "",
        inv.get("uid") or "",
        inv.get("apiVersion") or "",
    )


def _aggregate_key(event: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """The group an event is aggregated in, and what tells it apart inside the group (upstream
    EventAggregatorByReasonFunc: everything but the message, and the message)."""
    src = event.get("source") or {}
    inv = event.get("involvedObject") or {}
    group = (
        src.get("component") or "",
        src.get("host") or "",
        inv.get("kind") or "",
        inv.get("namespace") or "",
        inv.get("name") or "",
        inv.get("uid") or "",
        inv.get("apiVersion") or "",
        event.get("type") or "",
        event.get("reason") or "",
        event.get("reportingComponent") or "",
        event.get("reportingInstance") or "",
    )
    return group, event.get("message") or ""


class _TokenBucket:
    """A token bucket that starts full (golang.org/x/time/rate, as upstream's flowcontrol uses)."""

    __slots__ = ("burst", "last", "qps", "tokens")

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def try_accept(self, now: float) -> bool:
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class EventSourceObjectSpamFilter:
    """Limits how many events one source may send about one object: `burst` at once, then `qps`."""

    def __init__(
        self,
        lru_cache_size: int = MAX_LRU_CACHE_ENTRIES,
        burst: int = DEFAULT_SPAM_BURST,
        qps: float = DEFAULT_SPAM_QPS,
        clock: Callable[[], float] = time.monotonic,
        spam_key: Callable[[Mapping[str, Any]], Hashable] = _spam_key,
    ) -> None:
        self._cache: _LRU[Hashable, _TokenBucket] = _LRU(lru_cache_size)
        self.burst = burst
        self.qps = qps
        self._clock = clock
        self._spam_key = spam_key

    def filter(self, event: Mapping[str, Any]) -> bool:
        """True when the event must be skipped."""
        key = self._spam_key(event)
        now = self._clock()
        bucket = self._cache.get(key)
        if bucket is None:
            bucket = _TokenBucket(self.qps, self.burst, now)
        accepted = bucket.try_accept(now)
        self._cache.add(key, bucket)
        return not accepted


@dataclass
class _AggregateRecord:
    local_keys: set[str]
    last_timestamp: float


class EventAggregator:
    """Folds events that differ only in their message into one "combined" event once there are many."""

    def __init__(
        self,
        lru_cache_size: int = MAX_LRU_CACHE_ENTRIES,
        max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS,
        max_interval: float = DEFAULT_AGGREGATE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache: _LRU[tuple[str, ...], _AggregateRecord] = _LRU(lru_cache_size)
        self.max_events = max_events
        self.max_interval = max_interval
        self._clock = clock

    def event_aggregate(self, event: Object) -> tuple[Object, Hashable]:
        """The event to record (the input, or an aggregate standing for it) and the key the logger
        should count it under."""
        now = self._clock()
        group, local = _aggregate_key(event)
        record = self._cache.get(group)
        if record is None or now - record.last_timestamp > self.max_interval:
            record = _AggregateRecord(set(), now)
        record.local_keys.add(local)
        record.last_timestamp = now
        self._cache.add(group, record)
        if len(record.local_keys) < self.max_events:
            return event, _event_key(event)
        # Keep the set at its bound, so the next different message aggregates again.
        record.local_keys.pop()
        stamp = _seconds(dt.datetime.now(dt.UTC))
        inv = event.get("involvedObject") or {}
        aggregate: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{inv.get('name', '')}.{_unique_suffix()}",
                "namespace": (event.get("metadata") or {}).get("namespace", ""),
            },
            "count": 1,
            "firstTimestamp": stamp,
            "involvedObject": inv,
            "lastTimestamp": stamp,
            "message": AGGREGATE_MESSAGE_PREFIX + (event.get("message") or ""),
            "type": event.get("type", ""),
            "reason": event.get("reason", ""),
            "source": event.get("source") or {},
        }
        return aggregate, ("aggregate", *group)


@dataclass
class _EventLog:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


class EventLogger:
    """Counts occurrences of each event, turning a repeat into a patch of the existing Event (upstream
    eventLogger)."""

    def __init__(self, lru_cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._cache: _LRU[Hashable, _EventLog] = _LRU(lru_cache_size)

    def event_observe(self, event: Object, key: Hashable) -> tuple[Object, Object | None]:
        """The event to write and, for a repeat, the strategic merge patch to send instead."""
        event = {**event, "metadata": dict(event.get("metadata") or {})}
        last = self._cache.get(key)
        patch: Object | None = None
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            if last.resource_version:
                event["metadata"]["resourceVersion"] = last.resource_version
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            # What a repeat changes on the stored Event (upstream diffs against a copy with these zeroed).
            patch = {"count": event["count"], "lastTimestamp": event.get("lastTimestamp")}
            if event.get("message"):
                patch["message"] = event["message"]
        self._cache.add(
            key,
            _EventLog(
                count=int(event.get("count") or 0),
                first_timestamp=str(event.get("firstTimestamp") or ""),
                name=event["metadata"].get("name", ""),
                resource_version=event["metadata"].get("resourceVersion", ""),
            ),
        )
        return event, patch

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Remember the server's copy (its name, resourceVersion and count) after a write."""
        meta = event.get("metadata") or {}
        self._cache.add(
            _event_key(event),
            _EventLog(
                count=int(event.get("count") or 0),
                first_timestamp=str(event.get("firstTimestamp") or ""),
                name=meta.get("name", ""),
                resource_version=meta.get("resourceVersion", ""),
            ),
        )


@dataclass
class EventCorrelateResult:
    """What to do with a core event: write `event` (with `patch`, when it repeats one on the server), or
    `skip` it."""

    event: Object | None = None
    patch: Object | None = None
    skip: bool = False


class EventCorrelator:
    """Filters, aggregates and de-duplicates core/v1 events before they reach the API server (upstream
    EventCorrelator, with CorrelatorOptions as keyword arguments)."""

    def __init__(
        self,
        *,
        lru_cache_size: int = MAX_LRU_CACHE_ENTRIES,
        burst: int = DEFAULT_SPAM_BURST,
        qps: float = DEFAULT_SPAM_QPS,
        max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS,
        max_interval: float = DEFAULT_AGGREGATE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spam_filter = EventSourceObjectSpamFilter(lru_cache_size, burst, qps, clock)
        self.aggregator = EventAggregator(lru_cache_size, max_events, max_interval, clock)
        self.logger = EventLogger(lru_cache_size)

    def correlate(self, event: Object) -> EventCorrelateResult:
        aggregated, key = self.aggregator.event_aggregate(event)
        observed, patch = self.logger.event_observe(aggregated, key)
        if self.spam_filter.filter(observed):
            return EventCorrelateResult(skip=True)
        return EventCorrelateResult(event=observed, patch=patch)

    def update_state(self, event: Mapping[str, Any]) -> None:
        self.logger.update_state(event)


# ---------------------------------------------------------------------------------------------- broadcaster

_V1 = "events.k8s.io"
_CORE = "core"
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
    `refresh_time` default to upstream's values; tests shorten them. `correlator` is the core/v1 event
    correlator (a default one if not given).
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
                    await self._handle(item)  # type: ignore[arg-type]
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
                            await self._handle(item)  # type: ignore[arg-type]
                await self.refresh_existing_event_series()
        except TimeoutError:
            log.warning("event broadcaster shut down with %d event(s) not written", self._queue.qsize())
        finally:
            if worker is not None and not worker.done():
                worker.cancel()
                await asyncio.gather(worker, return_exceptions=True)

    async def __aenter__(self) -> EventBroadcaster:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def _handle(self, item: tuple[str, Object]) -> None:
        kind, event = item
        if kind == _V1:
            await self._record_to_sink(event)
        else:
            await self._record_core_to_sink(event)

    def _tries(self) -> int:
        return 1 if self._stopping else self.max_tries

    # -- events.k8s.io ----------------------------------------------------------------------------------

    async def _record_to_sink(self, event: Object) -> None:
        key = _isomorphic_key(event)
        now = self._clock()
        cached = self._event_cache.get(key)
        if cached is not None:
            cached.last_seen = now
            series = cached.event.get("series")
            if series is not None:
                # Counted locally only; the heartbeat, the finishing pass or shutdown writes it.
                series["count"] += 1
                series["lastObservedTime"] = event["eventTime"]
                return
            cached.event["series"] = {"count": 2, "lastObservedTime": event["eventTime"]}
            to_write = copy.deepcopy(cached.event)
        else:
            self._event_cache[key] = _CachedEvent(event, now)
            to_write = copy.deepcopy(event)
        await self._attempt_recording(to_write)

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
        for cached in list(self._event_cache.values()):
            if cached.event.get("series") is not None:
                await self._record_event(copy.deepcopy(cached.event))

    async def finish_series(self) -> None:
        """The finishing pass (upstream finishSeries): a series without a repeat for `finish_time` gets its
        final count written and is forgotten; so is a singleton that old."""
        horizon = self._clock() - self.finish_time
        for key, cached in list(self._event_cache.items()):
            if cached.last_seen >= horizon:
                continue
            if cached.event.get("series") is not None:
                _, retry = await self._record_event(copy.deepcopy(cached.event))
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
