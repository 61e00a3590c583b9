"""Warnings and audit annotations that code deep in a request adds for the response and the audit event
(upstream: apiserver/pkg/warning `AddWarning` and audit `AddAuditAnnotation`, both carried by the request's
context).

The carrier is a context variable: aiohttp runs every request (and every HTTP/2 stream) in a task of its own,
so a value set while handling one request is never seen by another. The lists are created on first use in
the request's task; `take_warnings` and `take_audit_annotations` hand them over and reset them.
"""

from __future__ import annotations

from contextvars import ContextVar

_WARNINGS: ContextVar[list[str] | None] = ContextVar("pyk8s_warnings", default=None)
_AUDIT_ANNOTATIONS: ContextVar[dict[str, str] | None] = ContextVar("pyk8s_audit_annotations", default=None)

MAX_WARNINGS = 50  # upstream's recorder keeps at most this many, as its header budget allows


def begin_request() -> None:
    """Start a request with no warnings or annotations: a task inherits its creator's context, and a list set
    where connections are accepted (at start-up, say) would otherwise be shared by every request after."""
    _WARNINGS.set(None)
    _AUDIT_ANNOTATIONS.set(None)


def add_warning(text: str) -> None:
    """A `Warning: 299 - "<text>"` header on this request's response (duplicates are dropped, as upstream)."""
    warnings = _WARNINGS.get()
    if warnings is None:
        warnings = []
        _WARNINGS.set(warnings)
    if text and text not in warnings and len(warnings) < MAX_WARNINGS:
        warnings.append(text)


def take_warnings() -> list[str]:
    """The warnings added so far in this request (cleared)."""
    warnings = _WARNINGS.get()
    if not warnings:
        return []
    out = list(warnings)
    warnings.clear()
    return out


def add_audit_annotation(key: str, value: str) -> None:
    """An annotation for this request's audit event; the first value of a key stays (as upstream)."""
    annotations = _AUDIT_ANNOTATIONS.get()
    if annotations is None:
        annotations = {}
        _AUDIT_ANNOTATIONS.set(annotations)
    annotations.setdefault(key, value)


def take_audit_annotations() -> dict[str, str]:
    """The audit annotations added so far in this request (cleared)."""
    annotations = _AUDIT_ANNOTATIONS.get()
    if not annotations:
        return {}
    out = dict(annotations)
    annotations.clear()
    return out
