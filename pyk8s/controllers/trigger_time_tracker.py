"""When the change behind an Endpoints or EndpointSlice write happened, for the
`endpoints.kubernetes.io/last-change-trigger-time` annotation that endpoint-latency SLOs are measured from
(upstream: pkg/controller/util/endpoint/trigger_time_tracker.go).

A pod's trigger time is its Ready condition's lastTransitionTime; a Service's, its creationTimestamp. Each sync
of a Service reports the earliest of the trigger times that moved since its previous sync (none moved: no time,
and the annotation is dropped), or the Service's creation time on its first sync. One tracker per controller;
a Service's syncs must not run concurrently (the workqueue sees to it)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.meta import parse_time

Object = Mapping[str, Any]


def _time(text: Any) -> dt.datetime | None:
    try:
        return parse_time(str(text)) if text else None
    except ValueError:
        return None


def pod_trigger_time(pod: Object) -> dt.datetime | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return _time(c.get("lastTransitionTime"))
    return None


def format_trigger_time(t: dt.datetime) -> str:
    """RFC 3339 in UTC with the fraction only when there is one, as Go's RFC3339Nano writes it."""
    t = t.astimezone(dt.UTC)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        text += f".{t.microsecond:06d}".rstrip("0")
    return text + "Z"


@dataclass
class _State:
    pods: dict[str, dt.datetime] = field(default_factory=dict)
    service: dt.datetime | None = None


class TriggerTimeTracker:
    def __init__(self) -> None:
        self._states: dict[str, _State] = {}

    def compute(self, service: Object, pods: Iterable[Object]) -> dt.datetime | None:
        """The trigger time to write for this sync of `service` whose selected pods are `pods`."""
        md = service.get("metadata") or {}
        key = f"{md.get('namespace')}/{md.get('name')}"
        state = self._states.get(key)
        earliest: dt.datetime | None = None
        now_pods: dict[str, dt.datetime] = {}
        for pod in pods:
            t = pod_trigger_time(pod)
            if t is None:
                continue
            name = str((pod.get("metadata") or {}).get("name"))
            now_pods[name] = t
            before = state.pods.get(name) if state is not None else None
            if before is None or t > before:
                earliest = t if earliest is None else min(earliest, t)
        created = _time(md.get("creationTimestamp"))
        if created is not None and (state is None or state.service is None or created > state.service):
            earliest = created if earliest is None else min(earliest, created)
        self._states[key] = _State(now_pods, created)
        if state is None:
            return created  # a Service seen for the first time: its creation
        return earliest

    def forget(self, namespace: str, name: str) -> None:
        self._states.pop(f"{namespace}/{name}", None)
