"""What controllers read off a pod's status (upstream: pkg/api/v1/pod/util.go, podutil): readiness, and
availability, which is readiness held for `minReadySeconds`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from ..api.meta import parse_time

Pod = Mapping[str, Any]


def pod_key(pod: Pod) -> str:
    """`namespace/name` (upstream: controller.PodKey)."""
    md = pod.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def ready_condition(pod: Pod) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c
    return None


def is_pod_ready(pod: Pod) -> bool:
    c = ready_condition(pod)
    return c is not None and c.get("status") == "True"


def ready_since(pod: Pod) -> dt.datetime | None:
    """When the pod last became Ready (its Ready condition's lastTransitionTime), None if it is not Ready or
    the time is missing."""
    c = ready_condition(pod)
    if c is None or c.get("status") != "True" or not c.get("lastTransitionTime"):
        return None
    try:
        return parse_time(str(c["lastTransitionTime"]))
    except ValueError:
        return None


def is_pod_available(pod: Pod, min_ready_seconds: int, now: dt.datetime) -> bool:
    """Ready, and (with `min_ready_seconds`) Ready for longer than that by `now` (upstream: IsPodAvailable,
    which needs the transition strictly before now - minReadySeconds)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + dt.timedelta(seconds=min_ready_seconds) < now
