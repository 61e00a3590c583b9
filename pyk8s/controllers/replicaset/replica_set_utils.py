"""A ReplicaSet's (or ReplicationController's) status from its pods, and writing it (upstream:
pkg/controller/replicaset/replica_set_utils.go).

`replicas` counts the active pods it owns; `fullyLabeledReplicas` those that also carry every label of the
template; `readyReplicas` the Ready ones; `availableReplicas` those Ready for `minReadySeconds`. A failed create
or delete shows as the `ReplicaFailure` condition (reason FailedCreate / FailedDelete, the error as message),
removed by the next sync that succeeds. The status is written only when one of those changed or the generation
has not been observed yet, with one re-read and retry on a conflict.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ...api import errors
from ...api.meta import json_copy, rfc3339
from ...client.rest import RESTClient
from ..podutil import PodFacts, available, pod_facts

log = logging.getLogger(__name__)

REPLICA_FAILURE = "ReplicaFailure"
STATUS_UPDATE_RETRIES = 1
_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def error_text(err: BaseException) -> str:
    return err.message if isinstance(err, errors.StatusError) else str(err)


class PodCounts(NamedTuple):
    """What a ReplicaSet's status counts of its active owned pods."""

    replicas: int
    fully_labeled: int
    ready: int
    available: int


def count_pods(rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: dt.datetime,
               facts: Callable[[Mapping[str, Any]], PodFacts] = pod_facts) -> PodCounts:  # fmt: skip
    """Count `pods` (the active ones `rs` owns) for its status; `facts` reads a pod's readiness (the informer's memo
    of it, in the controller)."""
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    # One pass with a subset test for the labels.
    wanted = dict(template_labels).items()
    fully_labeled = ready = available_count = 0
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if wanted <= (labels.items() if isinstance(labels, dict) else dict(labels).items()):
            fully_labeled += 1
        f = facts(pod)
        if f.ready:
            ready += 1
            if available(f, min_ready, now):
                available_count += 1
    return PodCounts(len(pods), fully_labeled, ready, available_count)


def calculate_status(rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] | PodCounts,
                     manage_error: BaseException | None, now: dt.datetime,
                     facts: Callable[[Mapping[str, Any]], PodFacts] = pod_facts) -> dict[str, Any]:  # fmt: skip
    """The status `rs` should have given its active owned `pods` (or their counts) and how the last manage step
    went."""
    counted = pods if isinstance(pods, PodCounts) else count_pods(rs, pods, now, facts)
    spec = rs.get("spec") or {}
    status: dict[str, Any] = json_copy(rs.get("status") or {})
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    failure = next((c for c in conditions if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = counted.replicas - int(spec.get("replicas", 1))
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append({"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": rfc3339(now),
                           "reason": reason, "message": error_text(manage_error)})  # fmt: skip
    elif manage_error is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    counts = {"replicas": counted.replicas, "fullyLabeledReplicas": counted.fully_labeled,
              "readyReplicas": counted.ready, "availableReplicas": counted.available}  # fmt: skip
    for k, v in counts.items():
        # As the Go types encode them: `replicas` always, the other counts only when not zero.
        if v or k == "replicas":
            status[k] = v
        else:
            status.pop(k, None)
    return status


def status_unchanged(rs: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old = rs.get("status") or {}
    md = rs.get("metadata") or {}
    return (
        all(int(old.get(k) or 0) == int(new.get(k) or 0) for k in _COUNTS)
        and int(md.get("generation") or 0) == int(old.get("observedGeneration") or 0)
        and (old.get("conditions") or []) == (new.get("conditions") or [])
    )


async def update_status(client: RESTClient, resource: str, rs: Mapping[str, Any],
                        new_status: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """Write `new_status` (with observedGeneration = the generation acted on) unless nothing changed; on a
    conflict read the object again and retry once. Answers the object as stored."""
    if status_unchanged(rs, new_status):
        return dict(rs)
    md = rs.get("metadata") or {}
    generation = int(md.get("generation") or 0)
    if generation:
        new_status["observedGeneration"] = generation
    obj = dict(rs)
    for attempt in range(STATUS_UPDATE_RETRIES + 1):
        obj["status"] = new_status
        try:
            return await client.update_status(resource, obj, str(md.get("namespace") or ""))
        except errors.StatusError:
            if attempt >= STATUS_UPDATE_RETRIES:
                raise
        # The cached copy was stale: the next attempt starts from the stored object.
        obj = await client.get(resource, str(md.get("name")), str(md.get("namespace") or ""))
    raise AssertionError("unreachable")
