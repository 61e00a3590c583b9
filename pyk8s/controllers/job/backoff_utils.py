"""How long a Job waits before it replaces failed pods (upstream: pkg/controller/job/backoff_utils.go): 10 s
doubling with each consecutive failure, at most 10 minutes, counted from when the last failed pod finished.

Without backoffLimitPerIndex the count is the Job's: failures since its last success, kept in memory per Job
(`BackoffRecord`). With backoffLimitPerIndex each index has its own, read off the last failed pod of the index:
its `job-index-failure-count` and `job-index-ignored-failure-count` annotations, plus one."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .indexed_job_utils import index_absolute_failure_count
from .utils import finished_time

Object = Mapping[str, Any]

DEFAULT_BACKOFF = 10.0  # seconds (upstream: DefaultJobPodFailureBackOff)
MAX_BACKOFF = 600.0  # seconds (upstream: MaxJobPodFailureBackOff)


@dataclass(frozen=True)
class BackoffRecord:
    """A Job's pod failures since its last success, and when the latest of them finished."""

    failures: int = 0
    last_failure: dt.datetime | None = None


def new_backoff_record(old: BackoffRecord, succeeded: Iterable[Object], failed: Iterable[Object]) -> BackoffRecord:
    """The record after pods newly succeeded and failed: a success resets the count, so only failures that
    finished after the latest success count (upstream: newBackoffRecord)."""
    epoch = dt.datetime.min.replace(tzinfo=dt.UTC)
    ok_times = sorted(finished_time(p) or epoch for p in succeeded)
    failed_times = sorted(finished_time(p) or epoch for p in failed)
    if not ok_times:
        if not failed_times:
            return old
        return BackoffRecord(old.failures + len(failed_times), failed_times[-1])
    after = [t for t in failed_times if t > ok_times[-1]]
    return BackoffRecord(len(after), after[-1] if after else None)


def remaining_time(failures: int, last_failure: dt.datetime | None, now: dt.datetime) -> float:
    """Seconds before a pod may replace the failed ones: 10 s * 2^(failures-1), at most 10 minutes, from the
    last failure (upstream: getRemainingTimeForFailuresCount)."""
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = min(DEFAULT_BACKOFF * 2 ** min(failures - 1, 16), MAX_BACKOFF)  # capped before it can overflow
    return max(0.0, delay - (now - last_failure).total_seconds())


def remaining_time_per_index(last_failed: Object | None, now: dt.datetime) -> float:
    """Seconds before an index may get a new pod, from its last failed pod: that pod's failures so far (counted
    or ignored) plus its own (upstream: getRemainingTimePerIndex)."""
    if last_failed is None:
        return 0.0
    return remaining_time(index_absolute_failure_count(last_failed) + 1, finished_time(last_failed), now)


def indexes_ready_to_create(
    indexes: Sequence[int], last_failed: Mapping[int, Object], now: dt.datetime
) -> tuple[list[int], float]:
    """Of `indexes`, those whose back-off is over, and the shortest wait among the others (0 when none waits)
    (upstream: getPodCreationInfoForIndependentIndexes)."""
    ready: list[int] = []
    waits: list[float] = []
    for i in indexes:
        wait = remaining_time_per_index(last_failed.get(i), now)
        if wait <= 0:
            ready.append(i)
        else:
            waits.append(wait)
    return ready, min(waits, default=0.0)
