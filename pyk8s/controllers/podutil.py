"""What controllers read off a pod's status (upstream: pkg/api/v1/pod/util.go, podutil): readiness, and
availability, which is readiness held for `minReadySeconds`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..api.meta import parse_time

Pod = Mapping[str, Any]


def pod_key(pod: Pod) -> str:
    """`namespace/name` (upstream: controller.PodKey)."""
    md = pod.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def ready_condition(pod: Pod) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        # Objects are plain dicts; isinstance(dict) is several times cheaper than the Mapping ABC, and controllers
        # ask this of every pod at every sync.
        if isinstance(c, dict) and c.get("type") == "Ready":
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


class PodFacts(NamedTuple):
    """What workload controllers read off every pod they own at every sync, worked out once per version of the
    pod (the pod informer's `Indexer.derived(POD_FACTS, pod_facts)`)."""

    active: bool  # neither Succeeded nor Failed, and not being deleted (upstream: IsPodActive)
    ready: bool
    ready_since: dt.datetime | None  # when it last became Ready, if it is Ready and says when


POD_FACTS = "podFacts"


def pod_facts(pod: Pod) -> PodFacts:
    phase = (pod.get("status") or {}).get("phase")
    active = phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")
    ready = is_pod_ready(pod)
    return PodFacts(active, ready, ready_since(pod) if ready else None)


def available(facts: PodFacts, min_ready_seconds: int, now: dt.datetime) -> bool:
    """is_pod_available from a pod's facts."""
    if not facts.ready:
        return False
    if min_ready_seconds <= 0:
        return True
    return facts.ready_since is not None and facts.ready_since + dt.timedelta(seconds=min_ready_seconds) < now
