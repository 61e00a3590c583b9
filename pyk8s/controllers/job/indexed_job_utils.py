"""Completion indexes of Indexed Jobs (upstream: pkg/controller/job/indexed_job_utils.go): a pod's index from its
annotation, the interval strings of `status.completedIndexes` and `status.failedIndexes` (`1,3-5`), and which
indexes still need a pod.

With `backoffLimitPerIndex` each index counts its own failures. The count travels from pod to pod: a
replacement pod carries, in the annotation `batch.kubernetes.io/job-index-failure-count`, the failures of its
index so far (and in `batch.kubernetes.io/job-index-ignored-failure-count` those a podFailurePolicy Ignore rule
left uncounted). An index fails once a failed pod's count reaches the limit, or at once on a FailIndex rule; the
last failed pod of an index that may still retry keeps its tracking finalizer until its replacement exists, so
that the count is never lost."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from .pod_failure_policy import match_pod_failure_policy
from .utils import finished_time, is_pod_failed

Object = Mapping[str, Any]

COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
INDEX_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-ignored-failure-count"
MAX_INT32 = 2**31 - 1


def has_backoff_limit_per_index(job: Object) -> bool:
    spec = job.get("spec") or {}
    return spec.get("completionMode") == "Indexed" and spec.get("backoffLimitPerIndex") is not None


def completion_index(pod: Mapping[str, Any]) -> int | None:
    """The pod's index (annotation, else label); None when missing or not a number."""
    md = pod.get("metadata") or {}
    raw = (md.get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION)
    if raw is None:
        raw = (md.get("labels") or {}).get(COMPLETION_INDEX_ANNOTATION)
    if raw is None or not str(raw).isdigit():
        return None
    return int(raw)


def parse_indexes(text: str | None, completions: int) -> set[int]:
    """The indexes an interval string names (those below `completions`)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if hi else int(lo)
        except ValueError:
            continue
        out.update(i for i in range(first, last + 1) if i < completions)
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted indexes as intervals: `0,2-4,7`; two in a row are written apart, `5,6`, as upstream writes them."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if i == j:
            parts.append(str(ordered[i]))
        else:
            parts.append(f"{ordered[i]}{',' if j == i + 1 else '-'}{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def first_pending_indexes(busy: set[int], done: set[int], count: int, completions: int) -> list[int]:
    """The lowest `count` indexes below `completions` that neither have a pod at work (`busy`) nor are done
    (succeeded or failed)."""
    out: list[int] = []
    for i in range(completions):
        if len(out) >= count:
            break
        if i not in busy and i not in done:
            out.append(i)
    return out


def _count_annotation(pod: Object, key: str) -> int:
    """A failure-count annotation as a number; 0 when missing or not a number in int32's range (a user may
    have written anything there)."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        value = int(str(raw))
    except ValueError:
        return 0
    return value if 0 <= value <= MAX_INT32 else 0


def index_failure_count(pod: Object) -> int:
    return _count_annotation(pod, INDEX_FAILURE_COUNT_ANNOTATION)


def index_absolute_failure_count(pod: Object) -> int:
    """The index's failures before this pod, counted or ignored: what its back-off grows with."""
    return index_failure_count(pod) + _count_annotation(pod, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)


def is_index_failed(job: Object, pod: Object) -> bool:
    """Whether this pod's failure fails its index: a FailIndex rule matched, or the failure counts and the
    index had already failed backoffLimitPerIndex times before it (upstream: isIndexFailed)."""
    if not is_pod_failed(pod, job):
        return False
    spec = job.get("spec") or {}
    _, counts, action = match_pod_failure_policy(spec.get("podFailurePolicy"), pod)
    if action == "FailIndex":
        return True
    return counts and index_failure_count(pod) >= int(spec.get("backoffLimitPerIndex") or 0)


def failed_indexes(job: Object, tracked: Iterable[Object], completions: int) -> set[int]:
    """`status.failedIndexes` and the indexes that pods not yet counted (`tracked`: with their tracking
    finalizer) have just failed (upstream: calculateFailedIndexes)."""
    out = parse_indexes((job.get("status") or {}).get("failedIndexes"), completions)
    for pod in tracked:
        i = completion_index(pod)
        if i is not None and i < completions and is_index_failed(job, pod):
            out.add(i)
    return out


def pods_with_delayed_deletion(
    job: Object, tracked: Iterable[Object], busy: set[int], done: set[int], completions: int
) -> dict[int, Object]:
    """Per index that will retry (neither done nor with a pod at work), its latest failed pod: that pod keeps
    its tracking finalizer, so it stays to be read, until its replacement carries the index's failure count
    on (upstream: getPodsWithDelayedDeletionPerIndex)."""
    epoch = dt.datetime.min.replace(tzinfo=dt.UTC)
    out: dict[int, Object] = {}
    for pod in tracked:
        i = completion_index(pod)
        if i is None or i >= completions or i in done or i in busy or not is_pod_failed(pod, job):
            continue
        last = out.get(i)
        if last is None or (
            index_absolute_failure_count(last) <= index_absolute_failure_count(pod)
            and (finished_time(pod) or epoch) >= (finished_time(last) or epoch)
        ):
            out[i] = pod
    return out


def new_index_failure_counts(job: Object, replaced: Object | None) -> tuple[int, int]:
    """(failure count, ignored failure count) for the annotations of a pod that replaces `replaced` in its
    index: the replaced pod's own, plus its failure, counted or ignored as the podFailurePolicy says
    (upstream: getNewIndexFailureCounts)."""
    if replaced is None:
        return 0, 0
    failures = index_failure_count(replaced)
    ignored = _count_annotation(replaced, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)
    _, counts, _ = match_pod_failure_policy((job.get("spec") or {}).get("podFailurePolicy"), replaced)
    return (failures + 1, ignored) if counts else (failures, ignored + 1)
