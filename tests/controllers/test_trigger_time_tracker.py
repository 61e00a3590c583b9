"""The last-change trigger time the Endpoints and EndpointSlice controllers write: the Service's creation on its
first sync, then the earliest pod Ready transition (or Service re-creation) that moved since the previous sync."""

from __future__ import annotations

from typing import Any

from pyk8s.controllers.trigger_time_tracker import TriggerTimeTracker, format_trigger_time


def svc(created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "s", "creationTimestamp": created}}


def pod(name: str, ready_at: str | None) -> dict[str, Any]:
    conds = [] if ready_at is None else [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]
    return {"metadata": {"name": name}, "status": {"conditions": conds}}


def text(t: Any) -> str | None:
    return None if t is None else format_trigger_time(t)


def test_first_sync_reports_the_service_creation_then_only_what_moved():
    tracker = TriggerTimeTracker()
    pods = [pod("a", "2026-01-01T00:00:05Z"), pod("b", None)]
    assert text(tracker.compute(svc(), pods)) == "2026-01-01T00:00:00Z"
    assert tracker.compute(svc(), pods) is None  # nothing moved since
    pods = [pod("a", "2026-01-01T00:00:05Z"), pod("b", "2026-01-01T00:00:09Z"), pod("c", "2026-01-01T00:00:07Z")]
    assert text(tracker.compute(svc(), pods)) == "2026-01-01T00:00:07Z"  # the earliest of b's and c's changes
    pods[0] = pod("a", "2026-01-01T00:00:20Z")
    assert text(tracker.compute(svc(), pods)) == "2026-01-01T00:00:20Z"
    # The Service deleted and made again with its name: its new creation counts as a change.
    tracker.forget("ns", "s")
    assert text(tracker.compute(svc("2026-01-02T00:00:00Z"), pods)) == "2026-01-02T00:00:00Z"


def test_format_keeps_a_fraction_only_when_there_is_one():
    from pyk8s.api.meta import parse_time

    assert format_trigger_time(parse_time("2026-01-01T00:00:00.250000Z")) == "2026-01-01T00:00:00.25Z"
    assert format_trigger_time(parse_time("2026-01-01T00:00:00Z")) == "2026-01-01T00:00:00Z"
