"""How a Job's pods are counted exactly once (upstream: pkg/controller/job/tracking_utils.go and the counting
half of job_controller.go's trackJobStatusAndRemoveFinalizers): a pod carries the tracking finalizer until its
end is counted; the UID of a pod that has just finished goes to `status.uncountedTerminatedPods` first (or, when
it must not be counted, its finalizer simply goes), and only once its finalizer is gone into the counters.

`count_pods` sorts the pods of one sync; `count_rest` adds what a Job with an outcome releases."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..active_pods import is_pod_active
from .backoff_utils import BackoffRecord
from .indexed_job_utils import (
    completion_index,
    failed_indexes,
    has_backoff_limit_per_index,
    parse_indexes,
    pods_with_delayed_deletion,
)
from .pod_failure_policy import match_pod_failure_policy
from .utils import is_pod_failed

Object = Mapping[str, Any]

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
MAX_UNCOUNTED_PODS = 500  # per list of uncountedTerminatedPods, which keeps the status under ~20 KB


def uid(pod: Object) -> str:
    return str((pod.get("metadata") or {}).get("uid"))


def has_tracking_finalizer(pod: Object) -> bool:
    return TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


@dataclass
class SyncContext:
    """What one sync learns from a Job's pods before it acts (upstream: syncJobCtx). UIDs of finished pods go
    to `unc_ok` / `unc_failed` (then into the counters) or `ignored` (their finalizer goes uncounted)."""

    active: list[Object]
    terminating: list[Object]
    unc_ok: set[str]
    unc_failed: set[str]
    ignored: set[str] = field(default_factory=set)
    succeeded_idx: set[int] = field(default_factory=set)
    failed_idx: set[int] = field(default_factory=set)
    # backoffLimitPerIndex: per index about to retry, its last failed pod, kept (uncounted, with its finalizer)
    # until a replacement carries its failure count on; `held` are those of them among the pods.
    delayed: dict[int, Object] = field(default_factory=dict)
    held: list[Object] = field(default_factory=list)
    unfinished: list[Object] = field(default_factory=list)  # not counted, still running or pending
    newly_succeeded: list[Object] = field(default_factory=list)  # what the Job's back-off learns from
    newly_failed: list[Object] = field(default_factory=list)
    fail_job_message: str | None = None
    deleted: set[str] = field(default_factory=set)  # UIDs of the pods this sync deleted
    backoff: BackoffRecord = field(default_factory=BackoffRecord)  # the Job's, with this sync's pods

    def full(self) -> bool:
        return len(self.unc_ok) + len(self.unc_failed) >= MAX_UNCOUNTED_PODS


def _terminating(pod: Object) -> bool:
    """Being deleted but not yet finished."""
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase not in ("Succeeded", "Failed")


def _valid(job: Object, pod: Object) -> bool:
    """Outside Indexed Jobs every pod; in them, a pod whose index is one of the Job's."""
    spec = job.get("spec") or {}
    if spec.get("completionMode") != "Indexed":
        return True
    i = completion_index(pod)
    return i is not None and i < int(spec.get("completions") or 0)


def count_pods(job: Object, pods: Sequence[Object], removed: Collection[str]) -> SyncContext:
    """Sort the pods not counted yet (with the tracking finalizer, not among the `removed` UIDs whose finalizer
    removal the informer has not shown yet): newly succeeded and failed ones into the uncounted lists, as
    podFailurePolicy and the indexes say (upstream: getNewFinishedPods, calculateSucceededIndexes,
    calculateFailedIndexes, trackJobStatusAndRemoveFinalizers)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    indexed = spec.get("completionMode") == "Indexed"
    completions = int(spec.get("completions") or 0)
    uncounted = status.get("uncountedTerminatedPods") or {}
    ctx = SyncContext(
        active=[p for p in pods if is_pod_active(p)],
        terminating=[p for p in pods if _terminating(p)],
        unc_ok=set(uncounted.get("succeeded") or ()),
        unc_failed=set(uncounted.get("failed") or ()),
    )
    tracked = [p for p in pods if has_tracking_finalizer(p) and uid(p) not in removed]
    new = [p for p in tracked if uid(p) not in ctx.unc_ok | ctx.unc_failed]
    counted_idx = parse_indexes(status.get("completedIndexes"), completions) if indexed else set()
    if indexed:
        succeeded = [p for p in tracked if (p.get("status") or {}).get("phase") == "Succeeded"]
        succeeded += [p for p in pods if uid(p) in ctx.unc_ok]
        ctx.succeeded_idx = counted_idx | {
            i for p in succeeded if _valid(job, p) and (i := completion_index(p)) is not None
        }
    if has_backoff_limit_per_index(job):
        ctx.failed_idx = failed_indexes(job, [p for p in tracked if _valid(job, p)], completions)
        busy = {i for p in ctx.active if (i := completion_index(p)) is not None}
        done = ctx.succeeded_idx | ctx.failed_idx
        ctx.delayed = pods_with_delayed_deletion(job, [p for p in new if _valid(job, p)], busy, done, completions)

    policy = spec.get("podFailurePolicy")
    for pod in new:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Succeeded":
            ctx.newly_succeeded.append(pod)
            if ctx.full():
                continue
            if not _valid(job, pod) or (indexed and completion_index(pod) in counted_idx):
                ctx.ignored.add(uid(pod))  # a second success of an index, or an index out of range: not counted
            else:
                ctx.unc_ok.add(uid(pod))
        elif is_pod_failed(pod, job):
            message, counts, _ = match_pod_failure_policy(policy, pod)
            if message is not None and ctx.fail_job_message is None:
                ctx.fail_job_message = message
            if not _valid(job, pod):
                ctx.ignored.add(uid(pod))
                continue
            ctx.newly_failed.append(pod)
            i = completion_index(pod)
            if i is not None and ctx.delayed.get(i) is pod:
                ctx.held.append(pod)
            elif not ctx.full():
                # A failure the policy ignores is not counted: only its finalizer goes.
                (ctx.unc_failed if counts else ctx.ignored).add(uid(pod))
        else:
            ctx.unfinished.append(pod)
    return ctx


def count_rest(job: Object, ctx: SyncContext, *, failing: bool) -> None:
    """Once the Job has its outcome every pod's tracking finalizer goes (upstream: canRemoveFinalizer): a failed
    pod kept for its index's count is counted now, and a pod still running counts as failed when the Job
    failed; when it succeeded that pod is let go uncounted."""
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    for pod in ctx.held:
        if not ctx.full():
            (ctx.unc_failed if match_pod_failure_policy(policy, pod)[1] else ctx.ignored).add(uid(pod))
    for pod in ctx.unfinished:
        if ctx.full():
            break
        counts = failing and _valid(job, pod) and match_pod_failure_policy(policy, pod)[1]
        (ctx.unc_failed if counts else ctx.ignored).add(uid(pod))
