"""What the Job controller's modules share about a Job and its pods (upstream: pkg/controller/job/utils.go,
pkg/controller/job/util): its conditions, whether it is finished, when one of its pods failed and finished, and
the restarts that count against backoffLimit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from ...api.meta import parse_time, rfc3339

Object = Mapping[str, Any]


def condition(job: Object, type_: str) -> Object | None:
    """The Job's condition of `type_` when it is True."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_ and c.get("status") == "True":
            return c
    return None


def is_finished(job: Object) -> bool:
    return condition(job, "Complete") is not None or condition(job, "Failed") is not None


def new_condition(type_: str, status: str, reason: str, message: str, now: dt.datetime) -> dict[str, Any]:
    t = rfc3339(now)
    return {"type": type_, "status": status, "lastProbeTime": t, "lastTransitionTime": t, "reason": reason,
            "message": message}  # fmt: skip


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> bool:
    """Add or replace the condition of its type; an unchanged status keeps its transition time. Answers whether
    anything changed."""
    conds = list(status.get("conditions") or [])
    for i, c in enumerate(conds):
        if c.get("type") != cond["type"]:
            continue
        if (
            c.get("status") == cond["status"]
            and c.get("reason") == cond["reason"]
            and c.get("message") == cond["message"]
        ):
            return False
        if c.get("status") == cond["status"]:
            cond = {**cond, "lastTransitionTime": c.get("lastTransitionTime")}
        conds[i] = cond
        status["conditions"] = conds
        return True
    status["conditions"] = [*conds, cond]
    return True


def only_replace_failed_pods(job: Object) -> bool:
    """Whether a pod being deleted is neither counted nor replaced until it has failed: podReplacementPolicy
    Failed, or a podFailurePolicy (which needs the exit codes) (upstream: onlyReplaceFailedPods)."""
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: Object, job: Object) -> bool:
    """Failed, or (unless only failed pods are replaced) deleted before succeeding (upstream: isPodFailed)."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded"


def _time(raw: Any) -> dt.datetime | None:
    try:
        return parse_time(str(raw)) if raw else None
    except ValueError:
        return None


def finished_time(pod: Object) -> dt.datetime | None:
    """When the pod finished: the latest finish of its containers (and sidecars) once they have all terminated,
    else when its Ready condition turned False, else its deletion time less the grace period, else its
    creation (upstream: backoff_utils.go getFinishedTime). The kubelet marks a pod not Ready as it ends, so the
    second covers pods whose containers never reported."""
    status = pod.get("status") or {}
    md = pod.get("metadata") or {}
    sidecars = {c.get("name") for c in ((pod.get("spec") or {}).get("initContainers") or ())
                if c.get("restartPolicy") == "Always"}  # fmt: skip
    statuses = [*(status.get("containerStatuses") or ()),
                *(c for c in status.get("initContainerStatuses") or () if c.get("name") in sidecars)]  # fmt: skip
    latest: dt.datetime | None = None
    for c in statuses:
        t = _time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if t is None:
            latest = None
            break
        latest = t if latest is None or t > latest else latest
    if latest is not None:
        return latest
    for c in status.get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "False" and (t := _time(c.get("lastTransitionTime"))):
            return t
    if deleted := _time(md.get("deletionTimestamp")):
        return deleted - dt.timedelta(seconds=int(md.get("deletionGracePeriodSeconds") or 0))
    return _time(md.get("creationTimestamp"))


def past_backoff_limit_on_failure(job: Object, pods: Sequence[Object], limit: int) -> bool:
    """With restartPolicy OnFailure pods do not fail, their containers restart: the restarts of the running pods
    count against backoffLimit (upstream: pastBackoffLimitOnFailure)."""
    template = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") not in ("Pending", "Running"):
            continue
        for c in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
            restarts += int(c.get("restartCount") or 0)
    return restarts > 0 if limit == 0 else restarts >= limit
