"""The Progressing condition (upstream: pkg/controller/deployment/progress.go): NewReplicaSetAvailable once the
rollout is complete, ReplicaSetUpdated whenever it advanced (which restarts the progress deadline),
ProgressDeadlineExceeded after `progressDeadlineSeconds` without progress; a ReplicaSet's ReplicaFailure is
copied to the Deployment. A Deployment that is not progressing is looked at again when its deadline falls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import util
from .sync import calculate_status, now
from .util import Object

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController


async def sync_rollout_status(dc: DeploymentController, all_rss: list[Object | None], new_rs: Object | None,
                              d: dict[str, Any]) -> None:  # fmt: skip
    status = calculate_status(all_rss, new_rs, d)
    at = now()
    if not util.has_progress_deadline(d):
        util.remove_condition(status, "Progressing")
    current = util.get_condition(d.get("status") or {}, "Progressing")
    complete = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                and current is not None and current.get("reason") == util.NEW_RS_AVAILABLE)  # fmt: skip
    name = new_rs["metadata"]["name"] if new_rs is not None else None
    subject = f'ReplicaSet "{name}"' if name else f'Deployment "{d["metadata"]["name"]}"'
    if util.has_progress_deadline(d) and not complete:
        if util.deployment_complete(d, status):
            util.set_condition(status, util.new_condition("Progressing", "True", util.NEW_RS_AVAILABLE,
                                                          f"{subject} has successfully progressed.", at))  # fmt: skip
        elif util.deployment_progressing(d, status):
            cond = util.new_condition("Progressing", "True", util.REPLICA_SET_UPDATED, f"{subject} is progressing.", at)
            # Progress moves lastUpdateTime even when the reason stays: the deadline counts from the last progress.
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                util.remove_condition(status, "Progressing")
            util.set_condition(status, cond)
        elif util.deployment_timed_out(d, status, at):
            util.set_condition(status, util.new_condition("Progressing", "False", util.TIMED_OUT,
                                                          f"{subject} has timed out progressing.", at))  # fmt: skip
    failure = replica_failure(all_rss, new_rs)
    if failure is not None:
        util.set_condition(status, failure)
    else:
        util.remove_condition(status, "ReplicaFailure")
    if status == (d.get("status") or {}):
        requeue_stuck_deployment(dc, d, status)
        return
    d["status"] = status
    await dc.update_status(d)


def replica_failure(all_rss: list[Object | None], new_rs: Object | None) -> dict[str, Any] | None:
    """The new ReplicaSet's ReplicaFailure condition, else an old one's, as a Deployment condition."""
    for rs in [new_rs, *all_rss]:
        for c in ((rs or {}).get("status") or {}).get("conditions") or ():
            if c.get("type") == "ReplicaFailure":
                return {"type": "ReplicaFailure", "status": c.get("status"), "lastUpdateTime": c.get("lastTransitionTime"),
                        "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason"),
                        "message": c.get("message")}  # fmt: skip
    return None


def requeue_stuck_deployment(dc: DeploymentController, d: Object, status: Object) -> None:
    """A rollout without progress is looked at again when its deadline falls, so that ProgressDeadlineExceeded
    appears on time (upstream: requeueStuckDeployment)."""
    current = util.get_condition(d.get("status") or {}, "Progressing")
    if not util.has_progress_deadline(d) or current is None:
        return
    if util.deployment_complete(d, status) or current.get("reason") == util.TIMED_OUT:
        return
    deadline = util.progress_deadline_at(d, current)
    if deadline is None:
        return
    after = (deadline - now()).total_seconds()
    if after < 1.0:
        dc.enqueue_rate_limited(d)
    else:
        dc.enqueue_after(d, after + 1.0)
