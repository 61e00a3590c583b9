"""The Job controller (upstream: pkg/controller/job/job_controller.go, `job-controller`): runs a Job's pods until
enough of them succeed, or it fails.

Each sync of a Job (by `namespace/name`):
1. Its pods are claimed (adopted ones get the `batch.kubernetes.io/job-tracking` finalizer, as created ones do).
2. Finished pods are counted exactly once, as upstream tracks them: their UIDs go to
   `status.uncountedTerminatedPods` first, then their finalizers are removed, then they move into
   `status.succeeded` / `status.failed` (for Indexed Jobs, `completedIndexes`). A deleted pod that had not
   succeeded counts as failed.
3. The Job's outcome: enough successes (`completions`, or with none set any success once nothing runs) meet the
   success criteria; more failures than `backoffLimit`, a pod matching a FailJob rule of `podFailurePolicy`, or
   `activeDeadlineSeconds` past since `startTime`, set the failure target. As v1.32 does, the interim condition
   (SuccessCriteriaMet / FailureTarget) comes first, active pods are deleted, and the terminal one (Complete with
   `completionTime` / Failed) once no pod is left running or uncounted, with the `Completed` or failure event.
4. Otherwise pods are created (from the template, in slow-start batches, at most 500 a sync) or deleted until
   `parallelism` (at most the completions still missing) run; a suspended Job runs none. After failures, new pods
   wait 10 s * 2^(failures-1), at most 10 minutes.
Not yet: backoffLimitPerIndex, successPolicy, the FailIndex action, managedBy.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ...api import errors
from ...api.meta import controller_of, json_copy, owner_reference, parse_time, rfc3339
from ...api.selectors import SelectorError, label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key, split_meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..active_pods import deletion_order, is_pod_active
from ..controller_ref_manager import (
    ControllerRefManager,
    add_pod_controller_uid_indexer,
    pods_by_owner,
    recheck_deletion,
)
from ..expectations import UIDTrackingControllerExpectations
from ..pod_control import SLOW_START_INITIAL_BATCH_SIZE, PodControl, pod_from_template, slow_start_batch
from ..podutil import is_pod_ready, pod_key
from ..workers import queue_workers, run_workers
from .indexed_job_utils import (
    COMPLETION_INDEX_ANNOTATION,
    COMPLETION_INDEX_ENV,
    completion_index,
    first_pending_indexes,
    format_indexes,
    parse_indexes,
)
from .pod_failure_policy import match_pod_failure_policy

log = logging.getLogger(__name__)

Object = Mapping[str, Any]

JOBS = "jobs.batch"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
MAX_POD_CREATE_DELETE_PER_SYNC = 500
MAX_UNCOUNTED_PODS = 500
DEFAULT_BACKOFF = 10.0
MAX_BACKOFF = 600.0


def _condition(job: Object, type_: str) -> Object | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_ and c.get("status") == "True":
            return c
    return None


def is_finished(job: Object) -> bool:
    return _condition(job, "Complete") is not None or _condition(job, "Failed") is not None


def _new_condition(type_: str, status: str, reason: str, message: str, now: dt.datetime) -> dict[str, Any]:
    t = rfc3339(now)
    return {"type": type_, "status": status, "lastProbeTime": t, "lastTransitionTime": t, "reason": reason,
            "message": message}  # fmt: skip


def _set_condition(status: dict[str, Any], cond: dict[str, Any]) -> bool:
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


def is_pod_failed(pod: Object, job: Object) -> bool:
    """Failed, or (unless only failed pods are replaced) deleted before succeeding (upstream: isPodFailed)."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded"


def only_replace_failed_pods(job: Object) -> bool:
    """Whether a pod being deleted is neither counted nor replaced until it has failed: podReplacementPolicy
    Failed, or a podFailurePolicy (which needs the exit codes) (upstream: onlyReplaceFailedPods)."""
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def backoff_remaining(failures: int, last_failure: dt.datetime | None, now: dt.datetime) -> float:
    """Seconds before the next pod may start: 10 s * 2^(failures-1), at most 10 minutes, from the last failure."""
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = min(DEFAULT_BACKOFF * 2 ** min(failures - 1, 16), MAX_BACKOFF)  # capped before it can overflow
    return max(0.0, delay - (now - last_failure).total_seconds())


def _past_backoff_limit_on_failure(job: Object, pods: Sequence[Object], limit: int) -> bool:
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


def _finish_time(pod: Object) -> dt.datetime | None:
    """When the pod's last container finished (or, lacking that, its Ready condition changed)."""
    latest = None
    status = pod.get("status") or {}
    for c in [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())]:
        raw = ((c.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if raw:
            t = parse_time(str(raw))
            latest = t if latest is None or t > latest else latest
    if latest is None:
        for c in status.get("conditions") or ():
            if c.get("type") == "Ready" and c.get("lastTransitionTime"):
                latest = parse_time(str(c["lastTransitionTime"]))
    return latest


class JobController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="job")
        self.orphans: RateLimitingQueue[str] = RateLimitingQueue(name="job_orphan_pod")
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder("job-controller")
        self.pod_control = PodControl(client, self.recorder)
        self.expectations = UIDTrackingControllerExpectations()
        # Pods whose finalizer this controller removed, by Job key, until the informer shows them without it:
        # the informer lags, and a pod seen again with its finalizer must not be counted twice.
        self.finalizers_removed: dict[str, set[str]] = {}
        # Per Job key: (failures since the last success, when the last one happened).
        self.backoff: dict[str, tuple[int, dt.datetime | None]] = {}
        self.jobs = factory.informer_for(JOBS)
        self.pods = factory.informer_for("pods")
        add_pod_controller_uid_indexer(self.pods.indexer)
        self.jobs.add_event_handler(
            on_add=lambda j, _initial: self.queue.add(meta_namespace_key(j)),
            on_update=lambda _o, j: self.queue.add(meta_namespace_key(j)),
            on_delete=self._job_deleted,
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_event(p, added=True),
            on_update=lambda _old, p: self._pod_event(p),
            on_delete=lambda p: self._pod_event(deleted_object(p), deleted=True),
        )

    async def run(self) -> None:
        await asyncio.gather(self.jobs.wait_for_sync(), self.pods.wait_for_sync())
        tasks = queue_workers(self.queue, self.sync, "sync job", self.workers)
        tasks += queue_workers(self.orphans, self.sync_orphan, "release orphan pod")
        await run_workers(tasks, [self.queue, self.orphans], self.broadcaster)

    # -- event handlers ---------------------------------------------------------------------------------

    def _job_deleted(self, obj: Any) -> None:
        job = deleted_object(obj)
        key = meta_namespace_key(job)
        self.expectations.delete(key)
        self.finalizers_removed.pop(key, None)
        self.backoff.pop(key, None)
        self.queue.add(key)
        # Its pods' tracking finalizers would keep them Terminating for ever (upstream: cleanupPodFinalizers).
        for pod in pods_by_owner(self.pods.indexer, job, include_orphans=False):
            if TRACKING_FINALIZER in self._finalizers(pod):
                self.orphans.add(pod_key(pod))

    def _pod_event(self, pod: Object, *, added: bool = False, deleted: bool = False) -> None:
        ref = controller_of(pod)
        md = pod.get("metadata") or {}
        if not deleted and TRACKING_FINALIZER in (md.get("finalizers") or ()) and self._orphaned(pod):
            self.orphans.add(pod_key(pod))
        if ref is None or ref.get("kind") != "Job":
            return
        key = f"{md.get('namespace')}/{ref.get('name')}"
        job = self.jobs.indexer.get_by_key(key)
        if job is not None and (job.get("metadata") or {}).get("uid") != ref.get("uid"):
            return
        if added and not md.get("deletionTimestamp"):
            self.expectations.creation_observed(key)
        if deleted or md.get("deletionTimestamp"):
            self.expectations.deletion_observed(key, pod_key(pod))
        if deleted or TRACKING_FINALIZER not in (md.get("finalizers") or ()):
            self.finalizers_removed.get(key, set()).discard(str(md.get("uid")))
        self.queue.add(key)

    def _orphaned(self, pod: Object) -> bool:
        """A pod with the tracking finalizer that no unfinished Job controls any more (upstream: the orphan
        queue): its finalizer must go."""
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "Job":
            return True
        job = self.jobs.indexer.get_by_key(f"{(pod.get('metadata') or {}).get('namespace')}/{ref.get('name')}")
        return job is None or (job.get("metadata") or {}).get("uid") != ref.get("uid") or is_finished(job)

    async def sync_orphan(self, key: str) -> None:
        pod = self.pods.indexer.get_by_key(key)
        if pod is None or TRACKING_FINALIZER not in self._finalizers(pod) or not self._orphaned(pod):
            return
        namespace, name = split_meta_namespace_key(key)
        await self._patch_out_finalizer(namespace, name)

    # -- sync -----------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.jobs.indexer.get_by_key(key)
        if cached is None:
            return
        job: dict[str, Any] = json_copy(cached)
        pods = await self._claim(job)
        if is_finished(job):
            await self._remove_finalizers(key, [p for p in pods if TRACKING_FINALIZER in self._finalizers(p)])
            return
        now = dt.datetime.now(dt.UTC)
        spec, status = job.get("spec") or {}, job.setdefault("status", {})
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        suspended = bool(spec.get("suspend"))
        active_pods = [p for p in pods if is_pod_active(p)]
        terminating = [p for p in pods if (p.get("metadata") or {}).get("deletionTimestamp")
                       and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]  # fmt: skip

        # Count finished pods (step 2): newly finished ones join uncountedTerminatedPods.
        uncounted = status.get("uncountedTerminatedPods") or {}
        unc_ok, unc_failed = set(uncounted.get("succeeded") or ()), set(uncounted.get("failed") or ())
        removed = self.finalizers_removed.get(key, set())
        ignored: set[str] = set()  # finished pods whose finalizer goes without their being counted
        fail_job_message: str | None = None
        failures, last_failure = self.backoff.get(key, (0, None))
        succeeded_idx = parse_indexes(status.get("completedIndexes"), int(completions or 0)) if indexed else set()
        for pod in pods:
            md = pod.get("metadata") or {}
            uid = str(md.get("uid"))
            if TRACKING_FINALIZER not in self._finalizers(pod) or uid in removed or uid in unc_ok | unc_failed:
                continue
            if len(unc_ok) + len(unc_failed) >= MAX_UNCOUNTED_PODS:
                break
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded":
                idx = completion_index(pod)
                if indexed and (
                    idx is None or idx in succeeded_idx or (completions is not None and idx >= completions)
                ):
                    ignored.add(uid)  # a second success of an index, or an index out of range: not counted
                    continue
                unc_ok.add(uid)
                failures = 0
            elif is_pod_failed(pod, job):
                message, counts, _ = match_pod_failure_policy(spec.get("podFailurePolicy"), pod)
                if message is not None and fail_job_message is None:
                    fail_job_message = message
                if counts:
                    unc_failed.add(uid)
                    failures += 1
                    last_failure = _finish_time(pod) or now
                else:
                    ignored.add(uid)  # ignored by the policy: only its finalizer goes
        self.backoff[key] = (failures, last_failure)

        succeeded = int(status.get("succeeded") or 0) + len(unc_ok)
        failed = int(status.get("failed") or 0) + len(unc_failed)
        if indexed:
            for pod in pods:
                if str((pod.get("metadata") or {}).get("uid")) in unc_ok and (i := completion_index(pod)) is not None:
                    succeeded_idx.add(i)
            succeeded = len(succeeded_idx)

        # The outcome (step 3).
        finished_cond = _condition(job, "SuccessCriteriaMet") or _condition(job, "FailureTarget")
        if finished_cond is None:
            raw_limit = spec.get("backoffLimit")
            backoff_limit = 6 if raw_limit is None else int(raw_limit)
            deadline = spec.get("activeDeadlineSeconds")
            start = parse_time(status["startTime"]) if status.get("startTime") else None
            if fail_job_message is not None:
                finished_cond = _new_condition("FailureTarget", "True", "PodFailurePolicy", fail_job_message, now)
            elif failed > backoff_limit or _past_backoff_limit_on_failure(job, pods, backoff_limit):
                finished_cond = _new_condition("FailureTarget", "True", "BackoffLimitExceeded",
                                               "Job has reached the specified backoff limit", now)  # fmt: skip
            elif (
                deadline is not None
                and start is not None
                and not suspended
                and ((now - start).total_seconds() >= int(deadline))
            ):
                finished_cond = _new_condition("FailureTarget", "True", "DeadlineExceeded",
                                               "Job was active longer than specified deadline", now)  # fmt: skip
            else:
                running = len(active_pods)
                complete = (succeeded > 0 and running == 0) if completions is None else succeeded >= int(completions)
                if complete:
                    finished_cond = _new_condition("SuccessCriteriaMet", "True", "CompletionsReached",
                                                   "Reached expected number of succeeded pods", now)  # fmt: skip
            if finished_cond is not None:
                _set_condition(status, finished_cond)

        if finished_cond is not None:
            # Nothing new starts; what still runs is stopped.
            await self._delete_pods(key, job, active_pods, len(active_pods))
        elif suspended:
            await self._delete_pods(key, job, active_pods, len(active_pods))
        elif job["metadata"].get("deletionTimestamp"):
            pass  # being deleted: its pods go with it, none is made
        elif self.expectations.satisfied(key):
            wait = backoff_remaining(failures, last_failure, now)
            if wait > 0:
                self.queue.add_after(key, wait)
            else:
                await self._manage(key, job, active_pods, succeeded, succeeded_idx, len(terminating))

        # Status (and then the finalizers).
        active_now = [p for p in self._pods_now(job) if is_pod_active(p)]
        # As the Go type encodes them: `active` only when not zero, `ready` and `terminating` always.
        status["active"] = len(active_now)
        if not status["active"]:
            status.pop("active")
        status["ready"] = sum(1 for p in active_now if is_pod_ready(p))
        status["terminating"] = len(terminating)
        if suspended:
            if _set_condition(status, _new_condition("Suspended", "True", "JobSuspended", "Job suspended", now)):
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
        else:
            if _condition(job, "Suspended") is not None:
                _set_condition(status, _new_condition("Suspended", "False", "JobResumed", "Job resumed", now))
                self.recorder.event(job, "Normal", "Resumed", "Job resumed")
                # activeDeadlineSeconds counts continuous activity: it starts again on resume.
                status["startTime"] = rfc3339(now)
            if not status.get("startTime"):
                status["startTime"] = rfc3339(now)
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and finished_cond is None:
                left = int(deadline) - (now - parse_time(status["startTime"])).total_seconds()
                self.queue.add_after(key, max(left, 0.0))
        await self._track_finished(key, job, cached, pods, unc_ok, unc_failed, ignored, indexed)

    def _finalizers(self, pod: Object) -> Sequence[str]:
        return (pod.get("metadata") or {}).get("finalizers") or ()

    def _pods_now(self, job: Object) -> list[Object]:
        return pods_by_owner(self.pods.indexer, job, include_orphans=False)

    async def _claim(self, job: Object) -> list[Object]:
        md = job.get("metadata") or {}
        try:
            selector = label_selector_from_object((job.get("spec") or {}).get("selector"), "spec.selector")
        except SelectorError:
            return []
        name, namespace = str(md.get("name")), str(md.get("namespace") or "")

        async def fresh() -> Object:
            return await self.client.get(JOBS, name, namespace)

        manager = ControllerRefManager(self.pod_control.patch_pod, job, owner_reference(job), selector,
                                       recheck_deletion(fresh, "Job", job), finalizers=[TRACKING_FINALIZER])  # fmt: skip
        return await manager.claim(pods_by_owner(self.pods.indexer, job, include_orphans=True))

    async def _manage(
        self, key: str, job: Object, active: list[Object], succeeded: int, succeeded_idx: set[int], terminating: int
    ) -> None:
        """Create or delete pods so that as many run as parallelism asks and completions still need."""
        spec = job.get("spec") or {}
        raw_parallelism = spec.get("parallelism")
        parallelism = 1 if raw_parallelism is None else int(raw_parallelism)
        completions = spec.get("completions")
        if completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - succeeded, parallelism))
        if len(active) > want:
            await self._delete_pods(key, job, active, len(active) - want)
            return
        # Pods still terminating take their place until they have failed, when only failed pods are replaced.
        diff = min(
            want - len(active) - (terminating if only_replace_failed_pods(job) else 0), MAX_POD_CREATE_DELETE_PER_SYNC
        )
        if diff <= 0:
            return
        indexes: list[int | None] = [None] * diff
        if spec.get("completionMode") == "Indexed":
            running = {i for p in active if (i := completion_index(p)) is not None}
            indexes = list(first_pending_indexes(running, succeeded_idx, diff, int(completions or 0)))
            diff = len(indexes)
            if not diff:
                return
        self.expectations.expect_creations(key, diff)
        pending = iter(indexes)

        async def create() -> None:
            await self.pod_control.create_pod(str(job["metadata"]["namespace"]), self._pod(job, next(pending)), job)

        created, err = await slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(diff - created):
            self.expectations.creation_observed(key)
        if err is not None:
            raise err

    def _pod(self, job: Object, index: int | None) -> dict[str, Any]:
        md = job.get("metadata") or {}
        pod = pod_from_template((job.get("spec") or {}).get("template") or {}, job, owner_reference(job))
        pmd = pod["metadata"]
        pmd["finalizers"] = [*(pmd.get("finalizers") or []), TRACKING_FINALIZER]
        if index is not None:
            pmd["generateName"] = f"{md.get('name')}-{index}-"
            pmd.setdefault("annotations", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
            pmd.setdefault("labels", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
            pod["spec"].setdefault("hostname", f"{md.get('name')}-{index}")
            env = {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"}}}  # fmt: skip
            for c in [*(pod["spec"].get("initContainers") or []), *(pod["spec"].get("containers") or [])]:
                if not any(e.get("name") == COMPLETION_INDEX_ENV for e in c.get("env") or ()):
                    c["env"] = [*(c.get("env") or []), env]
        return pod

    async def _delete_pods(self, key: str, job: Object, pods: list[Object], n: int) -> None:
        if n <= 0:
            return
        doomed = deletion_order(pods, [0] * len(pods), dt.datetime.now(dt.UTC))[
            : min(n, MAX_POD_CREATE_DELETE_PER_SYNC)
        ]
        self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])
        await self.pod_control.delete_pods(str(job["metadata"]["namespace"]), doomed, job,
                                           lambda pod: self.expectations.deletion_observed(key, pod_key(pod)))  # fmt: skip

    async def _patch_out_finalizer(self, namespace: str, name: str, uid: str = "") -> None:
        """Remove only the tracking finalizer, whatever else the list holds by then (a strategic merge patch's
        deleteFromPrimitiveList, as upstream); with `uid`, only from that pod."""
        md: dict[str, Any] = {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}
        if uid:
            md["uid"] = uid
        await self.client.patch("pods", name, {"metadata": md}, namespace)

    async def _remove_finalizers(self, key: str, pods: Sequence[Object]) -> set[str]:
        """Remove the tracking finalizer from `pods`; answers the UIDs it is gone from (or whose pod is gone)."""
        done: set[str] = set()
        removed = self.finalizers_removed.setdefault(key, set())

        async def one(pod: Object) -> None:
            md = pod.get("metadata") or {}
            uid = str(md.get("uid"))
            try:
                await self._patch_out_finalizer(str(md.get("namespace")), str(md.get("name")), uid)
            except errors.NotFound:
                pass
            except errors.StatusError as err:
                log.info("job %s: removing the finalizer of pod %s: %s", key, md.get("name"), err)
                return
            removed.add(uid)
            done.add(uid)

        await asyncio.gather(*(one(p) for p in pods))
        return done

    async def _track_finished(self, key: str, job: dict[str, Any], cached: Object, pods: list[Object],
                              unc_ok: set[str], unc_failed: set[str], ignored: set[str], indexed: bool) -> None:  # fmt: skip
        """Write the status with the newly finished pods uncounted, remove their finalizers, then count them, and
        finish the Job once nothing runs (upstream: trackJobStatusAndRemoveFinalizers, enactJobFinished)."""
        status = job["status"]
        if unc_ok or unc_failed:
            status["uncountedTerminatedPods"] = {
                k: sorted(v) for k, v in (("succeeded", unc_ok), ("failed", unc_failed)) if v
            }
        else:
            status.pop("uncountedTerminatedPods", None)
        written = await self._write_status(job, cached.get("status") or {})
        by_uid = {str((p.get("metadata") or {}).get("uid")): p for p in pods}
        to_release = [p for uid, p in by_uid.items() if (uid in unc_ok | unc_failed or uid in ignored)
                      and TRACKING_FINALIZER in self._finalizers(p)]  # fmt: skip
        gone = {
            uid
            for uid in unc_ok | unc_failed
            if uid not in by_uid or TRACKING_FINALIZER not in self._finalizers(by_uid[uid])
        }
        done = await self._remove_finalizers(key, to_release) | gone
        moved_ok, moved_failed = unc_ok & done, unc_failed & done
        if moved_ok or moved_failed:
            status["succeeded"] = int(status.get("succeeded") or 0) + (0 if indexed else len(moved_ok))
            status["failed"] = int(status.get("failed") or 0) + len(moved_failed)
            if indexed:
                counted = {i for uid in moved_ok if (i := completion_index(by_uid.get(uid, {}))) is not None}
                counted |= parse_indexes(status.get("completedIndexes"), 1 << 31)
                status["completedIndexes"] = format_indexes(counted)
                status["succeeded"] = len(counted)
            left_ok, left_failed = unc_ok - moved_ok, unc_failed - moved_failed
            if left_ok or left_failed:
                status["uncountedTerminatedPods"] = {
                    k: sorted(v) for k, v in (("succeeded", left_ok), ("failed", left_failed)) if v
                }
            else:
                status.pop("uncountedTerminatedPods", None)
        for k in ("succeeded", "failed"):
            if not status.get(k):
                status.pop(k, None)
        await self._finish_if_done(job)
        await self._write_status(job, written)

    async def _finish_if_done(self, job: dict[str, Any]) -> None:
        status = job["status"]
        interim = _condition(job, "SuccessCriteriaMet") or _condition(job, "FailureTarget")
        if interim is None or status.get("uncountedTerminatedPods"):
            return
        still = [p for p in self._pods_now(job)
                 if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]  # fmt: skip
        if still:
            return
        now = dt.datetime.now(dt.UTC)
        if interim["type"] == "SuccessCriteriaMet":
            _set_condition(status, _new_condition("Complete", "True", interim["reason"], interim["message"], now))
            status["completionTime"] = rfc3339(now)
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            _set_condition(status, _new_condition("Failed", "True", interim["reason"], interim["message"], now))
            self.recorder.event(job, "Warning", str(interim["reason"]), str(interim["message"]))

    async def _write_status(self, job: dict[str, Any], last: Object) -> Object:
        """Write the status unless it is `last` (what is stored); answers what is stored now."""
        if job["status"] == last:
            return last
        stored = await self.client.update_status(JOBS, job, job["metadata"]["namespace"])
        job["metadata"]["resourceVersion"] = stored["metadata"].get("resourceVersion")
        return json_copy(job["status"])
