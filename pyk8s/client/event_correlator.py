"""The core/v1 EventCorrelator: what happens to a core Event between its recorder and the API server, as
client-go's tools/record events_cache.go does it.

`EventCorrelator` (upstream EventCorrelator, with CorrelatorOptions as keyword arguments) applies, in this
order, to each event the broadcaster takes off its queue:

- the aggregator (`EventAggregator`, upstream EventAggregator with EventAggregatorByReasonFunc) groups events
  by source, involved object, type, reason and reporting fields; once 10 different messages were seen in the
  group within 10 minutes, the event is replaced by one whose message is
  "(combined from similar events): <message>";
- the logger (`EventLogger`, upstream eventLogger) turns an event seen before (same source, object, type,
  reason, message; upstream getEventKey) into a PATCH of the existing Event's count, lastTimestamp and
  message;
- the spam filter (`EventSourceObjectSpamFilter`, upstream EventSourceObjectSpamFilter) allows each
  source+object (upstream getSpamKey) a burst of 25 events, refilled at one per 5 minutes, and drops the
  rest.

The logger counts an event before the filter can drop it, as upstream, so a later accepted repeat carries the
full count. Each keeps an LRU cache of 4096 entries (upstream maxLruCacheEntries). The result
(`EventCorrelateResult`) says whether to skip the event or write it, and with what patch; after a write,
`update_state` remembers the server's copy.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .event_recorder import Object, _seconds, _unique_suffix
from .flowcontrol import TokenBucket

# upstream events_cache.go defaults
MAX_LRU_CACHE_ENTRIES = 4096
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL = 600.0
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
AGGREGATE_MESSAGE_PREFIX = "(combined from similar events): "


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


def _source_and_object(event: Mapping[str, Any]) -> tuple[str, ...]:
    """Who reports (source component and host) about which object: the part every key below shares."""
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


def _spam_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """One source reporting about one object (upstream getSpamKey)."""
    return _source_and_object(event)


def _event_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """Everything that makes two core events the same occurrence (upstream getEventKey)."""
    inv = event.get("involvedObject") or {}
    return (
        *_source_and_object(event),
        inv.get("fieldPath") or "",
        event.get("type") or "",
        event.get("reason") or "",
        event.get("message") or "",
    )


def _aggregate_key(event: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """The group an event is aggregated in, and what tells it apart inside the group (upstream
    EventAggregatorByReasonFunc: everything but the message, and the message)."""
    group = (
        *_source_and_object(event),
        event.get("type") or "",
        event.get("reason") or "",
        event.get("reportingComponent") or "",
        event.get("reportingInstance") or "",
    )
    return group, event.get("message") or ""


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
        self._cache: _LRU[Hashable, TokenBucket] = _LRU(lru_cache_size)
        self.burst = burst
        self.qps = qps
        self._clock = clock
        self._spam_key = spam_key

    def filter(self, event: Mapping[str, Any]) -> bool:
        """True when the event must be skipped."""
        key = self._spam_key(event)
        bucket = self._cache.get(key)
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, self._clock)
        accepted = bucket.try_accept()
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
