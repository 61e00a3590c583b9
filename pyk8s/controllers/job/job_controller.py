"""The Job controller (upstream: pkg/controller/job/job_controller.go, `job-controller`): runs a Job's pods until
enough of them succeed, or it fails.

Each sync of a Job (by `namespace/name`):
1. Its pods are claimed (adopted ones get the `batch.kubernetes.io/job-tracking` finalizer, as created ones do).
2. Finished pods are counted exactly once, as upstream tracks them: their UIDs go to
   `status.uncountedTerminatedPods` first, then their finalizers are removed, then they move into
   `status.succeeded` / `status.failed` (for Indexed Jobs, `completedIndexes`). A deleted pod that had not
   succeeded counts as failed.
3. The Job's outcome: enough successes (`completions`, or with none set any success once nothing runs) meet the
   success criteria, as does a rule of an Indexed Job's `successPolicy` (success_policy.py); more failures than
   `backoffLimit`, a pod matching a FailJob rule of `podFailurePolicy`, `activeDeadlineSeconds` past since
   `startTime`, or, with `backoffLimitPerIndex`, more failed indexes than `maxFailedIndexes` or every index
   done with some failed, set the failure target. As v1.32 does, the interim condition (SuccessCriteriaMet /
   FailureTarget) comes first; then every pod's finalizer goes (those still running count as failed when the
   Job failed), active pods are deleted, and the terminal condition (Complete with `completionTime` / Failed)
   follows once no pod is left running or uncounted, with the `Completed` or failure event.
4. Otherwise pods are created (from the template, in slow-start batches, at most 500 a sync) or deleted until
   `parallelism` (at most the completions still missing) run; a suspended Job runs none. After failures, new pods
   wait 10 s * 2^(failures-1), at most 10 minutes (backoff_utils.py): per Job, or with `backoffLimitPerIndex`
   per index, whose failures are counted in its pods' annotations and `status.failedIndexes`
   (indexed_job_utils.py).
Not yet: managedBy.
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
from . import success_policy
from .backoff_utils import BackoffRecord, indexes_ready_to_create, new_backoff_record, remaining_time
from .indexed_job_utils import (
    COMPLETION_INDEX_ANNOTATION,
    COMPLETION_INDEX_ENV,
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    MAX_INT32,
    completion_index,
    first_pending_indexes,
    format_indexes,
    has_backoff_limit_per_index,
    new_index_failure_counts,
    parse_indexes,
)
from .pod_failure_policy import match_pod_failure_policy
from .tracking_utils import TRACKING_FINALIZER, SyncContext, count_pods, count_rest
from .tracking_utils import uid as pod_uid
from .utils import (
    condition,
    is_finished,
    new_condition,
    only_replace_failed_pods,
    past_backoff_limit_on_failure,
    set_condition,
)

log = logging.getLogger(__name__)

Object = Mapping[str, Any]

JOBS = "jobs.batch"
MAX_POD_CREATE_DELETE_PER_SYNC = 500
SYNC_JOB_BATCH_PERIOD = 1.0  # seconds


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
        # Per Job key: failures since the last success, and when the latest happened (not with
        # backoffLimitPerIndex, whose indexes keep their counts in their pods).
        self.backoff: dict[str, BackoffRecord] = {}
        self.jobs = factory.informer_for(JOBS)
        self.pods = factory.informer_for("pods")
        add_pod_controller_uid_indexer(self.pods.indexer)
        self.jobs.add_event_handler(
            on_add=lambda j, _initial: self.queue.add(meta_namespace_key(j)),
            on_update=self._job_updated,
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

    def _job_updated(self, old: Object, new: Object) -> None:
        # A new spec is acted on at once; a status change (mostly this controller's own writes) joins the batch
        # of pod changes (upstream: updateJob).
        key = meta_namespace_key(new)
        if (old.get("metadata") or {}).get("generation") == (new.get("metadata") or {}).get("generation"):
            self.queue.add_after(key, SYNC_JOB_BATCH_PERIOD)
        else:
            self.queue.add(key)

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
        # Pod changes come in bursts: one sync a second takes them together, and by then the informer holds the
        # Job as this controller last wrote it (upstream: enqueueSyncJobBatched, syncJobBatchPeriod).
        self.queue.add_after(key, SYNC_JOB_BATCH_PERIOD)

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
            self.backoff.pop(key, None)
            await self._remove_finalizers(key, [p for p in pods if TRACKING_FINALIZER in self._finalizers(p)])
            return
        now = dt.datetime.now(dt.UTC)
        spec, status = job.get("spec") or {}, job.setdefault("status", {})
        indexed = spec.get("completionMode") == "Indexed"
        per_index = has_backoff_limit_per_index(job)
        suspended = bool(spec.get("suspend"))

        # Count finished pods (step 2): newly finished ones join uncountedTerminatedPods.
        ctx = count_pods(job, pods, self.finalizers_removed.get(key, set()))
        if not per_index:
            # Kept once the status with these pods is written (_track_finished), lest a retry count them twice.
            ctx.backoff = new_backoff_record(self.backoff.get(key, BackoffRecord()), ctx.newly_succeeded,
                                             ctx.newly_failed)  # fmt: skip
        succeeded = len(ctx.succeeded_idx) if indexed else int(status.get("succeeded") or 0) + len(ctx.unc_ok)
        policy = spec.get("podFailurePolicy")
        failed = int(status.get("failed") or 0) + len(ctx.unc_failed)
        failed += sum(1 for p in ctx.held if match_pod_failure_policy(policy, p)[1])

        # The outcome (step 3).
        finished_cond = condition(job, "SuccessCriteriaMet") or condition(job, "FailureTarget")
        if finished_cond is None:
            finished_cond = self._outcome(job, ctx, pods, succeeded, failed, now)
            if finished_cond is not None:
                set_condition(status, finished_cond)
        if finished_cond is not None:
            count_rest(job, ctx, failing=finished_cond["type"] == "FailureTarget")
            # Nothing new starts; what still runs is stopped.
            await self._delete_pods(key, job, ctx.active, len(ctx.active), ctx)
        elif suspended:
            await self._delete_pods(key, job, ctx.active, len(ctx.active), ctx)
        elif job["metadata"].get("deletionTimestamp"):
            pass  # being deleted: its pods go with it, none is made
        elif self.expectations.satisfied(key):
            wait = remaining_time(ctx.backoff.failures, ctx.backoff.last_failure, now)
            if wait > 0:
                self.queue.add_after(key, wait)
            else:
                await self._manage(key, job, ctx, succeeded, now)

        # Status (and then the finalizers).
        active_now = [p for p in self._pods_now(job) if is_pod_active(p) and pod_uid(p) not in ctx.deleted]
        # As the Go type encodes them: `active` only when not zero, `ready` and `terminating` always.
        status["active"] = len(active_now)
        if not status["active"]:
            status.pop("active")
        status["ready"] = sum(1 for p in active_now if is_pod_ready(p))
        status["terminating"] = len(ctx.terminating) + len(ctx.deleted)
        if per_index:
            status["failedIndexes"] = format_indexes(ctx.failed_idx)
        if suspended:
            if set_condition(status, new_condition("Suspended", "True", "JobSuspended", "Job suspended", now)):
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
        else:
            if condition(job, "Suspended") is not None:
                set_condition(status, new_condition("Suspended", "False", "JobResumed", "Job resumed", now))
                self.recorder.event(job, "Normal", "Resumed", "Job resumed")
                # activeDeadlineSeconds counts continuous activity: it starts again on resume.
                status["startTime"] = rfc3339(now)
            if not status.get("startTime"):
                status["startTime"] = rfc3339(now)
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and finished_cond is None:
                left = int(deadline) - (now - parse_time(status["startTime"])).total_seconds()
                self.queue.add_after(key, max(left, 0.0))
        await self._track_finished(key, job, cached, pods, ctx, indexed)

    def _outcome(
        self, job: Object, ctx: SyncContext, pods: Sequence[Object], succeeded: int, failed: int, now: dt.datetime
    ) -> dict[str, Any] | None:
        """The interim condition the Job has just earned, if any, in upstream's order of precedence (syncJob)."""
        spec, status = job.get("spec") or {}, job.get("status") or {}
        completions = spec.get("completions")
        # The API server's default: 6, or no limit at all when each index has one.
        raw_limit = spec.get("backoffLimit")
        backoff_limit = (
            int(raw_limit) if raw_limit is not None else MAX_INT32 if has_backoff_limit_per_index(job) else 6
        )
        deadline = spec.get("activeDeadlineSeconds")
        start = parse_time(status["startTime"]) if status.get("startTime") else None

        def failure(reason: str, message: str) -> dict[str, Any]:
            return new_condition("FailureTarget", "True", reason, message, now)

        if ctx.fail_job_message is not None:
            return failure("PodFailurePolicy", ctx.fail_job_message)
        if failed > backoff_limit or past_backoff_limit_on_failure(job, pods, backoff_limit):
            return failure("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        if (
            deadline is not None
            and start is not None
            and not spec.get("suspend")
            and ((now - start).total_seconds() >= int(deadline))
        ):
            return failure("DeadlineExceeded", "Job was active longer than specified deadline")
        if has_backoff_limit_per_index(job):
            max_failed = spec.get("maxFailedIndexes")
            if max_failed is not None and len(ctx.failed_idx) > int(max_failed):
                return failure(
                    "MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes"
                )
            if ctx.failed_idx and len(ctx.failed_idx) + len(ctx.succeeded_idx) >= int(completions or 0):
                return failure("FailedIndexes", "Job has failed indexes")
        if spec.get("completionMode") == "Indexed":
            message = success_policy.match_success_policy(
                spec.get("successPolicy"), int(completions or 0), ctx.succeeded_idx
            )
            if message is not None:
                return new_condition("SuccessCriteriaMet", "True", success_policy.REASON, message, now)
        complete = (succeeded > 0 and not ctx.active) if completions is None else succeeded >= int(completions)
        if complete:
            return new_condition(
                "SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", now
            )
        return None

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

    async def _manage(self, key: str, job: Object, ctx: SyncContext, succeeded: int, now: dt.datetime) -> None:
        """Create or delete pods so that as many run as parallelism asks and completions still need."""
        spec = job.get("spec") or {}
        active = ctx.active
        raw_parallelism = spec.get("parallelism")
        parallelism = 1 if raw_parallelism is None else int(raw_parallelism)
        completions = spec.get("completions")
        if completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - succeeded, parallelism))
        if len(active) > want:
            await self._delete_pods(key, job, active, len(active) - want, ctx)
            return
        # Pods still terminating take their place until they have failed, when only failed pods are replaced.
        waiting = ctx.terminating if only_replace_failed_pods(job) else []
        diff = min(want - len(active) - len(waiting), MAX_POD_CREATE_DELETE_PER_SYNC)
        if diff <= 0:
            return
        indexes: list[int | None] = [None] * diff
        if spec.get("completionMode") == "Indexed":
            busy = {i for p in [*active, *waiting] if (i := completion_index(p)) is not None}
            pending = first_pending_indexes(busy, ctx.succeeded_idx | ctx.failed_idx, diff, int(completions or 0))
            if has_backoff_limit_per_index(job):
                # Each index waits out its own back-off; the Job looks again when the next one is over.
                pending, wait = indexes_ready_to_create(pending, ctx.delayed, now)
                if wait > 0:
                    self.queue.add_after(key, wait)
            indexes = list(pending)
            diff = len(indexes)
            if not diff:
                return
        self.expectations.expect_creations(key, diff)
        todo = iter(indexes)

        async def create() -> None:
            index = next(todo)
            pod = self._pod(job, index, ctx.delayed.get(index) if index is not None else None)
            await self.pod_control.create_pod(str(job["metadata"]["namespace"]), pod, job)

        created, err = await slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(diff - created):
            self.expectations.creation_observed(key)
        if err is not None:
            raise err

    def _pod(self, job: Object, index: int | None, replaced: Object | None) -> dict[str, Any]:
        """A new pod from the template; for an Indexed Job, of `index`, replacing the index's last failed pod
        `replaced` (whose failure count it carries on, with backoffLimitPerIndex)."""
        md = job.get("metadata") or {}
        pod = pod_from_template((job.get("spec") or {}).get("template") or {}, job, owner_reference(job))
        pmd = pod["metadata"]
        pmd["finalizers"] = [*(pmd.get("finalizers") or []), TRACKING_FINALIZER]
        if index is not None:
            pmd["generateName"] = f"{md.get('name')}-{index}-"
            annotations = pmd.setdefault("annotations", {})
            annotations[COMPLETION_INDEX_ANNOTATION] = str(index)
            pmd.setdefault("labels", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
            if has_backoff_limit_per_index(job):
                failures, ignored = new_index_failure_counts(job, replaced)
                annotations[INDEX_FAILURE_COUNT_ANNOTATION] = str(failures)
                if ignored:
                    annotations[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
            pod["spec"].setdefault("hostname", f"{md.get('name')}-{index}")
            env = {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"}}}  # fmt: skip
            for c in [*(pod["spec"].get("initContainers") or []), *(pod["spec"].get("containers") or [])]:
                if not any(e.get("name") == COMPLETION_INDEX_ENV for e in c.get("env") or ()):
                    c["env"] = [*(c.get("env") or []), env]
        return pod

    async def _delete_pods(self, key: str, job: Object, pods: list[Object], n: int, ctx: SyncContext) -> None:
        """Delete `n` of `pods`, the least advanced first; those deleted count as terminating from now on
        (`ctx.deleted`), as upstream counts them, though the informer has not shown it yet."""
        if n <= 0:
            return
        doomed = deletion_order(pods, [0] * len(pods), dt.datetime.now(dt.UTC))[
            : min(n, MAX_POD_CREATE_DELETE_PER_SYNC)
        ]
        self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])
        kept: set[str] = set()

        def not_deleted(pod: Object) -> None:
            kept.add(pod_uid(pod))
            self.expectations.deletion_observed(key, pod_key(pod))

        try:
            await self.pod_control.delete_pods(str(job["metadata"]["namespace"]), doomed, job, not_deleted)
        finally:
            ctx.deleted |= {pod_uid(p) for p in doomed} - kept

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

    async def _track_finished(
        self, key: str, job: dict[str, Any], cached: Object, pods: list[Object], ctx: SyncContext, indexed: bool
    ) -> None:
        """Write the status with the newly finished pods uncounted, remove their finalizers, then count them, and
        finish the Job once nothing runs (upstream: trackJobStatusAndRemoveFinalizers, enactJobFinished)."""
        status = job["status"]
        unc_ok, unc_failed, ignored = ctx.unc_ok, ctx.unc_failed, ctx.ignored
        if unc_ok or unc_failed:
            status["uncountedTerminatedPods"] = {
                k: sorted(v) for k, v in (("succeeded", unc_ok), ("failed", unc_failed)) if v
            }
        else:
            status.pop("uncountedTerminatedPods", None)
        written = await self._write_status(job, cached.get("status") or {})
        self.backoff[key] = ctx.backoff
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
        interim = condition(job, "SuccessCriteriaMet") or condition(job, "FailureTarget")
        # Pods this sync deleted, or seen terminating, end first (upstream: enactJobFinished's terminating count).
        if interim is None or status.get("uncountedTerminatedPods") or status.get("terminating"):
            return
        still = [p for p in self._pods_now(job)
                 if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]  # fmt: skip
        if still:
            return
        now = dt.datetime.now(dt.UTC)
        if interim["type"] == "SuccessCriteriaMet":
            set_condition(status, new_condition("Complete", "True", interim["reason"], interim["message"], now))
            status["completionTime"] = rfc3339(now)
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            set_condition(status, new_condition("Failed", "True", interim["reason"], interim["message"], now))
            self.recorder.event(job, "Warning", str(interim["reason"]), str(interim["message"]))

    async def _write_status(self, job: dict[str, Any], last: Object) -> Object:
        """Write the status unless it is `last` (what is stored); answers what is stored now."""
        if job["status"] == last:
            return last
        stored = await self.client.update_status(JOBS, job, job["metadata"]["namespace"])
        job["metadata"]["resourceVersion"] = stored["metadata"].get("resourceVersion")
        return json_copy(job["status"])
