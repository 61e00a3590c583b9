"""Completion indexes of Indexed Jobs (upstream: pkg/controller/job/indexed_job_utils.go): a pod's index from its
annotation, the interval strings of `status.completedIndexes` (`1,3-5`), and which indexes still need a pod."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"


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
    """Sorted indexes as intervals: `0,2-4,7`."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def first_pending_indexes(active: set[int], succeeded: set[int], count: int, completions: int) -> list[int]:
    """The lowest `count` indexes with neither a success nor an active pod."""
    out: list[int] = []
    for i in range(completions):
        if len(out) >= count:
            break
        if i not in active and i not in succeeded:
            out.append(i)
    return out
