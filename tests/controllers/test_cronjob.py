"""CronJobs: the schedule syntax (robfig/cron's, as upstream), and the controller against a real API server with
a fake clock, so that years of schedule pass in a second: Jobs named by their scheduled minute with the
scheduled-timestamp annotation, active/lastScheduleTime/lastSuccessfulTime, history limits, Forbid and Replace,
a missed start past startingDeadlineSeconds, time zones, and suspend. The Jobs' outcomes are written by the test
(no Job controller runs here), as a Job controller would write them."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import zoneinfo
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from pyk8s.client.cache import SharedInformerFactory
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.cronjob import CronJobController
from pyk8s.controllers.cronjob.cron import ScheduleError, parse
from pyk8s.controllers.cronjob.cronjob_controller import job_finished
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import until

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize(
    ("schedule", "after", "want"),
    [
        ("*/15 * * * *", "2026-03-01T10:07:00Z", "2026-03-01T10:15:00Z"),
        ("@hourly", "2026-03-01T10:07:00Z", "2026-03-01T11:00:00Z"),
        ("0 9 * * mon-fri", "2026-03-06T09:00:00Z", "2026-03-09T09:00:00Z"),  # Friday 9:00 -> Monday
        ("0 0 13 * 5", "2026-03-01T00:00:00Z", "2026-03-06T00:00:00Z"),  # day 13 OR Friday: Friday the 6th first
        ("0 0 13 * *", "2026-03-01T00:00:00Z", "2026-03-13T00:00:00Z"),
        ("30 2 * jan,jul *", "2026-03-01T00:00:00Z", "2026-07-01T02:30:00Z"),
        ("@yearly", "2026-11-25T00:00:00Z", "2027-01-01T00:00:00Z"),
        ("@every 90s", "2026-03-01T10:00:00Z", "2026-03-01T10:01:30Z"),
        ("0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
    ],
)  # fmt: skip
def test_next_scheduled_time(schedule, after, want):
    assert parse(schedule).next(at(after), UTC) == at(want)


def test_schedules_in_a_time_zone():
    tokyo = zoneinfo.ZoneInfo("Asia/Tokyo")
    assert parse("0 9 * * *").next(at("2026-03-01T00:30:00Z"), tokyo) == at("2026-03-02T00:00:00Z")


@pytest.mark.parametrize(
    ("schedule", "error"),
    [("* * * *", "expected exactly 5 fields, found 4"), ("61 * * * *", "above maximum (59)"),
     ("* * * * 0-9", "above maximum (6)"), ("@fortnightly", "unrecognized descriptor"), ("x * * * *", "failed to parse int")],
)  # fmt: skip
def test_bad_schedules(schedule, error):
    with pytest.raises(ScheduleError, match=re.escape(error)):
        parse(schedule)


# -- the controller -----------------------------------------------------------------------------------------


NS = "cron"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    proc.create_namespace(NS)
    yield proc
    proc.cleanup()


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime.now(UTC)

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
async def rig(server: APIServerProcess) -> AsyncIterator[tuple[RESTClient, CronJobController, Clock]]:
    async with RESTClient(load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)) as client:
        clock = Clock()
        factory = SharedInformerFactory(client)
        controller = CronJobController(client, factory, clock=clock)
        factory.start()
        task = asyncio.create_task(controller.run())
        try:
            yield client, controller, clock
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await factory.shutdown()


def cronjob(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"restartPolicy": "Never",
                                               "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}}}}  # fmt: skip
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "jobTemplate": template, **spec}}  # fmt: skip


async def jobs_of(client: RESTClient, name: str) -> list[dict[str, Any]]:
    items = (await client.list("jobs.batch", NS))["items"]
    return sorted(
        (j for j in items if j["metadata"]["name"].startswith(f"{name}-")), key=lambda j: j["metadata"]["name"]
    )


async def finish(client: RESTClient, job: dict[str, Any], outcome: str, when: dt.datetime) -> None:
    fresh = await client.get("jobs.batch", job["metadata"]["name"], NS)
    t = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    conds = [{"type": "SuccessCriteriaMet" if outcome == "Complete" else "FailureTarget", "status": "True",
              "lastTransitionTime": t, "reason": "x", "message": "x"},
             {"type": outcome, "status": "True", "lastTransitionTime": t, "reason": "x", "message": "x"}]  # fmt: skip
    fresh["status"] = {"startTime": t, "conditions": conds, **({"completionTime": t, "succeeded": 1}
                                                                 if outcome == "Complete" else {"failed": 1})}  # fmt: skip
    await client.update_status("jobs.batch", fresh, NS)


async def events_of(client: RESTClient, name: str, reason: str) -> list[str]:
    items = (await client.list("events", NS))["items"]
    return [e["message"] for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


async def sync_at(controller: CronJobController, clock: Clock, when: str, name: str, client: RESTClient) -> None:
    # The clock jumps: first let the controller's caches catch up with what it last wrote (its Jobs, the
    # CronJob's status), as an hour of real time would, or a sync at the new time decides from a stale view.
    key = f"{NS}/{name}"

    async def settled() -> bool:
        cj = controller.cronjobs.indexer.get_by_key(key)
        if cj is None:
            return True
        server = {j["metadata"]["uid"]: j for j in await jobs_of(client, name)}
        cached = {j["metadata"]["uid"]: j for j in controller._children(cj)}
        if set(server) != set(cached) or any(job_finished(server[u]) != job_finished(cached[u]) for u in server):
            return False  # the Job informer has not seen them all as they are
        active = {a.get("uid") for a in (cj.get("status") or {}).get("active") or ()}
        return {u for u, j in cached.items() if not job_finished(j)} <= active

    if controller.cronjobs.indexer.get_by_key(key) is not None:  # (a new CronJob: its first sync is this one)
        await until("the controller's caches to catch up", settled)
        await asyncio.sleep(0.2)  # and a sync those updates queued to finish, at the old time
        await until("the controller's caches to catch up", settled)
    clock.now = at(when)
    controller.queue.add(key)


async def test_yearly_jobs_their_status_and_history(rig):
    client, controller, clock = rig
    await client.create("cronjobs.batch", cronjob("yearly", "0 0 1 1 *", successfulJobsHistoryLimit=1), NS)
    await sync_at(controller, clock, "2027-01-01T00:00:30Z", "yearly", client)
    [job] = await until("the first job", lambda: jobs_of(client, "yearly"))
    minutes = int(at("2027-01-01T00:00:00Z").timestamp()) // 60
    assert job["metadata"]["name"] == f"yearly-{minutes}"
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2027-01-01T00:00:00Z"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"

    async def status() -> dict[str, Any]:
        return (await client.get("cronjobs.batch", "yearly", NS)).get("status") or {}

    st = await until("status", lambda: _with(status, lambda s: s.get("active")))
    assert st["lastScheduleTime"] == "2027-01-01T00:00:00Z" and st["active"][0]["name"] == job["metadata"]["name"]
    assert f"Created job {job['metadata']['name']}" in await events_of(client, "yearly", "SuccessfulCreate")

    await finish(client, job, "Complete", at("2027-01-01T00:01:00Z"))
    st = await until(
        "the job seen complete", lambda: _with(status, lambda s: not s.get("active") and s.get("lastSuccessfulTime"))
    )
    assert st["lastSuccessfulTime"] == "2027-01-01T00:01:00Z"
    saw = await until("SawCompletedJob", lambda: events_of(client, "yearly", "SawCompletedJob"))
    assert saw == [f"Saw completed job: {job['metadata']['name']}, condition: Complete"]

    # A year on: a second Job, and once it completes the history limit (1) removes the first.
    await sync_at(controller, clock, "2028-01-01T00:00:10Z", "yearly", client)
    jobs = await until("the second job", lambda: _with(lambda: jobs_of(client, "yearly"), lambda j: len(j) == 2))
    await finish(client, jobs[1], "Complete", at("2028-01-01T00:02:00Z"))

    async def first_gone() -> bool:
        names = [
            j["metadata"]["name"] for j in await jobs_of(client, "yearly") if not j["metadata"].get("deletionTimestamp")
        ]
        return names == [jobs[1]["metadata"]["name"]]

    await until("the oldest finished job deleted", first_gone)


async def _with(fetch, pred) -> Any:
    got = await fetch()
    return got if pred(got) else None


async def test_forbid_skips_while_a_job_runs_and_replace_replaces_it(rig):
    client, controller, clock = rig
    await client.create("cronjobs.batch", cronjob("forbid", "0 * * * *", concurrencyPolicy="Forbid"), NS)
    await sync_at(controller, clock, "2030-05-01T10:00:05Z", "forbid", client)
    await until("the first job", lambda: jobs_of(client, "forbid"))
    await sync_at(controller, clock, "2030-05-01T11:00:05Z", "forbid", client)
    skipped = await until("JobAlreadyActive", lambda: events_of(client, "forbid", "JobAlreadyActive"))
    assert skipped[0] == "Not starting job because prior execution is running and concurrency policy is Forbid"
    assert len(await jobs_of(client, "forbid")) == 1

    await client.create("cronjobs.batch", cronjob("swap", "0 * * * *", concurrencyPolicy="Replace"), NS)
    await sync_at(controller, clock, "2030-05-01T10:00:05Z", "swap", client)
    [first] = await until("the first job", lambda: jobs_of(client, "swap"))
    await sync_at(controller, clock, "2030-05-01T11:00:05Z", "swap", client)
    await until("the first job replaced", lambda: events_of(client, "swap", "SuccessfulDelete"))

    async def replaced() -> bool:
        live = [j for j in await jobs_of(client, "swap") if not j["metadata"].get("deletionTimestamp")]
        return len(live) == 1 and live[0]["metadata"]["name"] != first["metadata"]["name"]

    await until("only the new job", replaced)


async def test_a_start_missed_past_its_deadline_is_skipped(rig):
    client, controller, clock = rig
    await client.create("cronjobs.batch", cronjob("strict", "0 0 1 1 *", startingDeadlineSeconds=60), NS)
    # Two hours late for 2031's start: past the 60 s deadline.
    await sync_at(controller, clock, "2031-01-01T02:00:00Z", "strict", client)
    await asyncio.sleep(1.0)
    assert await jobs_of(client, "strict") == []
    # With the deadline, only starts within the last 60 s count: none here, so nothing is reported missed either;
    # 30 s after the next start it runs.
    await sync_at(controller, clock, "2032-01-01T00:00:30Z", "strict", client)
    [job] = await until("the job in time", lambda: jobs_of(client, "strict"))
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2032-01-01T00:00:00Z"


async def test_time_zone_and_suspend(rig):
    client, controller, clock = rig
    await client.create("cronjobs.batch", cronjob("tokyo", "0 9 * * *", timeZone="Asia/Tokyo", suspend=True), NS)
    await sync_at(controller, clock, "2030-05-02T00:00:30Z", "tokyo", client)  # 09:00:30 in Tokyo
    await asyncio.sleep(1.0)
    assert await jobs_of(client, "tokyo") == []  # suspended
    cj = await client.get("cronjobs.batch", "tokyo", NS)
    cj["spec"]["suspend"] = False
    await client.update("cronjobs.batch", cj, NS)
    [job] = await until("the job", lambda: jobs_of(client, "tokyo"))
    assert (
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2030-05-02T09:00:00+09:00"
    )
