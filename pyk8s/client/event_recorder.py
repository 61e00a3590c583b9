"""Building Events: the recorders a component's code calls, as client-go's tools/events (events.k8s.io/v1)
and tools/record (core/v1) recorders do.

- `EventRecorder` (upstream events.recorderImpl), from `EventBroadcaster.new_recorder(reporting_controller,
  reporting_instance)`: `eventf(regarding, related, type, reason, action, note, *args)` builds an
  events.k8s.io/v1 Event.
- `CoreEventRecorder` (upstream record.recorderImpl with its EventSource), from
  `EventBroadcaster.new_core_recorder(component, host)`: `event(obj, type, reason, message)` / `eventf(...)`
  build a core/v1 Event.

Recording never blocks and never raises into the caller: a recorder builds the Event and hands it to its
broadcaster's queue (`events.EventBroadcaster`), which writes it; problems are logged. The reference to the
object is upstream's reference.GetReference (`object_reference`); a note longer than the API's limit is cut as
upstream's truncateMessage cuts it (`truncate_note`); the type must be "Normal" or "Warning".

Names are `<object name>.<hex nanoseconds>` as upstream, made strictly increasing within the process so
two events in one nanosecond still get distinct names. The namespace is the object's, or "default".
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .events import EventBroadcaster

log = logging.getLogger(__name__)

Object = dict[str, Any]

NOTE_LENGTH_LIMIT = 1024  # upstream validation.NoteLengthLimit, in bytes
EVENT_TYPES = ("Normal", "Warning")

_REFERENCE_FIELDS = ("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion", "fieldPath")

# Which path of the broadcaster a queued event takes.
_V1 = "events.k8s.io"
_CORE = "core"


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


def _unique_nanos() -> int:
    """Unix nanoseconds now, but never the same twice within this process."""
    global _last_nanos
    n = time.time_ns()
    if n <= _last_nanos:
        n = _last_nanos + 1
    _last_nanos = n
    return n


def _unique_suffix() -> str:
    """Upstream's name suffix, hex Unix nanoseconds, but never repeated within this process."""
    return f"{_unique_nanos():x}"


def _micro_from_nanos(n: int) -> str:
    """A MicroTime string (UTC) for Unix nanoseconds `n`; the seconds part is formatted once per second."""
    seconds, nanos = divmod(n, 1_000_000_000)
    return f"{_second_prefix(seconds)}.{nanos // 1000:06d}Z"


@functools.lru_cache(maxsize=2)
def _second_prefix(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


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
        # One clock reading names the event and stamps it, as upstream's recorder does.
        nanos = _unique_nanos()
        event: Object = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{nanos:x}", "namespace": ref.get("namespace") or "default"},
            "eventTime": _micro_from_nanos(nanos),
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
