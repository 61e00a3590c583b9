"""The CronJob controller (upstream: pkg/controller/cronjob/cronjob_controllerv2.go and utils.go,
`cronjob-controller`): creates a CronJob's Jobs on its schedule.

Each sync of a CronJob: its Jobs' outcomes update `status.active` and `lastSuccessfulTime` (events SawCompletedJob,
MissingJob, UnexpectedJob); finished Jobs beyond `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are
deleted, oldest first. Unless suspended, the most recent scheduled time not yet run (only that one, however many
were missed; more than 100 missed starts are reported as TooManyMissedTimes) gets a Job named
`<cronjob>-<scheduled time in minutes since the epoch>` with the `batch.kubernetes.io/cronjob-scheduled-timestamp`
annotation, unless `startingDeadlineSeconds` has passed for it (MissSchedule), or a Job still runs and
`concurrencyPolicy` is Forbid (JobAlreadyActive) — Replace deletes the running ones first. The CronJob is looked at
again at its next scheduled time. `clock` is injectable so that tests need not wait for minutes to pass.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

from ...api import errors
from ...api.meta import controller_of, json_copy, owner_reference, parse_time, rfc3339
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers
from .cron import Schedule, ScheduleError, parse

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
CRONJOBS = "cronjobs.batch"
JOBS = "jobs.batch"
SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100
NEXT_SCHEDULE_DELTA = 0.1  # seconds past the scheduled time, so that the schedule has surely come


def job_finished(job: Object) -> str | None:
    """ "Complete" or "Failed" when the Job has finished, else None."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def _rfc3339_in(t: dt.datetime, tz: dt.tzinfo) -> str:
    """RFC 3339 in the schedule's zone, as Go writes it (`Z` for UTC)."""
    local = t.astimezone(tz)
    text = local.strftime("%Y-%m-%dT%H:%M:%S%z")
    if text.endswith("+0000"):
        return text[:-5] + "Z"
    return f"{text[:-2]}:{text[-2:]}"


def job_name(cronjob_name: str, scheduled: dt.datetime) -> str:
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def most_recent_schedule_time(cj: Object, now: dt.datetime, sched: Schedule, tz: dt.tzinfo) -> tuple[dt.datetime | None, int]:  # fmt: skip
    """(the latest scheduled time ≤ now not yet considered, how many were missed) (upstream:
    mostRecentScheduleTime): counting from lastScheduleTime, or the creation, or now - startingDeadlineSeconds."""
    status = cj.get("status") or {}
    raw = status.get("lastScheduleTime") or (cj.get("metadata") or {}).get("creationTimestamp")
    earliest = parse_time(str(raw)) if raw else now
    deadline = (cj.get("spec") or {}).get("startingDeadlineSeconds")
    if deadline is not None:
        floor = now - dt.timedelta(seconds=int(deadline))
        earliest = max(earliest, floor)
    if earliest > now:
        return None, 0
    latest, missed = None, 0
    t = sched.next(earliest, tz)
    while t is not None and t <= now:
        latest, missed = t, missed + 1
        if missed > MAX_MISSED + 1 and sched.every is None:
            # Jump near the end instead of walking every missed minute of a long outage.
            t = sched.next(now - dt.timedelta(minutes=2), tz)
            while t is not None and t <= now:
                latest = t
                t = sched.next(t, tz)
            break
        t = sched.next(t, tz)
    return latest, missed


class CronJobController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:  # fmt: skip
        self.client = client
        self.workers = workers
        self.clock = clock
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="cronjob")
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder("cronjob-controller")
        self.cronjobs = factory.informer_for(CRONJOBS)
        self.jobs = factory.informer_for(JOBS)
        self.cronjobs.add_event_handler(
            on_add=lambda c, _initial: self.queue.add(meta_namespace_key(c)),
            on_update=lambda _o, c: self.queue.add(meta_namespace_key(c)),
            on_delete=lambda c: self.queue.add(meta_namespace_key(deleted_object(c))),
        )
        self.jobs.add_event_handler(
            on_add=lambda j, _initial: self._job_changed(j),
            on_update=lambda _o, j: self._job_changed(j),
            on_delete=lambda j: self._job_changed(deleted_object(j)),
        )

    def _job_changed(self, job: Object) -> None:
        ref = controller_of(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.queue.add(f"{(job.get('metadata') or {}).get('namespace')}/{ref.get('name')}")

    async def run(self) -> None:
        await asyncio.gather(self.cronjobs.wait_for_sync(), self.jobs.wait_for_sync())
        tasks = queue_workers(self.queue, self.sync, "sync cronjob", self.workers)
        await run_workers(tasks, [self.queue], self.broadcaster)

    def _children(self, cj: Object) -> list[Object]:
        uid = (cj.get("metadata") or {}).get("uid")
        namespace = str((cj.get("metadata") or {}).get("namespace") or "")
        return [j for j in self.jobs.indexer.by_index("namespace", namespace)
                if (controller_of(j) or {}).get("uid") == uid]  # fmt: skip

    async def sync(self, key: str) -> None:
        cached = self.cronjobs.indexer.get_by_key(key)
        if cached is None:
            return
        cj: dict[str, Any] = json_copy(cached)
        children = self._children(cj)
        listed = {a.get("uid") for a in (cj.get("status") or {}).get("active") or ()}
        if any(not job_finished(j) and (j.get("metadata") or {}).get("uid") not in listed for j in children):
            # A running Job the cached CronJob does not list: the cache may lag our own status write. Ask the
            # API server before calling the Job unexpected, or starting another beside it.
            try:
                cj = await self.client.get(CRONJOBS, str(cj["metadata"]["name"]), str(cj["metadata"]["namespace"]))
            except errors.NotFound:
                return
        status = cj.setdefault("status", {})
        before = json_copy(status)
        now = self.clock()
        self._reconcile_active(cj, children)
        await self._cleanup_finished(cj, children)
        try:
            await self._schedule(cj, now)
        finally:
            if status != before:
                await self.client.update_status(CRONJOBS, cj, cj["metadata"]["namespace"])

    def _reconcile_active(self, cj: dict[str, Any], children: list[Object]) -> None:
        status = cj["status"]
        active = list(status.get("active") or [])
        active_uids = {a.get("uid") for a in active}
        by_uid = {str((j.get("metadata") or {}).get("uid")): j for j in children}
        for job in children:
            md = job.get("metadata") or {}
            finished = job_finished(job)
            if md.get("uid") in active_uids and finished:
                active = [a for a in active if a.get("uid") != md.get("uid")]
                self.recorder.event(cj, "Normal", "SawCompletedJob",
                                    f"Saw completed job: {md.get('name')}, condition: {finished}")  # fmt: skip
                if finished == "Complete":
                    done = (job.get("status") or {}).get("completionTime")
                    last = status.get("lastSuccessfulTime")
                    if done and (not last or parse_time(done) > parse_time(last)):
                        status["lastSuccessfulTime"] = done
            elif md.get("uid") not in active_uids and not finished:
                self.recorder.event(cj, "Warning", "UnexpectedJob",
                                    f"Saw a job that the controller did not create or forgot: {md.get('name')}")  # fmt: skip
        for ref in list(active):
            if ref.get("uid") not in by_uid:
                active = [a for a in active if a.get("uid") != ref.get("uid")]
                self.recorder.event(cj, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    async def _cleanup_finished(self, cj: Object, children: list[Object]) -> None:
        spec = cj.get("spec") or {}
        for outcome, key in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(key)
            if limit is None:
                continue
            done = [j for j in children if job_finished(j) == outcome]
            if len(done) <= int(limit):
                continue
            done.sort(key=lambda j: str((j.get("status") or {}).get("startTime") or ""))
            for job in done[: len(done) - int(limit)]:
                name = str(job["metadata"]["name"])
                try:
                    await self.client.delete(
                        JOBS, name, str(job["metadata"]["namespace"]), propagation_policy="Background"
                    )
                except errors.NotFound:
                    continue
                self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name}")

    def _requeue_at(self, cj: Object, sched: Schedule, tz: dt.tzinfo, now: dt.datetime) -> None:
        nxt = sched.next(now, tz)
        if nxt is not None:
            self.queue.add_after(meta_namespace_key(cj), max(0.0, (nxt - now).total_seconds()) + NEXT_SCHEDULE_DELTA)

    async def _schedule(self, cj: dict[str, Any], now: dt.datetime) -> None:
        md, spec, status = cj["metadata"], cj.get("spec") or {}, cj["status"]
        if md.get("deletionTimestamp") or spec.get("suspend"):
            return
        tz: dt.tzinfo = dt.UTC
        if spec.get("timeZone"):
            try:
                tz = zoneinfo.ZoneInfo(str(spec["timeZone"]))
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
                self.recorder.event(cj, "Warning", "UnknownTimeZone", f'invalid timeZone: "{spec["timeZone"]}": {err}')
                return
        try:
            sched = parse(str(spec.get("schedule") or ""))
        except ScheduleError as err:
            self.recorder.event(
                cj, "Warning", "UnparseableSchedule", f'unparseable schedule: "{spec.get("schedule")}" : {err}'
            )
            return
        scheduled, missed = most_recent_schedule_time(cj, now, sched, tz)
        if missed > MAX_MISSED:
            self.recorder.event(cj, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
                                ".spec.startingDeadlineSeconds or check clock skew")  # fmt: skip
        if scheduled is None:
            self._requeue_at(cj, sched, tz, now)
            return
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + dt.timedelta(seconds=int(deadline)) < now:
            when = scheduled.astimezone(dt.UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
            self.recorder.event(cj, "Warning", "MissSchedule", f"Missed scheduled time to start a job: {when}")
            self._requeue_at(cj, sched, tz, now)
            return
        name = job_name(str(md["name"]), scheduled)
        last = status.get("lastScheduleTime")
        if any(a.get("name") == name for a in status.get("active") or ()) or (last and parse_time(last) == scheduled):
            self._requeue_at(cj, sched, tz, now)
            return
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status.get("active"):
            self.recorder.event(cj, "Normal", "JobAlreadyActive",
                                "Not starting job because prior execution is running and concurrency policy is Forbid")  # fmt: skip
            self._requeue_at(cj, sched, tz, now)
            return
        if policy == "Replace":
            for ref in list(status.get("active") or ()):
                try:
                    await self.client.delete(
                        JOBS, str(ref.get("name")), md["namespace"], propagation_policy="Background"
                    )
                except errors.NotFound:
                    pass
                self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {ref.get('name')}")
            status.pop("active", None)
        try:
            job = await self.client.create(JOBS, self._job(cj, name, scheduled, tz), md["namespace"])
        except errors.AlreadyExists:
            self._requeue_at(cj, sched, tz, now)
            return
        except errors.StatusError as err:
            if not errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {err.message}")
            raise
        self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {name}")
        jmd = job["metadata"]
        ref = {"kind": "Job", "namespace": jmd["namespace"], "name": jmd["name"], "uid": jmd["uid"],
               "apiVersion": "batch/v1", "resourceVersion": jmd.get("resourceVersion")}  # fmt: skip
        status["active"] = [*(status.get("active") or []), ref]
        status["lastScheduleTime"] = rfc3339(scheduled)
        self._requeue_at(cj, sched, tz, now)

    def _job(self, cj: Object, name: str, scheduled: dt.datetime, tz: dt.tzinfo) -> dict[str, Any]:
        template = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmd = template.get("metadata") or {}
        annotations = {**(tmd.get("annotations") or {}), SCHEDULED_TIMESTAMP_ANNOTATION: _rfc3339_in(scheduled, tz)}
        meta: dict[str, Any] = {"name": name, "annotations": annotations,
                                "ownerReferences": [owner_reference(cj)]}  # fmt: skip
        if tmd.get("labels"):
            meta["labels"] = dict(tmd["labels"])
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": json_copy(template.get("spec") or {}),
        }
